//===- StoragePlan.h - Where every tensor of a step lives -------*- C++ -*-===//
//
// The analysis half of ddp-lower-to-runtime: it checks that a step can be
// lowered and decides, before any IR changes, which buffer (or parameter)
// and which byte offset in it holds every tensor value. The rules are in
// docs/Lowering.md ("Storage").
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_ANALYSIS_STORAGEPLAN_H
#define DDP_DIALECT_DDP_ANALYSIS_STORAGEPLAN_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"
// formatBytes, which the users of the storage plan print with.
#include "ddp/Support/FormatNumber.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace ddp {

/// A tensor buffer of the plan, or an arena the setup allocates and the
/// teardown frees.
struct PlannedBuffer {
  int32_t dtype = 0; // DDPRT_DTYPE_*
  int64_t numel = 0;
  /// Where a buffer lies: at `arenaOffset` bytes into StoragePlan::arenas
  /// [arena] (docs/Lowering.md, Storage, rule 9). Unused for an arena.
  unsigned arena = 0;
  int64_t arenaOffset = 0;
  int64_t getBytes() const;
};

/// Where a tensor lives: a byte offset into a buffer or a parameter.
struct Storage {
  enum class Kind { Buffer, Param };
  Kind kind = Kind::Buffer;
  /// Index into StoragePlan::buffers or StoragePlan::params.
  unsigned index = 0;
  int64_t byteOffset = 0;
  /// A rank view: the value lies `groupRank x rankStride` bytes past
  /// byteOffset, groupRank being this rank's index in group `rankGroup`
  /// (an index into StoragePlan::groups), known at run time only. It is the
  /// rank's shard of a collective's buffer, which makes the collective in
  /// place in NCCL's sense.
  std::optional<unsigned> rankGroup = std::nullopt;
  int64_t rankStride = 0;

  bool isRankView() const { return rankGroup.has_value(); }
  /// The byte offset on the rank with index `groupRank` in rankGroup.
  int64_t getByteOffset(int64_t groupRank) const {
    return byteOffset + (isRankView() ? groupRank * rankStride : 0);
  }
};

/// A parameter as the runtime registers it.
struct PlannedParam {
  ParamOp op;
  int32_t dtype = 0;
  int64_t numel = 0;
  /// The slice of the gathered bucket the parameter is stored in (a buffer,
  /// never a rank view); none when the runtime allocates its storage
  /// (docs/Lowering.md, Storage, rule 8).
  std::optional<Storage> inBucket = std::nullopt;
  /// A parameter the module reads and writes only by its shards of one
  /// bucket (FSDP's units: ddp.get_param_shard, the shard optimizers and
  /// ddp.set_param_shard):
  /// the runtime stores this rank's elements of it only (docs/Lowering.md,
  /// Storage, rule 10).
  struct ShardLayout {
    unsigned group = 0; // into StoragePlan::groups
    int64_t offset = 0, shardNumel = 0;
  };
  std::optional<ShardLayout> storedShard = std::nullopt;
};

class StoragePlan {
public:
  /// Checks that `module` holds one lowerable step and plans its storage;
  /// emits an error at the offending op and fails otherwise. Reads the IR
  /// only.
  /// Without `reuseBuffers`, every buffer is an arena of its own.
  static mlir::FailureOr<StoragePlan> build(mlir::ModuleOp module,
                                            bool reuseBuffers = true);

  /// The bytes of all buffers, as if none shared an arena.
  int64_t getUnsharedBufferBytes() const;

  MeshOp mesh;
  mlir::func::FuncOp step;
  /// In declaration (= registration) order.
  llvm::SmallVector<PlannedParam> params;
  llvm::SmallVector<PlannedBuffer> buffers;
  /// What the setup allocates: buffers whose lives do not meet share an
  /// arena's bytes.
  llvm::SmallVector<PlannedBuffer> arenas;
  /// Process groups as the runtime names them ("dp", "dp,tp"), in the order
  /// the step first uses them; every rank creates them in this order.
  llvm::SmallVector<std::string> groups;
  /// The number of ranks in each group, in the order of `groups`.
  llvm::SmallVector<int64_t> groupSizes;
  /// The buffer of each step argument, in argument order.
  llvm::SmallVector<unsigned> inputBuffers;

