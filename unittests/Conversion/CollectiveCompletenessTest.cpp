//===- CollectiveCompletenessTest.cpp - Every collective is lowered -------===//
//
// A collective added to the dialect must be priced, estimated, lowered and
// executed. The compiler checks most of it: DDP_CollectiveOp takes its kind
// (Collectives.def, which prices it) and its memory rule, each backend's
// switch over the kinds is built with -Werror=switch, and below every kind
// must name an entry point of RuntimeFunctions.def. This test checks that
// the step's lowering knows each collective op, so that a missing one fails
// here instead of at a user's first run of ddp-lower-to-runtime.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Conversion/DDPToLLVM/RuntimeFunctions.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp;

namespace {

// Every collective kind is an entry point of the runtime, by the same name.
#define DDP_COLLECTIVE(Enumerator, Name, BusFactor, Steps, InterSteps)          \
  [[maybe_unused]] constexpr RuntimeFunction kEntryOf##Enumerator =            \
      RuntimeFunction::Enumerator;
#include "ddp/Runtime/Collectives.def"

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
  // all_reduce, reduce_scatter, all_gather, send, recv, broadcast: the loop
  // ran.
  EXPECT_GE(collectives, 6u);
}

} // namespace
