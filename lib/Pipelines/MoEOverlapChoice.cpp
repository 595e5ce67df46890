//===- MoEOverlapChoice.cpp - policy=auto's batch-level MoE overlap -------===//
//
// Each candidate is scheduled whole, with every other decision of the
// pipeline, and simulated: so the choice is made on the step time the
// finished schedule predicts, and is never slower than either flag.
//
//===----------------------------------------------------------------------===//

#include "MoEOverlapChoice.h"

#include "CandidateModule.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"
#include "ddp/Sim/Simulator.h"

#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;

bool ddp::isBatchLevelOverlapCandidate(ModuleOp module) {
  if (!llvm::any_of(module.getOps<MeshOp>(),
                    [](MeshOp mesh) { return getExpertParallelSize(mesh) > 1; }))
    return false;
  if (!llvm::all_of(module.getOps<ParamOp>(), [](ParamOp param) {
        Type element = getElementTypeOrSelf(param.getType());
        return element.isBF16() || element.isF16();
      }))
    return false;
  return module
      .walk([](Operation *op) {
        return getScheduleNode(op) ? WalkResult::interrupt()
                                   : WalkResult::advance();
      })
      .wasInterrupted();
}

FailureOr<FlagTimes> ddp::simulateFlagChoice(
    ModuleOp module, StringRef hardware, int64_t dataParallelSize,
    double moeImbalance, function_ref<LogicalResult(bool, ModuleOp)> schedule) {
  FailureOr<CandidatePricing> pricing =
      getCandidatePricing(module, hardware, dataParallelSize, moeImbalance);
  if (failed(pricing))
    return failure();
  FlagTimes times;
  for (bool on : {false, true}) {
    ModuleOp candidate = createCandidateModule(module);
    llvm::scope_exit erase([&] { candidate.erase(); });
    if (failed(schedule(on, candidate)))
      return failure();
    FailureOr<func::FuncOp> step = findStepToSimulate(candidate, "");
    if (failed(step))
      return failure();
    FailureOr<SimResult> result =
        simulateStep(*step, pricing->model, pricing->options);
    if (failed(result))
      return failure();
    (on ? times.withUs : times.withoutUs) = result->stepTime;
  }
  return times;
}
