//===- BucketLayout.cpp - Gradients, buckets and the layout report --------===//

#include "ddp/Bucketing/BucketLayout.h"

#include "ddp/Support/FormatNumber.h"
#include "llvm/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cassert>
#include <limits>
#include <numeric>

using namespace ddp::bucketing;

/// The most bytes all gradients, with their worst-case start padding, may
/// take. Bucket cursors, padded sizes and byte counts are int64; below 2^62
/// they stay clear of overflow even after the end padding (at most
/// kMaxGroupSize x 2^16 elements of 8 bytes).
static constexpr int64_t kMaxTotalBytes = int64_t(1) << 62;
/// Megatron's gradient start alignment, in elements (see padGradientStart).
static constexpr int64_t kGradientStartAlignment = 64;

llvm::Error
ddp::bucketing::validateGradients(llvm::ArrayRef<Gradient> gradients) {
  llvm::StringSet<> names;
  int64_t totalBytes = 0;
  for (const Gradient &gradient : gradients) {
    if (gradient.numel < 1)
      return llvm::createStringError(
          "gradient of '%s' has %lld elements; bucketing needs at least one",
          gradient.name.c_str(), static_cast<long long>(gradient.numel));
    if (gradient.groupSize < 1)
      return llvm::createStringError(
          "gradient of '%s' is reduced over a group of %lld ranks",
          gradient.name.c_str(), static_cast<long long>(gradient.groupSize));
    if (gradient.groupSize > kMaxGroupSize)
      return llvm::createStringError(
          "gradient of '%s' is reduced over a group of %lld ranks; "
          "bucketing supports at most %lld",
          gradient.name.c_str(), static_cast<long long>(gradient.groupSize),
          static_cast<long long>(kMaxGroupSize));
    int64_t paddedNumel, bytes;
    if (llvm::AddOverflow(gradient.numel, kGradientStartAlignment,
                          paddedNumel) ||
        llvm::MulOverflow(paddedNumel, getElementBytes(gradient.reduceType),
                          bytes) ||
        llvm::AddOverflow(totalBytes, bytes, totalBytes) ||
        totalBytes > kMaxTotalBytes)
      return llvm::createStringError(
          "the gradients up to '%s' take more than 2^62 bytes; bucketing "
          "supports no more",
          gradient.name.c_str());
    if (!names.insert(gradient.name).second)
      return llvm::createStringError("parameter '%s' has two gradients",
                                     gradient.name.c_str());
  }
  return llvm::Error::success();
}

int64_t ddp::bucketing::alignTo(int64_t value, int64_t divisor) {
  assert(divisor > 0 && "alignment must be positive");
  return (value + divisor - 1) / divisor * divisor;
}

int64_t ddp::bucketing::getBucketEndDivisor(const PaddingOptions &padding,
                                            int64_t groupSize) {
  if (!padding.distributedOptimizer)
    return 1;
  // Megatron: 256-byte aligned bucket starts (128 elements of >= 16 bits)
  // that also split evenly over the group; 2^16 on top keeps NCCL's per-rank
  // ring chunks a large power of two.
  int64_t divisor = std::lcm(groupSize, int64_t(128));
  if (padding.padForHighNcclBusbw)
    divisor = std::lcm(divisor, int64_t(1) << 16);
  return divisor;
}

int64_t ddp::bucketing::padGradientStart(const PaddingOptions &padding,
                                         int64_t cursor) {
  // Megatron: 128-byte aligned parameter starts (64 elements of >= 16 bits).
  return padding.distributedOptimizer
             ? alignTo(cursor, kGradientStartAlignment)
             : cursor;
}

Bucket ddp::bucketing::layOutBucket(llvm::ArrayRef<Gradient> gradients,
                                    llvm::ArrayRef<size_t> members,
                                    const PaddingOptions &padding) {
  assert(!members.empty() && "a bucket needs at least one gradient");
  const Gradient &first = gradients[members.front()];
  Bucket bucket;
  bucket.type = first.reduceType;
  bucket.group = first.group;
  bucket.groupSize = first.groupSize;
  int64_t cursor = 0;
  for (size_t member : members) {
    const Gradient &gradient = gradients[member];
    assert(gradient.reduceType == bucket.type &&
           gradient.group == bucket.group &&
           "a bucket mixes element types or groups");
    cursor = padGradientStart(padding, cursor);
    bucket.entries.push_back({member, cursor});
    cursor += gradient.numel;
  }
  bucket.numel = cursor;
  bucket.paddedNumel =
      alignTo(cursor, getBucketEndDivisor(padding, bucket.groupSize));
  return bucket;
}

