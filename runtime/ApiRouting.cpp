//===- ApiRouting.cpp - ddprt_route: the routing kernels' arguments -------===//
//
// Checks a routing kernel's tensors against its parameters and derives its
// dimensions (RouteOp), so that a backend only executes. Every message names
// the kernel and what did not fit.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Routing.h"

using namespace ddprt;

const char *ddprt::routeKernelName(int32_t kernel) {
  switch (kernel) {
  case DDPRT_ROUTE_SELECT:
    return "select";
  case DDPRT_ROUTE_SELECT_GRAD:
    return "select_grad";
  case DDPRT_ROUTE_GATHER:
    return "gather";
  case DDPRT_ROUTE_COMBINE:
    return "combine";
  case DDPRT_ROUTE_SORT_CHUNKS:
    return "sort_chunks";
  case DDPRT_ROUTE_UNSORT_CHUNKS:
    return "unsort_chunks";
  case DDPRT_ROUTE_COUNT:
    return "count";
  }
  return nullptr;
}

namespace {

/// Builds the messages of one call: "ddprt_route(gather): ...".
struct RouteChecker {
  std::string entry;
  RouteOp &op;

  Status fail(const std::string &what) const {
    return invalid(entry.c_str(), what);
  }
  Status expectCounts(size_t inputs, size_t results, size_t params,
                      size_t numParams) const {
    if (op.inputs.size() != inputs || op.results.size() != results ||
        numParams != params)
      return fail(concat("takes ", inputs, " inputs, ", results,
                         " results and ", params, " params, got ",
                         op.inputs.size(), ", ", op.results.size(), " and ",
                         numParams));
    return Status::ok();
  }
  /// `numel` = rows x width with width >= 1 a whole number.
  Status widthOf(const Tensor &tensor, const std::string &what, int64_t rows,
                 int64_t &width) const {
    if (rows <= 0 || tensor.numel % rows != 0 || tensor.numel / rows == 0)
      return fail(concat(what, " has ", tensor.numel,
                         " elements, not a positive multiple of ", rows,
                         " rows"));
    width = tensor.numel / rows;
    return Status::ok();
  }
  Status expectNumel(const Tensor &tensor, const std::string &what,
                     int64_t numel) const {
    if (tensor.numel != numel)
      return fail(concat(what, " has ", tensor.numel, " elements, expected ",
                         numel));
    return Status::ok();
  }
  Status expectMap(const Tensor &tensor, const std::string &what) const {
    if (tensor.dtype != DType::F32)
      return fail(concat(what, " is a map and must be f32, got ",
                         dtypeName(tensor.dtype)));
    return Status::ok();
  }
  Status expectSameDType(const Tensor &a, const Tensor &b,
                         const std::string &what) const {
    if (a.dtype != b.dtype)
      return fail(concat(what, " must have its input's dtype ",
                         dtypeName(a.dtype), ", got ", dtypeName(b.dtype)));
    return Status::ok();
  }
  Status positive(const char *what, int64_t value) const {
    if (value <= 0)
      return fail(concat(what, " must be positive, got ", value));
    return Status::ok();
  }
  /// `a * b`, failing rather than overflowing.
  Status product(const char *what, int64_t a, int64_t b,
                 int64_t &result) const {
    if (__builtin_mul_overflow(a, b, &result))
      return fail(concat(what, " (", a, " x ", b, ") overflows int64"));
    return Status::ok();
  }
  /// Maps are f32 row indices: `rows` they index must stay below 2^24,
  /// where every whole number is exact.
  Status mapBound(const char *what, int64_t rows) const {
    if (rows >= (int64_t(1) << 24))
      return fail(concat(what, " (", rows, ") must be below 2^24: maps are "
                         "f32 row indices"));
    return Status::ok();
  }
  Status checkTopk(int64_t topk) const {
    DDPRT_RETURN_IF_ERROR(positive("topk", topk));
    if (topk > routing::kMaxTopK)
      return fail(concat("topk ", topk, " is over DDPRT_ROUTE_MAX_TOPK (",
                         routing::kMaxTopK, ")"));
    return Status::ok();
  }

