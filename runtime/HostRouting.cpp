//===- HostRouting.cpp - The routing kernels on the CPU -------------------===//
//
// ddprt_route's kernels (RuntimeFunctions.def) as loops over Routing.h. The
// CUDA kernels (cuda/RoutingKernels.cu) compute the same bits with another
// work split; the selection here sorts where a CUDA thread counts, which
// picks the same tokens. A map entry that is not -1 or a row index is an
// error here; the device, which cannot report it, reads it as -1 (none).
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"
#include "Routing.h"

#include <algorithm>
#include <cstring>

using namespace ddprt;
using namespace ddprt::routing;

namespace {

template <typename T> const T *typed(const Tensor &tensor) {
  return static_cast<const T *>(tensor.data);
}
template <typename T> T *typedOut(const Tensor &tensor) {
  return static_cast<T *>(tensor.data);
}

/// The entries of `map` as row indices below `bound`, -1 for none.
Status readMap(const RouteOp &op, const Tensor &map, const char *what,
               int64_t bound, std::vector<int64_t> &rows) {
  const float *values = typed<float>(map);
  rows.resize(size_t(map.numel));
  for (int64_t i = 0; i < map.numel; ++i) {
    float value = values[i];
    int64_t row = mapIndex(value, bound);
    if (value != -1.0f && row < 0)
      return makeError(DDPRT_ERROR_INVALID_ARGUMENT, "ddprt_route(",
                       routeKernelName(op.kernel), ") of '", op.kind, "': ",
                       what, " entry ", i, " is ", value,
                       ", not -1 nor a row below ", bound);
    rows[size_t(i)] = row;
  }
  return Status::ok();
}

template <typename T> void select(const RouteOp &op) {
  int64_t tokens = op.tokens, experts = op.experts, topk = op.topk,
          capacity = op.capacity;
  const T *logits = typed<T>(op.inputs[0]);
  std::vector<int64_t> chosen(size_t(tokens * topk));
  std::vector<double> probs(size_t(tokens * topk));
  for (int64_t t = 0; t < tokens; ++t)
    selectToken(logits + t * experts, experts, topk, &chosen[size_t(t * topk)],
                &probs[size_t(t * topk)]);

  float *slotRows = typedOut<float>(op.results[1]);
  float *tokenSlots = typedOut<float>(op.results[2]);
  std::fill(slotRows, slotRows + experts * capacity, -1.0f);
  std::fill(tokenSlots, tokenSlots + tokens * topk, -1.0f);
  std::vector<double> slotProbs(size_t(experts * capacity), 0.0);
  // Each expert's routes in token order; past its capacity, the most
  // probable ones, placed back in token order.
  std::vector<std::vector<int64_t>> routes(static_cast<size_t>(experts));
  for (int64_t route = 0; route < tokens * topk; ++route)
    routes[size_t(chosen[size_t(route)])].push_back(route);
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<int64_t> &kept = routes[size_t(e)];
    if (int64_t(kept.size()) > capacity) {
      std::stable_sort(kept.begin(), kept.end(), [&](int64_t a, int64_t b) {
        return ranksBefore(probs[size_t(a)], a / topk, probs[size_t(b)],
                           b / topk);
      });
      kept.resize(size_t(capacity));
      std::sort(kept.begin(), kept.end());
    }
    for (size_t position = 0; position < kept.size(); ++position) {
      int64_t route = kept[position];
      int64_t slot = e * capacity + int64_t(position);
      slotRows[slot] = float(route / topk);
      slotProbs[size_t(slot)] = probs[size_t(route)];
      tokenSlots[route] = float(slot);
    }
  }
  dispatchDType(op.results[0].dtype, [&](auto tag) {
    using P = decltype(tag);
    P *out = typedOut<P>(op.results[0]);
    for (int64_t slot = 0; slot < experts * capacity; ++slot)
      out[slot] = ElementTraits<P>::fromDouble(slotProbs[size_t(slot)]);
  });
}

template <typename T> Status selectGrad(const RouteOp &op) {
  int64_t tokens = op.tokens, experts = op.experts, topk = op.topk;
  std::vector<int64_t> slots;
  DDPRT_RETURN_IF_ERROR(
      readMap(op, op.inputs[2], "token slots", op.slots, slots));
  std::vector<double> grads(size_t(op.slots));
  dispatchDType(op.inputs[0].dtype, [&](auto tag) {
    using G = decltype(tag);
    const G *in = typed<G>(op.inputs[0]);
    for (int64_t s = 0; s < op.slots; ++s)
      grads[size_t(s)] = loadDouble(in, s);
  });
  const T *logits = typed<T>(op.inputs[1]);
  T *out = typedOut<T>(op.results[0]);
  for (int64_t t = 0; t < tokens; ++t) {
    double routeGrads[kMaxTopK];
    for (int64_t j = 0; j < topk; ++j) {
      int64_t slot = slots[size_t(t * topk + j)];
      routeGrads[j] = slot < 0 ? 0.0 : grads[size_t(slot)];
    }
    selectTokenGrad(logits + t * experts, experts, topk, routeGrads,
                    out + t * experts);
  }
  return Status::ok();
}

