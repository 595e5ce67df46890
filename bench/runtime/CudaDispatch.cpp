//===- CudaDispatch.cpp - libddprt's per-op cost on a GPU vs raw calls ----===//
//
// On one GPU (one rank), issues many small ops through libddprt's CUDA
// backend and the same work through cuBLAS, NCCL and CUDA events directly,
// and prints the time per op of each: what the runtime adds to a call.
//
//   gemm 64x64x64 f32            ddprt_gemm            vs cublasGemmEx
//   all_reduce 1024 f32, async   ddprt_all_reduce +    vs event, ncclAllReduce
//                                ddprt_wait               on a second stream,
//                                                         event, wait
//
// Then the same ops through libddprt recorded once as a CUDA graph
// (ddprt_graph_begin/end) and launched: the host's time per op, issue only,
// eager against the graph, and the time per op to completion.
//
// Last, what a graph's shape costs to launch, on raw CUDA: 160 small GEMMs
// on one stream; the same with 16 copies on that stream; the same with the
// 16 copies on a second stream, each forked after a GEMM and joined three
// GEMMs later (a step's collectives); the same with each copy's target
// allocated and freed in the graph (cudaMallocAsync). Each launched once after its upload,
// then 30 times waited for one by one, then 30 times back to back.
//
// Run: mpirun -np 1 ddprt-bench-cuda-dispatch (or without mpirun).
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>

