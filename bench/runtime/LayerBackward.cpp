//===- LayerBackward.cpp - libddprt vs hand-written MPI + GEMM calls ------===//
//
// One transformer layer's backward as the CPU runtime would run it: for each
// linear layer in reverse (fc2, fc1, proj, qkv) a dgrad and a wgrad GEMM,
// and the data-parallel all-reduce of the weight gradient once it is final.
// The same sequence is written directly against MPI and the runtime's GEMM
// kernel (FixedOrderGemm.h, compiled into this benchmark), and both
// run side by side in one job, interleaved iteration by iteration:
//
//   direct, blocking     fixedOrderGemm + MPI_Allreduce after each wgrad
//   ddprt, synchronous   ddprt_gemm + ddprt_all_reduce (no handle)
//   direct, nonblocking  fixedOrderGemm + MPI_Iallreduce, MPI_Waitall at end
//   ddprt, asynchronous  ddprt_gemm + ddprt_all_reduce with handles, waited
//                        at the end (the communication thread overlaps)
//
// and then the dispatch cost of one tiny op through each. Each time is the
// slowest rank's; the table shows the best and the median iteration (the
// best is what the code costs, the median what a shared machine gave).
// Prints on rank 0; run with `ninja run-ddprt-bench` or
//   mpirun -np 2 ddprt-bench-layer-backward [h tokens]
//
//===----------------------------------------------------------------------===//

#include "FixedOrderGemm.h"
#include "ddp/Runtime/ddprt.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(ddprt_context *context, const char *what) {
  std::fprintf(stderr, "bench: %s failed: %s\n", what,
               ddprt_last_error(context));
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

