//===- ShardParams.cpp - Gather each FSDP unit where it is used -----------===//
//
// Megatron-FSDP's optim_grads_params (PyTorch FSDP2's fully_shard) on the
// step ddp-overlap-param-gather made: instead of one gather per bucket at
// the start of the step, written whole into the parameters, each run of a
// unit's uses reads its parameters from a gather of its own, issued
// `fsdp-prefetch` runs ahead and unpacked right before the run.
// docs/FullySharded.md has the design.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPDialect.h"
#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/EquivalenceClasses.h"

namespace ddp {
#define GEN_PASS_DEF_SHARDPARAMS
#include "ddp/Dialect/DDP/Transforms/Passes.h.inc"
} // namespace ddp

using namespace mlir;
using namespace ddp;

namespace {

/// One gather of ddp-overlap-param-gather: the shard read at the start, its
/// asynchronous all-gather, the wait and the write of the parameters.
struct Chain {
  GetParamShardOp shard;
  AllGatherOp gather;
  WaitOp wait;
  SetParamsOp setParams;
  /// The unit it belongs to.
  unsigned unit = 0;
};

/// A maximal stretch of the step's top-level ops in which a unit's
/// parameters are read and no other unit's are.
struct Run {
  unsigned unit = 0;
  /// The operands it reads the unit's parameters through, with the
  /// position of their top-level op in the step's block, in order.
  SmallVector<std::pair<unsigned, OpOperand *>> uses;
  bool hasForwardGemm = false;
  /// uses[0, backwardEnd) end with its last read by the backward
  /// (isForwardRead); 0 when it has none.
  size_t backwardEnd = 0;

  unsigned getFirst() const { return uses.front().first; }
};

/// Whether the op reading through `operand` is the forward's (true), the
/// backward's (false), or says nothing. A GEMM says by its phase; a
/// ddp.compute whose kind ends in `_grad` is the backward's (as the
/// importer names them: layernorm_grad, gelu_grad, ...).
std::optional<bool> isForwardRead(OpOperand *operand) {
  Operation *owner = operand->getOwner();
  if (auto gemm = dyn_cast<GemmOp>(owner))
    return gemm.getPhase() == GemmPhase::Fwd;
  if (auto compute = dyn_cast<ComputeOp>(owner))
    if (compute.getKind().ends_with("_grad"))
      return false;
  return std::nullopt;
}

/// Whether `operand` is read by a forward GEMM.
bool isForwardGemmRead(OpOperand *operand) {
  return isa<GemmOp>(operand->getOwner()) && isForwardRead(operand) == true;
}

class ShardParamsPass : public ddp::impl::ShardParamsBase<ShardParamsPass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult collectChains(func::FuncOp step,
                              SmallVectorImpl<Chain> &chains);
  /// fsdp-unit-prefetch's depths; none when it is empty.
  LogicalResult parseUnitPrefetch(func::FuncOp step,
                                  SmallVectorImpl<unsigned> &depths);
};

} // namespace

static std::string describeParams(ArrayAttr params) {
  std::string names;
  llvm::raw_string_ostream os(names);
  llvm::interleaveComma(params, os, [&](Attribute param) { os << param; });
  return names;
}

