//===- Seed.h - Deterministic integer-valued initial data -------*- C++ -*-===//
//
// Parameters and step inputs are filled with small integers so that every
// GEMM and every sum of a step is exact in f32: a scheduled and an
// unscheduled program then end with bitwise equal parameters whatever order
// a collective adds in, as long as they stay small, which at depth takes
// DDPRT_FLAG_BOUNDED_VALUES (boundElement, ElementOps.h). The same code runs
// on the host and on CUDA devices.
//
// Element i of a stream is  splitmix64(key + i) mod 5 - 2,  with
// key = splitmix64(seed ^ splitmix64(stream)). A parameter's stream is the
// FNV-1a-64 hash of its name; a step input's is that of "rank <r>", where r
// is the rank with its coordinate on a `pp` (pipeline) axis set to 0, so
// that every stage of a pipeline sees the same microbatches.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_SEED_H
#define DDPRT_SEED_H

#include "Element.h"

#include <cstdint>
#include <string>

namespace ddprt {

DDPRT_HOST_DEVICE inline uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t fnv1a64(const std::string &text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

inline uint64_t seedKey(uint64_t seed, uint64_t stream) {
  return splitMix64(seed ^ splitMix64(stream));
}

inline uint64_t paramStream(const std::string &name) { return fnv1a64(name); }

inline uint64_t inputStream(int rank) {
  return fnv1a64("rank " + std::to_string(rank));
}

/// The value of element `index`, in [-2, 2].
DDPRT_HOST_DEVICE inline int seededValue(uint64_t key, uint64_t index) {
  return int(splitMix64(key + index) % 5) - 2;
}

/// DDPRT_FLAG_FRACTIONAL_DATA's value of element `index`: a multiple of
/// 2^-28 in [-1/32, 1/32) with all 24 bits of an f32 mantissa in use (exact
/// in f32, so the host and a GPU store the same bits). For timing: a GPU
/// runs GEMMs on small integers, and on NaNs, faster than on such values.
/// Their standard deviation, 0.018, is near Megatron's init_method_std
/// (0.02), so that a step's products keep their scale: a GEMM of depth k
/// multiplies it by about 0.018 sqrt(k) (1.15 at 4096). Values in [-2, 2)
/// grew 100 times a GEMM, and llama2-7b's gradients overflowed bf16 in the
/// first step: every later step then ran on NaNs (docs/GpuCheck.md).
DDPRT_HOST_DEVICE inline float seededFraction(uint64_t key, uint64_t index) {
  return float(int64_t(splitMix64(key + index) >> 40) - (int64_t(1) << 23)) *
         (1.0f / 268435456.0f);
}

} // namespace ddprt

#endif // DDPRT_SEED_H
