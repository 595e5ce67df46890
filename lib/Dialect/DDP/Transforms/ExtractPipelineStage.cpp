//===- ExtractPipelineStage.cpp - One pipeline rank's program -------------===//
//
// What a rank lowers of a pipelined module: its own program, alone, with
// the groups of all programs recorded so that group creation, which is
// collective, happens alike on every rank.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <set>

namespace ddp {
#define GEN_PASS_DEF_EXTRACTPIPELINESTAGE
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

class ExtractPipelineStagePass
    : public ddp::impl::ExtractPipelineStageBase<ExtractPipelineStagePass> {
public:
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void ExtractPipelineStagePass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = module.getContext();
  SmallVector<func::FuncOp> stages;
  func::FuncOp kept;
  // Every group any rank's program uses, as the runtime names it.
  std::set<std::string> groups;
  for (auto func : module.getOps<func::FuncOp>()) {
    std::optional<int64_t> stage = getPipelineStage(func);
    if (!stage)
      continue;
    stages.push_back(func);
    if (*stage == rank) {
      if (kept) {
        func.emitError("a second program for pipeline rank ") << *stage;
        return signalPassFailure();
      }
      kept = func;
    }
    // Every op that names a group (collectives, and the shard ops of the
    // distributed optimizer, whose groups the lowering creates too).
    func.walk([&](Operation *op) {
      if (auto axes = op->getAttrOfType<ArrayAttr>("axes"))
        if (llvm::all_of(axes, [](Attribute a) { return isa<StringAttr>(a); }))
          groups.insert(
              llvm::join(axes.getAsValueRange<StringAttr>(), ","));
    });
  }
  if (stages.empty()) {
    module.emitError("no pipeline stage programs (functions with "
                     "ddp.pipeline_stage); run ddp-pipeline-stages first");
    return signalPassFailure();
  }
  if (!kept) {
    module.emitError("no program for pipeline rank ")
        << static_cast<int64_t>(rank) << " among the module's "
        << stages.size() << " stage programs";
    return signalPassFailure();
  }

  for (func::FuncOp func : stages)
    if (func != kept)
      func.erase();
  DDPDialect::PipelineStageAttrHelper(context).removeAttr(kept);
  // The parameters this rank holds are the ones its program uses.
  llvm::StringSet<> used;
  // Where an op may hide references, every parameter stays.
  bool complete = forEachNamedSymbol(
      kept, [&](StringAttr name) { used.insert(name.getValue()); });
  for (auto param : llvm::make_early_inc_range(module.getOps<ParamOp>()))
    if (complete && !used.contains(param.getSymName()))
      param.erase();

  SmallVector<Attribute> names;
  for (const std::string &group : groups)
    names.push_back(StringAttr::get(context, group));
  DDPDialect::ProgramGroupsAttrHelper(context).setAttr(
      module, ArrayAttr::get(context, names));
}
