//===- BufferReuseTest.cpp - Buffers apart in time share an arena ---------===//
//
// packArena's placements by hand (best fit, merged neighbours, growth from
// the free end, closed lives), and on random lives: no two buffers whose
// lives meet share a byte, and the arena lies between the most bytes live at
// one position and the sum of all.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/Analysis/BufferReuse.h"

#include "gtest/gtest.h"

#include <limits>
#include <random>

using namespace ddp;

namespace {

TEST(BufferReuse, ABufferTakesTheBytesOfOneDeadBeforeIt) {
  // Lives are closed: the second starts where the first ends, so they are
  // apart only from the third.
  ArenaPacking packing = packArena({256, 256, 256}, {{0, 1}, {1, 2}, {2, 3}});
  EXPECT_EQ(packing.offsets, (llvm::SmallVector<int64_t>{0, 256, 0}));
  EXPECT_EQ(packing.bytes, 512);
}

TEST(BufferReuse, SizesRoundUpToTheAlignment) {
  ArenaPacking packing = packArena({1, 0, 300}, {{0, 0}, {0, 0}, {0, 0}});
  EXPECT_EQ(packing.offsets, (llvm::SmallVector<int64_t>{0, 256, 512}));
  EXPECT_EQ(packing.bytes, 1024);
}

TEST(BufferReuse, FreedNeighboursMerge) {
  // A and B, freed together, make one block of 512 for C.
  ArenaPacking packing = packArena({256, 256, 512}, {{0, 1}, {0, 1}, {2, 3}});
  EXPECT_EQ(packing.offsets, (llvm::SmallVector<int64_t>{0, 256, 0}));
  EXPECT_EQ(packing.bytes, 512);
}

TEST(BufferReuse, TheSmallestFreeBlockThatFits) {
  // Free at position 2: [0, 512) and [768, 1024); D takes the smaller.
  ArenaPacking packing = packArena({512, 256, 256, 256},
                                   {{0, 1}, {0, 5}, {0, 1}, {2, 3}});
  EXPECT_EQ(packing.offsets, (llvm::SmallVector<int64_t>{0, 512, 768, 768}));
  EXPECT_EQ(packing.bytes, 1024);
}

TEST(BufferReuse, TheArenaGrowsFromItsFreeEnd) {
  // Free at position 2: [0, 256) and [512, 768), the arena's end; D needs
  // 512 and extends the block at the end instead of starting past it.
  ArenaPacking packing =
      packArena({256, 256, 256, 512}, {{0, 1}, {0, 5}, {0, 1}, {2, 3}});
  EXPECT_EQ(packing.offsets, (llvm::SmallVector<int64_t>{0, 256, 512, 512}));
  EXPECT_EQ(packing.bytes, 1024);
}

TEST(BufferReuse, BuffersNoArenaHoldsGetNone) {
  // Four of 2^61 live together, then one more: 2^63 bytes do not fit.
  int64_t huge = int64_t(1) << 61;
  ArenaPacking packing = packArena(
      {huge, huge, huge, huge, 256}, {{0, 1}, {0, 1}, {0, 1}, {0, 1}, {1, 2}});
  EXPECT_EQ(packing.bytes, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(packing.offsets, (llvm::SmallVector<int64_t>{0, 0, 0, 0, 0}));
  // Three fit, and the fourth after they die takes their merged block.
  packing = packArena({huge, huge, huge, 4 * (huge - 256)},
                      {{0, 1}, {0, 1}, {0, 1}, {2, 3}});
  EXPECT_EQ(packing.offsets,
            (llvm::SmallVector<int64_t>{0, huge, 2 * huge, 0}));
  EXPECT_EQ(packing.bytes, 4 * (huge - 256));
}

TEST(BufferReuse, RandomLivesNeverShareBytes) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    size_t count = 1 + random() % 200;
    llvm::SmallVector<int64_t> bytes;
    llvm::SmallVector<BufferLife> lives;
    for (size_t index = 0; index < count; ++index) {
      unsigned first = random() % 100;
      bytes.push_back(int64_t(random() % 5000));
      lives.push_back({first, first + unsigned(random() % 30)});
    }
    ArenaPacking packing = packArena(bytes, lives);
    ASSERT_EQ(packing.offsets.size(), count);
    auto blockOf = [&](size_t index) {
      int64_t size = std::max<int64_t>(bytes[index], 1);
      return (size + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    };
    int64_t sum = 0;
    for (size_t a = 0; a < count; ++a) {
      sum += blockOf(a);
      EXPECT_EQ(packing.offsets[a] % kArenaAlignment, 0);
      EXPECT_LE(packing.offsets[a] + bytes[a], packing.bytes);
      for (size_t b = a + 1; b < count; ++b) {
        bool livesMeet = lives[a].first <= lives[b].last &&
                         lives[b].first <= lives[a].last;
        bool bytesMeet = packing.offsets[a] < packing.offsets[b] + blockOf(b) &&
                         packing.offsets[b] < packing.offsets[a] + blockOf(a);
        EXPECT_FALSE(livesMeet && bytesMeet)
            << "buffers " << a << " and " << b << " in trial " << trial;
      }
    }
    int64_t mostLive = 0;
    for (unsigned position = 0; position < 130; ++position) {
      int64_t live = 0;
      for (size_t index = 0; index < count; ++index)
        if (lives[index].first <= position && position <= lives[index].last)
          live += blockOf(index);
      mostLive = std::max(mostLive, live);
    }
    EXPECT_GE(packing.bytes, mostLive);
    EXPECT_LE(packing.bytes, sum);
  }
}

} // namespace
