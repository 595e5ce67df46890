//===- StepStats.cpp - Size and cost summary of a step --------------------===//

#include "ddp/Dialect/DDP/Analysis/StepStats.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshAxes.h"
#include "ddp/Dialect/DDP/IR/TensorBytes.h"
#include "ddp/Support/CheckedCount.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace ddp;

/// The axes as `dp,cp`.
static std::string joinAxes(ArrayAttr axes) {
  std::string joined;
  llvm::raw_string_ostream os(joined);
  llvm::interleave(
      axes, os,
      [&](Attribute axis) { os << cast<StringAttr>(axis).getValue(); }, ",");
  return joined;
}

static std::string getGroupKey(Operation *op,
                               CollectiveOpInterface collective) {
  return op->getName().stripDialect().str() + "[" +
         joinAxes(collective.getAxesAttr()) + "]";
}

/// The runtime keeps an f32 main copy of these (ApiOptimizer.cpp).
static bool is16BitFloat(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  return element.isF16() || element.isBF16();
}

/// Whether `ready` is packed into a bucket, directly or through the cast of
/// grad-reduce-in-fp32: the bucket then counts its bytes.
static bool isPacked(GradReadyOp ready) {
  return llvm::any_of(ready->getUsers(), [](Operation *user) {
    if (isa<BucketPackOp>(user))
      return true;
    return isa<CastOp>(user) &&
           llvm::any_of(user->getUsers(), llvm::IsaPred<BucketPackOp>);
  });
}

namespace {
/// ModelState's counts while they are summed over the module.
struct Totals {
  CheckedCount paramElements, paramBytes, gradBytes, gradPaddingBytes,
      mainParamBytes, optimizerStateBytes;
  struct Sharded {
    int64_t groupSize = 1;
    CheckedCount paramElements, paramBytes, mainParamBytes,
        optimizerStateBytes;
    /// The parameters whose elements paramElements holds: one sharded over
    /// these axes both as stored (FSDP) and in its optimizer counts once.
    llvm::DenseSet<mlir::StringAttr> counted;

    void addElements(ParamOp param) {
      if (counted.insert(param.getSymNameAttr()).second)
        paramElements += param.getTensorType().getNumElements();
    }
  };
  std::map<std::string, Sharded> sharded;
};
} // namespace

/// Adds the optimizer state of the ops in `function` to `state`.
static void addOptimizerState(func::FuncOp function, const SymbolTable &symbols,
                              Totals &state) {
  auto lookupParam = [&](FlatSymbolRefAttr name) {
    return symbols.lookup<ParamOp>(name.getAttr());
  };
  // Per element of a parameter: an f32 main copy when it is 16-bit, and
  // Adam's two f32 moments.
  auto getStateBytes = [](ParamOp param, bool adam) {
    CheckedCount elements = param.getTensorType().getNumElements();
    return std::pair{
        elements * (is16BitFloat(param.getTensorType()) ? 4 : 0),
        elements * (adam ? 8 : 0)};
  };
  auto addWhole = [&](FlatSymbolRefAttr name, bool adam) {
    ParamOp param = lookupParam(name);
    if (!param)
      return;
    auto [main, moments] = getStateBytes(param, adam);
    state.mainParamBytes += main;
    state.optimizerStateBytes += moments;
  };
  auto addSharded = [&](auto shardOp, bool adam) {
    auto mesh = symbols.lookup<MeshOp>(shardOp.getMeshAttr().getAttr());
    if (!mesh)
      return;
    Totals::Sharded &entry = state.sharded[joinAxes(shardOp.getAxesAttr())];
    entry.groupSize = getGroupSize(mesh, shardOp.getAxesAttr());
    for (auto name :
         shardOp.getParams().template getAsRange<FlatSymbolRefAttr>()) {
      ParamOp param = lookupParam(name);
      if (!param)
        continue;
      auto [main, moments] = getStateBytes(param, adam);
      entry.addElements(param);
      entry.mainParamBytes += main;
      entry.optimizerStateBytes += moments;
    }
  };
  function.walk([&](Operation *op) {
    if (auto sgd = dyn_cast<SGDOp>(op))
      addWhole(sgd.getParamAttr(), /*adam=*/false);
    else if (auto adam = dyn_cast<AdamOp>(op))
      addWhole(adam.getParamAttr(), /*adam=*/true);
    else if (auto shardSgd = dyn_cast<ShardSGDOp>(op))
      addSharded(shardSgd, /*adam=*/false);
    else if (auto shardAdam = dyn_cast<ShardAdamOp>(op))
      addSharded(shardAdam, /*adam=*/true);
  });
}

