//===- RuntimeMemory.cpp - What a lowered step allocates on a rank --------===//
//
// Read off the storage plan, so that ddp-run can refuse a run that cannot
// fit before any rank allocates, and ddp-step-stats can say what a step will
// need. The runtime's own allocations are counted as runtime/ makes them:
// ApiOptimizer.cpp gives each Adam-updated parameter 2 f32 moments per element and
// each updated 16-bit parameter an f32 main copy (per element in this rank's
// shard under the distributed optimizer), and backend computes 16-bit GEMMs and collectives on f32 copies.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/StoragePlan.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace ddp;

static bool is16Bit(Type type) {
  Type element = cast<RankedTensorType>(type).getElementType();
  return element.isF16() || element.isBF16();
}

static int64_t numElementsOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

RuntimeMemory ddp::estimateRuntimeMemory(const StoragePlan &plan) {
  RuntimeMemory memory;
  llvm::DenseSet<StringAttr> adamParams, updatedParams;
  func::FuncOp step = plan.step;
  Block &body = step.getBody().front();
  for (auto adam : body.getOps<AdamOp>())
    adamParams.insert(adam.getParamAttr().getAttr());
  updatedParams = adamParams;
  for (auto sgd : body.getOps<SGDOp>())
    updatedParams.insert(sgd.getParamAttr().getAttr());
  for (const PlannedParam &param : plan.params) {
    int64_t bytes = PlannedBuffer{param.dtype, param.numel}.getBytes();
    // A parameter stored in its gathered bucket is in the buffers' bytes.
    if (!param.inBucket)
      memory.paramBytes += bytes;
    memory.largestParamBytes = std::max(memory.largestParamBytes, bytes);
    ParamOp op = param.op;
    StringAttr name = op.getSymNameAttr();
    if (adamParams.contains(name))
      memory.optimizerStateBytes += 2 * param.numel * int64_t(sizeof(float));
    if (updatedParams.contains(name) &&
        is16Bit(op.getTensorType()))
      memory.optimizerStateBytes += param.numel * int64_t(sizeof(float));
  }
  // A shard optimizer's state covers the parameter elements of this rank's
  // shard: at most the shard.
  auto addShardState = [&](Value shard, Type paramShard, int64_t perElement) {
    if (is16Bit(paramShard))
      ++perElement;
    memory.optimizerStateBytes +=
        perElement * numElementsOf(shard) * int64_t(sizeof(float));
  };
  for (auto shardSgd : body.getOps<ShardSGDOp>())
    addShardState(shardSgd.getGrad(), shardSgd.getResult().getType(), 0);
  for (auto shardAdam : body.getOps<ShardAdamOp>())
    addShardState(shardAdam.getGrad(), shardAdam.getResult().getType(), 2);
  for (const PlannedBuffer &buffer : plan.buffers)
    memory.bufferBytes += buffer.getBytes();

  // The CPU backend keeps one f32 copy per GEMM operand and result (each
  // grown to the largest) and widens a 16-bit collective's payload.
  int64_t gemmLhs = 0, gemmRhs = 0, gemmProduct = 0, collective = 0;
  for (Operation &op : body) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (!is16Bit(gemm.getResult().getType()))
        continue;
      gemmLhs = std::max(gemmLhs, numElementsOf(gemm.getLhs()));
      gemmRhs = std::max(gemmRhs, numElementsOf(gemm.getRhs()));
      gemmProduct = std::max(gemmProduct, numElementsOf(gemm.getResult()));
    } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
      if (is16Bit(reduce.getInput().getType()))
        collective = std::max(collective, numElementsOf(reduce.getInput()));
    } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
      if (is16Bit(scatter.getInput().getType()))
        collective = std::max(collective, numElementsOf(scatter.getInput()) +
                                              numElementsOf(scatter.getResult()));
    } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
      if (is16Bit(gather.getInput().getType()))
        collective = std::max(collective, numElementsOf(gather.getResult()));
    }
  }
  memory.workingCopyBytes =
      (gemmLhs + gemmRhs + gemmProduct + collective) * int64_t(sizeof(float));
  return memory;
}

int64_t RuntimeMemory::getTotalBytes() const {
  return paramBytes + bufferBytes + optimizerStateBytes + workingCopyBytes;
}

std::string ddp::formatBytes(int64_t bytes) {
  const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  unsigned unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (unit == 0)
    os << bytes << " bytes";
  else
    os << llvm::format("%.2f ", value) << units[unit];
  return text;
}
