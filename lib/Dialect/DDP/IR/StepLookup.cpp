//===- StepLookup.cpp - Which function of a module is its step ------------===//

#include "ddp/Dialect/DDP/IR/StepLookup.h"

using namespace mlir;
using namespace ddp;

func::FuncOp ddp::findStep(ModuleOp module, StringRef name,
                           SmallVectorImpl<func::FuncOp> &withBody) {
  withBody.clear();
  if (!name.empty()) {
    auto step = module.lookupSymbol<func::FuncOp>(name);
    return step && !step.isExternal() ? step : func::FuncOp();
  }
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      withBody.push_back(func);
  return withBody.size() == 1 ? withBody.front() : func::FuncOp();
}
