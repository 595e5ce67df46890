//===- StepStats.h - Size and cost summary of a step ------------*- C++ -*-===//
//
// What a step holds and computes, read from the IR alone: parameter counts
// (per rank and for the whole model), FLOPs per GEMM phase and of the other
// compute, collectives per process group, op counts, and results nobody
// uses. The -ddp-step-stats pass prints it; tests compare it against
// published parameter counts and FLOP formulas.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_ANALYSIS_STEPSTATS_H
#define DDP_DIALECT_DDP_ANALYSIS_STEPSTATS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace ddp {

struct StepStats {
  /// The mesh as `dp=2 tp=2`, and its number of ranks.
  std::string mesh;
  int64_t numRanks = 1;
  /// Size of the mesh axes `tp` and `ep` (1 when absent).
  int64_t tensorParallelSize = 1;
  int64_t expertParallelSize = 1;

  int64_t numParams = 0;
  /// Elements of the parameters as this rank holds them.
  int64_t localParamElements = 0;
  /// Elements of the whole model: a parameter split over `tp` (it has a
  /// tp_dim) counts once per tensor-parallel rank, an expert parameter once
  /// per expert-parallel rank, a replicated one once.
  int64_t modelParamElements = 0;

  /// 2*M*N*K of the ddp.gemm ops, by phase.
  double gemmFwdFlops = 0, gemmDgradFlops = 0, gemmWgradFlops = 0;
  /// The flops and bytes attributes of the ddp.compute ops.
  double computeFlops = 0, computeBytes = 0;
  double getTotalFlops() const {
    return gemmFwdFlops + gemmDgradFlops + gemmWgradFlops + computeFlops;
  }

  struct CollectiveStats {
    int64_t count = 0;
    /// What this rank contributes (receives, for recv), in bytes.
    double payloadBytes = 0;
  };
  /// Keyed by op and group, e.g. `all_reduce[dp]`.
  std::map<std::string, CollectiveStats> collectives;

  /// Ops inside the functions of the module, by name.
  std::map<std::string, int64_t> opCounts;
  int64_t numOps = 0;
  /// Op results without a use: the importer's steps have none.
  int64_t numUnusedResults = 0;

  void print(llvm::raw_ostream &os) const;
};

/// Summarises `module`. The module must verify.
StepStats computeStepStats(mlir::ModuleOp module);

} // namespace ddp

#endif // DDP_DIALECT_DDP_ANALYSIS_STEPSTATS_H
