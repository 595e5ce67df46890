//===- VerifyCollectiveOrder.cpp - Static check of tokens and collectives -===//
//
// Two properties that make a schedule safe to run:
//  - every asynchronous op's results are read only after its token has been
//    waited (or by an asynchronous op issued after it), and the token is
//    waited exactly once;
//  - every rank issues the same collectives in the same order. The program
//    is SPMD with static groups, shapes and element types, so this holds as
//    long as no collective sits where only some ranks might reach it: inside
//    a region of another op, in a function with branches between blocks, or
//    in a function called from such a place.
//  - the sends and receives pair up alike on every rank and cannot deadlock
//    (PointToPointPairing.cpp), and so do those between the programs of
//    pipeline ranks (PipelineOrderCheck.cpp).
//
//===----------------------------------------------------------------------===//

#include "PointToPointPairing.h"

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/PipelinePrograms.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace ddp {
#define GEN_PASS_DEF_VERIFYCOLLECTIVEORDER
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

class VerifyCollectiveOrderPass
    : public ddp::impl::VerifyCollectiveOrderBase<VerifyCollectiveOrderPass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult checkUnconditional(Operation *op, StringRef what);
  LogicalResult checkToken(AsyncOpInterface op);
};

} // namespace

/// `op` (a collective, or a call to a function that issues one) runs on
/// every rank that runs its function: it is at the top level of a function
/// with a single block.
LogicalResult VerifyCollectiveOrderPass::checkUnconditional(Operation *op,
                                                            StringRef what) {
  Operation *parent = op->getParentOp();
  if (!isa<func::FuncOp>(parent)) {
    InFlightDiagnostic diag =
        op->emitError() << what << " is issued inside '" << parent->getName()
                        << "', so whether it runs may depend on the rank; "
                           "every rank of a group must issue the group's "
                           "collectives in the same order";
    diag.attachNote(parent->getLoc()) << "the enclosing op";
    return diag;
  }
  auto func = cast<func::FuncOp>(parent);
  if (!func.getBody().hasOneBlock())
    return op->emitError() << what << " is in function @" << func.getSymName()
                           << ", which branches between blocks, so whether "
                              "it runs may depend on the rank";
  return success();
}

/// The token of `op` reaches exactly one wait (through joins and the tokens
/// of asynchronous ops issued after it), in `op`'s block, before any use of
/// `op`'s results other than by those asynchronous ops.
LogicalResult VerifyCollectiveOrderPass::checkToken(AsyncOpInterface op) {
  Value token = op.getAsyncToken();
  SmallVector<Operation *> waits;
  // The ops issued after `op` (directly or through joins and other such
  // ops) on a communication stream: they may read its results unwaited.
  llvm::SmallPtrSet<Operation *, 4> issuedAfter;
  SmallVector<Value> worklist{token};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (value.use_empty())
      return op->emitError("its token is never waited (through ")
             << (value == token ? "no op" : "a ddp.join or a dependent op")
             << ")";
    for (Operation *user : value.getUsers()) {
      auto dependent = dyn_cast<AsyncOpInterface>(user);
      if (auto join = dyn_cast<JoinOp>(user)) {
        worklist.push_back(join.getResult());
      } else if (isa<WaitOp>(user)) {
        waits.push_back(user);
      } else if (dependent && dependent.isAsync() &&
                 llvm::is_contained(dependent.getAsyncDependencies(), value)) {
        issuedAfter.insert(user);
        worklist.push_back(dependent.getAsyncToken());
      } else {
        return op->emitError("its token is used by '")
               << user->getName()
               << "', which neither waits nor joins it nor is issued after it";
      }
    }
  }
  if (waits.size() != 1) {
    InFlightDiagnostic diag = op->emitError("its token is waited ")
                              << waits.size()
                              << " times; it must be waited "
                                 "exactly once";
    for (Operation *wait : waits)
      diag.attachNote(wait->getLoc()) << "waited here";
    return diag;
  }
  Operation *wait = waits.front();
  Block *block = op->getBlock();
  if (wait->getBlock() != block) {
    InFlightDiagnostic diag =
        op->emitError("its token is waited in another block");
    diag.attachNote(wait->getLoc()) << "the wait";
    return diag;
  }
  for (Value result : op->getResults()) {
    if (result == token)
      continue;
    for (Operation *user : result.getUsers()) {
      if (issuedAfter.contains(user))
        continue;
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (inBlock && wait->isBeforeInBlock(inBlock))
        continue;
      InFlightDiagnostic diag = user->emitError()
                                << "uses the result of '" << op->getName()
                                << "' before its token is waited";
      diag.attachNote(op->getLoc()) << "the asynchronous op";
      diag.attachNote(wait->getLoc()) << "the wait";
      return diag;
    }
  }
  return success();
}