/// Finds the gathers ddp-overlap-param-gather made, and checks their shape.
LogicalResult ShardParamsPass::collectChains(func::FuncOp step,
                                             SmallVectorImpl<Chain> &chains) {
  WalkResult walked = step.walk([&](SetParamsOp setParams) {
    auto error = [&]() {
      return setParams->emitError()
             << "cannot shard parameters ["
             << describeParams(setParams.getParams()) << "]: ";
    };
    auto gather = setParams.getValues().getDefiningOp<AllGatherOp>();
    auto shard =
        gather ? gather.getInput().getDefiningOp<GetParamShardOp>() : nullptr;
    if (!shard || !gather.getToken()) {
      (void)(error() << "they are not gathered as ddp-overlap-param-gather "
                        "gathers them; run it first "
                        "(use-distributed-optimizer=true "
                        "overlap-param-gather=true)");
      return WalkResult::interrupt();
    }
    if (setParams->getParentOp() != step || gather->getParentOp() != step) {
      (void)(error() << "the gather must be at the top level of the step");
      return WalkResult::interrupt();
    }
    if (shard.getParamsAttr() != setParams.getParamsAttr() ||
        shard.getOffsetsAttr() != setParams.getOffsetsAttr() ||
        !shard.getResult().hasOneUse() || !gather.getResult().hasOneUse() ||
        !gather.getToken().hasOneUse() ||
        !isa<WaitOp>(*gather.getToken().getUsers().begin())) {
      (void)(error() << "the gather is not one shard read, one asynchronous "
                        "all-gather waited once, and one write of the same "
                        "parameters");
      return WalkResult::interrupt();
    }
    chains.push_back(
        {shard, gather, cast<WaitOp>(*gather.getToken().getUsers().begin()),
         setParams});
    return WalkResult::advance();
  });
  return failure(walked.wasInterrupted());
}

/// How many runs ahead of run k its turn gathers (Megatron-FSDP's
/// AllGatherPipeline.all_gather_params, param_and_grad_buffer.py L4486-4520
/// at d98e8a6): the next runs while the elements they add stay below half
/// of `unitSize` (its suggested_AG_prefetch_size = the unit size // 2,
/// megatron_fsdp.py L419-444), the run that crosses it included; none
/// when that half is 0. With `doubleBuffer`, one at most: two units'
/// buffers, the computing one's and the next (L4471-4485).
static SmallVector<size_t> getDepthsBySize(ArrayRef<int64_t> runElements,
                                           uint64_t unitSize,
                                           bool doubleBuffer) {
  SmallVector<size_t> depths;
  uint64_t budget = unitSize / 2;
  for (size_t k = 0; k < runElements.size(); ++k) {
    size_t depth = 0;
    uint64_t prefetched = 0;
    while (k + depth + 1 < runElements.size() && prefetched < budget &&
           !(doubleBuffer && depth >= 1)) {
      ++depth;
      prefetched += uint64_t(runElements[k + depth]);
    }
    depths.push_back(depth);
  }
  return depths;
}

/// The issue points of depths per run (run k's turn gathers up to run
/// k + depths[k]; the first depths[0] runs at the start): run j is issued
/// after the first run whose turn reaches it.
static SmallVector<int64_t> getIssuePointsByDepth(ArrayRef<size_t> depths) {
  SmallVector<int64_t> issueAfter(depths.size());
  size_t turn = 0;
  for (size_t j = 0; j < depths.size(); ++j) {
    if (j < depths.front()) {
      issueAfter[j] = -1;
      continue;
    }
    // The first turn reaching j reaches every run before it too.
    while (turn < j && turn + depths[turn] < j)
      ++turn;
    issueAfter[j] = int64_t(turn);
  }
  return issueAfter;
}

LogicalResult
ShardParamsPass::parseUnitPrefetch(func::FuncOp step,
                                   SmallVectorImpl<unsigned> &depths) {
  StringRef text = StringRef(fsdpUnitPrefetch).trim();
  if (text.empty())
    return success();
  SmallVector<StringRef> words;
  text.split(words, ',');
  for (StringRef word : words) {
    unsigned depth = 0;
    if (word.trim().getAsInteger(10, depth))
      return step.emitError("fsdp-unit-prefetch='")
             << fsdpUnitPrefetch << "': '" << word.trim()
             << "' is not a depth; give non-negative integers separated by "
                "commas, one per unit in forward order";
    depths.push_back(depth);
  }
  return success();
}