Status gather(const RouteOp &op) {
  std::vector<int64_t> rows;
  DDPRT_RETURN_IF_ERROR(readMap(op, op.inputs[1], "map", op.tokens, rows));
  int64_t rowBytes = op.width * elementSize(op.results[0].dtype);
  auto *out = static_cast<char *>(op.results[0].data);
  const auto *in = static_cast<const char *>(op.inputs[0].data);
  for (int64_t r = 0; r < op.slots; ++r) {
    int64_t from = rows[size_t(r)];
    // All-zero bits are +0 in every dtype.
    if (from < 0)
      std::memset(out + r * rowBytes, 0, size_t(rowBytes));
    else
      std::memcpy(out + r * rowBytes, in + from * rowBytes, size_t(rowBytes));
  }
  return Status::ok();
}

template <typename T> Status combine(const RouteOp &op) {
  using Acc = typename ElementTraits<T>::Acc;
  std::vector<int64_t> slots;
  DDPRT_RETURN_IF_ERROR(
      readMap(op, op.inputs[1], "token slots", op.slots, slots));
  const T *in = typed<T>(op.inputs[0]);
  T *out = typedOut<T>(op.results[0]);
  std::vector<Acc> sum(size_t(op.width));
  for (int64_t t = 0; t < op.tokens; ++t) {
    bool any = false;
    for (int64_t j = 0; j < op.topk; ++j) {
      int64_t slot = slots[size_t(t * op.topk + j)];
      if (slot < 0)
        continue;
      const T *row = in + slot * op.width;
      for (int64_t h = 0; h < op.width; ++h)
        sum[size_t(h)] = any ? Acc(sum[size_t(h)] + loadAs<Acc>(row[h]))
                             : loadAs<Acc>(row[h]);
      any = true;
    }
    for (int64_t h = 0; h < op.width; ++h)
      out[t * op.width + h] = storeAs<T>(any ? sum[size_t(h)] : Acc(0));
  }
  return Status::ok();
}

/// SORT_CHUNKS and UNSORT_CHUNKS: block copies between (rank, local
/// expert) order and one tensor per local expert.
void sortChunks(const RouteOp &op) {
  bool sort = op.kernel == DDPRT_ROUTE_SORT_CHUNKS;
  const std::vector<Tensor> &whole = sort ? op.inputs : op.results;
  const std::vector<Tensor> &split = sort ? op.results : op.inputs;
  int64_t experts = op.localExperts;
  for (size_t i = 0; i < whole.size(); ++i) {
    int64_t chunkBytes =
        op.capacity * op.widths[i] * elementSize(whole[i].dtype);
    auto *wholeData = static_cast<char *>(whole[i].data);
    for (int64_t l = 0; l < experts; ++l) {
      auto *block =
          static_cast<char *>(split[i * size_t(experts) + size_t(l)].data);
      for (int64_t r = 0; r < op.ranks; ++r) {
        char *rankOrdered = wholeData + (r * experts + l) * chunkBytes;
        char *expertOrdered = block + r * chunkBytes;
        if (sort)
          std::memcpy(expertOrdered, rankOrdered, size_t(chunkBytes));
        else
          std::memcpy(rankOrdered, expertOrdered, size_t(chunkBytes));
      }
    }
  }
}

/// COUNT: the slots of each expert that hold a row.
Status count(const RouteOp &op) {
  std::vector<int64_t> rows;
  // A slot row is a token: below 2^24, which ddprt_route checked.
  DDPRT_RETURN_IF_ERROR(
      readMap(op, op.inputs[0], "slot rows", int64_t(1) << 24, rows));
  float *counts = typedOut<float>(op.results[0]);
  for (int64_t e = 0; e < op.experts; ++e) {
    int64_t held = 0;
    for (int64_t slot = 0; slot < op.capacity; ++slot)
      held += rows[size_t(e * op.capacity + slot)] >= 0;
    counts[e] = float(held);
  }
  return Status::ok();
}

} // namespace

Status host::route(const RouteOp &op) {
  switch (op.kernel) {
  case DDPRT_ROUTE_SELECT:
    dispatchDType(op.inputs[0].dtype, [&](auto tag) {
      select<decltype(tag)>(op);
    });
    return Status::ok();
  case DDPRT_ROUTE_SELECT_GRAD: {
    Status status = Status::ok();
    dispatchDType(op.inputs[1].dtype, [&](auto tag) {
      status = selectGrad<decltype(tag)>(op);
    });
    return status;
  }
  case DDPRT_ROUTE_GATHER:
    return gather(op);
  case DDPRT_ROUTE_COMBINE: {
    Status status = Status::ok();
    dispatchDType(op.inputs[0].dtype, [&](auto tag) {
      status = combine<decltype(tag)>(op);
    });
    return status;
  }
  case DDPRT_ROUTE_SORT_CHUNKS:
  case DDPRT_ROUTE_UNSORT_CHUNKS:
    sortChunks(op);
    return Status::ok();
  case DDPRT_ROUTE_COUNT:
    return count(op);
  }
  return makeError(DDPRT_ERROR_INTERNAL, "ddprt_route: unknown kernel ",
                   op.kernel);
}