void VerifyCollectiveOrderPass::runOnOperation() {
  ModuleOp module = getOperation();
  bool failed = false;
  if (func::FuncOp extracted = getExtractedStageProgram(module)) {
    extracted.emitError()
        << "'@" << extracted.getSymName()
        << "' is one pipeline rank's program, extracted from a pipeline "
           "('ddp.program_groups'): its sends and receives pair with the "
           "other ranks' programs, which this module lacks; check the module "
           "that holds every stage program, before "
           "ddp-extract-pipeline-stage (ddp-schedule checks it at its end)";
    return signalPassFailure();
  }

  // Functions that issue collectives, directly or through calls.
  llvm::SmallPtrSet<Operation *, 8> issuing;
  module.walk([&](CollectiveOpInterface op) {
    if (auto func = op->getParentOfType<func::FuncOp>())
      issuing.insert(func);
  });
  SymbolTableCollection symbols;
  for (bool changed = true; changed;) {
    changed = false;
    module.walk([&](CallOpInterface call) {
      auto callee =
          dyn_cast_or_null<func::FuncOp>(call.resolveCallableInTable(&symbols));
      auto caller = call->getParentOfType<func::FuncOp>();
      if (callee && caller && issuing.contains(callee) &&
          issuing.insert(caller).second)
        changed = true;
    });
  }

  auto callsCollectives = [&](Operation *op) {
    auto call = dyn_cast<CallOpInterface>(op);
    if (!call)
      return false;
    auto callee =
        dyn_cast_or_null<func::FuncOp>(call.resolveCallableInTable(&symbols));
    return callee && issuing.contains(callee);
  };

  // Functions with an error above; their sends and receives are not paired,
  // as a conditional one would only add errors about its partner.
  llvm::SmallPtrSet<Operation *, 8> failedFunctions;
  auto fail = [&](Operation *op) {
    failed = true;
    failedFunctions.insert(op->getParentOfType<func::FuncOp>());
  };
  module.walk([&](Operation *op) {
    if (isa<CollectiveOpInterface>(op)) {
      ++numCollectivesChecked;
      if (mlir::failed(checkUnconditional(op, "this collective")))
        fail(op);
    } else if (callsCollectives(op) &&
               mlir::failed(checkUnconditional(
                   op, "this call of a function that issues collectives"))) {
      fail(op);
    }
    if (auto async = dyn_cast<AsyncOpInterface>(op); async && async.isAsync()) {
      ++numTokensChecked;
      if (mlir::failed(checkToken(async)))
        fail(op);
    }
  });

  module.walk([&](func::FuncOp func) {
    if (func.isExternal() || !func.getBody().hasOneBlock() ||
        failedFunctions.contains(func))
      return;
    uint64_t pairs = 0;
    if (mlir::failed(verifyPointToPointPairs(func, callsCollectives, pairs)))
      failed = true;
    numPairsChecked += pairs;
  });
  if (!failed) {
    uint64_t pairs = 0;
    failed = mlir::failed(verifyPipelineOrder(module, callsCollectives, pairs));
    numPairsChecked += pairs;
  }
  if (failed)
    return signalPassFailure();
  markAllAnalysesPreserved();
}