#define CHECK(context, call)                                                   \
  do {                                                                         \
    if ((call) != DDPRT_OK)                                                    \
      fail(context, #call);                                                    \
  } while (false)

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// One linear layer Y = X W with X: tokens x in, W: in x out.
struct Linear {
  const char *name;
  int in, out;
};

/// Buffers of one layer, in host memory for the direct variant and in
/// runtime buffers for ddprt (the same bytes on the CPU backend).
struct LayerBuffers {
  float *input, *outputGrad, *weight, *inputGrad, *weightGrad;
};

struct Shape {
  int hidden, tokens;
  std::vector<Linear> linears; // in backward order
};

Shape makeShape(int hidden, int tokens) {
  return {hidden,
          tokens,
          {{"fc2", 4 * hidden, hidden},
           {"fc1", hidden, 4 * hidden},
           {"proj", hidden, hidden},
           {"qkv", hidden, 3 * hidden}}};
}

std::vector<LayerBuffers>
allocateDirect(const Shape &shape, std::vector<std::vector<float>> &keep) {
  std::vector<LayerBuffers> layers;
  for (const Linear &linear : shape.linears) {
    auto buffer = [&](size_t numel, float value) {
      keep.emplace_back(numel, value);
      return keep.back().data();
    };
    size_t t = size_t(shape.tokens);
    layers.push_back({buffer(t * linear.in, 1), buffer(t * linear.out, 1),
                      buffer(size_t(linear.in) * linear.out, 1),
                      buffer(t * linear.in, 0),
                      buffer(size_t(linear.in) * linear.out, 0)});
  }
  return layers;
}

std::vector<LayerBuffers> allocateRuntime(ddprt_context *context,
                                          const Shape &shape) {
  std::vector<LayerBuffers> layers;
  uint64_t seed = 1;
  for (const Linear &linear : shape.linears) {
    auto buffer = [&](int64_t numel, bool fill) {
      void *data = nullptr;
      CHECK(context, ddprt_alloc(context, DDPRT_DTYPE_F32, numel, &data));
      if (fill)
        CHECK(context,
              ddprt_fill_input(context, data, DDPRT_DTYPE_F32, numel, seed++));
      return static_cast<float *>(data);
    };
    int64_t t = shape.tokens;
    layers.push_back({buffer(t * linear.in, true), buffer(t * linear.out, true),
                      buffer(int64_t(linear.in) * linear.out, true),
                      buffer(t * linear.in, false),
                      buffer(int64_t(linear.in) * linear.out, false)});
  }
  return layers;
}

/// dX = dY W^T (tokens x in), dW = X^T dY (in x out).
void directGemms(const Shape &shape, const Linear &linear,
                 const LayerBuffers &b) {
  ddprt::cpu::fixedOrderGemm(false, true, shape.tokens, linear.in, linear.out,
                             b.outputGrad, b.weight, b.inputGrad);
  ddprt::cpu::fixedOrderGemm(true, false, linear.in, linear.out, shape.tokens,
                             b.input, b.outputGrad, b.weightGrad);
}

void runDirect(const Shape &shape, const std::vector<LayerBuffers> &layers,
               MPI_Comm comm, bool nonblocking) {
  std::vector<MPI_Request> requests;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Linear &linear = shape.linears[i];
    directGemms(shape, linear, layers[i]);
    int count = linear.in * linear.out;
    if (nonblocking) {
      requests.emplace_back();
      MPI_Iallreduce(MPI_IN_PLACE, layers[i].weightGrad, count, MPI_FLOAT,
                     MPI_SUM, comm, &requests.back());
    } else {
      MPI_Allreduce(MPI_IN_PLACE, layers[i].weightGrad, count, MPI_FLOAT,
                    MPI_SUM, comm);
    }
  }
  MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

void runRuntime(ddprt_context *context, int32_t group, const Shape &shape,
                const std::vector<LayerBuffers> &layers, bool async) {
  std::vector<ddprt_handle> handles;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Linear &linear = shape.linears[i];
    const LayerBuffers &b = layers[i];
    CHECK(context,
          ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 1, shape.tokens, linear.in,
                     linear.out, b.outputGrad, b.weight, b.inputGrad, "dgrad"));
    CHECK(context, ddprt_gemm(context, DDPRT_DTYPE_F32, 1, 0, linear.in,
                              linear.out, shape.tokens, b.input, b.outputGrad,
                              b.weightGrad, "wgrad"));
    int64_t count = int64_t(linear.in) * linear.out;
    handles.push_back(0);
    CHECK(context,
          ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM, DDPRT_DTYPE_F32,
                           count, b.weightGrad, b.weightGrad,
                           async ? &handles.back() : nullptr));
  }
  if (!async)
    return;
  ddprt_handle all = 0;
  CHECK(context,
        ddprt_join(context, handles.data(), int32_t(handles.size()), &all));
  CHECK(context, ddprt_wait(context, all));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double best(const std::vector<double> &values) {
  return *std::min_element(values.begin(), values.end());
}

