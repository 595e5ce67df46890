//===- TpSplitSearch.cpp - The split count of tensor-parallel GEMMs -------===//
//
// ddp-overlap-tp-comm's `auto`: each candidate's split count is chosen op by
// op on the simulator's clock, pricing the IR the pass will build for each
// count, so that the simulation of the result predicts exactly what was
// chosen on (docs/Scheduling.md).
//
//===----------------------------------------------------------------------===//

#include "ddp/ScheduleModel/ScheduleModel.h"

#include "ddp/Dialect/DDP/IR/TensorBytes.h"
#include "ddp/Sim/Simulator.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"

#include <limits>

using namespace mlir;
using namespace ddp;
using namespace ddp::schedule;

/// The split counts `auto` tries: TE's fixed 4, and the counts around it
/// that the token dimension of real models divides into.
static constexpr int64_t kAutoSplits[] = {1, 2, 3, 4, 6, 8, 12, 16};

/// One walk of the step: the split count of each candidate that is not
/// fixed, chosen where it is met on the clock of the step so far. Without
/// `splitGathersReadAfter` the all-gathers read after their GEMM stay whole.
/// The predicted step time; nullopt when every count is fixed.
static FailureOr<std::optional<double>>
walkStep(func::FuncOp step, MutableArrayRef<TpSplitCandidate> candidates,
         ArrayRef<Operation *> bulk, StringRef hardware,
         int64_t dataParallelSize, bool splitGathersReadAfter) {
  bool anyAuto = llvm::any_of(
      candidates, [&](const TpSplitCandidate &each) { return !each.fixed; });
  if (!anyAuto)
    return std::optional<double>();
  FailureOr<sim::Pricing> pricing =
      sim::getPricing(step, hardware, dataParallelSize);
  if (failed(pricing))
    return failure();
  const timing::CostModel &model = pricing->model;
  FailureOr<std::unique_ptr<sim::IncrementalSimulation>> simulation =
      sim::IncrementalSimulation::create(step, model, pricing->options);
  if (failed(simulation))
    return failure();
  timing::StepClock &clock = (*simulation)->getClock();
  llvm::DenseMap<Operation *, size_t> candidateOfGemm, candidateOfCollective;
  for (auto [index, candidate] : llvm::enumerate(candidates)) {
    candidateOfGemm[candidate.gemm] = index;
    candidateOfCollective[candidate.collective] = index;
  }
  // Per candidate that gathers its input: when each of its chunks'
  // all-gathers ends (from the all-gather to the GEMM).
  SmallVector<SmallVector<double, 16>> gatherEnds(candidates.size());

  // The region of a candidate, as the simulator prices the IR
  // rewritePipeline builds (or, for one chunk, the IR as it is): each
  // chunk's GEMM, its collective issued after it, then the waits in order.
  auto runRegion = [&](timing::StepClock &on, const TpSplitCandidate &candidate,
                       int64_t count, unsigned stream,
                       const timing::GroupPlacement &placement) {
    GemmOp gemm = candidate.gemm;
    Type elementType = gemm.getResult().getType().getElementType();
    int64_t rows = gemm.getM() / count;
    double gemmTime = model.gemmTime(
        rows, gemm.getN(), gemm.getK(),
        getElementTypeOf(elementType).value_or(ElementType::F32));
    CollectiveKind kind =
        CollectiveOpInterface(candidate.collective).getCostKind();
    double commTime =
        model
            .collectiveCost(kind,
                            getTensorBytes(rows * gemm.getN(), elementType),
                            placement)
            .total();
    SmallVector<double, 16> ends;
    for (int64_t chunk = 0; chunk < count; ++chunk) {
      on.runKernel(gemmTime);
      ends.push_back(on.issueCollective(stream, commTime).end);
    }
    for (double end : ends)
      on.blockUntil(end);
  };

  // A gathered candidate's all-gathers, issued where the all-gather was,
  // and its chunk GEMMs, each after its chunk arrives, where the GEMM was.
  auto gathered = [](const TpSplitCandidate &candidate) {
    return cast<RankedTensorType>(candidate.collective->getResult(0).getType());
  };
  auto issueGathers =
      [&](timing::StepClock &on, const TpSplitCandidate &candidate,
          SmallVectorImpl<double> &ends, int64_t count, unsigned stream,
          const timing::GroupPlacement &placement) {
        RankedTensorType type = gathered(candidate);
        CollectiveKind kind =
            CollectiveOpInterface(candidate.collective).getCostKind();
        double commTime =
            model
                .collectiveCost(kind,
                                getTensorBytes(type.getNumElements() / count,
                                               type.getElementType()),
                                placement)
                .total();
        ends.clear();
        for (int64_t chunk = 0; chunk < count; ++chunk)
          ends.push_back(on.issueCollective(stream, commTime).end);
      };
  auto runGatheredGemms = [&](timing::StepClock &on,
                              const TpSplitCandidate &candidate,
                              ArrayRef<double> ends) {
    GemmOp gemm = candidate.gemm;
    int64_t count = ends.size();
    double gemmTime = model.gemmTime(
        gemm.getM() / count, gemm.getN(), gemm.getK(),
        getElementTypeOf(gemm.getResult().getType().getElementType())
            .value_or(ElementType::F32));
    for (double end : ends) {
      on.blockUntil(end);
      on.runKernel(gemmTime);
    }
    // The gathered chunks stacked back for the later readers: a copy, as
    // the simulator prices a ddp.concat it cannot produce in place. Whole,
    // the all-gather stays as it is and nothing is stacked.
    if (candidate.gatherReadAfter && count > 1)
      on.runKernel(model.memoryTime(
          2.0 * getTensorBytes(gathered(candidate).getNumElements(),
                               gathered(candidate).getElementType())));
  };

  // auto: the count the rows allow whose region, priced on a copy of the
  // clock, frees the compute stream soonest.
  auto chooseFastest =
      [&](TpSplitCandidate &candidate,
          llvm::function_ref<void(timing::StepClock &, int64_t)>
              runCandidateRegion) {
        double best = std::numeric_limits<double>::infinity();
        for (int64_t count : kAutoSplits) {
          if (!candidate.allows(count))
            continue;
          timing::StepClock trial = clock;
          runCandidateRegion(trial, count);
          if (trial.getNow() < best) {
            best = trial.getNow();
            candidate.splits = count;
          }
        }
      };

  llvm::DenseMap<Value, double> bulkDone;
  llvm::DenseSet<Operation *> bulkSet(bulk.begin(), bulk.end());
  // A bulk collective is waited right before the first op that reads it.
  auto waitForBulkOperands = [&](Operation *reader) {
    for (Value operand : reader->getOperands())
      if (auto done = bulkDone.find(operand); done != bulkDone.end()) {
        clock.blockUntil(done->second);
        bulkDone.erase(done);
      }
  };
  for (Operation &op : step.getBody().front()) {
    if (auto gemmIt = candidateOfGemm.find(&op);
        gemmIt != candidateOfGemm.end()) {
      TpSplitCandidate &candidate = candidates[gemmIt->second];
      // A reduced one is priced with its collective, where the chunks go.
      if (!candidate.gathersInput())
        continue;
      if (!gatherEnds[gemmIt->second].empty()) {
        waitForBulkOperands(&op);
        runGatheredGemms(clock, candidate, gatherEnds[gemmIt->second]);
        continue;
      }
    }
    auto candidateIt = candidateOfCollective.find(&op);
    if (candidateIt != candidateOfCollective.end() &&
        candidates[candidateIt->second].gathersInput()) {
      TpSplitCandidate &candidate = candidates[candidateIt->second];
      SmallVectorImpl<double> &ends = gatherEnds[candidateIt->second];
      // Split, the all-gather's input is first read by its chunks, where
      // the wait of a bulk collective that produced it goes.
      waitForBulkOperands(&op);
      FailureOr<std::pair<unsigned, timing::GroupPlacement>> stream =
          (*simulation)->getCommStream(&op);
      if (failed(stream))
        return failure();
      if (!candidate.fixed && !splitGathersReadAfter &&
          candidate.gatherReadAfter) {
        candidate.splits = 1;
      } else if (!candidate.fixed) {
        // Priced as if the GEMM came right after the all-gather, as the
        // importer emits it.
        chooseFastest(candidate, [&](timing::StepClock &trial, int64_t count) {
          issueGathers(trial, candidate, ends, count, stream->first,
                       stream->second);
          runGatheredGemms(trial, candidate, ends);
        });
      }
      ends.clear();
      // Left whole, the all-gather stays synchronous (below).
      if (candidate.splits > 1) {
        issueGathers(clock, candidate, ends, candidate.splits, stream->first,
                     stream->second);
        continue;
      }
    }
    if (candidateIt != candidateOfCollective.end() &&
        !candidates[candidateIt->second].gathersInput()) {
      TpSplitCandidate &candidate = candidates[candidateIt->second];
      waitForBulkOperands(candidate.gemm);
      FailureOr<std::pair<unsigned, timing::GroupPlacement>> stream =
          (*simulation)->getCommStream(&op);
      if (failed(stream))
        return failure();
      if (!candidate.fixed) {
        chooseFastest(candidate, [&](timing::StepClock &trial, int64_t count) {
          runRegion(trial, candidate, count, stream->first, stream->second);
        });
      }
      runRegion(clock, candidate, candidate.splits, stream->first,
                stream->second);
      continue;
    }
    waitForBulkOperands(&op);
    if (bulkSet.count(&op)) {
      FailureOr<std::pair<unsigned, timing::GroupPlacement>> stream =
          (*simulation)->getCommStream(&op);
      if (failed(stream))
        return failure();
      auto collective = cast<CollectiveOpInterface>(op);
      // The size the simulator charges.
      RankedTensorType type = collective.getCostedTensor().getType();
      CollectiveKind kind = collective.getCostKind();
      double time =
          model.collectiveCost(kind, getTensorBytes(type), stream->second)
              .total();
      bulkDone[op.getResult(0)] =
          clock.issueCollective(stream->first, time).end;
      continue;
    }
    if (failed((*simulation)->simulate(&op)))
      return failure();
  }
  return std::optional<double>((*simulation)->getStepEnd());
}

