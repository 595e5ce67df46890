//===- PipelinePrograms.cpp - The stage programs of a pipeline ------------===//

#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"

#include "ddp/Dialect/DDP/IR/DDPDialect.h"

#include <map>

using namespace mlir;
using namespace ddp;

FailureOr<std::optional<PipelinePrograms>>
ddp::getPipelinePrograms(ModuleOp module) {
  std::map<int64_t, func::FuncOp> byRank;
  for (auto func : module.getOps<func::FuncOp>()) {
    std::optional<int64_t> stage = getPipelineStage(func);
    if (!stage)
      continue;
    if (func.isExternal())
      return func.emitError("pipeline rank ")
             << *stage << "'s program has no body";
    auto [it, inserted] = byRank.insert({*stage, func});
    if (!inserted) {
      InFlightDiagnostic diag = func.emitError("a second program for pipeline "
                                               "rank ")
                                << *stage;
      diag.attachNote(it->second.getLoc()) << "the first";
      return diag;
    }
  }
  if (byRank.empty())
    return std::optional<PipelinePrograms>();

  func::FuncOp first = byRank.begin()->second;
  PipelinePrograms programs;
  for (auto candidate : module.getOps<MeshOp>()) {
    if (candidate.getAxisSize("pp") <= 0)
      continue;
    // As ddp-pipeline-stages splits a step over one: which mesh's pp axis
    // numbers the stages would be a guess.
    if (programs.mesh)
      return candidate.emitError("a second mesh with a pp axis (@")
             << programs.mesh.getSymName()
             << " has one); pipeline stage programs run on one";
    programs.mesh = candidate;
  }
  if (!programs.mesh)
    return first.emitError("pipeline stage programs need a mesh with a pp "
                           "axis");
  programs.stages = programs.mesh.getAxisSize("pp");
  for (int64_t rank = 0; rank < programs.stages; ++rank) {
    auto it = byRank.find(rank);
    if (it == byRank.end())
      return first.emitError("the mesh has ")
             << programs.stages << " pipeline ranks, but no program for rank "
             << rank << "; every rank needs one (ddp-pipeline-stages makes "
             << "them)";
    programs.byRank.push_back(it->second);
  }
  if (byRank.rbegin()->first >= programs.stages)
    return byRank.rbegin()->second.emitError("pipeline rank ")
           << byRank.rbegin()->first << " is outside the mesh's pp axis of "
           << programs.stages;
  return std::optional<PipelinePrograms>(std::move(programs));
}

func::FuncOp ddp::getExtractedStageProgram(ModuleOp module) {
  if (!DDPDialect::ProgramGroupsAttrHelper(module.getContext())
           .isAttrPresent(module))
    return nullptr;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      return func;
  return nullptr;
}

bool ddp::isUnsplitPipelineStep(func::FuncOp func) {
  return llvm::any_of(func.getBody().getOps(), [](Operation &op) {
    return getPipelineStage(&op).has_value();
  });
}

bool ddp::isPipelineMessage(Operation *op) {
  if (!isa<SendOp, RecvOp>(op))
    return false;
  return llvm::is_contained(cast<CollectiveOpInterface>(op)
                                .getAxesAttr()
                                .getAsValueRange<StringAttr>(),
                            "pp");
}

int64_t ddp::getPipelinePeer(Operation *message, int64_t rank,
                             int64_t stages) {
  // The offset accessors return the attribute's bits unsigned; reduced
  // first, since rank + offset may not fit in int64.
  auto offset = static_cast<int64_t>(isa<SendOp>(message)
                                         ? cast<SendOp>(message).getOffset()
                                         : cast<RecvOp>(message).getOffset());
  return ((offset % stages + stages) % stages + rank) % stages;
}
