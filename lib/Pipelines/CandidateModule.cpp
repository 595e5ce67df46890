//===- CandidateModule.cpp - A copy of the module to schedule -------------===//

#include "CandidateModule.h"

#include "ddp/Timing/HardwareProfile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

ModuleOp ddp::createCandidateModule(ModuleOp module) {
  // The ops before the copy is inserted, so that it does not copy itself,
  // nor another candidate (a step's module nests no module of its own).
  SmallVector<Operation *> originals;
  for (Operation &op : module.getBody()->getOperations())
    if (!isa<ModuleOp>(op))
      originals.push_back(&op);
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  ModuleOp candidate = ModuleOp::create(builder, module.getLoc());
  for (NamedAttribute attr : module->getDiscardableAttrs())
    candidate->setAttr(attr.getName(), attr.getValue());
  IRMapping mapping;
  for (Operation *op : originals)
    candidate.getBody()->push_back(op->clone(mapping));
  return candidate;
}

FailureOr<ddp::CandidatePricing>
ddp::getCandidatePricing(ModuleOp module, StringRef hardware,
                         int64_t dataParallelSize, double moeImbalance) {
  llvm::Expected<timing::HardwareProfile> profile =
      timing::lookupHardwareProfile(hardware);
  if (!profile)
    return module.emitError()
           << "ddp-schedule: " << llvm::toString(profile.takeError());
  sim::SimOptions options;
  options.dataParallelSize = dataParallelSize;
  options.moeImbalance = moeImbalance;
  options.recordEvents = false;
  return CandidatePricing{timing::CostModel(std::move(*profile)), options};
}