/// Adds the gradients of `function` to `state`: each bucket with its
/// padding, and each gradient reduced alone in its own type.
static void addGradients(func::FuncOp function, Totals &state) {
  function.walk([&](Operation *op) {
    if (auto pack = dyn_cast<BucketPackOp>(op)) {
      CheckedCount packed;
      for (Value gradient : pack->getOperands())
        packed += getTensorBytes(gradient.getType());
      state.gradBytes += packed;
      state.gradPaddingBytes +=
          getTensorBytes(pack.getResult().getType()) - packed;
    } else if (auto ready = dyn_cast<GradReadyOp>(op)) {
      if (!isPacked(ready))
        state.gradBytes += getTensorBytes(ready.getType());
    }
  });
}

/// `count`, or an error at `module` naming `what` when it does not fit.
static FailureOr<int64_t> getTotal(ModuleOp module, CheckedCount count,
                                   StringRef what) {
  if (std::optional<int64_t> value = count.get())
    return *value;
  return emitError(module.getLoc(), "the step's ")
         << what
         << " add up to more than 2^63 - 1; ddp counts them in int64 (no "
            "rank could hold them)";
}

/// The symbols `only` names (a stage program keeps the parameters it
/// names); nullopt without `only`, or where an op of it may hide references
/// (then every parameter counts, as for the whole module).
static std::optional<llvm::DenseSet<StringAttr>>
getNamedSymbols(func::FuncOp only) {
  if (!only)
    return std::nullopt;
  llvm::DenseSet<StringAttr> used;
  if (!forEachNamedSymbol(only, [&](StringAttr name) { used.insert(name); }))
    return std::nullopt;
  return used;
}

FailureOr<ModelState> ddp::computeModelState(ModuleOp module,
                                             func::FuncOp only) {
  Totals totals;
  SymbolTable symbols(module);
  std::optional<llvm::DenseSet<StringAttr>> named = getNamedSymbols(only);
  if (!named)
    only = nullptr;
  llvm::DenseSet<StringAttr> used =
      named.value_or(llvm::DenseSet<StringAttr>());
  // The parameters read whole somewhere, and the group of each that is read
  // as shards: one read only as shards is kept as shards
  // (ddp-shard-params).
  llvm::DenseSet<StringAttr> readWhole;
  llvm::DenseMap<StringAttr, GetParamShardOp> readAsShards;
  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    if (only && function != only)
      continue;
    function.walk([&](Operation *op) {
      if (auto get = dyn_cast<GetParamOp>(op))
        readWhole.insert(get.getParamAttr().getAttr());
      else if (auto shard = dyn_cast<GetParamShardOp>(op))
        for (auto name : shard.getParams().getAsRange<FlatSymbolRefAttr>())
          readAsShards.try_emplace(name.getAttr(), shard);
    });
  }
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (only && !used.contains(param.getSymNameAttr()))
      continue;
    totals.paramElements += param.getTensorType().getNumElements();
    auto shard = readAsShards.find(param.getSymNameAttr());
    if (shard != readAsShards.end() &&
        !readWhole.contains(param.getSymNameAttr())) {
      GetParamShardOp read = shard->second;
      if (auto mesh = symbols.lookup<MeshOp>(read.getMeshAttr().getAttr())) {
        Totals::Sharded &entry = totals.sharded[joinAxes(read.getAxesAttr())];
        entry.groupSize = getGroupSize(mesh, read.getAxesAttr());
        entry.paramBytes += getTensorBytes(param.getTensorType());
        entry.addElements(param);
        continue;
      }
    }
    totals.paramBytes += getTensorBytes(param.getTensorType());
  }
  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    if (only && function != only)
      continue;
    addGradients(function, totals);
    addOptimizerState(function, symbols, totals);
  }

  // Each field, and the sums print and getReplicatedBytes make of them.
  ModelState state;
  auto take = [&](int64_t &field, CheckedCount count, StringRef what) {
    FailureOr<int64_t> value = getTotal(module, count, what);
    if (succeeded(value))
      field = *value;
    return value;
  };
  if (failed(take(state.paramElements, totals.paramElements,
                  "parameter elements")) ||
      failed(take(state.paramBytes, totals.paramBytes, "parameter bytes")) ||
      failed(take(state.gradBytes, totals.gradBytes, "gradient bytes")) ||
      failed(take(state.gradPaddingBytes, totals.gradPaddingBytes,
                  "bucket padding bytes")) ||
      failed(take(state.mainParamBytes, totals.mainParamBytes,
                  "main parameter bytes")) ||
      failed(take(state.optimizerStateBytes, totals.optimizerStateBytes,
                  "optimizer state bytes")) ||
      failed(getTotal(module,
                      totals.paramBytes + totals.gradBytes +
                          totals.mainParamBytes + totals.optimizerStateBytes,
                      "parameter, gradient and optimizer bytes")))
    return failure();
  for (auto &[axes, entry] : totals.sharded) {
    ModelState::Sharded &sharded = state.sharded[axes];
    sharded.groupSize = entry.groupSize;
    if (failed(take(sharded.paramElements, entry.paramElements,
                    "sharded parameter elements")) ||
        failed(take(sharded.paramBytes, entry.paramBytes,
                    "sharded parameter bytes")) ||
        failed(take(sharded.mainParamBytes, entry.mainParamBytes,
                    "sharded main parameter bytes")) ||
        failed(take(sharded.optimizerStateBytes, entry.optimizerStateBytes,
                    "sharded optimizer state bytes")) ||
        failed(getTotal(module,
                        entry.paramBytes + entry.mainParamBytes +
                            entry.optimizerStateBytes,
                        "sharded bytes")))
      return failure();
  }
  return state;
}

