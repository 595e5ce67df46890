//===- BufferReuse.cpp - Buffers whose lives do not meet share bytes ------===//

#include "ddp/Dialect/DDP/Analysis/BufferReuse.h"

#include "StepAnalysis.h"
#include "ddp/Dialect/DDP/Analysis/StoragePlan.h"
#include "ddp/Runtime/ddprt.h"
#include "ddp/Support/CheckedCount.h"

#include "llvm/Support/MathExtras.h"

#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>

using namespace mlir;
using namespace ddp;

namespace {
/// The free blocks of an arena, by offset (to merge neighbours) and by size
/// (to find the best fit), and its end.
class ArenaAllocator {
public:
  /// The block's offset; none when the arena would pass INT64_MAX bytes
  /// (every size and sum below stays under it until then).
  std::optional<int64_t> allocate(int64_t size) {
    auto fit = bySize.lower_bound({size, std::numeric_limits<int64_t>::min()});
    if (fit != bySize.end()) {
      auto [blockSize, offset] = *fit;
      erase(offset, blockSize);
      if (blockSize > size)
        insert(offset + size, blockSize - size);
      return offset;
    }
    // None fits: the arena grows, from the free block at its end if any.
    int64_t offset = end;
    if (!byOffset.empty()) {
      auto [lastOffset, lastSize] = *std::prev(byOffset.end());
      if (lastOffset + lastSize == end) {
        erase(lastOffset, lastSize);
        offset = lastOffset;
      }
    }
    if (offset > std::numeric_limits<int64_t>::max() - size)
      return std::nullopt;
    end = offset + size;
    return offset;
  }

  void release(int64_t offset, int64_t size) {
    auto next = byOffset.lower_bound(offset);
    if (next != byOffset.end() && next->first == offset + size) {
      size += next->second;
      erase(next->first, next->second);
    }
    next = byOffset.lower_bound(offset);
    if (next != byOffset.begin()) {
      auto [previousOffset, previousSize] = *std::prev(next);
      if (previousOffset + previousSize == offset) {
        erase(previousOffset, previousSize);
        offset = previousOffset;
        size += previousSize;
      }
    }
    insert(offset, size);
  }

  int64_t getEnd() const { return end; }

private:
  void insert(int64_t offset, int64_t size) {
    byOffset[offset] = size;
    bySize.insert({size, offset});
  }
  void erase(int64_t offset, int64_t size) {
    byOffset.erase(offset);
    bySize.erase({size, offset});
  }

  std::map<int64_t, int64_t> byOffset;
  std::set<std::pair<int64_t, int64_t>> bySize;
  int64_t end = 0;
};
} // namespace

ArenaPacking ddp::packArena(ArrayRef<int64_t> bytes,
                            ArrayRef<BufferLife> lives) {
  assert(bytes.size() == lives.size() && "one life per buffer");
  ArenaPacking packing;
  packing.offsets.assign(bytes.size(), 0);
  SmallVector<unsigned> order(bytes.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return lives[a].first < lives[b].first;
  });
  auto getBlockSize = [&](unsigned index) {
    // A zero-sized buffer still gets an address of its own in the arena.
    int64_t size = std::max<int64_t>(bytes[index], 1);
    // Past the last multiple of the alignment no arena holds it: INT64_MAX
    // makes the allocation fail.
    if (size > std::numeric_limits<int64_t>::max() / kArenaAlignment *
                   kArenaAlignment)
      return std::numeric_limits<int64_t>::max();
    return int64_t(llvm::alignTo(size, kArenaAlignment));
  };
  // The buffers holding a value, the one whose life ends first on top.
  using Live = std::pair<unsigned, unsigned>; // last position, index
  std::priority_queue<Live, std::vector<Live>, std::greater<Live>> live;
  ArenaAllocator arena;
  for (unsigned index : order) {
    // Lives are closed: one that ends where this one starts still holds
    // its bytes (an op reads its operands while it writes its result).
    while (!live.empty() && live.top().first < lives[index].first) {
      unsigned dead = live.top().second;
      live.pop();
      arena.release(packing.offsets[dead], getBlockSize(dead));
    }
    std::optional<int64_t> offset = arena.allocate(getBlockSize(index));
    if (!offset) {
      // No arena holds them: the caller keeps every buffer apart.
      packing.offsets.assign(bytes.size(), 0);
      packing.bytes = std::numeric_limits<int64_t>::max();
      return packing;
    }
    packing.offsets[index] = *offset;
    live.push({lives[index].last, index});
  }
  packing.bytes = arena.getEnd();
  return packing;
}

