//===- MeshLayout.h - The step's mesh and its groups ------------*- C++ -*-===//
//
// How the importers lay Megatron's process groups out on ddp's mesh: one
// row-major grid whose groups are sets of its axes. The axis names and what
// they are to the model are ddp/Dialect/DDP/IR/MeshAxes.h's.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_MESHLAYOUT_H
#define DDP_IMPORT_MESHLAYOUT_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace ddp {

/// The parallel sizes of a step, with Megatron's names. `expert` and
/// `expertTensor` are set on a model with experts only.
struct ParallelSizes {
  int64_t tensor = 1, data = 1, pipeline = 1;
  std::optional<int64_t> expert, expertTensor;
};

/// The step's mesh, as (name, size) pairs slowest first, and the axes of
/// each group. A group with no axes has one rank.
struct MeshLayout {
  llvm::SmallVector<std::pair<llvm::StringRef, int64_t>> axes;
  /// The axes the gradients of dense and of expert parameters are averaged
  /// over.
  llvm::SmallVector<llvm::StringRef> denseGroupAxes, expertGroupAxes;
  /// The dense layers' tensor-parallel group; the experts' tensor-parallel
  /// group, their expert-parallel group, and both together (the all-gather
  /// dispatcher's tp_ep group).
  llvm::SmallVector<llvm::StringRef> tensorAxes, expertTensorAxes,
      expertAxes, expertTensorAndExpertAxes;

  /// Data parallelism over `(dp = D)`, every gradient averaged over [dp];
  /// with expert parallelism over `(edp = D/E, ep = E)` as Megatron carves
  /// it out: dense gradients averaged over [edp, ep], expert ones over the
  /// ranks that hold the same experts, [edp]. No tensor parallelism.
  static MeshLayout dataParallel(int64_t dataParallelSize,
                                 std::optional<int64_t> expertParallelSize);
};

/// The layout of `sizes`: `[pp,] dp, tp` for a dense model; `[pp,] edp, ep,
/// tp` with experts split as the dense layers are. With an expert
/// tensor-parallel size of its own, the ranks of a stage are cut where
/// either of Megatron's generators cuts them (dense `tp-dp`, expert
/// `tp-ep-dp`, tensor-parallel fastest), one axis per piece, so that every
/// group of both is a set of axes. Fails, naming the sizes, when the two
/// orders do not nest: each cut must divide the next.
llvm::Expected<MeshLayout> buildMeshLayout(const ParallelSizes &sizes);

} // namespace ddp

#endif // DDP_IMPORT_MESHLAYOUT_H