FailureOr<ParamCounts> ddp::countParams(ModuleOp module, func::FuncOp only) {
  std::optional<llvm::DenseSet<StringAttr>> named = getNamedSymbols(only);
  if (!named)
    only = nullptr;
  llvm::DenseSet<StringAttr> used =
      named.value_or(llvm::DenseSet<StringAttr>());
  int64_t tensorParallelSize = 1, expertParallelSize = 1,
          expertTensorParallelSize = 1;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    tensorParallelSize = getTensorParallelSize(mesh);
    expertParallelSize = getExpertParallelSize(mesh);
    expertTensorParallelSize = getExpertTensorParallelSize(mesh);
    break;
  }
  ParamCounts counts;
  CheckedCount localElements, modelElements;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (only && !used.contains(param.getSymNameAttr()))
      continue;
    int64_t elements = param.getTensorType().getNumElements();
    // tp x ep may exceed int64 on its own when the mesh has more axes.
    // An expert's tp_dim splits it over the expert-tensor-parallel group.
    int64_t splits = param.getExpert() ? expertTensorParallelSize
                                       : tensorParallelSize;
    CheckedCount copies = CheckedCount(param.getTpDim() ? splits : 1) *
                          (param.getExpert() ? expertParallelSize : 1);
    ++counts.numParams;
    localElements += elements;
    modelElements += copies * elements;
  }
  FailureOr<int64_t> local =
      getTotal(module, localElements, "parameter elements");
  if (failed(local))
    return failure();
  FailureOr<int64_t> model = getTotal(
      module, modelElements,
      "parameter elements of the whole model (each counted once per "
      "tensor- or expert-parallel rank that holds a part)");
  if (failed(model))
    return failure();
  counts.localParamElements = *local;
  counts.modelParamElements = *model;
  return counts;
}