/// The slowest rank's time of each iteration is the job's time.
double jobTime(double seconds) {
  double slowest = 0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int hidden = argc > 1 ? std::atoi(argv[1]) : 512;
  int tokens = argc > 2 ? std::atoi(argv[2]) : 512;
  const int warmup = 2, iterations = 15;
  Shape shape = makeShape(hidden, tokens);

  ddprt_context *context = nullptr;
  std::string mesh = "dp=" + std::to_string(size);
  if (ddprt_init(DDPRT_ABI_VERSION, mesh.c_str(), DDPRT_BACKEND_CPU, 0, 0,
                 nullptr, &context) != DDPRT_OK)
    fail(nullptr, "ddprt_init");
  int32_t group = -1;
  CHECK(context, ddprt_group_create(context, "dp", &group));
  MPI_Comm direct = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &direct);

  std::vector<std::vector<float>> directStorage;
  std::vector<LayerBuffers> directLayers = allocateDirect(shape, directStorage);
  std::vector<LayerBuffers> runtimeLayers = allocateRuntime(context, shape);

  const char *names[] = {"direct MPI+GEMM, blocking MPI_Allreduce",
                         "ddprt, synchronous all_reduce",
                         "direct MPI+GEMM, MPI_Iallreduce + MPI_Waitall",
                         "ddprt, asynchronous all_reduce + join/wait"};
  std::vector<double> times[4];
  for (int iteration = 0; iteration < warmup + iterations; ++iteration) {
    // Rotate the order so that no variant always runs first.
    for (int k = 0; k < 4; ++k) {
      int variant = (k + iteration) % 4;
      MPI_Barrier(MPI_COMM_WORLD);
      double start = now();
      if (variant % 2 == 0)
        runDirect(shape, directLayers, direct, variant == 2);
      else
        runRuntime(context, group, shape, runtimeLayers, variant == 3);
      double elapsed = jobTime(now() - start);
      if (iteration >= warmup)
        times[variant].push_back(elapsed);
    }
  }

  // Dispatch cost of one tiny op: a 1-element all-reduce and an 8x8x8 GEMM,
  // the best of 20 batches of 100.
  const int batches = 20, perBatch = 100;
  float *tiny = runtimeLayers[0].weightGrad;
  std::vector<float> small(64, 1.0f), smallOut(64);
  float *a = runtimeLayers[0].weight, *c = runtimeLayers[0].inputGrad;
  std::vector<double> dispatch[4];
  for (int batch = 0; batch < batches; ++batch) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now();
    for (int i = 0; i < perBatch; ++i)
      MPI_Allreduce(MPI_IN_PLACE, small.data(), 1, MPI_FLOAT, MPI_SUM, direct);
    dispatch[0].push_back(jobTime(now() - start) / perBatch);
    MPI_Barrier(MPI_COMM_WORLD);
    start = now();
    for (int i = 0; i < perBatch; ++i)
      CHECK(context, ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM,
                                      DDPRT_DTYPE_F32, 1, tiny, tiny, nullptr));
    dispatch[1].push_back(jobTime(now() - start) / perBatch);
    start = now();
    for (int i = 0; i < perBatch; ++i)
      ddprt::cpu::fixedOrderGemm(false, false, 8, 8, 8, small.data(),
                                 small.data(), smallOut.data());
    dispatch[2].push_back((now() - start) / perBatch);
    start = now();
    for (int i = 0; i < perBatch; ++i)
      CHECK(context, ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 0, 8, 8, 8, a, a,
                                c, nullptr));
    dispatch[3].push_back((now() - start) / perBatch);
  }

  if (rank == 0) {
    double flops = 0;
    for (const Linear &linear : shape.linears)
      flops += 2.0 * 2.0 * tokens * linear.in * linear.out;
    std::printf("ddprt CPU backend vs direct MPI + GEMM calls: one transformer "
                "layer's backward\n");
    std::printf("hidden %d, tokens %d, ffn %d, f32; %d ranks, mesh %s; "
                "%.2f GFLOP and %.1f MB of gradients all-reduced per rank; "
                "%d iterations (slowest rank)\n\n",
                hidden, tokens, 4 * hidden, size, mesh.c_str(), flops / 1e9,
                double(hidden) * hidden * 12 * 4 / 1e6, iterations);
    std::printf("%-48s %9s %9s %11s\n", "variant", "best ms", "median ms",
                "best vs direct");
    for (int variant = 0; variant < 4; ++variant) {
      double bestMs = best(times[variant]) * 1e3;
      double medianMs = median(times[variant]) * 1e3;
      if (variant % 2 == 0) {
        std::printf("%-48s %9.2f %9.2f\n", names[variant], bestMs, medianMs);
      } else {
        double base = best(times[variant - 1]) * 1e3;
        std::printf("%-48s %9.2f %9.2f %+10.1f%%\n", names[variant], bestMs,
                    medianMs, (bestMs - base) / base * 100.0);
      }
    }
    std::printf("\ndispatch per op (best of %d batches of %d):\n", batches,
                perBatch);
    std::printf("  all_reduce 1 x f32, sync: direct %.2f us, ddprt %.2f us "
                "(through the communication thread)\n",
                best(dispatch[0]) * 1e6, best(dispatch[1]) * 1e6);
    std::printf("  gemm 8x8x8 f32:           direct %.2f us, ddprt %.2f us "
                "(argument checks and dispatch)\n",
                best(dispatch[2]) * 1e6, best(dispatch[3]) * 1e6);
  }
  MPI_Comm_free(&direct);
  CHECK(context, ddprt_finalize(context));
  MPI_Finalize();
  return 0;
}
