//===- BufferReuse.h - Buffers whose lives do not meet share bytes -*- C++ -*-===//
//
// The storage plan gives every tensor value a buffer; this places the
// buffers in arenas, so that a buffer whose values are dead gives its bytes
// to one written later, as a caching allocator would at run time
// (docs/Lowering.md, Storage, rule 9).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_ANALYSIS_BUFFERREUSE_H
#define DDP_DIALECT_DDP_ANALYSIS_BUFFERREUSE_H

#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace ddp {

/// Every buffer in a shared arena starts at a multiple of this: cudaMalloc's
/// alignment, which cuBLAS and NCCL expect of their operands.
constexpr int64_t kArenaAlignment = 256;

/// The step positions over which a buffer holds a value, both included: from
/// the first write into it to the last read of it (an asynchronous op reads
/// and writes until the wait that completes it).
struct BufferLife {
  unsigned first = 0;
  unsigned last = 0;
};

/// Where buffers lie in one arena, and the arena's size.
struct ArenaPacking {
  llvm::SmallVector<int64_t> offsets;
  int64_t bytes = 0;
};

/// Byte offsets in one arena for buffers of `bytes` living over `lives`, such
/// that two buffers whose lives meet share no byte. It walks the step's
/// positions as a caching allocator runs: at a buffer's first position it
/// takes the smallest free block that fits (growing the arena when none
/// does), after its last it frees the block, merged with free neighbours.
/// Sizes are rounded up to kArenaAlignment. Where the arena would pass
/// INT64_MAX bytes its size is INT64_MAX and every offset 0: no arena holds
/// the buffers.
ArenaPacking packArena(llvm::ArrayRef<int64_t> bytes,
                       llvm::ArrayRef<BufferLife> lives);

/// Whether the gradients `pack` packs leave padding in its bucket. The
/// padding must stay as ddprt_alloc zeroed it, since the bucket's reduction
/// and ddp.check_finite read it: such a bucket shares no arena.
bool leavesBucketPadding(BucketPackOp pack);

} // namespace ddp

#endif // DDP_DIALECT_DDP_ANALYSIS_BUFFERREUSE_H
