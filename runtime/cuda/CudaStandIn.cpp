//===- CudaStandIn.cpp - The compute stand-in, at the model's price -------===//
//
// ddprt_compute on the CUDA backend. The stand-in's result is the CPU
// backend's, bitwise (one pass over the operands, Kernels.h standIn); then
// the stand-in pays what the compiler's cost model prices the kernel at, so
// that a step on a GPU costs what the simulator predicts for it:
//   - a compute-bound kernel (more FLOPs per byte than any GPU streams, e.g.
//     attention) runs its FLOPs as bf16 GEMMs on tensor cores, on scratch,
//     less those its pass took the time of: the model's roofline prices the
//     larger of the FLOPs' and the bytes' time, not their sum (the pass
//     made llama2-7b's attention 1.15-1.19 of its price on an H100);
//   - a memory-bound one reads from scratch the bytes the model counts
//     beyond those its sum moved.
// The scratch (costScratchBytes, five times an H100's L2, so that it
// streams from HBM) is allocated at the first stand-in that needs it; one recorded into a
// CUDA graph before that pays nothing extra.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <cmath>

using namespace ddprt;
using namespace ddprt::cuda;

namespace {

/// FLOPs per byte above which a kernel is compute-bound on any current GPU
/// (an H100 runs 295 dense bf16 FLOPs per byte of HBM it reads; the
/// memory-bound kinds of a transformer do under 4).
constexpr double computeBoundFlopsPerByte = 64;
constexpr int64_t costScratchBytes = int64_t(256) << 20;
/// The GEMMs that pay FLOPs: edge x edge results, up to maxDepth deep (275
/// GFLOP each: an attention's forward of llama2-7b at 4096 tokens takes 2,
/// where 2048 x 2048 ones took 5, and a CUDA graph launches each).
constexpr int64_t gemmEdge = 4096, gemmMaxDepth = 8192;
static_assert(2 * gemmEdge * gemmMaxDepth * 2 + gemmEdge * gemmEdge * 2 <=
                  costScratchBytes,
              "the stand-in GEMMs' operands and result fit the scratch");

/// Whether payCost pays anything beyond the stand-in's pass.
bool paysBeyondPass(const ComputeCost &cost, int64_t moved) {
  return cost.flops > computeBoundFlopsPerByte * cost.bytes ||
         cost.bytes - double(moved) >= 16;
}

} // namespace

Status CudaBackend::compute(const std::string &kind, const ComputeCost &cost,
                            const std::vector<Tensor> &inputs,
                            const std::vector<Tensor> &results) {
  int64_t moved = 0, longest = 0;
  for (const Tensor &result : results) {
    moved += result.numel * elementSize(result.dtype);
    longest = std::max(longest, result.numel);
  }
  for (const Tensor &input : inputs)
    moved += std::min(input.numel, longest) * elementSize(input.dtype);
  // Outside the op's span: the scratch's first use measures its rates.
  if (paysBeyondPass(cost, moved))
    DDPRT_RETURN_IF_ERROR(prepareCostScratch());
  cudaEvent_t span = beginSpan(computeStream);
  Status status = inputs.size() <= size_t(maxStandInTensors) &&
                          results.size() <= size_t(maxStandInTensors) &&
                          onePassIsSafe(inputs, results, longest)
                      ? standIn(inputs, results)
                      : standInByInput(kind, inputs, results);
  if (status.isOk())
    status = payCost(cost, moved);
  endSpan(span, computeStream, kind, TraceCategory::Compute, 0,
          TraceArgs()
              .add("inputs", int64_t(inputs.size()))
              .add("flops", cost.flops)
              .add("bytes", cost.bytes)
              .str());
  return status;
}

bool CudaBackend::onePassIsSafe(const std::vector<Tensor> &inputs,
                                const std::vector<Tensor> &results,
                                int64_t span) {
  // One pass reads element i of every input and writes element i of every
  // result in the same thread; host::compute reads all the inputs before it
  // writes a result, one result after another. They agree when no result
  // shares bytes with another operand, or a result is exactly an input that
  // covers the span (element i then only read by the thread that writes
  // it).
  auto bytesOf = [](const Tensor &tensor) {
    return tensor.numel * elementSize(tensor.dtype);
  };
  for (size_t r = 0; r < results.size(); ++r) {
    const Tensor &result = results[r];
    for (const Tensor &input : inputs)
      if (overlaps(result.data, bytesOf(result), input.data, bytesOf(input)) &&
          !(result.data == input.data && result.dtype == input.dtype &&
            input.numel >= span))
        return false;
    for (size_t other = r + 1; other < results.size(); ++other)
      if (overlaps(result.data, bytesOf(result), results[other].data,
                   bytesOf(results[other])))
        return false;
  }
  return true;
}

