//===- StepStats.cpp - Size and cost summary of a step --------------------===//

#include "ddp/Dialect/DDP/Analysis/StepStats.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace ddp;

static std::string getGroupKey(Operation *op,
                               CollectiveOpInterface collective) {
  std::string key = op->getName().stripDialect().str() + "[";
  llvm::raw_string_ostream os(key);
  llvm::interleave(
      collective.getAxesAttr(), os,
      [&](Attribute axis) { os << cast<StringAttr>(axis).getValue(); }, ",");
  os << "]";
  return key;
}

StepStats ddp::computeStepStats(ModuleOp module) {
  StepStats stats;
  // The first mesh sets the parallel sizes; a step has one.
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    llvm::raw_string_ostream os(stats.mesh);
    llvm::interleave(
        llvm::zip(mesh.getAxisNames(), mesh.getShape()), os,
        [&](auto axis) {
          os << cast<StringAttr>(std::get<0>(axis)).getValue() << "="
             << std::get<1>(axis);
        },
        " ");
    stats.numRanks = mesh.getNumRanks();
    stats.tensorParallelSize = std::max<int64_t>(mesh.getAxisSize("tp"), 1);
    stats.expertParallelSize = std::max<int64_t>(mesh.getAxisSize("ep"), 1);
    break;
  }

  for (ParamOp param : module.getOps<ParamOp>()) {
    int64_t elements = param.getTensorType().getNumElements();
    int64_t copies = (param.getTpDim() ? stats.tensorParallelSize : 1) *
                     (param.getExpert() ? stats.expertParallelSize : 1);
    ++stats.numParams;
    stats.localParamElements += elements;
    stats.modelParamElements += elements * copies;
  }

  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    function.walk([&](Operation *op) {
      if (op == function.getOperation())
        return;
      ++stats.numOps;
      ++stats.opCounts[op->getName().getStringRef().str()];
      stats.numUnusedResults += llvm::count_if(
          op->getResults(), [](Value result) { return result.use_empty(); });
      if (auto gemm = dyn_cast<GemmOp>(op)) {
        double flops = gemm.getFlops();
        switch (gemm.getPhase()) {
        case GemmPhase::Fwd:
          stats.gemmFwdFlops += flops;
          break;
        case GemmPhase::Dgrad:
          stats.gemmDgradFlops += flops;
          break;
        case GemmPhase::Wgrad:
          stats.gemmWgradFlops += flops;
          break;
        }
      } else if (auto compute = dyn_cast<ComputeOp>(op)) {
        stats.computeFlops += compute.getFlops().convertToDouble();
        stats.computeBytes += compute.getBytes().convertToDouble();
      } else if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
        RankedTensorType payload = collective.getPayload().getType();
        StepStats::CollectiveStats &entry =
            stats.collectives[getGroupKey(op, collective)];
        ++entry.count;
        entry.payloadBytes += payload.getNumElements() *
                              double(payload.getElementTypeBitWidth() / 8);
      }
    });
  }
  return stats;
}

/// Integers up to 2^53 print exactly; larger sums are not exact anyway.
static void printNumber(llvm::raw_ostream &os, double value) {
  if (value < 9007199254740992.0)
    os << llvm::format("%.0f", value);
  else
    os << llvm::format("%.6e", value);
}

void StepStats::print(llvm::raw_ostream &os) const {
  if (mesh.empty())
    os << "mesh: none\n";
  else
    os << "mesh: " << mesh << " (" << numRanks << " ranks)\n";
  os << "parameters: " << modelParamElements << " in model, "
     << localParamElements << " on this rank in " << numParams << " tensors\n";
  os << "flops per rank: ";
  printNumber(os, getTotalFlops());
  os << "\n  gemm fwd: ";
  printNumber(os, gemmFwdFlops);
  os << "\n  gemm dgrad: ";
  printNumber(os, gemmDgradFlops);
  os << "\n  gemm wgrad: ";
  printNumber(os, gemmWgradFlops);
  os << "\n  compute: ";
  printNumber(os, computeFlops);
  os << "\nflops per tensor-parallel group (x" << tensorParallelSize << "): ";
  printNumber(os, getTotalFlops() * tensorParallelSize);
  os << "\ncompute bytes per rank: ";
  printNumber(os, computeBytes);
  os << "\ncollectives:\n";
  for (const auto &[key, entry] : collectives) {
    os << "  " << key << ": " << entry.count << " ops, ";
    printNumber(os, entry.payloadBytes);
    os << " bytes\n";
  }
  os << "ops: " << numOps << "\n";
  for (const auto &[name, count] : opCounts)
    os << "  " << name << ": " << count << "\n";
  os << "unused results: " << numUnusedResults << "\n";
}