bool ddp::leavesBucketPadding(BucketPackOp pack) {
  SmallVector<std::pair<int64_t, int64_t>> slices;
  for (auto [grad, offset] :
       llvm::zip_equal(pack.getGrads(), pack.getOffsets()))
    slices.push_back(
        {offset, offset + cast<RankedTensorType>(grad.getType())
                              .getNumElements()});
  llvm::sort(slices);
  int64_t covered = 0;
  for (auto [begin, end] : slices) {
    if (begin > covered)
      return true;
    covered = std::max(covered, end);
  }
  return covered < cast<RankedTensorType>(pack.getBucket().getType())
                       .getNumElements();
}

void ddp::placeBuffersInArenas(StoragePlan &plan, const StepAnalysis &analysis,
                               bool reuseBuffers) {
  constexpr unsigned kNoValue = std::numeric_limits<unsigned>::max();
  size_t numBuffers = plan.buffers.size();
  SmallVector<BufferLife> lives(numBuffers, {kNoValue, 0});
  for (auto &[value, storage] : plan.storage) {
    if (storage.kind != Storage::Kind::Buffer)
      continue;
    Operation *producer = value.getDefiningOp();
    BufferLife &life = lives[storage.index];
    unsigned first = producer ? analysis.getPosition(producer) : 0;
    // An asynchronous op writes its result until the wait that completes
    // it, read or not.
    unsigned last = std::max({first, analysis.getLastUse(value),
                              producer ? analysis.getUseEnd(producer) : 0});
    life.first = std::min(life.first, first);
    life.last = std::max(life.last, last);
  }

  SmallVector<bool> shareable(numBuffers, reuseBuffers);
  for (unsigned index : plan.inputBuffers)
    shareable[index] = false;
  for (const PlannedParam &param : plan.params)
    if (param.inBucket)
      shareable[param.inBucket->index] = false;
  func::FuncOp step = plan.step;
  for (auto pack : step.getBody().front().getOps<BucketPackOp>())
    if (leavesBucketPadding(pack))
      shareable[plan.storage.lookup(pack.getBucket()).index] = false;

  SmallVector<unsigned> shared;
  SmallVector<int64_t> sharedBytes;
  SmallVector<BufferLife> sharedLives;
  for (unsigned index = 0; index < numBuffers; ++index) {
    if (!shareable[index] || lives[index].first == kNoValue)
      continue;
    shared.push_back(index);
    sharedBytes.push_back(plan.buffers[index].getBytes());
    sharedLives.push_back(lives[index]);
  }

  plan.arenas.clear();
  SmallVector<bool> inShared(numBuffers, false);
  // A shared arena only where it saves bytes: where no two lives are apart,
  // each buffer keeps an arena of its own, as without reuse.
  ArenaPacking packing = packArena(sharedBytes, sharedLives);
  CheckedCount unshared;
  for (int64_t bytes : sharedBytes)
    unshared += bytes;
  if (packing.bytes < unshared.getOr(std::numeric_limits<int64_t>::max())) {
    // ddprt_alloc counts elements: the arena is f32 words (its size is a
    // multiple of kArenaAlignment).
    plan.arenas.push_back({DDPRT_DTYPE_F32, packing.bytes / 4});
    for (auto [index, offset] : llvm::zip_equal(shared, packing.offsets)) {
      plan.buffers[index].arena = 0;
      plan.buffers[index].arenaOffset = offset;
      inShared[index] = true;
    }
  }
  for (auto [index, buffer] : llvm::enumerate(plan.buffers)) {
    if (inShared[index])
      continue;
    buffer.arena = plan.arenas.size();
    buffer.arenaOffset = 0;
    plan.arenas.push_back({buffer.dtype, buffer.numel});
  }
}
