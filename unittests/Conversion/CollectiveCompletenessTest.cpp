//===- CollectiveCompletenessTest.cpp - Every collective is lowered -------===//
//
// A collective added to the dialect must be priced and lowered. Its cost
// kind is checked by the compiler (DDP_CollectiveOp takes one); this test
// checks that the step's lowering knows it, so that a missing one fails
// here instead of at a user's first run of ddp-lower-to-runtime.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp;

namespace {

TEST(CollectiveCompleteness, EveryCollectiveHasALowering) {
  MLIRContext context;
  context.loadDialect<DDPDialect>();

  unsigned collectives = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "ddp" ||
        !name.hasInterface<CollectiveOpInterface>())
      continue;
    ++collectives;
    EXPECT_TRUE(isLoweredInStep(name))
        << name.getStringRef().str()
        << " is a collective without a lowering in "
           "lib/Conversion/DDPToLLVM/CollectivePatterns.cpp";
  }
  // all_reduce, reduce_scatter, all_gather, send, recv: the loop ran.
  EXPECT_GE(collectives, 5u);
}

} // namespace