void ShardParamsPass::runOnOperation() {
  func::FuncOp step = getOperation();
  if (step.isExternal())
    return;
  SmallVector<Chain> chains;
  if (failed(collectChains(step, chains)))
    return signalPassFailure();
  if (chains.empty())
    return;
  SmallVector<unsigned> unitPrefetch;
  if (failed(parseUnitPrefetch(step, unitPrefetch)))
    return signalPassFailure();
  if (!unitPrefetch.empty() && suggestedCommunicationUnitSize > 0) {
    step.emitError("fsdp-unit-prefetch and suggested-communication-unit-size "
                   "both set how far ahead each unit is gathered; give one");
    return signalPassFailure();
  }
  // Megatron-FSDP's double buffers hold two units' parameters: the one
  // computing and the one gathered next (param_and_grad_buffer.py
  // L4420-4430 raises past two).
  if (fsdpDoubleBuffer && llvm::any_of(unitPrefetch, [](unsigned depth) {
        return depth > 1;
      })) {
    step.emitError("fsdp-double-buffer holds two units' gathered "
                   "parameters, the computing one's and the next: "
                   "fsdp-unit-prefetch gives a depth above 1; use 1 or 0");
    return signalPassFailure();
  }
  if (fsdpDoubleBuffer) {
    if (suggestedCommunicationUnitSize == 0 && unitPrefetch.empty() &&
        fsdpPrefetch > 1) {
      step.emitError("fsdp-double-buffer holds two units' gathered "
                     "parameters, the computing one's and the next: "
                     "fsdp-prefetch=")
          << unsigned(fsdpPrefetch) << " needs " << fsdpPrefetch + 1
          << "; use fsdp-prefetch=1 or 0";
      return signalPassFailure();
    }
    if (!reshardAfterForward || fsdpKeepLastUnits > 0) {
      step.emitError("fsdp-double-buffer holds two units' gathered "
                     "parameters, but ")
          << (reshardAfterForward ? "fsdp-keep-last-units"
                                  : "reshard-after-forward=false")
          << " keeps units gathered from their forward to their backward "
             "beside the others; drop it or fsdp-double-buffer";
      return signalPassFailure();
    }
  }
  auto module = step->getParentOfType<ModuleOp>();
  Block &body = step.getBody().front();
  DenseMap<StringAttr, ParamOp> declarations;
  for (ParamOp param : module.getOps<ParamOp>())
    declarations[param.getSymNameAttr()] = param;

  // Units: chains whose parameters share a layer, joined transitively. A
  // chain with a parameter outside every layer (the embeddings, the final
  // norm) stays as it is, gathered once and kept whole, as Megatron-FSDP
  // keeps the parameters outside its units.
  auto layerOf = [&](FlatSymbolRefAttr param) -> std::optional<int64_t> {
    ParamOp decl = declarations.lookup(param.getAttr());
    if (!decl || !decl.getLayer())
      return std::nullopt;
    return int64_t(*decl.getLayer());
  };
  llvm::erase_if(chains, [&](Chain &chain) {
    return llvm::any_of(
        chain.setParams.getParams().getAsRange<FlatSymbolRefAttr>(),
        [&](FlatSymbolRefAttr param) { return !layerOf(param); });
  });
  if (chains.empty())
    return;
  DenseMap<StringAttr, unsigned> chainOfParam;
  llvm::EquivalenceClasses<int64_t> sameUnit;
  // Layers are keyed as themselves; chains as -1 - index.
  auto chainKey = [](size_t index) { return -1 - int64_t(index); };
  for (auto [index, chain] : llvm::enumerate(chains)) {
    sameUnit.insert(chainKey(index));
    for (auto param : chain.setParams.getParams()
                          .getAsRange<FlatSymbolRefAttr>()) {
      auto [found, added] = chainOfParam.try_emplace(param.getAttr(), index);
      if (!added) {
        chain.setParams->emitError()
            << "cannot shard parameters: " << param
            << (found->second == index ? " is named twice in one gather"
                                       : " is written by two gathers");
        return signalPassFailure();
      }
      sameUnit.unionSets(chainKey(index), *layerOf(param));
    }
  }
  DenseMap<int64_t, unsigned> unitOfLeader;
  for (auto [index, chain] : llvm::enumerate(chains)) {
    int64_t leader = sameUnit.getLeaderValue(chainKey(index));
    chain.unit = unitOfLeader.try_emplace(leader, unitOfLeader.size())
                     .first->second;
  }
  unsigned numUnitsHere = unitOfLeader.size();
  SmallVector<SmallVector<size_t>> chainsOfUnit(numUnitsHere);
  for (auto [index, chain] : llvm::enumerate(chains))
    chainsOfUnit[chain.unit].push_back(index);

  // The reads of each unit's parameters, at the top-level op that holds
  // them.
  DenseMap<Operation *, unsigned> position;
  for (auto [index, op] : llvm::enumerate(body))
    position[&op] = index;
  // (position, unit) -> the operands read there.
  std::map<std::pair<unsigned, unsigned>, SmallVector<OpOperand *>> reads;
  SmallVector<GetParamOp> readsOfParams;
  step.walk([&](GetParamOp get) {
    auto found = chainOfParam.find(get.getParamAttr().getAttr());
    if (found == chainOfParam.end())
      return;
    readsOfParams.push_back(get);
    // A use is in the step's body, where its value is defined.
    for (OpOperand &use : get.getResult().getUses())
      reads[{position[body.findAncestorOpInBlock(*use.getOwner())],
             chains[found->second].unit}]
          .push_back(&use);
  });

  // Where each unit's update is written: a read after it would see the
  // update in its gather, where the step as written reads the old values.
  SmallVector<std::optional<unsigned>> updatedAt(numUnitsHere);
  for (Operation &op : body)
    if (auto write = dyn_cast<SetParamShardOp>(op))
      for (auto param : write.getParams().getAsRange<FlatSymbolRefAttr>()) {
        auto found = chainOfParam.find(param.getAttr());
        if (found == chainOfParam.end())
          continue;
        std::optional<unsigned> &at = updatedAt[chains[found->second].unit];
        at = std::min(at.value_or(position[&op]), position[&op]);
      }

  // Runs: a unit's read continues its run when no read of another unit
  // lies between (reads are ordered by position, then unit), and it does
  // not start a microbatch's forward after the run's backward: a forward
  // GEMM after a backward read starts a new run, which takes the reads
  // since that backward read (the forward's norm before the GEMM). So the
  // first unit's backward and the next microbatch's forward, with only the
  // embedding between, are gathered apart, as Megatron-FSDP and FSDP2
  // gather them.
  SmallVector<Run> runs;
  SmallVector<std::optional<size_t>> openRun(numUnitsHere);
  SmallVector<std::optional<unsigned>> lastRead(numUnitsHere);
  // The position of the reads before the current position's.
  std::optional<unsigned> before, current;
  for (auto &[key, operands] : reads) {
    auto [at, unit] = key;
    if (updatedAt[unit] && at > *updatedAt[unit]) {
      auto get = cast<GetParamOp>(operands.front()->get().getDefiningOp());
      operands.front()->getOwner()->emitError()
          << "cannot shard parameters: this reads " << get.getParamAttr()
          << " after its update is written (ddp.set_param_shard); its "
             "gather there would read the update";
      return signalPassFailure();
    }
    if (!current || *current != at) {
      before = current;
      current = at;
    }
    bool startsForward = llvm::any_of(operands, isForwardGemmRead);
    if (openRun[unit] && before && *lastRead[unit] == *before &&
        !(startsForward && runs[*openRun[unit]].backwardEnd > 0)) {
      // Continues.
    } else {
      Run next;
      next.unit = unit;
      if (openRun[unit] && before && *lastRead[unit] == *before) {
        Run &previous = runs[*openRun[unit]];
        next.uses.append(previous.uses.begin() + previous.backwardEnd,
                         previous.uses.end());
        previous.uses.resize(previous.backwardEnd);
      }
      openRun[unit] = runs.size();
      runs.push_back(std::move(next));
    }
    Run &run = runs[*openRun[unit]];
    for (OpOperand *operand : operands) {
      run.uses.emplace_back(at, operand);
      run.hasForwardGemm |= isForwardGemmRead(operand);
      if (isForwardRead(operand) == false)
        run.backwardEnd = run.uses.size();
    }
    lastRead[unit] = at;
  }

  // The units in forward order, by their first read: what
  // fsdp-keep-last-units and fsdp-unit-prefetch count in, and what each
  // run's gathered shard records (ddp.fsdp_unit).
  SmallVector<unsigned> inForwardOrder;
  {
    SmallVector<std::pair<unsigned, unsigned>> firstRead;
    SmallVector<bool> seen(numUnitsHere, false);
    for (Run &run : runs)
      if (!seen[run.unit]) {
        seen[run.unit] = true;
        firstRead.push_back({run.getFirst(), run.unit});
      }
    llvm::sort(firstRead);
    for (auto [first, unit] : firstRead)
      inForwardOrder.push_back(unit);
  }
  SmallVector<unsigned> forwardIndex(numUnitsHere, 0);
  for (auto [index, unit] : llvm::enumerate(inForwardOrder))
    forwardIndex[unit] = index;
  if (!unitPrefetch.empty() && unitPrefetch.size() != inForwardOrder.size()) {
    step.emitError("fsdp-unit-prefetch gives ")
        << unitPrefetch.size() << " depths, but the step has "
        << inForwardOrder.size()
        << " units; give one per unit, in forward order";
    return signalPassFailure();
  }

  // Without resharding after the forward (every unit's, or the last
  // fsdp-keep-last-units' in forward order), a run with a forward GEMM
  // keeps its parameters through the unit's next run when that has none.
  SmallVector<bool> keeps(numUnitsHere, !reshardAfterForward);
  if (reshardAfterForward && fsdpKeepLastUnits > 0)
    for (size_t index = inForwardOrder.size() > fsdpKeepLastUnits
                            ? inForwardOrder.size() - fsdpKeepLastUnits
                            : 0;
         index < inForwardOrder.size(); ++index)
      keeps[inForwardOrder[index]] = true;
  if (llvm::is_contained(keeps, true)) {
    SmallVector<std::optional<size_t>> lastOfUnit(numUnitsHere);
    SmallVector<Run> merged;
    for (Run &run : runs) {
      std::optional<size_t> &last = lastOfUnit[run.unit];
      if (keeps[run.unit] && last && merged[*last].hasForwardGemm &&
          !run.hasForwardGemm) {
        Run &into = merged[*last];
        llvm::append_range(into.uses, run.uses);
        into.backwardEnd = into.uses.size();
        // Merged once: a third run is gathered again.
        into.hasForwardGemm = false;
        continue;
      }
      last = merged.size();
      merged.push_back(std::move(run));
    }
    runs = std::move(merged);
  }
  llvm::stable_sort(runs, [](const Run &a, const Run &b) {
    return a.getFirst() < b.getFirst();
  });

  // After which run's wait each run's gather is issued (-1: at the start
  // of the step; the run itself: right before its own wait), in run
  // order. fsdp-prefetch and fsdp-unit-prefetch give how many runs ahead a
  // run is gathered; suggested-communication-unit-size how far each run's
  // turn gathers, by the elements of the runs ahead.
  SmallVector<int64_t> issueAfter(runs.size());
  if (suggestedCommunicationUnitSize > 0) {
    SmallVector<int64_t> runElements;
    for (Run &run : runs) {
      int64_t elements = 0;
      for (size_t index : chainsOfUnit[run.unit])
        elements += chains[index].gather.getResult().getType().getNumElements();
      runElements.push_back(elements);
    }
    issueAfter = getIssuePointsByDepth(getDepthsBySize(
        runElements, suggestedCommunicationUnitSize, fsdpDoubleBuffer));
  } else {
    // Gathers keep run order: a run is issued no earlier than the one
    // before it.
    int64_t latest = -1;
    for (auto [k, run] : llvm::enumerate(runs)) {
      unsigned ahead = unitPrefetch.empty()
                           ? unsigned(fsdpPrefetch)
                           : unitPrefetch[forwardIndex[run.unit]];
      latest = std::max(latest, int64_t(k) - int64_t(ahead));
      issueAfter[k] = std::max<int64_t>(latest, -1);
    }
  }

  // Emit: the gathers issued after no run at the start of the step; then
  // a run none issued ahead right before its wait, and after run k's wait
  // the gathers issued after it.
  OpBuilder builder(&getContext());
  Operation *start = &body.front();
  // Each chain's parameter types, which every run's unpack of it gives.
  SmallVector<SmallVector<Type>> paramTypes;
  for (Chain &chain : chains) {
    SmallVector<Type> &types = paramTypes.emplace_back();
    for (auto param :
         chain.setParams.getParams().getAsRange<FlatSymbolRefAttr>())
      types.push_back(declarations.lookup(param.getAttr()).getType());
  }
  struct Issued {
    AllGatherOp gather;
    size_t chain;
  };
  SmallVector<SmallVector<Issued>> issued(runs.size());
  auto issue = [&](size_t k) {
    for (size_t index : chainsOfUnit[runs[k].unit]) {
      Chain &chain = chains[index];
      Location loc = chain.gather.getLoc();
      auto shard = cast<GetParamShardOp>(builder.clone(*chain.shard));
      setFsdpUnit(shard, forwardIndex[runs[k].unit]);
      auto gather = AllGatherOp::create(
          builder, loc, chain.gather.getResult().getType(),
          TokenType::get(&getContext()), shard.getResult(),
          chain.gather.getMeshAttr(), chain.gather.getAxesAttr(),
          /*asyncDependencies=*/ValueRange());
      issued[k].push_back({gather, index});
      ++numRunGathers;
    }
  };
  builder.setInsertionPoint(start);
  // The runs issued so far: [0, issuedEnd).
  size_t issuedEnd = 0;
  for (; issuedEnd < runs.size() && issueAfter[issuedEnd] < 0; ++issuedEnd)
    issue(issuedEnd);
  for (size_t k = 0; k < runs.size(); ++k) {
    Run &run = runs[k];
    builder.setInsertionPoint(
        body.findAncestorOpInBlock(*run.uses.front().second->getOwner()));
    if (issuedEnd <= k)
      issue(issuedEnd++);
    DenseMap<StringAttr, Value> values;
    for (Issued &gathered : issued[k]) {
      Chain &chain = chains[gathered.chain];
      Location loc = chain.wait.getLoc();
      WaitOp::create(builder, loc, gathered.gather.getToken());
      auto unpack = BucketUnpackOp::create(builder, loc,
                                           paramTypes[gathered.chain],
                                           gathered.gather.getResult(),
                                           chain.setParams.getOffsetsAttr());
      for (auto [param, value] : llvm::zip(
               chain.setParams.getParams().getAsRange<FlatSymbolRefAttr>(),
               unpack.getResults()))
        values[param.getAttr()] = value;
    }
    for (; issuedEnd < runs.size() && issueAfter[issuedEnd] <= int64_t(k);
         ++issuedEnd)
      issue(issuedEnd);
    for (auto [at, use] : run.uses) {
      auto get = cast<GetParamOp>(use->get().getDefiningOp());
      use->set(values.lookup(get.getParamAttr().getAttr()));
    }
  }

  for (GetParamOp get : readsOfParams) {
    assert(get->use_empty() && "every read was given its run's value");
    get->erase();
  }
  for (Chain &chain : chains) {
    chain.setParams->erase();
    chain.wait->erase();
    chain.gather->erase();
    chain.shard->erase();
  }
  numUnits += numUnitsHere;
}
