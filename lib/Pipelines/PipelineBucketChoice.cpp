//===- PipelineBucketChoice.cpp - policy=auto's buckets in a pipeline -----===//
//
// Both candidates are scheduled whole, with every other decision, and only
// their stage programs are exchanged: the programs of different ranks are
// independent functions over the same parameters and mesh, so any mix of
// them is a schedule that either candidate's passes could have made.
//
//===----------------------------------------------------------------------===//

#include "PipelineBucketChoice.h"

#include "CandidateModule.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Sim/PipelineSimulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ScopeExit.h"

#include <map>

using namespace mlir;
using namespace ddp;

/// Each pipeline rank's program in `module`.
static std::map<int64_t, func::FuncOp> getStagePrograms(ModuleOp module) {
  std::map<int64_t, func::FuncOp> programs;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (std::optional<int64_t> rank = getPipelineStage(func))
      programs[*rank] = func;
  return programs;
}

/// Whether the two candidates differ only in their functions (the passes
/// may change the mesh or the parameters, the same way for both).
static bool shareDeclarations(ModuleOp a, ModuleOp b) {
  auto declarations = [](ModuleOp module) {
    SmallVector<Operation *> ops;
    for (Operation &op : *module.getBody())
      if (!isa<func::FuncOp>(op))
        ops.push_back(&op);
    return ops;
  };
  SmallVector<Operation *> left = declarations(a), right = declarations(b);
  if (left.size() != right.size() ||
      a->getDiscardableAttrDictionary() != b->getDiscardableAttrDictionary())
    return false;
  for (auto [x, y] : llvm::zip(left, right))
    if (x->getName() != y->getName() ||
        x->getAttrDictionary() != y->getAttrDictionary() ||
        x->getResultTypes() != y->getResultTypes())
      return false;
  return true;
}

LogicalResult ddp::choosePipelineBuckets(
    ModuleOp module, StringRef hardware, int64_t dataParallelSize,
    function_ref<LogicalResult(bool, ModuleOp)> schedule) {
  FailureOr<CandidatePricing> pricing =
      getCandidatePricing(module, hardware, dataParallelSize);
  if (failed(pricing))
    return failure();
  auto simulate = [&](ModuleOp candidate) -> FailureOr<double> {
    FailureOr<sim::PipelineSimResult> result =
        sim::simulatePipeline(candidate, pricing->model, pricing->options);
    if (failed(result))
      return failure();
    return result->stepTime;
  };

  ModuleOp megatron = createCandidateModule(module);
  ModuleOp automatic = createCandidateModule(module);
  llvm::scope_exit erase([&] {
    megatron.erase();
    automatic.erase();
  });
  if (failed(schedule(false, megatron)) || failed(schedule(true, automatic)))
    return failure();
  FailureOr<double> megatronTime = simulate(megatron);
  FailureOr<double> autoTime = simulate(automatic);
  if (failed(megatronTime) || failed(autoTime))
    return failure();
  std::map<int64_t, func::FuncOp> megatronPrograms = getStagePrograms(megatron);
  std::map<int64_t, func::FuncOp> autoPrograms = getStagePrograms(automatic);
  if (megatronPrograms.empty() ||
      !llvm::equal(llvm::make_first_range(megatronPrograms),
                   llvm::make_first_range(autoPrograms)))
    return failure();

  // Start from the faster whole; switch one rank at a time. Which layout
  // each rank kept shows in its program's ddp.bucket_policy.
  bool startAuto = *autoTime < *megatronTime;
  ModuleOp working = startAuto ? automatic : megatron;
  std::map<int64_t, func::FuncOp> &current =
      startAuto ? autoPrograms : megatronPrograms;
  const std::map<int64_t, func::FuncOp> &other =
      startAuto ? megatronPrograms : autoPrograms;
  double chosenUs = std::min(*autoTime, *megatronTime);
  if (shareDeclarations(megatron, automatic)) {
    for (auto &[rank, program] : current) {
      // The program it replaces waits outside the module, to come back.
      Block *block = program->getBlock();
      auto next = std::next(program->getIterator());
      func::FuncOp previous = program;
      previous->remove();
      program = cast<func::FuncOp>(other.at(rank)->clone());
      block->getOperations().insert(next, program);
      FailureOr<double> time = simulate(working);
      if (succeeded(time) && *time < chosenUs) {
        chosenUs = *time;
        previous.erase();
        continue;
      }
      block->getOperations().insert(program->getIterator(), previous);
      program.erase();
      program = previous;
    }
  }

  // The chosen programs become the module's.
  for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
    if (&op != megatron.getOperation() && &op != automatic.getOperation())
      op.erase();
  for (NamedAttribute attr : working->getDiscardableAttrs())
    module->setAttr(attr.getName(), attr.getValue());
  Block *body = module.getBody();
  body->getOperations().splice(body->begin(),
                               working.getBody()->getOperations());
  return success();
}
