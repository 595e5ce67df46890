//===- NamedSymbolTest.cpp - forEachNamedSymbol against MLIR's walk -------===//
//
// forEachNamedSymbol skips building attribute dictionaries; it must report
// exactly what SymbolTable::getSymbolUses does, op by op, on scheduled steps
// (every kind of ddp op, with properties) and on generic IR (unregistered
// ops with properties and with regions, a nested symbol table).
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Import/Import.h"
#include "ddp/Import/ModelConfig.h"
#include "ddp/Pipelines/SchedulePipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace mlir;
using namespace ddp;

namespace {

/// Sorted, each name once: a symbol two attributes of an op name is one
/// use to MLIR's walk and two calls of the helper.
std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<std::string> fromWalk(Operation *op) {
  std::vector<std::string> names;
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(op))
    for (const SymbolTable::SymbolUse &use : *uses)
      names.push_back(use.getSymbolRef().getRootReference().str());
  return sorted(std::move(names));
}

/// Also whether the helper found every reference (no unknown scope).
std::vector<std::string> fromHelper(Operation *op, bool *complete = nullptr) {
  std::vector<std::string> names;
  bool all = forEachNamedSymbol(
      op, [&](StringAttr name) { names.push_back(name.str()); });
  if (complete)
    *complete = all;
  return sorted(std::move(names));
}

/// Every op of every function, and every function whole, agree; returns how
/// many ops named a symbol.
size_t expectSameUses(ModuleOp module) {
  size_t naming = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    bool complete = false;
    EXPECT_EQ(fromHelper(func, &complete), fromWalk(func))
        << func.getSymName().str();
    EXPECT_TRUE(complete);
    func.walk([&](Operation *op) {
      if (op == func.getOperation())
        return;
      std::vector<std::string> expected = fromWalk(op);
      naming += !expected.empty();
      EXPECT_EQ(fromHelper(op), expected) << op->getName().getStringRef().str();
    });
  }
  return naming;
}

class NamedSymbolTest : public ::testing::Test {
protected:
  NamedSymbolTest() {
    context.loadDialect<DDPDialect, func::FuncDialect>();
    context.allowUnregisteredDialects();
  }
  MLIRContext context;
};

TEST_F(NamedSymbolTest, ScheduledSteps) {
  // A pipelined step with the distributed optimizer and overlapped gathers,
  // and a fully sharded one: parameter reads, gradients, shard optimizers,
  // collectives naming the mesh, sends and receives.
  struct Case {
    int64_t stages, dataParallel;
    const char *options;
  } cases[] = {
      {2, 3,
       "policy=megatron use-distributed-optimizer=true "
       "overlap-param-gather=true"},
      {1, 3,
       "use-distributed-optimizer=true "
       "data-parallel-sharding-strategy=optim_grads_params"},
  };
  for (const Case &c : cases) {
    ModelConfig config = lookupModelPreset("gpt-8.3b")->config;
    config.numLayers = 2;
    config.seqLength = 16;
    config.hiddenSize = 64;
    config.numAttentionHeads = 4;
    config.vocabSize = 256;
    config.tensorModelParallelSize = 1;
    config.pipelineModelParallelSize = c.stages;
    config.dataParallelSize = c.dataParallel;
    config.numMicrobatches = 4;
    OwningOpRef<ModuleOp> module = importModel(context, config);
    ASSERT_TRUE(module);
    SchedulePipelineOptions options;
    ASSERT_TRUE(succeeded(options.parseFromString(c.options)));
    ASSERT_TRUE(succeeded(runDDPSchedule(*module, options)));
    EXPECT_GT(expectSameUses(*module), 10u) << c.options;
  }
}

TEST_F(NamedSymbolTest, GenericIR) {
  const char *source = R"mlir(
    module {
      ddp.mesh @world(dp = 2)
      ddp.param @w : tensor<4xf32>
      func.func @f() {
        "test.plain"() {ref = @w, nested = [@a::@b, {inner = @c}]} : () -> ()
        "test.props"() <{prop = @hidden}> : () -> ()
        "test.region"() ({
          "test.inner"() {ref = @d} : () -> ()
          builtin.module attributes {test.ref = @e} {
            "test.deeper"() {ref = @skipped} : () -> ()
          }
        }, {
          "test.second"() {ref = @g} : () -> ()
        }) : () -> ()
        %0 = ddp.get_param @w {tag = @f} : tensor<4xf32>
        %1 = ddp.all_reduce sum %0 over @world[dp] : tensor<4xf32>
        %2 = ddp.scale %1 by 2.0 {note = [@h], other = @w} : tensor<4xf32>
        return
      }
    }
  )mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  // plain, region, inner, the nested module, deeper, second, get_param,
  // all_reduce, and a ddp op without inherent references (scale) naming
  // symbols in its discardable attributes.
  EXPECT_EQ(expectSameUses(*module), 9u);
}

TEST_F(NamedSymbolTest, UnknownScope) {
  // An unregistered op with one region may be a symbol table: MLIR's walk
  // gives up on it; the helper says so and reports its own references.
  const char *source = R"mlir(
    module {
      func.func @f() {
        "test.scope"() ({
          "test.inner"() {ref = @inside} : () -> ()
        }) {ref = @own} : () -> ()
        return
      }
    }
  )mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  Operation *scope = &func.getBody().front().front();
  EXPECT_FALSE(SymbolTable::getSymbolUses(scope));
  EXPECT_FALSE(SymbolTable::getSymbolUses(func));
  bool complete = true;
  EXPECT_EQ(fromHelper(scope, &complete), std::vector<std::string>{"own"});
  EXPECT_FALSE(complete);
  EXPECT_EQ(fromHelper(func, &complete), std::vector<std::string>{"own"});
  EXPECT_FALSE(complete);
}

} // namespace
