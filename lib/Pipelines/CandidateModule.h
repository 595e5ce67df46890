//===- CandidateModule.h - A copy of the module to schedule -----*- C++ -*-===//
//
// policy=auto's choices schedule copies of the module and simulate them. A
// pass may run a pipeline only on its own op or one nested in it, so each
// copy is nested in the module for the time of the choice. Every choice
// prices its copies the same way (getCandidatePricing).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_LIB_PIPELINES_CANDIDATEMODULE_H
#define DDP_LIB_PIPELINES_CANDIDATEMODULE_H

#include "ddp/Sim/Simulator.h"
#include "ddp/Timing/CostModel.h"

#include "mlir/IR/BuiltinOps.h"

namespace ddp {

/// A copy of `module`'s ops (but other candidates) and discardable
/// attributes, as a module at the end of its body. The caller erases it.
mlir::ModuleOp createCandidateModule(mlir::ModuleOp module);

/// How a choice prices its candidates: the cost model of hardware profile
/// `hardware`, and the simulator at data-parallel size `dataParallelSize`
/// (0: the mesh's) and routing imbalance `moeImbalance` without its event
/// list.
struct CandidatePricing {
  timing::CostModel model;
  sim::SimOptions options;
};
/// Fails with an error at `module` naming what is wrong with the profile.
mlir::FailureOr<CandidatePricing>
getCandidatePricing(mlir::ModuleOp module, llvm::StringRef hardware,
                    int64_t dataParallelSize, double moeImbalance = 1);

} // namespace ddp

#endif // DDP_LIB_PIPELINES_CANDIDATEMODULE_H