Status CudaBackend::prepareCostScratch() {
  if (costScratch || capturing)
    return Status::ok();
  DDPRT_RETURN_IF_ERROR(
      checkCuda(cudaMalloc(&costScratch, size_t(costScratchBytes)),
                concat("cudaMalloc(", costScratchBytes,
                       ", the compute stand-ins' scratch)")));
  // Real-looking values: tensor cores run faster on zeros.
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cuda::fillSeeded(costScratch, DType::BF16, costScratchBytes / 2, 0x5eed,
                       true, computeStream),
      "fill kernel (the compute stand-ins' scratch)"));
  return measureStandInRates();
}

Status CudaBackend::payCost(const ComputeCost &cost, int64_t moved) {
  bool computeBound = cost.flops > computeBoundFlopsPerByte * cost.bytes;
  double extraBytes = cost.bytes - double(moved);
  // No scratch: recorded into a CUDA graph before any stand-in needed it.
  if (!paysBeyondPass(cost, moved) || !costScratch)
    return Status::ok();
  if (!computeBound)
    return checkCuda(cuda::streamRead(costScratch, costScratchBytes,
                                      int64_t(extraBytes), standInSink,
                                      computeStream),
                     "stream-read kernel (a compute stand-in's bytes)");
  double flops = cost.flops - double(moved) * standInFlopsPerByte;
  double perColumn = 2.0 * double(gemmEdge) * double(gemmEdge);
  if (flops < perColumn * 32)
    return Status::ok(); // Nearer none than the shallowest GEMM.
  // As few GEMMs as fit the scratch, of a depth that makes up the FLOPs.
  int64_t gemms = std::max<int64_t>(
      1, int64_t(std::ceil(flops / (perColumn * double(gemmMaxDepth)))));
  int64_t depth = int64_t(std::llround(flops / (perColumn * gemms) / 64)) * 64;
  depth = std::min(std::max<int64_t>(depth, 64), gemmMaxDepth);
  return payFlops(gemms, depth);
}

Status CudaBackend::payFlops(int64_t count, int64_t depth) {
  char *base = static_cast<char *>(costScratch);
  const void *a = base;
  const void *b = base + gemmEdge * gemmMaxDepth * 2;
  void *c = base + 2 * gemmEdge * gemmMaxDepth * 2;
  float one = 1.0f, zero = 0.0f;
  for (int64_t g = 0; g < count; ++g)
    DDPRT_RETURN_IF_ERROR(checkCublas(
        cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, int(gemmEdge),
                     int(gemmEdge), int(depth), &one, a, CUDA_R_16BF,
                     int(gemmEdge), b, CUDA_R_16BF, int(depth), &zero, c,
                     CUDA_R_16BF, int(gemmEdge), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT),
        concat("cublasGemmEx(a compute stand-in's FLOPs, ", gemmEdge, "x",
               gemmEdge, "x", depth, " bf16)")));
  return Status::ok();
}