  Status check(const int64_t *params, int32_t numParams) {
    switch (op.kernel) {
    case DDPRT_ROUTE_SELECT: {
      DDPRT_RETURN_IF_ERROR(expectCounts(1, 3, 2, numParams));
      op.topk = params[0];
      op.capacity = params[1];
      DDPRT_RETURN_IF_ERROR(checkTopk(op.topk));
      DDPRT_RETURN_IF_ERROR(positive("capacity", op.capacity));
      DDPRT_RETURN_IF_ERROR(
          widthOf(op.results[0], "slot probabilities", op.capacity,
                  op.experts));
      DDPRT_RETURN_IF_ERROR(widthOf(op.inputs[0], "logits", op.experts,
                                    op.tokens));
      if (op.topk > op.experts)
        return fail(concat("topk ", op.topk, " is over the ", op.experts,
                           " experts"));
      DDPRT_RETURN_IF_ERROR(mapBound("tokens", op.tokens));
      DDPRT_RETURN_IF_ERROR(mapBound("experts x capacity", op.results[0].numel));
      DDPRT_RETURN_IF_ERROR(expectNumel(op.results[1], "slot rows",
                                        op.experts * op.capacity));
      DDPRT_RETURN_IF_ERROR(
          expectNumel(op.results[2], "token slots", op.tokens * op.topk));
      DDPRT_RETURN_IF_ERROR(expectMap(op.results[1], "slot rows"));
      return expectMap(op.results[2], "token slots");
    }
    case DDPRT_ROUTE_SELECT_GRAD: {
      DDPRT_RETURN_IF_ERROR(expectCounts(3, 1, 1, numParams));
      op.topk = params[0];
      DDPRT_RETURN_IF_ERROR(checkTopk(op.topk));
      DDPRT_RETURN_IF_ERROR(
          widthOf(op.inputs[2], "token slots", op.topk, op.tokens));
      DDPRT_RETURN_IF_ERROR(
          widthOf(op.inputs[1], "logits", op.tokens, op.experts));
      if (op.topk > op.experts)
        return fail(concat("topk ", op.topk, " is over the ", op.experts,
                           " experts"));
      op.slots = op.inputs[0].numel;
      DDPRT_RETURN_IF_ERROR(mapBound("slots", op.slots));
      DDPRT_RETURN_IF_ERROR(expectMap(op.inputs[2], "token slots"));
      DDPRT_RETURN_IF_ERROR(expectNumel(op.results[0], "logits' gradient",
                                        op.tokens * op.experts));
      return expectSameDType(op.inputs[1], op.results[0], "logits' gradient");
    }
    case DDPRT_ROUTE_GATHER: {
      DDPRT_RETURN_IF_ERROR(expectCounts(2, 1, 0, numParams));
      op.slots = op.inputs[1].numel;
      DDPRT_RETURN_IF_ERROR(expectMap(op.inputs[1], "map"));
      DDPRT_RETURN_IF_ERROR(widthOf(op.results[0], "result", op.slots,
                                    op.width));
      DDPRT_RETURN_IF_ERROR(widthOf(op.inputs[0], "rows", op.width,
                                    op.tokens));
      DDPRT_RETURN_IF_ERROR(mapBound("rows", op.tokens));
      return expectSameDType(op.inputs[0], op.results[0], "result");
    }
    case DDPRT_ROUTE_COMBINE: {
      DDPRT_RETURN_IF_ERROR(expectCounts(2, 1, 1, numParams));
      op.topk = params[0];
      DDPRT_RETURN_IF_ERROR(checkTopk(op.topk));
      DDPRT_RETURN_IF_ERROR(expectMap(op.inputs[1], "token slots"));
      DDPRT_RETURN_IF_ERROR(
          widthOf(op.inputs[1], "token slots", op.topk, op.tokens));
      DDPRT_RETURN_IF_ERROR(widthOf(op.results[0], "result", op.tokens,
                                    op.width));
      DDPRT_RETURN_IF_ERROR(widthOf(op.inputs[0], "rows", op.width,
                                    op.slots));
      DDPRT_RETURN_IF_ERROR(mapBound("slots", op.slots));
      return expectSameDType(op.inputs[0], op.results[0], "result");
    }
    case DDPRT_ROUTE_SORT_CHUNKS:
    case DDPRT_ROUTE_UNSORT_CHUNKS: {
      bool sort = op.kernel == DDPRT_ROUTE_SORT_CHUNKS;
      if (numParams != 2)
        return fail(concat("takes 2 params (ranks, capacity), got ",
                           numParams));
      op.ranks = params[0];
      op.capacity = params[1];
      DDPRT_RETURN_IF_ERROR(positive("ranks", op.ranks));
      DDPRT_RETURN_IF_ERROR(positive("capacity", op.capacity));
      const std::vector<Tensor> &whole = sort ? op.inputs : op.results;
      const std::vector<Tensor> &split = sort ? op.results : op.inputs;
      if (whole.empty() || split.size() % whole.size() != 0)
        return fail(concat("needs a whole number of per-expert ",
                           sort ? "results per input" : "inputs per result",
                           ", got ", op.inputs.size(), " inputs and ",
                           op.results.size(), " results"));
      op.localExperts = int64_t(split.size() / whole.size());
      int64_t chunkRows = 0, wholeRows = 0;
      DDPRT_RETURN_IF_ERROR(
          product("ranks x capacity", op.ranks, op.capacity, chunkRows));
      DDPRT_RETURN_IF_ERROR(product("ranks x experts x capacity", chunkRows,
                                    op.localExperts, wholeRows));
      for (size_t i = 0; i < whole.size(); ++i) {
        int64_t width = 0;
        DDPRT_RETURN_IF_ERROR(widthOf(
            whole[i], concat(sort ? "input #" : "result #", i), wholeRows,
            width));
        op.widths.push_back(width);
        for (int64_t l = 0; l < op.localExperts; ++l) {
          const Tensor &block = split[i * size_t(op.localExperts) + size_t(l)];
          std::string name = concat(sort ? "result #" : "input #",
                                    i * size_t(op.localExperts) + size_t(l));
          DDPRT_RETURN_IF_ERROR(expectNumel(block, name, chunkRows * width));
          DDPRT_RETURN_IF_ERROR(expectSameDType(whole[i], block, name));
        }
      }
      return Status::ok();
    }
    case DDPRT_ROUTE_COUNT: {
      DDPRT_RETURN_IF_ERROR(expectCounts(1, 1, 1, numParams));
      op.capacity = params[0];
      DDPRT_RETURN_IF_ERROR(positive("capacity", op.capacity));
      DDPRT_RETURN_IF_ERROR(expectMap(op.inputs[0], "slot rows"));
      DDPRT_RETURN_IF_ERROR(
          widthOf(op.inputs[0], "slot rows", op.capacity, op.experts));
      DDPRT_RETURN_IF_ERROR(
          mapBound("experts x capacity", op.inputs[0].numel));
      DDPRT_RETURN_IF_ERROR(expectNumel(op.results[0], "counts", op.experts));
      return expectMap(op.results[0], "counts");
    }
    }
    return fail("unknown kernel");
  }
};

} // namespace

