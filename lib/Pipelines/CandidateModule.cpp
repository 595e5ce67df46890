//===- CandidateModule.cpp - A copy of the module to schedule -------------===//

#include "CandidateModule.h"

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
