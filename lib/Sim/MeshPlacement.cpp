//===- MeshPlacement.cpp - Meshes, groups and the step, as simulated ------===//
//
// What the simulator and the tools that call it need before any op is
// priced: which mesh axes are model-parallel, the mesh rescaled to another
// data-parallel size, where a group's ranks sit on nodes, and which function
// of a module is the step.
//
//===----------------------------------------------------------------------===//

#include "ddp/Sim/Simulator.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/IR/StepLookup.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace ddp;
using namespace ddp::sim;
using namespace ddp::timing;

llvm::Expected<SmallVector<int64_t>>
ddp::sim::rescaleDataParallelAxes(ArrayRef<StringRef> axisNames,
                                  ArrayRef<int64_t> sizes,
                                  int64_t dataParallelSize) {
  SmallVector<int64_t> result(sizes);
  std::optional<unsigned> scaledAxis;
  int64_t otherDataParallel = 1;
  for (auto [index, name] : llvm::enumerate(axisNames)) {
    if (!isDataParallelAxis(name))
      continue;
    if (!scaledAxis)
      scaledAxis = index;
    else
      otherDataParallel *= sizes[index];
  }
  if (!scaledAxis)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("cannot simulate dp={0}: the mesh has only "
                      "model-parallel axes ({1})",
                      dataParallelSize, llvm::join(axisNames, ", ")));
  if (dataParallelSize % otherDataParallel != 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("cannot simulate dp={0}: it must be a multiple of {1}, "
                      "the size of the data-parallel axes after '{2}'",
                      dataParallelSize, otherDataParallel,
                      axisNames[*scaledAxis]));
  result[*scaledAxis] = dataParallelSize / otherDataParallel;
  return result;
}

GroupPlacement ddp::sim::placeGroup(ArrayRef<int64_t> meshShape,
                                    ArrayRef<unsigned> groupAxes,
                                    int64_t gpusPerNode) {
  SmallVector<int64_t> strides(meshShape.size(), 1);
  for (int i = static_cast<int>(meshShape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * meshShape[i + 1];

  // Walk the members of rank 0's group (an odometer over the group's axes)
  // and count them per node.
  llvm::DenseMap<int64_t, int64_t> perNode;
  SmallVector<int64_t> coords(groupAxes.size(), 0);
  int64_t ranks = 0;
  while (true) {
    int64_t rank = 0;
    for (auto [axis, coord] : llvm::zip(groupAxes, coords))
      rank += coord * strides[axis];
    ++perNode[rank / gpusPerNode];
    ++ranks;
    int i = static_cast<int>(coords.size()) - 1;
    for (; i >= 0; --i) {
      if (++coords[i] < meshShape[groupAxes[i]])
        break;
      coords[i] = 0;
    }
    if (i < 0)
      break;
  }
  int64_t maxPerNode = 0;
  for (auto &entry : perNode)
    maxPerNode = std::max(maxPerNode, entry.second);
  return {ranks, static_cast<int64_t>(perNode.size()), maxPerNode};
}

FailureOr<func::FuncOp> ddp::sim::findStepToSimulate(ModuleOp module,
                                                     StringRef name) {
  // A pipelined step (its ops name their pipeline rank) or its stage
  // programs: simulated as one step, each rank would run every layer, or
  // one rank's program would stand for the pipeline (simulatePipeline runs
  // them all).
  for (auto func : module.getOps<func::FuncOp>()) {
    if (getPipelineStage(func))
      return func.emitError("@")
             << func.getSymName()
             << " is one pipeline rank's program; simulate the pipeline "
                "whole (ddp-simulate does), not one rank's step";
    if (isUnsplitPipelineStep(func))
      return func.emitError("@")
             << func.getSymName()
             << " is a pipelined step not yet split into its stage "
                "programs; run ddp-pipeline-stages (or ddp-schedule) first, "
                "and the simulator runs them together";
  }
  SmallVector<func::FuncOp> withBody;
  if (func::FuncOp step = findStep(module, name, withBody))
    return step;
  if (!name.empty())
    return emitError(module.getLoc(), "no function named '")
           << name << "' with a body to simulate";
  return emitError(module.getLoc(),
                   "expected exactly one function with a body to "
                   "simulate, found ")
         << withBody.size() << "; name the step with the 'step' option";
}
