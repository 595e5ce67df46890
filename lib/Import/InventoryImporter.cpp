//===- InventoryImporter.cpp - The step of a model known by its params ----===//
//
// An inventory says which parameters a model has, not how they connect. The
// step treats the model as a chain in registration order, which is what
// autograd's reverse order then walks back:
//
// - a 2-D parameter W [out, in] is a linear layer Y = X W^T on
//   tokens_per_microbatch rows: forward, dgrad and wgrad GEMMs;
// - any other parameter P is an elementwise op on the running activation
//   (tokens x numel(P) FLOPs forward, twice that backward) whose backward
//   also yields P's gradient;
// - where the running activation's width or dtype differs from what a linear
//   layer takes, a costed "adapt" op (the non-parametric compute between
//   layers) or a ddp.cast bridges them, and their backward bridges back.
//
// Gradients become ready in `ready_order`: the wgrad of a linear layer is
// issued once its output gradient exists and every parameter before it in
// ready order has been issued, so the default (reverse registration) order
// puts each wgrad right after its dgrad.
//
//===----------------------------------------------------------------------===//

#include "ddp/Import/Import.h"

#include "StepBuilder.h"

using namespace mlir;
using namespace ddp;
using namespace ddp::importer;

namespace {

/// What the forward keeps of one parameter's op for the backward.
struct ParamActivations {
  Value input;       // the activation the op consumed (after adapt/cast)
  Value adaptedFrom; // before adapt, when the width changed
  Value castFrom;    // before the cast, when the dtype changed
};

class InventoryImporter {
public:
  InventoryImporter(MLIRContext &context, const ParamInventory &inventory);
  OwningOpRef<ModuleOp> run();

private:
  static MeshLayout getMeshLayout(const ParamInventory &inventory);

  Value forward(Value input, std::vector<ParamActivations> &acts);
  void backward(Value gradOut, const std::vector<ParamActivations> &acts);

  RankedTensorType getActivationType(int64_t width, Type elementType) const {
    return RankedTensorType::get({inventory.tokensPerMicrobatch, width},
                                 elementType);
  }
  static double getBytes(Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return tensor.getNumElements() *
           double(tensor.getElementTypeBitWidth() / 8);
  }

  const ParamInventory &inventory;
  StepBuilder sb;
  std::vector<unsigned> paramIds;
  std::vector<Type> elementTypes;
};

} // namespace

MeshLayout InventoryImporter::getMeshLayout(const ParamInventory &inventory) {
  int64_t ep = inventory.expertModelParallelSize;
  return MeshLayout::dataParallel(inventory.dataParallelSize,
                                  ep == 1 ? std::nullopt
                                          : std::optional<int64_t>(ep));
}

InventoryImporter::InventoryImporter(MLIRContext &context,
                                     const ParamInventory &inventory)
    : inventory(inventory), sb(context, getMeshLayout(inventory),
                               inventory.optimizer, inventory.numMicrobatches) {
  for (const InventoryParam &param : inventory.params) {
    Type elementType = getFloatType(&context, param.dtype);
    ParamSpec spec;
    spec.name = param.name;
    spec.type = RankedTensorType::get(param.shape, elementType);
    spec.expert = param.expert;
    spec.sharedEmbedding = param.sharedEmbedding;
    paramIds.push_back(sb.addParam(std::move(spec)));
    elementTypes.push_back(elementType);
  }
}

/// The first linear layer's input width and dtype set the step's input; a
/// model without one takes the first parameter's last dimension.
static std::pair<int64_t, size_t> getInputWidth(const ParamInventory &inv) {
  for (auto [index, param] : llvm::enumerate(inv.params))
    if (param.shape.size() == 2)
      return {param.shape[1], index};
  const InventoryParam &first = inv.params.front();
  return {first.shape.empty() ? 1 : first.shape.back(), 0};
}

Value InventoryImporter::forward(Value x, std::vector<ParamActivations> &acts) {
  int64_t tokens = inventory.tokensPerMicrobatch;
  acts.resize(inventory.params.size());
  for (auto [index, param] : llvm::enumerate(inventory.params)) {
    ParamActivations &act = acts[index];
    unsigned id = paramIds[index];
    if (param.shape.size() == 2) {
      Type elementType = elementTypes[index];
      auto type = cast<RankedTensorType>(x.getType());
      if (type.getElementType() != elementType) {
        act.castFrom = x;
        x = sb.castTo(x, elementType);
      }
      int64_t in = param.shape[1];
      if (cast<RankedTensorType>(x.getType()).getDimSize(1) != in) {
        act.adaptedFrom = x;
        RankedTensorType adapted = getActivationType(in, elementType);
        x = sb.compute1("adapt", x, adapted, 0.0,
                        getBytes(x.getType()) + getBytes(adapted),
                        std::nullopt);
      }
      act.input = x;
      x = sb.gemm(GemmPhase::Fwd, x, false, sb.getParam(id), true,
                  std::nullopt);
      continue;
    }
    act.input = x;
    Value p = sb.getParam(id);
    double numel = cast<RankedTensorType>(p.getType()).getNumElements();
    x = sb.compute1("elementwise", {x, p}, x.getType(), tokens * numel,
                    2 * getBytes(x.getType()) + getBytes(p.getType()),
                    std::nullopt);
  }
  return x;
}

