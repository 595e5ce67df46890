//===- StepStats.h - Size and cost summary of a step ------------*- C++ -*-===//
//
// What a step holds and computes, read from the IR alone: parameter counts
// (per rank and for the whole model), FLOPs per GEMM phase and of the other
// compute, collectives per process group, op counts, and results nobody
// uses, and the model state a rank keeps in memory. The -ddp-step-stats
// pass prints it; tests compare it against published parameter counts, FLOP
// formulas and Megatron-LM's bytes per parameter.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_ANALYSIS_STEPSTATS_H
#define DDP_DIALECT_DDP_ANALYSIS_STEPSTATS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace ddp {

/// The model state a rank keeps, in bytes, split as Megatron-LM's docs
/// count it (docs/DistributedOptimizer.md): parameters, gradients, f32 main
/// parameters of 16-bit parameters and Adam's two f32 moments. What ddp
/// keeps beyond that formula is counted apart: the padding of the gradient
/// buckets.
struct ModelState {
  /// Parameter elements on this rank (P in Megatron's formula).
  int64_t paramElements = 0;
  /// The parameters as this rank holds them (tensor-parallel shards).
  int64_t paramBytes = 0;
  /// Every parameter's gradient in the element type it is reduced in (the
  /// bucket's, f32 with grad-reduce-in-fp32), padding excluded.
  int64_t gradBytes = 0;
  /// Bucket elements that hold no gradient (ddp.bucket_pack padding).
  int64_t gradPaddingBytes = 0;
  /// Of the parameters updated by ddp.sgd/ddp.adam on every rank.
  int64_t mainParamBytes = 0;
  int64_t optimizerStateBytes = 0;
  /// What the shard optimizers (ddp.shard_sgd/ddp.shard_adam) keep, summed
  /// over the ranks of their group: every parameter element is in exactly
  /// one rank's shard, so a rank keeps 1/groupSize of it on average (the
  /// runtime allocates it for the parameter elements of the rank's shard;
  /// how many those are depends on the rank and the padding).
  struct Sharded {
    /// Ranks in the group.
    int64_t groupSize = 1;
    int64_t paramElements = 0;
    /// The parameters the step reads only as the rank's shards
    /// (ddp.get_param_shard, never ddp.get_param: data-parallel-sharding-
    /// strategy=optim_grads_params), which a rank keeps no more of.
    int64_t paramBytes = 0;
    int64_t mainParamBytes = 0;
    int64_t optimizerStateBytes = 0;

    int64_t getBytes() const {
      return paramBytes + mainParamBytes + optimizerStateBytes;
    }
  };
  /// Keyed by the group's mesh axes, as `dp` or `edp,ep`.
  std::map<std::string, Sharded> sharded;

  /// Parameters, gradients, main parameters and optimizer state that every
  /// rank keeps whole: Megatron's bytes minus the sharded state (paramBytes
  /// leaves out the parameters a group shards).
  int64_t getReplicatedBytes() const {
    return paramBytes + gradBytes + mainParamBytes + optimizerStateBytes;
  }
  /// The replicated bytes plus each group's sharded bytes / its size: the
  /// average over the ranks.
  double getBytesPerRank() const;

  /// The lines of -ddp-step-stats and ddp-simulate's summary.
  void print(llvm::raw_ostream &os) const;
};

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
  /// Whether these are one function's counts (a stage program's), its
  /// parameters those it names.
  bool ofOneFunction = false;
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

  ModelState modelState;

  /// Ops inside the functions of the module, by name.
  std::map<std::string, int64_t> opCounts;
  int64_t numOps = 0;
  /// Op results without a use: the importer's steps have none.
  int64_t numUnusedResults = 0;

  void print(llvm::raw_ostream &os) const;
};

/// The parameters of `module`: how many, their elements as one rank holds
/// them, and the whole model's (StepStats' fields of the same names).
struct ParamCounts {
  int64_t numParams = 0;
  int64_t localParamElements = 0;
  int64_t modelParamElements = 0;
};
/// The module's parameters; with `only`, those that function names (a
/// pipeline stage program's). Fails, with an error at the module, when a
/// count does not fit in int64.
mlir::FailureOr<ParamCounts> countParams(mlir::ModuleOp module,
                                         mlir::func::FuncOp only = {});

/// Summarises `module`; with `only`, that function alone and the parameters
/// it names, so that a stage program's counts are its pipeline rank's. The
/// module must verify. Fails, with an error at the module, when a count
/// summed over it does not fit in int64.
mlir::FailureOr<StepStats> computeStepStats(mlir::ModuleOp module,
                                            mlir::func::FuncOp only = {});

/// The model state per rank of `module` alone (what computeStepStats puts
/// in modelState), or of the one function `only` of it (a pipeline rank's
/// program: the parameters it names, its gradients and its optimizer). The
/// module must verify. Fails, with an error at the module, when a byte
/// count summed over it does not fit in int64.
mlir::FailureOr<ModelState> computeModelState(mlir::ModuleOp module,
                                              mlir::func::FuncOp only = {});

} // namespace ddp

#endif // DDP_DIALECT_DDP_ANALYSIS_STEPSTATS_H
