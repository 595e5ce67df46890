//===- RoutingVerifier.cpp - The shapes of ddp.compute's routing kernels --===//
//
// A ddp.compute that names a `routing` kernel is run for real (ddprt_route),
// so its operands must have the shapes the kernel reads (DDPOps.td has the
// table). The runtime checks the element counts again; the verifier says
// which operand is wrong, with the shape it expected.
//
//===----------------------------------------------------------------------===//

#include "VerifierUtils.h"

#include "ddp/Dialect/DDP/IR/TensorBytes.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace ddp;

namespace {

struct RoutingChecker {
  ComputeOp op;
  ArrayRef<int64_t> params;

  InFlightDiagnostic error() {
    return op.emitOpError() << "routing "
                            << stringifyRoutingKernel(*op.getRouting()) << ": ";
  }
  static int64_t numel(Value value) {
    return getNumElements(cast<RankedTensorType>(value.getType()));
  }
  static int64_t rows(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    return type.getRank() == 0 ? 1 : type.getDimSize(0);
  }
  static Type elementOf(Value value) {
    return cast<RankedTensorType>(value.getType()).getElementType();
  }
  LogicalResult counts(size_t inputs, size_t results, size_t numParams,
                       StringRef paramNames) {
    if (op.getInputs().size() != inputs || op.getNumResults() != results)
      return error() << "takes " << inputs << " inputs and " << results
                     << " results, got " << op.getInputs().size() << " and "
                     << op.getNumResults();
    if (params.size() != numParams)
      return error() << "takes " << numParams << " params" << paramNames
                     << ", got " << params.size();
    for (int64_t value : params)
      if (value <= 0)
        return error() << "params must be positive, got " << value;
    return success();
  }
  /// Maps are f32 row indices, exact below 2^24; and the runtime takes no
  /// empty tensor.
  LogicalResult rowsOf(StringRef what, int64_t rows) {
    if (rows <= 0 || rows >= (int64_t(1) << 24))
      return error() << what << " must be from 1 to 2^24 - 1 (maps are f32 "
                     << "row indices), got " << rows;
    return success();
  }
  LogicalResult nonEmpty(ValueRange values) {
    for (Value value : values)
      if (numel(value) == 0)
        return error() << "takes no empty tensor, got " << value.getType();
    return success();
  }
  LogicalResult topk(int64_t value) {
    if (value > kMaxRoutingTopK)
      return error() << "topk " << value << " is over " << kMaxRoutingTopK
                     << ", the most the runtime's kernels take";
    return success();
  }
  /// A map: an f32 vector of `length` row indices.
  LogicalResult map(Value value, StringRef what, int64_t length) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || !type.getElementType().isF32() ||
        type.getDimSize(0) != length)
      return error() << what << " must be tensor<" << length << "xf32>, got "
                     << value.getType();
    return success();
  }
  LogicalResult expect(Value value, StringRef what, int64_t expectedRows,
                       int64_t expectedNumel, Type elementType) {
    if (rows(value) != expectedRows || numel(value) != expectedNumel ||
        (elementType && elementOf(value) != elementType))
      return error() << what << " must have " << expectedRows << " rows and "
                     << expectedNumel << " elements"
                     << (elementType ? " of its input's type" : "") << ", got "
                     << value.getType();
    return success();
  }

  LogicalResult check() {
    ValueRange in = op.getInputs();
    ResultRange out = op.getResults();
    if (failed(nonEmpty(in)) || failed(nonEmpty(out)))
      return failure();
    switch (*op.getRouting()) {
    case RoutingKernel::Select: {
      if (failed(counts(1, 3, 2, " (topk, capacity)")) ||
          failed(topk(params[0])))
        return failure();
      auto logits = cast<RankedTensorType>(in[0].getType());
      if (logits.getRank() != 2)
        return error() << "logits must be tokens x experts, got "
                       << in[0].getType();
      int64_t tokens = logits.getDimSize(0), experts = logits.getDimSize(1);
      if (params[0] > experts)
        return error() << "topk " << params[0] << " is over the " << experts
                       << " experts";
      std::optional<int64_t> slotCount = llvm::checkedMul(experts, params[1]);
      if (failed(rowsOf("tokens", tokens)) ||
          failed(rowsOf("experts x capacity",
                        slotCount.value_or(int64_t(1) << 24))))
        return failure();
      int64_t slots = *slotCount;
      if (failed(expect(out[0], "slot probabilities", slots, slots, Type())))
        return failure();
      return failure(failed(map(out[1], "slot rows", slots)) ||
                     failed(map(out[2], "token slots", tokens * params[0])));
    }
    case RoutingKernel::SelectGrad: {
      if (failed(counts(3, 1, 1, " (topk)")) || failed(topk(params[0])))
        return failure();
      auto logits = cast<RankedTensorType>(in[1].getType());
      if (logits.getRank() != 2)
        return error() << "logits must be tokens x experts, got "
                       << in[1].getType();
      if (params[0] > logits.getDimSize(1))
        return error() << "topk " << params[0] << " is over the "
                       << logits.getDimSize(1) << " experts";
      if (failed(rowsOf("slots", numel(in[0]))) ||
          failed(map(in[2], "token slots", logits.getDimSize(0) * params[0])))
        return failure();
      if (out[0].getType() != in[1].getType())
        return error() << "the logits' gradient must be " << in[1].getType()
                       << ", got " << out[0].getType();
      return success();
    }
    case RoutingKernel::Gather: {
      if (failed(counts(2, 1, 0, "")) ||
          failed(map(in[1], "the map", rows(in[1]))) ||
          failed(rowsOf("the rows", rows(in[0]))))
        return failure();
      int64_t width = numel(in[0]) / std::max<int64_t>(rows(in[0]), 1);
      return expect(out[0], "the result", rows(in[1]), rows(in[1]) * width,
                    elementOf(in[0]));
    }
    case RoutingKernel::Combine: {
      if (failed(counts(2, 1, 1, " (topk)")) || failed(topk(params[0])))
        return failure();
      int64_t tokens = rows(out[0]);
      if (failed(map(in[1], "token slots", tokens * params[0])) ||
          failed(rowsOf("the slots", rows(in[0]))))
        return failure();
      int64_t width = numel(in[0]) / std::max<int64_t>(rows(in[0]), 1);
      return expect(out[0], "the result", tokens, tokens * width,
                    elementOf(in[0]));
    }
    case RoutingKernel::SortChunks:
    case RoutingKernel::UnsortChunks: {
      bool sort = *op.getRouting() == RoutingKernel::SortChunks;
      ValueRange whole = sort ? ValueRange(in) : ValueRange(out);
      ValueRange split = sort ? ValueRange(out) : ValueRange(in);
      if (params.size() != 2 || params[0] <= 0 || params[1] <= 0)
        return error() << "takes 2 positive params (ranks, capacity)";
      if (whole.empty() || split.empty() || split.size() % whole.size() != 0)
        return error() << "needs a whole number of per-expert tensors per "
                       << (sort ? "input" : "result");
      int64_t experts = int64_t(split.size() / whole.size());
      std::optional<int64_t> chunkRows = llvm::checkedMul(params[0], params[1]);
      std::optional<int64_t> wholeRows =
          chunkRows ? llvm::checkedMul(*chunkRows, experts) : std::nullopt;
      if (!wholeRows)
        return error() << "ranks x experts x capacity overflows int64";
      int64_t chunk = *chunkRows;
      for (auto [i, tensor] : llvm::enumerate(whole)) {
        if (rows(tensor) != chunk * experts)
          return error() << (sort ? "input #" : "result #") << i
                         << " must have ranks x " << experts
                         << " experts x capacity = " << chunk * experts
                         << " rows, got " << tensor.getType();
        int64_t width = numel(tensor) / rows(tensor);
        for (int64_t l = 0; l < experts; ++l) {
          Value block = split[i * experts + l];
          std::string name = (Twine(sort ? "result #" : "input #") +
                              Twine(i * experts + l))
                                 .str();
          if (failed(expect(block, name, chunk, chunk * width,
                            elementOf(tensor))))
            return failure();
        }
      }
      return success();
    }
    case RoutingKernel::Count: {
      if (failed(counts(1, 1, 1, " (capacity)")))
        return failure();
      int64_t slots = rows(in[0]);
      if (slots % params[0] != 0)
        return error() << "the slot rows must be experts x capacity "
                       << params[0] << ", got " << in[0].getType();
      if (failed(rowsOf("experts x capacity", slots)) ||
          failed(map(in[0], "the slot rows", slots)))
        return failure();
      return map(out[0], "the counts", slots / params[0]);
    }
    }
    return success();
  }
};

} // namespace

LogicalResult ddp::detail::verifyRouting(ComputeOp op) {
  if (!op.getRouting()) {
    if (op.getParams())
      return op.emitOpError("has params but no routing kernel to take them");
    return success();
  }
  return RoutingChecker{op, op.getParams().value_or(ArrayRef<int64_t>())}
      .check();
}
