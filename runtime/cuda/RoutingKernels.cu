//===- RoutingKernels.cu - ddprt_route's kernels on a CUDA device ---------===//
//
// The per-token and per-expert math of Routing.h, compiled with
// --fmad=false as Kernels.cu, so that the results match HostRouting.cpp
// bitwise. SELECT runs in three kernels: each token's experts (written into
// the token slots as expert indices), each expert's kept tokens (one thread
// per expert counts, where the host sorts: the same tokens), then each
// route's slot. These are for checking a schedule on a GPU, not for speed:
// one thread per token or expert.
//
//===----------------------------------------------------------------------===//

#include "../Routing.h"
#include "KernelSupport.cuh"
#include "RoutingKernels.h"

using namespace ddprt;
using namespace ddprt::routing;
using cuda::blocksFor;
using cuda::threadsPerBlock;

namespace {

template <typename T>
__global__ void chooseKernel(const T *logits, int64_t tokens, int64_t experts,
                             int64_t topk, float *tokenSlots) {
  DDPRT_GRID_STRIDE(t, tokens) {
    int64_t chosen[kMaxTopK];
    double probs[kMaxTopK];
    selectToken(logits + t * experts, experts, topk, chosen, probs);
    for (int64_t j = 0; j < topk; ++j)
      tokenSlots[t * topk + j] = float(chosen[j]);
  }
}

/// The probability of `route` (token route / topk), from the chosen
/// experts chooseKernel wrote.
template <typename T>
__device__ double probabilityOf(const T *logits, const float *tokenSlots,
                                int64_t experts, int64_t topk, int64_t route) {
  int64_t token = route / topk;
  int64_t chosen[kMaxTopK];
  double probs[kMaxTopK];
  for (int64_t j = 0; j < topk; ++j)
    chosen[j] = int64_t(tokenSlots[token * topk + j]);
  softmaxChosen(logits + token * experts, chosen, topk, probs);
  return probs[route % topk];
}

template <typename T, typename P>
__global__ void keepKernel(const T *logits, int64_t tokens, int64_t experts,
                           int64_t topk, int64_t capacity,
                           const float *tokenSlots, P *slotProbs,
                           float *slotRows) {
  DDPRT_GRID_STRIDE(e, experts) {
    int64_t routes = tokens * topk, count = 0;
    for (int64_t r = 0; r < routes; ++r)
      count += int64_t(tokenSlots[r]) == e;
    int64_t position = 0;
    for (int64_t r = 0; r < routes && position < capacity; ++r) {
      if (int64_t(tokenSlots[r]) != e)
        continue;
      double prob = probabilityOf(logits, tokenSlots, experts, topk, r);
      if (count > capacity) {
        // Kept when fewer than `capacity` routes rank before it.
        int64_t before = 0;
        for (int64_t q = 0; q < routes && before < capacity; ++q)
          if (q != r && int64_t(tokenSlots[q]) == e &&
              ranksBefore(probabilityOf(logits, tokenSlots, experts, topk, q),
                          q / topk, prob, r / topk))
            ++before;
        if (before >= capacity)
          continue;
      }
      int64_t slot = e * capacity + position++;
      slotRows[slot] = float(r / topk);
      slotProbs[slot] = ElementTraits<P>::fromDouble(prob);
    }
    for (; position < capacity; ++position) {
      slotRows[e * capacity + position] = -1.0f;
      slotProbs[e * capacity + position] = ElementTraits<P>::fromDouble(0.0);
    }
  }
}

__global__ void slotKernel(int64_t tokens, int64_t topk, int64_t capacity,
                           const float *slotRows, float *tokenSlots) {
  DDPRT_GRID_STRIDE(t, tokens) {
    for (int64_t j = 0; j < topk; ++j) {
      int64_t e = int64_t(tokenSlots[t * topk + j]);
      float slot = -1.0f;
      for (int64_t p = 0; p < capacity; ++p)
        if (slotRows[e * capacity + p] == float(t))
          slot = float(e * capacity + p);
      tokenSlots[t * topk + j] = slot;
    }
  }
}

template <typename T, typename G>
__global__ void selectGradKernel(const G *grads, int64_t slots,
                                 const T *logits, const float *tokenSlots,
                                 int64_t tokens, int64_t experts, int64_t topk,
                                 T *result) {
  DDPRT_GRID_STRIDE(t, tokens) {
    double routeGrads[kMaxTopK];
    for (int64_t j = 0; j < topk; ++j) {
      int64_t slot = mapIndex(tokenSlots[t * topk + j], slots);
      routeGrads[j] = slot < 0 ? 0.0 : loadDouble(grads, slot);
    }
    selectTokenGrad(logits + t * experts, experts, topk, routeGrads,
                    result + t * experts);
  }
}

/// Elements moved as their bits: U is an unsigned type of the element's
/// size.
template <typename U>
__global__ void gatherKernel(const U *in, int64_t rows, const float *map,
                             int64_t slots, int64_t width, U *out) {
  DDPRT_GRID_STRIDE(i, slots * width) {
    int64_t from = mapIndex(map[i / width], rows);
    out[i] = from < 0 ? U(0) : in[from * width + i % width];
  }
}

/// COUNT: one thread per expert; an entry that is not a row reads as none.
__global__ void countKernel(const float *slotRows, int64_t experts,
                            int64_t capacity, float *counts) {
  DDPRT_GRID_STRIDE(e, experts) {
    int64_t held = 0;
    for (int64_t slot = 0; slot < capacity; ++slot)
      held += mapIndex(slotRows[e * capacity + slot], int64_t(1) << 24) >= 0;
    counts[e] = float(held);
  }
}

template <typename T>
__global__ void combineKernel(const T *in, int64_t slots,
                              const float *tokenSlots, int64_t tokens,
                              int64_t topk, int64_t width, T *out) {
  using Acc = typename ElementTraits<T>::Acc;
  DDPRT_GRID_STRIDE(i, tokens * width) {
    int64_t t = i / width, h = i % width;
    Acc sum = 0;
    bool any = false;
    for (int64_t j = 0; j < topk; ++j) {
      int64_t slot = mapIndex(tokenSlots[t * topk + j], slots);
      if (slot < 0)
        continue;
      Acc value = loadAs<Acc>(in[slot * width + h]);
      sum = any ? Acc(sum + value) : value;
      any = true;
    }
    out[i] = storeAs<T>(any ? sum : Acc(0));
  }
}

/// One local expert's block of one tensor: its rows of every rank.
template <typename U>
__global__ void chunkKernel(U *whole, U *block, int64_t ranks,
                            int64_t experts, int64_t expert, int64_t chunk,
                            bool sort) {
  DDPRT_GRID_STRIDE(i, ranks * chunk) {
    int64_t r = i / chunk, offset = i % chunk;
    U *rankOrdered = whole + (r * experts + expert) * chunk + offset;
    if (sort)
      block[i] = *rankOrdered;
    else
      *rankOrdered = block[i];
  }
}

/// Calls `fn` with an unsigned type of `bytes` bytes.
template <typename Fn> cudaError_t byBits(int64_t bytes, Fn &&fn) {
  switch (bytes) {
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  default:
    return fn(uint64_t{});
  }
}

template <typename T> const T *in(const Tensor &tensor) {
  return static_cast<const T *>(tensor.data);
}
template <typename T> T *out(const Tensor &tensor) {
  return static_cast<T *>(tensor.data);
}

cudaError_t select(const RouteOp &op, cudaStream_t stream) {
  return dispatchDType(op.inputs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *logits = in<T>(op.inputs[0]);
    float *slotRows = out<float>(op.results[1]);
    float *tokenSlots = out<float>(op.results[2]);
    chooseKernel<<<blocksFor(op.tokens), threadsPerBlock, 0, stream>>>(
        logits, op.tokens, op.experts, op.topk, tokenSlots);
    dispatchDType(op.results[0].dtype, [&](auto probTag) {
      using P = decltype(probTag);
      keepKernel<<<blocksFor(op.experts), threadsPerBlock, 0, stream>>>(
          logits, op.tokens, op.experts, op.topk, op.capacity, tokenSlots,
          out<P>(op.results[0]), slotRows);
    });
    slotKernel<<<blocksFor(op.tokens), threadsPerBlock, 0, stream>>>(
        op.tokens, op.topk, op.capacity, slotRows, tokenSlots);
    return cudaGetLastError();
  });
}

} // namespace