size_t ddp::bucketing::getLastReadyIndex(const Bucket &bucket) {
  size_t last = 0;
  for (const BucketEntry &entry : bucket.entries)
    last = std::max(last, entry.gradient);
  return last;
}

void ddp::bucketing::sortByCompletion(std::vector<Bucket> &buckets) {
  // Every gradient is in exactly one bucket, so completion points are
  // distinct and the order is total.
  llvm::sort(buckets, [](const Bucket &a, const Bucket &b) {
    return getLastReadyIndex(a) < getLastReadyIndex(b);
  });
}

/// The "shard_numel" and "shards" of `bucket`; see writeLayoutJSON.
static void writeShardsJSON(llvm::json::OStream &json, const Bucket &bucket,
                            llvm::ArrayRef<Gradient> gradients) {
  assert(bucket.paddedNumel % bucket.groupSize == 0 &&
         "a sharded bucket splits evenly over its group");
  int64_t shardNumel = bucket.paddedNumel / bucket.groupSize;
  json.attribute("shard_numel", shardNumel);
  json.attributeArray("shards", [&] {
    for (int64_t rank = 0; rank < bucket.groupSize; ++rank) {
      int64_t begin = rank * shardNumel, end = begin + shardNumel;
      json.object([&] {
        json.attribute("rank", rank);
        json.attribute("begin", begin);
        json.attribute("end", end);
        json.attributeArray("params", [&] {
          for (const BucketEntry &entry : bucket.entries) {
            const Gradient &gradient = gradients[entry.gradient];
            int64_t first = std::max(begin, entry.offset);
            int64_t last = std::min(end, entry.offset + gradient.numel);
            if (first >= last)
              continue;
            json.object([&] {
              json.attribute("name", gradient.name);
              json.attribute("begin", first - entry.offset);
              json.attribute("end", last - entry.offset);
            });
          }
        });
      });
    }
  });
}

void ddp::bucketing::writeLayoutJSON(llvm::json::OStream &json,
                                     const BucketLayout &layout,
                                     llvm::ArrayRef<Gradient> gradients,
                                     bool shards) {
  json.object([&] {
    json.attributeArray("buckets", [&] {
      for (auto [index, bucket] : llvm::enumerate(layout.buckets)) {
        json.object([&] {
          json.attribute("index", int64_t(index));
          json.attribute("dtype", stringifyElementType(bucket.type));
          json.attribute("group", bucket.group);
          json.attributeArray("params", [&] {
            for (const BucketEntry &entry : bucket.entries) {
              const Gradient &gradient = gradients[entry.gradient];
              json.object([&] {
                json.attribute("name", gradient.name);
                json.attribute("offset", entry.offset);
                json.attribute("numel", gradient.numel);
              });
            }
          });
          json.attribute("numel", bucket.numel);
          json.attribute("padded_numel", bucket.paddedNumel);
          if (shards)
            writeShardsJSON(json, bucket, gradients);
        });
      }
    });
  });
}

void ddp::bucketing::writeLayoutTable(llvm::raw_ostream &os,
                                      const BucketLayout &layout,
                                      llvm::ArrayRef<Gradient> gradients,
                                      bool shards) {
  os << llvm::format("%6s  %-6s %-5s %6s %12s %12s %11s", "bucket", "group",
                     "dtype", "params", "elements", "padded", "bytes");
  if (shards)
    os << llvm::format(" %12s", "shard/rank");
  os << "  parameters (first .. last)\n";
  int64_t elements = 0, padded = 0, bytes = 0, params = 0;
  for (auto [index, bucket] : llvm::enumerate(layout.buckets)) {
    int64_t bucketBytes = bucket.paddedNumel * getElementBytes(bucket.type);
    os << llvm::format("%6zu  %-6s %-5s %6zu %12lld %12lld %11s", index,
                       bucket.group.c_str(),
                       stringifyElementType(bucket.type).str().c_str(),
                       bucket.entries.size(), (long long)bucket.numel,
                       (long long)bucket.paddedNumel,
                       formatBytes(bucketBytes).c_str());
    if (shards)
      os << llvm::format(" %12lld", (long long)(bucket.paddedNumel /
                                                 std::max<int64_t>(
                                                     bucket.groupSize, 1)));
    if (!bucket.entries.empty()) {
      os << "  " << gradients[bucket.entries.front().gradient].name;
      if (bucket.entries.size() > 1)
        os << " .. " << gradients[bucket.entries.back().gradient].name;
    }
    os << "\n";
    elements += bucket.numel;
    padded += bucket.paddedNumel;
    bytes += bucketBytes;
    params += bucket.entries.size();
  }
  os << "total: " << layout.buckets.size() << " buckets, " << params
     << " parameters, " << elements << " elements, " << padded
     << " padded (" << formatBytes(bytes) << ")\n";
}
