//===- CollectiveCompletenessTest.cpp - Every collective is lowered -------===//
//
// A collective added to the dialect must be priced, estimated, lowered and
// executed. The compiler checks most of it: DDP_CollectiveOp takes its kind
// (Collectives.def, which prices it) and its memory rule, each backend's
// switch over the kinds is built with -Werror=switch, and the lowering maps
// every kind to the entry point of its name. One lowering serves every
// collective (CollectivePatterns.cpp); this test lowers one of each op the
// dialect registers, so that an op whose ODS disagrees with its entry point
// (RuntimeFunctions.def) fails here instead of at a user's first run, and
// fails until the op is added below.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Conversion/Passes.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringSet.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp;

namespace {

// One of each collective, synchronous and asynchronous (after another), on
// a 16-bit payload.
constexpr const char *kEveryCollective = R"mlir(
ddp.mesh @world(dp = 3, tp = 2)

func.func @step(%x: tensor<6x4xbf16>, %counts: tensor<6xf32>) {
  %a = ddp.all_reduce sum %x over @world[dp] : tensor<6x4xbf16>
  %s, %t0 = ddp.reduce_scatter avg %a over @world[dp] async : tensor<6x4xbf16> -> tensor<2x4xbf16>
  %g, %t1 = ddp.all_gather %s over @world[dp] async after %t0 : tensor<2x4xbf16> -> tensor<6x4xbf16>
  ddp.wait %t1
  %b = ddp.broadcast %g root 1 over @world[tp] : tensor<6x4xbf16>
  %e = ddp.all_to_all %b over @world[dp] : tensor<6x4xbf16>
  %v, %t4 = ddp.all_to_all_v %e counts %counts, %counts over @world[dp] async : tensor<6x4xbf16>, tensor<6xf32>
  ddp.wait %t4
  %t2 = ddp.send %e to 1 over @world[tp] async : tensor<6x4xbf16>
  %r, %t3 = ddp.recv from -1 over @world[tp] async : tensor<6x4xbf16>
  %all = ddp.join %t2, %t3
  ddp.wait %all
  return
}
)mlir";

TEST(CollectiveCompleteness, EveryCollectiveLowers) {
  MLIRContext context;
  context.loadDialect<DDPDialect, func::FuncDialect, LLVM::LLVMDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kEveryCollective, &context);
  ASSERT_TRUE(module);

  llvm::StringSet<> present;
  module->walk([&](CollectiveOpInterface op) {
    present.insert(op->getName().getStringRef());
  });
  unsigned collectives = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "ddp" ||
        !name.hasInterface<CollectiveOpInterface>())
      continue;
    ++collectives;
    EXPECT_TRUE(isLoweredInStep(name)) << name.getStringRef().str();
    EXPECT_TRUE(present.contains(name.getStringRef()))
        << name.getStringRef().str()
        << " is a collective this test does not lower; add it to "
           "kEveryCollective";
  }
  // all_reduce, reduce_scatter, all_gather, send, recv, broadcast,
  // all_to_all: the loop ran.
  EXPECT_GE(collectives, 7u);

  PassManager pm(&context);
  pm.addPass(createLowerDDPToRuntime());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  // Each collective became the call of its kind's entry point.
  llvm::StringSet<> called;
  module->walk([&](LLVM::CallOp call) {
    if (std::optional<StringRef> callee = call.getCallee())
      called.insert(*callee);
  });
  for (const char *function :
       {"ddprt_all_reduce", "ddprt_reduce_scatter", "ddprt_all_gather",
        "ddprt_broadcast", "ddprt_all_to_all", "ddprt_all_to_all_v",
        "ddprt_send", "ddprt_recv"})
    EXPECT_TRUE(called.contains(function)) << function;
}

// The async form a pass makes of any synchronous collective: the same op,
// operands and inherent attributes, with a token, issued after the given
// tokens.
TEST(CollectiveCompleteness, EveryCollectiveHasAnAsyncForm) {
  MLIRContext context;
  context.loadDialect<DDPDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
ddp.mesh @world(dp = 3, tp = 2)
func.func @step(%x: tensor<6x4xbf16>, %counts: tensor<6xf32>) {
  %a = ddp.all_reduce sum %x over @world[dp] : tensor<6x4xbf16>
  %s = ddp.reduce_scatter avg %a over @world[dp] : tensor<6x4xbf16> -> tensor<2x4xbf16>
  %g = ddp.all_gather %s over @world[dp] : tensor<2x4xbf16> -> tensor<6x4xbf16>
  %b = ddp.broadcast %g root 1 over @world[tp] : tensor<6x4xbf16>
  %e = ddp.all_to_all %b over @world[dp] : tensor<6x4xbf16>
  %v = ddp.all_to_all_v %e counts %counts, %counts over @world[dp] : tensor<6x4xbf16>, tensor<6xf32>
  ddp.send %e to 1 over @world[tp] : tensor<6x4xbf16>
  %r = ddp.recv from -1 over @world[tp] : tensor<6x4xbf16>
  return
}
)mlir",
                                                            &context);
  ASSERT_TRUE(module);
  SmallVector<Operation *> collectives;
  module->walk([&](CollectiveOpInterface op) { collectives.push_back(op); });
  ASSERT_EQ(collectives.size(), 8u);
  Value previousToken;
  SmallVector<Operation *> asyncOps;
  for (Operation *sync : collectives) {
    SCOPED_TRACE(sync->getName().getStringRef().str());
    OpBuilder builder(sync);
    // A send or receive is never issued after other ops (its verifier).
    SmallVector<Value> dependencies;
    if (previousToken && !isa<SendOp, RecvOp>(sync))
      dependencies.push_back(previousToken);
    Operation *async = createAsyncCollective(builder, sync, dependencies);
    auto asyncOp = cast<AsyncOpInterface>(async);
    EXPECT_EQ(async->getName(), sync->getName());
    EXPECT_TRUE(asyncOp.isAsync());
    EXPECT_EQ(asyncOp.getAsyncDependencies().size(), dependencies.size());
    EXPECT_EQ(async->getPropertiesAsAttribute(),
              sync->getPropertiesAsAttribute());
    EXPECT_EQ(async->getNumResults(), sync->getNumResults() + 1);
    for (auto [before, after] :
         llvm::zip(sync->getOperands(), async->getOperands()))
      EXPECT_EQ(before, after);
    previousToken = asyncOp.getAsyncToken();
    asyncOps.push_back(async);
  }
  // In place of the synchronous ops, with each token consumed once (the
  // last ones waited), the step verifies.
  for (auto [sync, async] : llvm::zip_equal(collectives, asyncOps)) {
    for (auto [before, after] :
         llvm::zip(sync->getResults(), async->getResults()))
      before.replaceAllUsesWith(after);
    sync->erase();
  }
  for (Operation *async : asyncOps) {
    Value token = cast<AsyncOpInterface>(async).getAsyncToken();
    if (token.use_empty()) {
      OpBuilder builder(async->getBlock()->getTerminator());
      WaitOp::create(builder, async->getLoc(), token);
    }
  }
  EXPECT_TRUE(succeeded(verify(*module)));
}

} // namespace