cudaError_t cuda::route(const RouteOp &op, cudaStream_t stream) {
  switch (op.kernel) {
  case DDPRT_ROUTE_SELECT:
    return select(op, stream);
  case DDPRT_ROUTE_SELECT_GRAD:
    return dispatchDType(op.inputs[1].dtype, [&](auto tag) {
      using T = decltype(tag);
      return dispatchDType(op.inputs[0].dtype, [&](auto gradTag) {
        using G = decltype(gradTag);
        selectGradKernel<<<blocksFor(op.tokens), threadsPerBlock, 0,
                           stream>>>(in<G>(op.inputs[0]), op.slots,
                                     in<T>(op.inputs[1]),
                                     in<float>(op.inputs[2]), op.tokens,
                                     op.experts, op.topk,
                                     out<T>(op.results[0]));
        return cudaGetLastError();
      });
    });
  case DDPRT_ROUTE_GATHER:
    return byBits(elementSize(op.results[0].dtype), [&](auto tag) {
      using U = decltype(tag);
      gatherKernel<<<blocksFor(op.slots * op.width), threadsPerBlock, 0,
                     stream>>>(in<U>(op.inputs[0]), op.tokens,
                               in<float>(op.inputs[1]), op.slots, op.width,
                               out<U>(op.results[0]));
      return cudaGetLastError();
    });
  case DDPRT_ROUTE_COMBINE:
    return dispatchDType(op.inputs[0].dtype, [&](auto tag) {
      using T = decltype(tag);
      combineKernel<<<blocksFor(op.tokens * op.width), threadsPerBlock, 0,
                      stream>>>(in<T>(op.inputs[0]), op.slots,
                                in<float>(op.inputs[1]), op.tokens, op.topk,
                                op.width, out<T>(op.results[0]));
      return cudaGetLastError();
    });
  case DDPRT_ROUTE_SORT_CHUNKS:
  case DDPRT_ROUTE_UNSORT_CHUNKS: {
    bool sort = op.kernel == DDPRT_ROUTE_SORT_CHUNKS;
    const std::vector<Tensor> &whole = sort ? op.inputs : op.results;
    const std::vector<Tensor> &split = sort ? op.results : op.inputs;
    int64_t experts = op.localExperts;
    for (size_t i = 0; i < whole.size(); ++i) {
      int64_t chunk = op.capacity * op.widths[i];
      cudaError_t error =
          byBits(elementSize(whole[i].dtype), [&](auto tag) {
            using U = decltype(tag);
            for (int64_t l = 0; l < experts; ++l)
              chunkKernel<<<blocksFor(op.ranks * chunk), threadsPerBlock, 0,
                            stream>>>(
                  out<U>(whole[i]),
                  out<U>(split[i * size_t(experts) + size_t(l)]), op.ranks,
                  experts, l, chunk, sort);
            return cudaGetLastError();
          });
      if (error != cudaSuccess)
        return error;
    }
    return cudaSuccess;
  }
  case DDPRT_ROUTE_COUNT:
    countKernel<<<blocksFor(op.experts), threadsPerBlock, 0, stream>>>(
        in<float>(op.inputs[0]), op.experts, op.capacity,
        out<float>(op.results[0]));
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}
