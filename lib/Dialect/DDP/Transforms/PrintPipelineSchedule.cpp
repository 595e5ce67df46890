//===- PrintPipelineSchedule.cpp - Each pipeline rank's order as JSON -----===//
//
// Reads the order back from the stage programs, not from the schedule that
// made them, so that a pass that moved a task shows in the output.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"
#include "ddp/Support/OutputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

namespace ddp {
#define GEN_PASS_DEF_PRINTPIPELINESCHEDULE
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

class PrintPipelineSchedulePass
    : public ddp::impl::PrintPipelineScheduleBase<PrintPipelineSchedulePass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void PrintPipelineSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  // Rank -> its tasks; a task is listed once per run of consecutive ops.
  std::map<int64_t, std::vector<std::string>> orders;
  for (auto func : module.getOps<func::FuncOp>()) {
    std::optional<int64_t> stage = getPipelineStage(func);
    if (!stage)
      continue;
    if (orders.count(*stage)) {
      func.emitError("a second function for pipeline rank ")
          << *stage << "; each rank runs one";
      return signalPassFailure();
    }
    std::vector<std::string> &order = orders[*stage];
    // The tasks' own ops give the order: a call between two tasks may
    // issue a receive for the next before the send of the last. Each
    // task's span, from its first op to its last, in order of first ops.
    struct Span {
      PipelineTask task;
      size_t first, last;
    };
    std::vector<Span> spans;
    std::map<std::string, size_t> spanOf;
    size_t index = 0;
    for (Operation &op : func.getBody().getOps()) {
      ++index;
      if (isPipelineMessage(&op) || isa<WaitOp>(op))
        continue;
      std::optional<PipelineTask> task = getPipelineTask(&op);
      if (!task)
        continue;
      auto [it, added] = spanOf.try_emplace(task->str(), spans.size());
      if (added)
        spans.push_back({*task, index, index});
      spans[it->second].last = index;
    }
    // Two spans that overlap are a combined step: forward first.
    for (size_t i = 0; i < spans.size(); ++i) {
      if (i + 1 < spans.size() && spans[i + 1].first < spans[i].last) {
        const Span &a = spans[i], &b = spans[i + 1];
        bool aFirst = a.task.phase == PipelineTask::Phase::Forward;
        order.push_back((aFirst ? a : b).task.str() + "+" +
                        (aFirst ? b : a).task.str());
        ++i;
        continue;
      }
      order.push_back(spans[i].task.str());
    }
  }
  if (orders.empty()) {
    module.emitError("no pipeline stage programs (functions with "
                     "ddp.pipeline_stage); run ddp-pipeline-stages first");
    return signalPassFailure();
  }

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputPath, &error);
  if (!output) {
    module.emitError("cannot write the pipeline schedule: ") << error;
    return signalPassFailure();
  }
  {
    llvm::json::OStream json(output->os());
    json.object([&] {
      // Not a structured binding: C++17 lambdas cannot capture one.
      for (const auto &entry : orders)
        json.attributeArray(std::to_string(entry.first), [&] {
          for (const std::string &task : entry.second)
            json.value(task);
        });
    });
  }
  output->os() << "\n";
  if (llvm::Error writeError = finishOutputFile(*output, outputPath)) {
    module.emitError("cannot write the pipeline schedule to '")
        << outputPath
        << "': " << llvm::errorToErrorCode(std::move(writeError)).message();
    return signalPassFailure();
  }
  markAllAnalysesPreserved();
}
