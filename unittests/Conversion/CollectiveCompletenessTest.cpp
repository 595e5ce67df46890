//===- CollectiveCompletenessTest.cpp - Every collective is lowered -------===//
//
// A collective added to the dialect must be priced, estimated, lowered and
// executed. The compiler checks most of it: DDP_CollectiveOp takes its kind
// (Collectives.def, which prices it) and its memory rule, each backend's
// switch over the kinds is built with -Werror=switch, and below every kind
// must name an entry point of RuntimeFunctions.def. This test checks that
// the lowering has a pattern rooted on each collective op, so that a missing
// one fails here instead of at a user's first run of ddp-lower-to-runtime.
//
//===----------------------------------------------------------------------===//

#include "ddp/Conversion/DDPToLLVM/DDPToLLVM.h"
#include "ddp/Conversion/DDPToLLVM/RuntimeFunctions.h"
#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace ddp;

namespace {

// Every collective kind is an entry point of the runtime, by the same name.
#define DDP_COLLECTIVE(Enumerator, Name, BusFactor, Steps, InterSteps)          \
  [[maybe_unused]] constexpr RuntimeFunction kEntryOf##Enumerator =            \
      RuntimeFunction::Enumerator;
#include "ddp/Runtime/Collectives.def"

TEST(CollectiveCompleteness, EveryCollectiveHasALoweringPattern) {
  MLIRContext context;
  context.loadDialect<DDPDialect, func::FuncDialect, LLVM::LLVMDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      "ddp.mesh @world(dp = 2)\nfunc.func @step() { return }", &context);
  ASSERT_TRUE(module);
  FailureOr<std::unique_ptr<ProgramLowering>> program =
      ProgramLowering::plan(*module, {});
  ASSERT_TRUE(succeeded(program));
  LLVMTypeConverter converter(&context);
  populateDDPToLLVMTypeConversions(converter);
  RewritePatternSet patterns(&context);
  populateDDPToLLVMConversionPatterns(converter, patterns, **program);

  llvm::StringSet<> lowered;
  for (const std::unique_ptr<RewritePattern> &pattern :
       patterns.getNativePatterns())
    if (std::optional<OperationName> root = pattern->getRootKind())
      lowered.insert(root->getStringRef());

  unsigned collectives = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "ddp" ||
        !name.hasInterface<CollectiveOpInterface>())
      continue;
    ++collectives;
    EXPECT_TRUE(lowered.contains(name.getStringRef()))
        << name.getStringRef().str()
        << " is a collective without a pattern in "
           "lib/Conversion/DDPToLLVM/CollectivePatterns.cpp";
  }
  // all_reduce, reduce_scatter, all_gather, send, recv, broadcast: the loop
  // ran.
  EXPECT_GE(collectives, 6u);
}

} // namespace