  /// Storage of every tensor value of the step.
  llvm::DenseMap<mlir::Value, Storage> storage;
  /// The get_param ops whose result is a copy (the others alias the
  /// parameter).
  llvm::DenseSet<mlir::Operation *> copiedParams;
  /// For each bucket_pack, the indices of the gradients that were not
  /// produced in place and are copied into their slice.
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<unsigned>> packCopies;
  /// For each ddp.concat, the indices of the operands that were not
  /// produced in place and are copied into their rows.
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<unsigned>> concatCopies;
  /// How many gradients are produced directly in a bucket.
  int64_t numGradientsInBuckets = 0;
  /// How many reduce-scatters write the rank's shard of their input, and how
  /// many all-gathers read it from their result (rank views, no buffer).
  int64_t numInPlaceReduceScatters = 0;
  int64_t numInPlaceAllGathers = 0;
  /// How many all-reduces and scales write their result into their input.
  int64_t numInPlaceAllReduces = 0;
  int64_t numInPlaceScales = 0;
  /// How many parameters are stored in the bucket their all-gather fills.
  int64_t numParamsInBuckets = 0;

  /// The elements of `param` that the rank with index `groupRank` in its
  /// shard layout's group stores (all of them when it is stored whole).
  int64_t getStoredNumel(const PlannedParam &param, int64_t groupRank) const;
  /// The most elements of `param` any rank stores, bounded without visiting
  /// the ranks: its size, or its layout's shard size when smaller.
  int64_t getStoredNumelBound(const PlannedParam &param) const;
  /// How many parameters are stored as this rank's shard only.
  int64_t getNumShardStoredParams() const;

  unsigned getParamIndex(mlir::FlatSymbolRefAttr name) const;
  /// The group of mesh axes `axes`.
  unsigned getGroupIndex(mlir::ArrayAttr axes) const;

private:
  llvm::DenseMap<mlir::StringAttr, unsigned> paramIndex;
  llvm::DenseMap<mlir::ArrayAttr, unsigned> groupIndex;
};

/// ddp.grad_ready returns its operand: the value that actually holds a
/// gradient is found by looking through it.
mlir::Value lookThroughGradReady(mlir::Value value);

/// Checks, independently of the planner, that every tensor value's storage
/// lies inside its buffer or parameter (a rank view on every rank of its
/// group), that every view lies inside its base, that no two values that are
/// live at the same time share bytes unless one is a view of the other or
/// they are a collective's input and result in NCCL's in-place form, and
/// that no value aliasing a parameter is read after the optimizer overwrites
/// it. Emits an error at the offending op.
mlir::LogicalResult verifyStoragePlan(const StoragePlan &plan);

/// What running a lowered step allocates on one rank: an estimate from the
/// plan and from how the runtime allocates (exact for parameters, buffers
/// and optimizer state; the CPU backend's f32 working copies are bounded by
/// the largest GEMM and collective).
struct RuntimeMemory {
  /// Parameters, as the runtime registers them (a sharded one its shard).
  int64_t paramBytes = 0;
  /// The plan's arenas: inputs, activations, gradients and buckets, those
  /// whose lives do not meet in shared bytes.
  int64_t bufferBytes = 0;
  /// What the buffers would take with none sharing an arena (saturated).
  int64_t unsharedBufferBytes = 0;
  /// Adam's first and second moments, f32.
  int64_t optimizerStateBytes = 0;
  /// The CPU backend's f32 copies for 16-bit GEMMs and collectives.
  int64_t workingCopyBytes = 0;
  /// What reading the largest parameter whole takes (ddp-run --verify reads
  /// parameters one by one): its bytes, and for one stored sharded the
  /// buffers its gather fills.
  int64_t largestParamBytes = 0;
  /// The CPU backend's scratch under DDPRT_FLAG_DETERMINISTIC_REDUCTIONS
  /// (ddp-run --verify on more than 2 ranks), at its peak: the all-reduces
  /// and reduce-scatters in flight at once (issued and not yet waited, and
  /// a synchronous one), each holding its group's contributions in f32 (f64
  /// for f64), f32 copies of a 16-bit input and result, and the input scaled
  /// by 1/n for `avg`. Not in getTotalBytes, since the flag is the caller's;
  /// nullopt when it is more than int64 counts, which only a run that asks
  /// for the flag must refuse.
  std::optional<int64_t> deterministicReductionBytes = 0;

  int64_t getTotalBytes() const;
};
/// Fails, with an error at the step, when the total does not fit in int64.
mlir::FailureOr<RuntimeMemory> estimateRuntimeMemory(const StoragePlan &plan);

/// DDPRT_DTYPE_* of a float type the dialect allows.
int32_t getRuntimeDType(mlir::Type elementType);
/// Bytes of one element of a float type the dialect allows.
int64_t getElementBytes(mlir::Type elementType);

} // namespace ddp

#endif // DDP_DIALECT_DDP_ANALYSIS_STORAGEPLAN_H