void InventoryImporter::backward(Value gradOut,
                                 const std::vector<ParamActivations> &acts) {
  size_t numParams = inventory.params.size();
  // Linear layers whose wgrad waits for its turn in ready order: the output
  // gradient and the saved input.
  std::vector<std::pair<Value, Value>> pendingWgrad(numParams);
  std::vector<Value> pendingGradient(numParams);
  std::vector<bool> available(numParams, false);
  size_t nextReady = 0;
  auto issueReady = [&]() {
    for (; nextReady < numParams && available[inventory.readyOrder[nextReady]];
         ++nextReady) {
      size_t index = inventory.readyOrder[nextReady];
      Value gradient = pendingGradient[index];
      if (!gradient) {
        auto [dy, x] = pendingWgrad[index];
        gradient = sb.gemm(GemmPhase::Wgrad, dy, true, x, false, std::nullopt);
      }
      sb.addGradient(paramIds[index], gradient);
    }
  };

  Value grad = gradOut;
  for (size_t index = numParams; index-- > 0;) {
    const InventoryParam &param = inventory.params[index];
    const ParamActivations &act = acts[index];
    unsigned id = paramIds[index];
    // The step's input needs no gradient, so the first op has no dgrad.
    bool needsInputGrad = index > 0;
    if (param.shape.size() == 2) {
      pendingWgrad[index] = {grad, act.input};
      if (needsInputGrad) {
        grad = sb.gemm(GemmPhase::Dgrad, grad, false, sb.getParam(id), false,
                       std::nullopt);
        if (act.adaptedFrom)
          grad = sb.compute1("adapt_grad", grad, act.adaptedFrom.getType(), 0.0,
                             getBytes(grad.getType()) +
                                 getBytes(act.adaptedFrom.getType()),
                             std::nullopt);
        if (act.castFrom)
          grad = sb.castTo(
              grad,
              cast<RankedTensorType>(act.castFrom.getType()).getElementType());
      }
    } else {
      Value p = sb.getParam(id);
      double numel = cast<RankedTensorType>(p.getType()).getNumElements();
      SmallVector<Type> results;
      if (needsInputGrad)
        results.push_back(grad.getType());
      results.push_back(p.getType());
      ValueRange grads =
          sb.compute("elementwise_grad", {grad, act.input, p}, results,
                     2 * inventory.tokensPerMicrobatch * numel,
                     3 * getBytes(grad.getType()) + 2 * getBytes(p.getType()),
                     std::nullopt);
      pendingGradient[index] = grads.back();
      if (needsInputGrad)
        grad = grads.front();
    }
    available[index] = true;
    issueReady();
  }
  assert(nextReady == numParams && "every gradient was issued");
}

OwningOpRef<ModuleOp> InventoryImporter::run() {
  auto [width, firstLinear] = getInputWidth(inventory);
  Type inputType = getActivationType(width, elementTypes[firstLinear]);
  SmallVector<Type> inputs(inventory.numMicrobatches, inputType);
  SmallVector<Value> args = sb.beginStep(inputs);

  Type lossType =
      RankedTensorType::get({1}, Float32Type::get(inputType.getContext()));
  SmallVector<Value> losses;
  for (int64_t m = 0; m < inventory.numMicrobatches; ++m) {
    sb.setMicrobatch(m);
    std::vector<ParamActivations> acts;
    Value output = forward(args[m], acts);
    double elements = cast<RankedTensorType>(output.getType()).getNumElements();
    losses.push_back(sb.compute1("loss", output, lossType, 3 * elements,
                                 getBytes(output.getType()) + 4.0,
                                 std::nullopt));
    Value gradOut =
        sb.compute1("loss_grad", output, output.getType(), 3 * elements,
                    2 * getBytes(output.getType()), std::nullopt);
    backward(gradOut, acts);
  }
  return sb.finish(losses);
}

OwningOpRef<ModuleOp> ddp::importInventory(MLIRContext &context,
                                           const ParamInventory &inventory) {
  return InventoryImporter(context, inventory).run();
}