Status CudaBackend::measureStandInRates() {
  // Once, outside any recording: the stream over the whole scratch and one
  // GEMM of the greatest depth, each warmed up, then timed by events.
  struct Marks {
    cudaEvent_t events[3] = {};
    ~Marks() {
      for (cudaEvent_t event : events)
        if (event)
          cudaEventDestroy(event);
    }
  } marks;
  for (cudaEvent_t &event : marks.events)
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cudaEventCreate(&event), "cudaEventCreate(stand-in rates)"));
  auto stream = [&] {
    return checkCuda(cuda::streamRead(costScratch, costScratchBytes,
                                      costScratchBytes, standInSink,
                                      computeStream),
                     "stream-read kernel (the stand-in's rates)");
  };
  auto mark = [&](int index) {
    return checkCuda(cudaEventRecord(marks.events[index], computeStream),
                     "cudaEventRecord(stand-in rates)");
  };
  DDPRT_RETURN_IF_ERROR(stream());
  DDPRT_RETURN_IF_ERROR(payFlops(1, gemmMaxDepth));
  DDPRT_RETURN_IF_ERROR(mark(0));
  DDPRT_RETURN_IF_ERROR(stream());
  DDPRT_RETURN_IF_ERROR(mark(1));
  DDPRT_RETURN_IF_ERROR(payFlops(1, gemmMaxDepth));
  DDPRT_RETURN_IF_ERROR(mark(2));
  DDPRT_RETURN_IF_ERROR(checkCuda(cudaEventSynchronize(marks.events[2]),
                                  "cudaEventSynchronize(stand-in rates)"));
  float streamMs = 0, gemmMs = 0;
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaEventElapsedTime(&streamMs, marks.events[0], marks.events[1]),
      "cudaEventElapsedTime(stand-in rates)"));
  DDPRT_RETURN_IF_ERROR(checkCuda(
      cudaEventElapsedTime(&gemmMs, marks.events[1], marks.events[2]),
      "cudaEventElapsedTime(stand-in rates)"));
  if (streamMs > 0 && gemmMs > 0) {
    double flops = 2.0 * double(gemmEdge) * double(gemmEdge) *
                   double(gemmMaxDepth);
    standInFlopsPerByte =
        (flops / gemmMs) / (double(costScratchBytes) / streamMs);
  }
  return Status::ok();
}

Status CudaBackend::standIn(const std::vector<Tensor> &inputs,
                            const std::vector<Tensor> &results) {
  // One launch per accumulation type (f64 for an f64 result, else f32), as
  // host::compute sums.
  for (bool wide : {false, true}) {
    StandInArgs args;
    for (size_t r = 0; r < results.size(); ++r) {
      const Tensor &result = results[r];
      if ((result.dtype == DType::F64) == wide && result.numel > 0) {
        args.resultIndex[args.numResults] = int(r);
        args.results[args.numResults++] = {result.data, result.numel,
                                           result.dtype};
        args.span = std::max(args.span, result.numel);
      }
    }
    if (args.numResults == 0)
      continue;
    args.bounded = env.boundedValues;
    for (const Tensor &input : inputs)
      args.inputs[args.numInputs++] = {input.data, input.numel, input.dtype};
    DDPRT_RETURN_IF_ERROR(
        checkCuda(cuda::standIn(args, wide, computeStream),
                  concat("compute stand-in kernel (", args.numInputs,
                         " inputs, ", args.numResults, " results)")));
  }
  return Status::ok();
}

Status CudaBackend::standInByInput(const std::string &kind,
                                   const std::vector<Tensor> &inputs,
                                   const std::vector<Tensor> &results) {
  Status status;
  for (size_t r = 0; r < results.size(); ++r) {
    const Tensor &result = results[r];
    if (result.numel == 0)
      continue;
    bool wide = result.dtype == DType::F64;
    int64_t bytes = result.numel * (wide ? 8 : 4);
    void *sum = nullptr;
    status = checkCuda(cudaMallocAsync(&sum, size_t(bytes), computeStream),
                       concat("cudaMallocAsync(", bytes, ")"));
    if (!status.isOk())
      break;
    if (inputs.empty())
      status = checkCuda(cudaMemsetAsync(sum, 0, size_t(bytes), computeStream),
                         "cudaMemsetAsync(compute stand-in)");
    for (size_t j = 0; j < inputs.size() && status.isOk(); ++j)
      status = checkCuda(
          cuda::accumulateModulo(
              sum, wide, result.numel, inputs[j].data, inputs[j].dtype,
              inputs[j].numel, j == 0,
              env.boundedValues ? standInWeight<double>(int64_t(j)) : 1.0,
              computeStream),
          concat("compute stand-in kernel '", kind, "' input #", j));
    if (status.isOk() && env.boundedValues)
      status = checkCuda(
          cuda::bound(sum, wide, result.numel, int64_t(r), computeStream),
          concat("compute stand-in kernel '", kind, "' bound"));
    if (status.isOk())
      status =
          checkCuda(cuda::cast(sum, wide ? DType::F64 : DType::F32, result.data,
                               result.dtype, result.numel, computeStream),
                    concat("compute stand-in kernel '", kind, "' result"));
    cudaFreeAsync(sum, computeStream);
    if (!status.isOk())
      break;
  }
  return status;
}