extern "C" ddprt_status ddprt_route(ddprt_context *context, int32_t kernel,
                                    const char *kind, const int64_t *params,
                                    int32_t numParams,
                                    const ddprt_tensor *inputs,
                                    int32_t numInputs,
                                    const ddprt_tensor *results,
                                    int32_t numResults) {
  DDPRT_CHECK_CONTEXT(context);
  const char *name = routeKernelName(kernel);
  if (!name)
    return context->report(
        invalid(__func__, concat("unknown kernel ", kernel,
                                 " (expected a DDPRT_ROUTE_*)")));
  RouteOp op;
  op.kernel = kernel;
  RouteChecker checker{concat(__func__, "(", name, ")"), op};
  const char *entry = checker.entry.c_str();
  DDPRT_REPORT_IF_ERROR(context, checkString(entry, "kind", kind));
  op.kind = kind;
  DDPRT_REPORT_IF_ERROR(context, checkCount(entry, "num_params", numParams));
  DDPRT_REPORT_IF_ERROR(context, checkCount(entry, "num_inputs", numInputs));
  DDPRT_REPORT_IF_ERROR(context,
                        checkCount(entry, "num_results", numResults));
  if (numParams > 0 && !params)
    return context->report(invalid(entry, "'params' is NULL"));
  if ((numInputs > 0 && !inputs) || (numResults > 0 && !results))
    return context->report(invalid(entry, "'inputs' or 'results' is NULL"));
  auto collect = [&](const ddprt_tensor *tensors, int32_t count,
                     const char *what, std::vector<Tensor> &out) -> Status {
    for (int32_t i = 0; i < count; ++i) {
      const ddprt_tensor &tensor = tensors[i];
      std::string label = concat(what, " #", i);
      if (tensor.reserved != 0)
        return invalid(entry, label + ": 'reserved' must be 0");
      DDPRT_RETURN_IF_ERROR(checkTensor(context, entry, label.c_str(),
                                        tensor.data, tensor.dtype,
                                        tensor.numel));
      out.push_back({tensor.data, DType(tensor.dtype), tensor.numel});
    }
    return Status::ok();
  };
  DDPRT_REPORT_IF_ERROR(context, collect(inputs, numInputs, "input", op.inputs));
  DDPRT_REPORT_IF_ERROR(context,
                        collect(results, numResults, "result", op.results));
  for (size_t i = 0; i < op.results.size(); ++i) {
    const Tensor &result = op.results[i];
    for (const Tensor &input : op.inputs)
      if (rangesOverlap(result.data, result.bytes(), input.data,
                        input.bytes()))
        return context->report(invalid(entry, "a result overlaps an input"));
    // The backends write results in different orders.
    for (size_t j = 0; j < i; ++j)
      if (rangesOverlap(result.data, result.bytes(), op.results[j].data,
                        op.results[j].bytes()))
        return context->report(invalid(entry, "two results overlap"));
  }
  DDPRT_REPORT_IF_ERROR(context, checker.check(params, numParams));
  return context->report(context->backend->route(op));
}
