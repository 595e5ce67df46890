//===- CudaStandIn.cpp - Bandwidth of the CUDA compute stand-in -----------===//
//
// On one GPU, times ddprt_compute's one-pass stand-in (no price to pay) on
// operands of a transformer layer's size (4096 tokens x 4096 hidden, bf16),
// in the cases that take its two paths: 16-byte vectors (every operand
// aligned, the result as long as the inputs, a weight that wraps by a
// multiple of 8) and element by element (an operand one element off
// alignment, a weight of odd length); then llama2-7b's stand-ins that the
// step runs furthest over their price (an embedding's gradient, whose
// input wraps 7.8 times, and the cross-entropy's gradient over 32000 logits
// a token); and Adam on a bf16 parameter. Each is timed 20 times back to
// back, so that the host's launch and wait do not count. Prints GB/s of the
// bytes the cost model counts, for comparison with its memory bandwidth
// (docs/GpuCheck.md). Then a llama2-7b GEMM back to back and between
// stand-ins, for the GEMMs' rate inside a step.
//
// Run: mpirun -np 1 ddprt-bench-cuda-stand-in (or without mpirun);
// --gemms-only: the GEMM alone, back to back for about 2 s (utils/gpu-check.sh
// samples the SM clock meanwhile).
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using ddprt::bench::now;