FailureOr<StepStats> ddp::computeStepStats(ModuleOp module, func::FuncOp only) {
  StepStats stats;
  // Counted whole where the program's parameters are not known.
  if (!getNamedSymbols(only))
    only = nullptr;
  stats.ofOneFunction = bool(only);
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
    stats.tensorParallelSize = getTensorParallelSize(mesh);
    stats.expertParallelSize = getExpertParallelSize(mesh);
    break;
  }

  FailureOr<ParamCounts> counts = countParams(module, only);
  if (failed(counts))
    return failure();
  stats.numParams = counts->numParams;
  stats.localParamElements = counts->localParamElements;
  stats.modelParamElements = counts->modelParamElements;
  FailureOr<ModelState> state = computeModelState(module, only);
  if (failed(state))
    return failure();
  stats.modelState = std::move(*state);

  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    if (only && function != only)
      continue;
    function.walk([&](Operation *op) {
      if (op == function.getOperation())
        return;
      ++stats.numOps;
      ++stats.opCounts[op->getName().getStringRef().str()];
      stats.numUnusedResults += llvm::count_if(
          op->getResults(), [](Value result) { return result.use_empty(); });
      // Routed ops count the rows balanced routing fills of their buffers.
      if (auto gemm = dyn_cast<GemmOp>(op)) {
        auto [m, n, k] = getCostedGemmShape(gemm);
        double flops = 2.0 * double(m) * double(n) * double(k);
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
        stats.computeFlops +=
            compute.getFlops().convertToDouble() * getRoutedFill(op);
        stats.computeBytes +=
            compute.getBytes().convertToDouble() * getRoutedFill(op);
      } else if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
        RankedTensorType payload = collective.getPayload().getType();
        StepStats::CollectiveStats &entry =
            stats.collectives[getGroupKey(op, collective)];
        ++entry.count;
        entry.payloadBytes +=
            double(getTensorBytes(payload)) * getRoutedFill(op);
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
  os << "parameters: " << modelParamElements
     << (ofOneFunction ? " in this program's part of the model, "
                       : " in model, ")
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

double ModelState::getBytesPerRank() const {
  double total = double(getReplicatedBytes());
  for (const auto &[axes, entry] : sharded)
    total += double(entry.getBytes()) / double(entry.groupSize);
  return total;
}

void ModelState::print(llvm::raw_ostream &os) const {
  const ModelState &state = *this;
  os << "model state per rank (bytes, as Megatron-LM counts it):\n"
     << "  parameters: " << state.paramBytes << "\n"
     << "  gradients: " << state.gradBytes << "\n"
     << "  main parameters: " << state.mainParamBytes << "\n"
     << "  optimizer state: " << state.optimizerStateBytes << "\n";
  for (const auto &[axes, sharded] : state.sharded) {
    os << "  sharded over [" << axes << "] (" << sharded.groupSize
       << " ranks; summed over them, " << sharded.paramElements
       << " parameter elements): ";
    if (sharded.paramBytes)
      os << "parameters " << sharded.paramBytes << ", ";
    os << "main parameters " << sharded.mainParamBytes << ", optimizer state "
       << sharded.optimizerStateBytes << "\n";
  }

  // The total per rank, R + S/n for each group size n, and per parameter
  // in Megatron's form (a + b/n) when the bytes are whole per parameter.
  int64_t replicated = state.getReplicatedBytes();
  int64_t params = paramElements;
  std::string sum = std::to_string(replicated);
  std::string perParam = params && replicated % params == 0
                             ? std::to_string(replicated / params)
                             : "";
  double total = state.getBytesPerRank();
  bool whole = true;
  for (const auto &[axes, sharded] : state.sharded) {
    int64_t groupSize = sharded.groupSize;
    int64_t bytes = sharded.getBytes();
    sum += " + " + std::to_string(bytes) + "/" + std::to_string(groupSize);
    whole &= bytes % groupSize == 0;
    if (!perParam.empty() && bytes % params == 0)
      perParam += " + " + std::to_string(bytes / params) + "/" +
                  std::to_string(groupSize);
    else
      perParam.clear();
  }
  os << "  total: " << sum;
  if (!state.sharded.empty()) {
    os << " = ";
    if (whole)
      printNumber(os, total);
    else
      os << llvm::format("%.2f", total);
  }
  if (!perParam.empty())
    os << " (" << perParam << " bytes x " << params << " parameters)";
  else if (params)
    os << llvm::format(" (%.4g bytes x ", total / double(params)) << params
       << " parameters)";
  os << "\n  not in Megatron's count: gradient bucket padding "
     << state.gradPaddingBytes << "\n";
}