namespace {

using ddprt::bench::fail;
using ddprt::bench::now;

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    cudaError_t error_ = (call);                                               \
    if (error_ != cudaSuccess)                                                 \
      fail(#call, cudaGetErrorString(error_));                                 \
  } while (false)
#define CHECK_NCCL(call)                                                       \
  do {                                                                         \
    ncclResult_t result_ = (call);                                             \
    if (result_ != ncclSuccess)                                                \
      fail(#call, ncclGetErrorString(result_));                                \
  } while (false)
#define CHECK_CUBLAS(call)                                                     \
  do {                                                                         \
    if ((call) != CUBLAS_STATUS_SUCCESS)                                       \
      fail(#call, "cuBLAS error");                                             \
  } while (false)

constexpr int repeats = 5000;
constexpr int size = 64;
constexpr int reduceCount = 1024;

struct HostAndTotal {
  double host, total; // microseconds per op
};

/// `issue` run `repeats` times: the host's time to issue, and the time until
/// `sync` returns, per op (`opsPerIssue` ops each).
template <typename Issue, typename Sync>
HostAndTotal hostAndTotal(Issue issue, Sync sync, int opsPerIssue,
                          int issues = repeats) {
  for (int i = 0; i < 2 + issues / 50; ++i)
    issue();
  sync();
  double start = now();
  for (int i = 0; i < issues; ++i)
    issue();
  double issued = now();
  sync();
  double scale = 1e6 / (double(issues) * opsPerIssue);
  return {(issued - start) * scale, (now() - start) * scale};
}

/// Microseconds per op of `issue`, run `repeats` times, then synchronized.
template <typename Issue, typename Sync> double perOp(Issue issue, Sync sync) {
  for (int i = 0; i < 100; ++i)
    issue();
  sync();
  double start = now();
  for (int i = 0; i < repeats; ++i)
    issue();
  sync();
  return (now() - start) / repeats * 1e6;
}

/// The host's time to launch one graph, in microseconds.
struct LaunchTimes {
  double first, waitedMedian, backToBack;
};

LaunchTimes launchTimes(cudaGraphExec_t exec, cudaStream_t stream) {
  auto launch = [&] {
    double start = now();
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    double issued = now();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    return (issued - start) * 1e6;
  };
  LaunchTimes times{launch(), 0, 0};
  constexpr int launches = 30;
  double waited[launches];
  for (double &time : waited)
    time = launch();
  std::sort(waited, waited + launches);
  times.waitedMedian = waited[launches / 2];
  double start = now();
  for (int i = 0; i < launches; ++i)
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
  times.backToBack = (now() - start) * 1e6 / launches;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return times;
}

enum class CopyPlace { None, SameStream, SecondStream, Allocated };

/// Records `gemms` GEMMs of `size` on `compute` with 16 copies placed as
/// `copies` says, and times launching the graph.
LaunchTimes graphShape(cublasHandle_t cublas, cudaStream_t compute,
                       cudaStream_t comm, const float *a, float *c,
                       float *grads, float *gradsCopy, int gemms,
                       CopyPlace copies) {
  cudaEvent_t forked[16], joined[16];
  for (int k = 0; k < 16; ++k) {
    CHECK_CUDA(cudaEventCreateWithFlags(&forked[k], cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&joined[k], cudaEventDisableTiming));
  }
  float one = 1, zero = 0;
  int every = gemms / 16;
  CHECK_CUDA(cudaStreamBeginCapture(compute, cudaStreamCaptureModeRelaxed));
  for (int i = 0; i < gemms; ++i) {
    CHECK_CUBLAS(cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, size, size,
                              size, &one, a, CUDA_R_32F, size, a, CUDA_R_32F,
                              size, &zero, c, CUDA_R_32F, size,
                              CUBLAS_COMPUTE_32F_PEDANTIC,
                              CUBLAS_GEMM_DEFAULT));
    int k = i / every;
    size_t bytes = reduceCount * sizeof(float);
    if (copies == CopyPlace::SameStream && i % every == 0 && k < 16)
      CHECK_CUDA(cudaMemcpyAsync(gradsCopy, grads, bytes,
                                 cudaMemcpyDeviceToDevice, compute));
    if (copies == CopyPlace::Allocated && i % every == 0 && k < 16) {
      void *scratch = nullptr;
      CHECK_CUDA(cudaMallocAsync(&scratch, bytes, compute));
      CHECK_CUDA(cudaMemcpyAsync(scratch, grads, bytes,
                                 cudaMemcpyDeviceToDevice, compute));
      CHECK_CUDA(cudaFreeAsync(scratch, compute));
    }
    if (copies != CopyPlace::SecondStream)
      continue;
    if (i % every == 0 && k < 16) {
      CHECK_CUDA(cudaEventRecord(forked[k], compute));
      CHECK_CUDA(cudaStreamWaitEvent(comm, forked[k], 0));
      CHECK_CUDA(cudaMemcpyAsync(gradsCopy, grads, bytes,
                                 cudaMemcpyDeviceToDevice, comm));
      CHECK_CUDA(cudaEventRecord(joined[k], comm));
    }
    if (i % every == 3 && k < 16)
      CHECK_CUDA(cudaStreamWaitEvent(compute, joined[k], 0));
  }
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(compute, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphUpload(exec, compute));
  CHECK_CUDA(cudaStreamSynchronize(compute));
  LaunchTimes times = launchTimes(exec, compute);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (int k = 0; k < 16; ++k) {
    cudaEventDestroy(forked[k]);
    cudaEventDestroy(joined[k]);
  }
  return times;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);

  ddprt_context *context = nullptr;
  if (ddprt_init(DDPRT_ABI_VERSION, "dp=1", DDPRT_BACKEND_CUDA,
                 DDPRT_FLAG_RETURN_ERRORS, 0, nullptr, &context) != DDPRT_OK) {
    std::printf("no CUDA backend here: %s\n", ddprt_last_error(nullptr));
    MPI_Finalize();
    return 0;
  }
  int32_t group = -1;
  CHECK_DDPRT(context, ddprt_group_create(context, "dp", &group));
  void *a = nullptr, *c = nullptr, *grads = nullptr;
  CHECK_DDPRT(context, ddprt_alloc(context, DDPRT_DTYPE_F32, size * size, &a));
  CHECK_DDPRT(context, ddprt_alloc(context, DDPRT_DTYPE_F32, size * size, &c));
  CHECK_DDPRT(context,
              ddprt_alloc(context, DDPRT_DTYPE_F32, reduceCount, &grads));

  double runtimeGemm = perOp(
      [&] {
        CHECK_DDPRT(context, ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 0, size,
                                        size, size, a, a, c, nullptr));
      },
      [&] { CHECK_DDPRT(context, ddprt_synchronize(context)); });
  double runtimeReduce = perOp(
      [&] {
        ddprt_handle handle = 0;
        CHECK_DDPRT(context,
                    ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM,
                                     DDPRT_DTYPE_F32, reduceCount, grads, grads,
                                     &handle));
        CHECK_DDPRT(context, ddprt_wait(context, handle));
      },
      [&] { CHECK_DDPRT(context, ddprt_synchronize(context)); });

  // Host time per op, eager and recorded as one graph of `repeats` issues.
  auto gemm = [&] {
    CHECK_DDPRT(context, ddprt_gemm(context, DDPRT_DTYPE_F32, 0, 0, size, size,
                                    size, a, a, c, nullptr));
  };
  auto reduce = [&] {
    ddprt_handle handle = 0;
    CHECK_DDPRT(context, ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM,
                                          DDPRT_DTYPE_F32, reduceCount, grads,
                                          grads, &handle));
    CHECK_DDPRT(context, ddprt_wait(context, handle));
  };
  auto sync = [&] { CHECK_DDPRT(context, ddprt_synchronize(context)); };
  HostAndTotal eagerGemm = hostAndTotal(gemm, sync, 1);
  HostAndTotal eagerReduce = hostAndTotal(reduce, sync, 2);
  auto graphOf = [&](auto issue, int opsPerIssue) {
    CHECK_DDPRT(context, ddprt_graph_begin(context));
    for (int i = 0; i < repeats; ++i)
      issue();
    CHECK_DDPRT(context, ddprt_graph_end(context));
    HostAndTotal perLaunch = hostAndTotal(
        [&] { CHECK_DDPRT(context, ddprt_graph_launch(context)); }, sync,
        repeats * opsPerIssue, 20);
    return perLaunch;
  };
  HostAndTotal graphGemm = graphOf(gemm, 1);
  HostAndTotal graphReduce = graphOf(reduce, 2);

  // The same work, written directly.
  cudaStream_t compute = nullptr, comm = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  cublasHandle_t cublas = nullptr;
  CHECK_CUBLAS(cublasCreate(&cublas));
  CHECK_CUBLAS(cublasSetStream(cublas, compute));
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t nccl = nullptr;
  CHECK_NCCL(ncclCommInitRank(&nccl, 1, id, 0));
  float *da = nullptr, *dc = nullptr, *dgrads = nullptr;
  CHECK_CUDA(cudaMalloc(&da, size * size * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dc, size * size * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dgrads, reduceCount * sizeof(float)));
  CHECK_CUDA(cudaMemset(da, 0, size * size * sizeof(float)));
  CHECK_CUDA(cudaMemset(dgrads, 0, reduceCount * sizeof(float)));
  float one = 1, zero = 0;
  double directGemm = perOp(
      [&] {
        CHECK_CUBLAS(cublasGemmEx(
            cublas, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, da,
            CUDA_R_32F, size, da, CUDA_R_32F, size, &zero, dc, CUDA_R_32F, size,
            CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
      },
      [&] { CHECK_CUDA(cudaStreamSynchronize(compute)); });
  cudaEvent_t ready = nullptr, done = nullptr;
  CHECK_CUDA(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  double directReduce = perOp(
      [&] {
        CHECK_CUDA(cudaEventRecord(ready, compute));
        CHECK_CUDA(cudaStreamWaitEvent(comm, ready, 0));
        CHECK_NCCL(ncclAllReduce(dgrads, dgrads, reduceCount, ncclFloat32,
                                 ncclSum, nccl, comm));
        CHECK_CUDA(cudaEventRecord(done, comm));
        CHECK_CUDA(cudaStreamWaitEvent(compute, done, 0));
      },
      [&] { CHECK_CUDA(cudaStreamSynchronize(compute)); });

  float *dgradsCopy = nullptr;
  CHECK_CUDA(cudaMalloc(&dgradsCopy, reduceCount * sizeof(float)));
  struct {
    const char *name;
    CopyPlace copies;
  } shapes[] = {{"160 gemms, one stream", CopyPlace::None},
                {"160 gemms + 16 copies, one stream", CopyPlace::SameStream},
                {"160 gemms + 16 copies forked and joined",
                 CopyPlace::SecondStream},
                {"160 gemms + 16 copies to stream-ordered allocations",
                 CopyPlace::Allocated}};
  constexpr int numShapes = sizeof(shapes) / sizeof(shapes[0]);
  LaunchTimes shapeTimes[numShapes];
  for (int k = 0; k < numShapes; ++k)
    shapeTimes[k] = graphShape(cublas, compute, comm, da, dc, dgrads,
                               dgradsCopy, 160, shapes[k].copies);

  cudaDeviceProp properties;
  CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
  std::printf("ddprt CUDA backend vs raw cuBLAS/NCCL/CUDA calls on %s, one "
              "rank, mean of %d ops (issue and execution)\n\n",
              properties.name, repeats);
  std::printf("%-40s %12s %12s %12s\n", "op", "direct us", "ddprt us",
              "overhead us");
  std::printf("%-40s %12.2f %12.2f %12.2f\n", "gemm 64x64x64 f32", directGemm,
              runtimeGemm, runtimeGemm - directGemm);
  // Over one rank ddprt moves nothing (in place), where NCCL still runs.
  std::printf("%-40s %12.2f %12.2f %12.2f\n",
              "all_reduce 1024 f32 async + wait (*)", directReduce,
              runtimeReduce, runtimeReduce - directReduce);
  std::printf("(*) over one rank, in place: ddprt issues no NCCL call, so "
              "this is its dispatch and events against NCCL's launch\n");
  std::printf("\nhost time per op (issue only) and per op to completion, us\n");
  std::printf("%-40s %12s %12s %12s %12s\n", "op", "eager host", "graph host",
              "eager total", "graph total");
  std::printf("%-40s %12.3f %12.3f %12.2f %12.2f\n", "gemm 64x64x64 f32",
              eagerGemm.host, graphGemm.host, eagerGemm.total,
              graphGemm.total);
  std::printf("%-40s %12.3f %12.3f %12.2f %12.2f\n",
              "all_reduce 1024 f32 async, wait (2 ops)", eagerReduce.host,
              graphReduce.host, eagerReduce.total, graphReduce.total);
  // One line per measurement for utils/gpu-check.sh's table.
  std::printf("row|host per op, gemm, graph|%.3f us (eager %.3f us); to "
              "completion %.2f us per op (eager %.2f us)\n",
              graphGemm.host, eagerGemm.host, graphGemm.total,
              eagerGemm.total);
  std::printf("row|host per op, all_reduce + wait, graph|%.3f us (eager "
              "%.3f us); to completion %.2f us per op (eager %.2f us)\n",
              graphReduce.host, eagerReduce.host, graphReduce.total,
              eagerReduce.total);
  std::printf("row|gemm 64x64x64 f32, eager|%.2f us per op through ddprt, "
              "%.2f us direct\n",
              runtimeGemm, directGemm);
  std::printf("row|all_reduce 1024 f32 + wait, eager|%.2f us per op through "
              "ddprt, %.2f us direct\n",
              runtimeReduce, directReduce);

  std::printf("\nhost time to launch a graph (raw CUDA), us: after its "
              "upload, median of 30 waited for one by one, mean of 30 back "
              "to back\n");
  for (int k = 0; k < numShapes; ++k) {
    std::printf("%-52s %10.2f %10.2f %10.2f\n", shapes[k].name,
                shapeTimes[k].first, shapeTimes[k].waitedMedian,
                shapeTimes[k].backToBack);
    std::printf("row|graph launch, %s|%.2f us first, %.2f us median waited "
                "for, %.2f us back to back\n",
                shapes[k].name, shapeTimes[k].first,
                shapeTimes[k].waitedMedian, shapeTimes[k].backToBack);
  }

  cudaFree(dgradsCopy);
  cudaEventDestroy(ready);
  cudaEventDestroy(done);
  cudaFree(da);
  cudaFree(dc);
  cudaFree(dgrads);
  ncclCommDestroy(nccl);
  cublasDestroy(cublas);
  cudaStreamDestroy(compute);
  cudaStreamDestroy(comm);
  CHECK_DDPRT(context, ddprt_finalize(context));
  MPI_Finalize();
  return 0;
}