/// Median seconds of `repeats` runs of `run`, each synchronized.
template <typename Run>
double medianSeconds(ddprt_context *context, Run run, int repeats = 9) {
  run();
  CHECK_DDPRT(context, ddprt_synchronize(context));
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    double start = now();
    run();
    CHECK_DDPRT(context, ddprt_synchronize(context));
    times.push_back(now() - start);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  bool gemmsOnly = argc > 1 && std::string(argv[1]) == "--gemms-only";
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ddprt_context *context = nullptr;
  if (ddprt_init(DDPRT_ABI_VERSION, "dp=1", DDPRT_BACKEND_CUDA,
                 DDPRT_FLAG_RETURN_ERRORS | DDPRT_FLAG_FRACTIONAL_DATA, 0,
                 nullptr, &context) != DDPRT_OK) {
    std::printf("no CUDA backend here: %s\n", ddprt_last_error(nullptr));
    MPI_Finalize();
    return 0;
  }
  const int64_t numel = int64_t(4096) * 4096;
  const int32_t bf16 = DDPRT_DTYPE_BF16;
  // One element more than needed, so that a view one element in is
  // misaligned and still inside its buffer.
  void *a = nullptr, *b = nullptr, *out = nullptr, *weight = nullptr;
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, numel + 1, &a));
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, numel + 1, &b));
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, numel + 1, &out));
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, 4096 + 1, &weight));
  CHECK_DDPRT(context, ddprt_fill_input(context, a, bf16, numel + 1, 1));
  CHECK_DDPRT(context, ddprt_fill_input(context, b, bf16, numel + 1, 2));
  CHECK_DDPRT(context, ddprt_fill_input(context, weight, bf16, 4097, 3));
  // Per-token f32 statistics (a cross-entropy's maximum and sums).
  const int32_t f32 = DDPRT_DTYPE_F32, f16 = DDPRT_DTYPE_F16;
  void *stats = nullptr;
  CHECK_DDPRT(context, ddprt_alloc(context, f32, 4096, &stats));
  CHECK_DDPRT(context, ddprt_fill_input(context, stats, f32, 4096, 6));
  auto offset = [](void *data, int64_t elements) {
    return static_cast<void *>(static_cast<char *>(data) + 2 * elements);
  };

  struct Case {
    const char *name;
    std::vector<ddprt_tensor> inputs;
    ddprt_tensor result;
  };
  // llama2-7b's embedding gradient (32000 x 4096 from 4096 tokens: the
  // tokens' gradient wraps 7.8 times, the ids' f32 stand-ins 32000 times)
  // and its cross-entropy gradient (4096 tokens x 32000 logits, three f32
  // statistics a token).
  const int64_t vocab = 32000, table = vocab * 4096;
  void *tableGrad = nullptr, *logits = nullptr, *logitsGrad = nullptr;
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, table, &tableGrad));
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, table, &logits));
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, table, &logitsGrad));
  CHECK_DDPRT(context, ddprt_fill_input(context, logits, bf16, table, 7));
  const Case cases[] = {
      {"add, aligned (16-byte vectors)",
       {{a, numel, bf16, 0}, {b, numel, bf16, 0}},
       {out, numel, bf16, 0}},
      {"add, one input one element in (by element)",
       {{offset(a, 1), numel, bf16, 0}, {b, numel, bf16, 0}},
       {out, numel, bf16, 0}},
      {"norm, weight 4096 wraps (16-byte vectors)",
       {{a, numel, bf16, 0}, {weight, 4096, bf16, 0}},
       {out, numel, bf16, 0}},
      {"norm, weight 4095 wraps (by element)",
       {{a, numel, bf16, 0}, {weight, 4095, bf16, 0}},
       {out, numel, bf16, 0}},
      {"cross-entropy grad, bf16 + 3 f32 per token",
       {{a, numel, bf16, 0},
        {stats, 4096, f32, 0},
        {stats, 4096, f32, 0},
        {stats, 4096, f32, 0}},
       {out, numel, bf16, 0}},
      {"add, bf16 + f16 (16-byte vectors, any dtypes)",
       {{a, numel, bf16, 0}, {b, numel, f16, 0}},
       {out, numel, bf16, 0}},
      {"llama2-7b embedding_grad (input wraps 7.8 times)",
       {{a, numel, bf16, 0}, {stats, 4096, f32, 0}},
       {tableGrad, table, bf16, 0}},
      {"llama2-7b cross_entropy_grad (4096 x 32000)",
       {{logits, table, bf16, 0},
        {stats, 4096, f32, 0},
        {stats, 4096, f32, 0},
        {stats, 4096, f32, 0}},
       {logitsGrad, table, bf16, 0}},
  };
  std::printf("ddprt CUDA compute stand-in, %lld x bf16 per operand, median "
              "of 9\n\n%-46s %10s %10s\n",
              (long long)numel, "case", "ms", "GB/s");
  for (const Case &c : cases) {
    if (gemmsOnly)
      break;
    // What the cost model counts: the result, and each 16-bit input once
    // (a wrapped weight or per-token statistics stay in cache).
    double bytes = double(c.result.numel) * 2;
    for (const ddprt_tensor &input : c.inputs)
      if (input.dtype != f32)
        bytes += double(std::min(input.numel, c.result.numel)) * 2;
    const int backToBack = 20;
    double seconds = medianSeconds(context, [&] {
      for (int i = 0; i < backToBack; ++i)
        CHECK_DDPRT(context,
                    ddprt_compute(context, "bench", 0, 0, c.inputs.data(),
                                  int32_t(c.inputs.size()), &c.result, 1));
    }) / backToBack;
    std::printf("%-46s %10.3f %10.0f\n", c.name, seconds * 1e3,
                bytes / seconds / 1e9);
    std::printf("row|stand-in: %s|%.0f GB/s (%.3f ms)\n", c.name,
                bytes / seconds / 1e9, seconds * 1e3);
  }

  // Adam on a bf16 parameter: gradient, main copy read and written, m and
  // v read and written, the parameter written (28 bytes per element).
  int32_t param = -1;
  if (!gemmsOnly) {
    CHECK_DDPRT(context,
                ddprt_param_register(context, "w", bf16, numel, 4, &param));
    double seconds = medianSeconds(context, [&] {
      CHECK_DDPRT(context, ddprt_adam(context, param, bf16, b, 1e-4, 0.9,
                                      0.95, 1e-8));
    });
    double bytes = 28.0 * double(numel);
    std::printf("%-46s %10.3f %10.0f\n",
                "adam, bf16 parameter (28 B/element)", seconds * 1e3,
                bytes / seconds / 1e9);
    std::printf("row|adam, bf16 parameter|%.0f GB/s (%.3f ms, 28 B per "
                "element)\n",
                bytes / seconds / 1e9, seconds * 1e3);
  }

  // A llama2-7b GEMM (4096 x 12288 x 4096, bf16) through cuBLAS, 20 back
  // to back (as ../shared/data/h100-gemm-measurements.json timed it), and
  // 20 each followed by the aligned add above (as a step interleaves them):
  // a GPU that is held under its power limit by GEMMs alone clocks higher
  // between memory-bound kernels.
  const int64_t gm = 4096, gn = 12288, gk = 4096;
  void *lhs = nullptr, *rhs = nullptr, *product = nullptr;
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, gm * gk, &lhs));
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, gk * gn, &rhs));
  CHECK_DDPRT(context, ddprt_alloc(context, bf16, gm * gn, &product));
  CHECK_DDPRT(context, ddprt_fill_input(context, lhs, bf16, gm * gk, 4));
  CHECK_DDPRT(context, ddprt_fill_input(context, rhs, bf16, gk * gn, 5));
  const Case &add = cases[0];
  auto gemm = [&] {
    CHECK_DDPRT(context, ddprt_gemm(context, bf16, 0, 0, gm, gn, gk, lhs, rhs,
                                    product, "bench"));
  };
  auto addOnce = [&] {
    CHECK_DDPRT(context, ddprt_compute(context, "bench", 0, 0,
                                       add.inputs.data(),
                                       int32_t(add.inputs.size()), &add.result,
                                       1));
  };
  const int gemms = 20;
  double flops = 2.0 * double(gm) * double(gn) * double(gk);
  if (gemmsOnly) {
    double sustained = medianSeconds(context, [&] {
      for (int i = 0; i < 4000; ++i)
        gemm();
    }, 1) / 4000;
    std::printf("row|gemm 4096x12288x4096 bf16, 4000 back to back|%.0f us "
                "(%.0f TFLOP/s)\n",
                sustained * 1e6, flops / sustained / 1e12);
  }
  double alone = medianSeconds(context, [&] {
    for (int i = 0; i < gemms; ++i)
      gemm();
  }, 5) / gemms;
  double adds = medianSeconds(context, [&] {
    for (int i = 0; i < gemms; ++i)
      addOnce();
  }, 5) / gemms;
  double mixed = medianSeconds(context, [&] {
    for (int i = 0; i < gemms; ++i) {
      gemm();
      addOnce();
    }
  }, 5) / gemms - adds;
  std::printf("%-46s %10.3f %10.0f TFLOP/s\n", "gemm 4096x12288x4096, back to back",
              alone * 1e3, flops / alone / 1e12);
  std::printf("%-46s %10.3f %10.0f TFLOP/s\n", "gemm, each after an add",
              mixed * 1e3, flops / mixed / 1e12);
  std::printf("row|gemm 4096x12288x4096 bf16|%.0f us back to back (%.0f "
              "TFLOP/s), %.0f us each after an add (%.0f TFLOP/s)\n",
              alone * 1e6, flops / alone / 1e12, mixed * 1e6,
              flops / mixed / 1e12);

  for (void *buffer :
       {a, b, out, weight, stats, lhs, rhs, product, tableGrad, logits,
        logitsGrad})
    CHECK_DDPRT(context, ddprt_free(context, buffer));
  CHECK_DDPRT(context, ddprt_finalize(context));
  MPI_Finalize();
  return 0;
}