FailureOr<std::optional<double>> ddp::schedule::searchTpSplits(
    func::FuncOp step, MutableArrayRef<TpSplitCandidate> candidates,
    ArrayRef<Operation *> bulk, StringRef hardware, int64_t dataParallelSize) {
  FailureOr<std::optional<double>> predicted =
      walkStep(step, candidates, bulk, hardware, dataParallelSize,
               /*splitGathersReadAfter=*/true);
  if (failed(predicted))
    return failure();
  std::optional<double> predictedStepTime = *predicted;
  // Each choice is the best for the compute stream where it is made, and
  // the copy that stacks a gathered tensor back for its later readers can
  // make such a choice lose later in the step. A second walk leaves those
  // all-gathers whole, and the faster walk is kept: auto is never slower
  // than its own plan without them.
  if (predictedStepTime &&
      llvm::any_of(candidates, [](const TpSplitCandidate &each) {
        return each.gatherReadAfter && each.splits > 1 && !each.fixed;
      })) {
    SmallVector<int64_t> greedy = llvm::map_to_vector(
        candidates, [](const TpSplitCandidate &each) { return each.splits; });
    double greedyTime = *predictedStepTime;
    FailureOr<std::optional<double>> whole =
        walkStep(step, candidates, bulk, hardware, dataParallelSize,
                 /*splitGathersReadAfter=*/false);
    if (failed(whole))
      return failure();
    if (*whole)
      predictedStepTime = *whole;
    if (greedyTime <= *predictedStepTime) {
      for (auto [candidate, splits] : llvm::zip(candidates, greedy))
        candidate.splits = splits;
      predictedStepTime = greedyTime;
    }
  }
  return predictedStepTime;
}
