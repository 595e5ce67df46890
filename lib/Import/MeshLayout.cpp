//===- MeshLayout.cpp - The step's mesh and its groups --------------------===//

#include "ddp/Import/MeshLayout.h"

#include "ddp/Dialect/DDP/IR/MeshAxes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace ddp;

MeshLayout MeshLayout::dataParallel(int64_t dataParallelSize,
                                    std::optional<int64_t> expertParallelSize) {
  MeshLayout layout;
  if (!expertParallelSize) {
    layout.axes = {{"dp", dataParallelSize}};
    layout.denseGroupAxes = layout.expertGroupAxes = {"dp"};
    return layout;
  }
  layout.axes = {{"edp", dataParallelSize / *expertParallelSize},
                 {"ep", *expertParallelSize}};
  layout.denseGroupAxes = {"edp", "ep"};
  layout.expertGroupAxes = {"edp"};
  layout.expertAxes = layout.expertTensorAndExpertAxes = {"ep"};
  return layout;
}

/// The axes of a stage whose expert tensor-parallel size differs from the
/// dense one: Megatron's dense generator orders a stage's ranks tp-dp, its
/// expert one tp-ep-dp with tp = ETP (parallel_state.py L859-895 at
/// d98e8a6), both tensor-parallel fastest. Each piece between two
/// consecutive cuts of either is one axis, named for its role in both.
static Expected<MeshLayout> buildFineGrid(int64_t tensor, int64_t data,
                                          int64_t expert,
                                          int64_t expertTensor) {
  int64_t stage = tensor * data, expertModel = expertTensor * expert;
  if (stage % expertModel != 0)
    return createStringError(
        formatv("expert_tensor_parallel_size x expert_model_parallel_size "
                "({0} x {1}) must divide tensor_model_parallel_size x "
                "data_parallel_size ({2} x {3}), the ranks of a pipeline "
                "stage, as Megatron's parallel_state.py requires",
                expertTensor, expert, tensor, data));
  SmallVector<int64_t> cuts = {1, tensor, expertTensor, expertModel, stage};
  llvm::sort(cuts);
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (auto [low, high] : llvm::zip(cuts, llvm::drop_begin(cuts)))
    if (high % low != 0)
      return createStringError(formatv(
          "tensor_model_parallel_size {0} and expert_tensor_parallel_size "
          "{1} x expert_model_parallel_size {2} cut the {3} ranks of a "
          "stage at {4}: ddp's mesh is one grid whose groups are sets of "
          "its axes, so each cut must divide the next ({5} does not divide "
          "{6}): tensor_model_parallel_size must divide, or be a multiple "
          "of, both expert_tensor_parallel_size and "
          "expert_tensor_parallel_size x expert_model_parallel_size",
          tensor, expertTensor, expert, stage,
          make_range(cuts.begin(), cuts.end()), low, high));

  MeshLayout layout;
  for (auto [low, high] : llvm::zip(cuts, llvm::drop_begin(cuts))) {
    DenseRole dense = high <= tensor ? DenseRole::TensorParallel
                                     : DenseRole::DataParallel;
    ExpertRole role = high <= expertTensor  ? ExpertRole::TensorParallel
                      : high <= expertModel ? ExpertRole::ExpertParallel
                                            : ExpertRole::DataParallel;
    layout.axes.insert(layout.axes.begin(),
                       {getExpertMeshAxisName(dense, role), high / low});
  }
  // The slowest axis is always `edp`, as without the finer grid, so that a
  // simulation at another data-parallel size rescales it.
  if (layout.axes.empty() || layout.axes.front().first != "edp")
    layout.axes.insert(layout.axes.begin(), {"edp", 1});
  for (auto [name, size] : layout.axes) {
    AxisRoles roles = getAxisRoles(name);
    (roles.dense == DenseRole::TensorParallel ? layout.tensorAxes
                                              : layout.denseGroupAxes)
        .push_back(name);
    if (roles.expert == ExpertRole::TensorParallel)
      layout.expertTensorAxes.push_back(name);
    else if (roles.expert == ExpertRole::ExpertParallel)
      layout.expertAxes.push_back(name);
    else
      layout.expertGroupAxes.push_back(name);
    if (roles.expert != ExpertRole::DataParallel)
      layout.expertTensorAndExpertAxes.push_back(name);
  }
  return layout;
}

Expected<MeshLayout> ddp::buildMeshLayout(const ParallelSizes &sizes) {
  MeshLayout layout;
  if (sizes.expert && sizes.expertTensor &&
      *sizes.expertTensor != sizes.tensor) {
    Expected<MeshLayout> fine = buildFineGrid(sizes.tensor, sizes.data,
                                              *sizes.expert,
                                              *sizes.expertTensor);
    if (!fine)
      return fine.takeError();
    layout = std::move(*fine);
  } else {
    // The experts split as the dense layers: `tp` is both tensor-parallel
    // groups and the fastest axis, so that it fills a node.
    layout = MeshLayout::dataParallel(sizes.data, sizes.expert);
    layout.axes.push_back({"tp", sizes.tensor});
    layout.tensorAxes = {"tp"};
    if (sizes.expert) {
      layout.expertTensorAxes = {"tp"};
      layout.expertTensorAndExpertAxes = {"ep", "tp"};
    }
  }
  // Megatron's rank order (tp-cp-ep-dp-pp): the pipeline axis is the
  // slowest, so a stage's ranks are contiguous.
  if (sizes.pipeline > 1)
    layout.axes.insert(layout.axes.begin(), {"pp", sizes.pipeline});
  return layout;
}
