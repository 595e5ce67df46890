//===- StepTimeline.h - The step as the auto policy replays it --*- C++ -*-===//
//
// The `auto` policy needs the step time of a layout without building its IR.
// A StepTimeline holds what the compute stream does in block order (kernel
// time, synchronous collectives, the points where gradients become ready)
// and the tail that consumes the reduced gradients (the optimizer). A
// TimelineReplay prices layouts on it: each bucket's kernels and asynchronous
// collective go right after its last gradient (and after the bucket issued
// before it), a wait right before the first use of its result, exactly as the
// overlap pass places them. The replay runs on the simulator's StepClock
// (ddp/Timing/StepClock.h), so it follows the simulator's timing rules by
// construction. The times of the step's own kernels and collectives come
// from the caller (the simulation of the unscheduled step); what the buckets
// add is priced by the cost model. Nothing here depends on MLIR.
//
// With the distributed optimizer (BucketCosts::distributedOptimizer) the
// replay follows what ddp-distribute-optimizer and ddp-overlap-grad-reduce
// build: each bucket is reduce-scattered, and at its first parameter update
// in the tail its wait, its shard optimizers, their synchronous all-gathers
// and the copies into the parameters replace the parameters' updates.
// With overlap-param-gather (BucketCosts::overlapParamGather) evaluate()
// follows what ddp-overlap-param-gather builds instead: the all-gathers are
// issued asynchronously from the start of the step in forward order, each
// waited (and its parameters written) right before the first use of its
// parameters, and the tail writes the updated shards into the parameters.
// With several distributed-optimizer instances (BucketCosts::numInstances)
// the reduce-scatter and the all-gathers run within an instance, and each
// bucket's shard is all-reduced across the instances on a stream of its
// own, as ddp-overlap-grad-reduce places it: issued with the
// reduce-scatter and started when that ends (`async after`); its wait
// replaces the reduce-scatter's before the shard optimizer.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_BUCKETING_STEPTIMELINE_H
#define DDP_BUCKETING_STEPTIMELINE_H

#include "ddp/Bucketing/BucketLayout.h"
#include "ddp/Timing/CostModel.h"
#include "ddp/Timing/StepClock.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <limits>
#include <optional>

namespace ddp::bucketing {

/// How the distributed optimizer updates one gradient's parameter.
struct ShardedUpdate {
  /// Parameters of a bucket with the same class (optimizer and
  /// hyperparameters, parameter and gradient element types) share one shard
  /// optimizer, all-gather and copy.
  unsigned updateClass = 0;
  timing::OptimizerRule rule = timing::OptimizerRule::SGD;
  ElementType paramType = ElementType::F32;
  /// The type the update reads the gradient in.
  ElementType gradType = ElementType::F32;
};

/// The distributed optimizer's work for one update class of a bucket.
struct ShardedGroup {
  /// The cast of the gradient shard back to the update's type (0 when the
  /// bucket has that type or an earlier group cast it) and the shard
  /// optimizer, on the compute stream.
  double beforeGather = 0;
  /// The cast alone (part of beforeGather).
  double cast = 0;
  /// The all-gather of the updated shards, into the bucket that stores the
  /// parameters.
  double gather = 0;
};

/// The distributed optimizer's work for a bucket: at tail position
/// `position` (its first parameter update), after the wait of its
/// reduce-scatter, one group per update class.
struct ShardedTail {
  size_t position = 0;
  llvm::SmallVector<ShardedGroup, 1> groups;
  /// With several instances: the all-reduce of the shard across them.
  double acrossInstances = 0;

  /// Compute-stream time from the wait to the first all-gather.
  double getBeforeFirstGather() const {
    return groups.empty() ? 0 : groups.front().beforeGather;
  }
  /// Time from the first all-gather on, with nothing else in flight.
  double getFromFirstGather() const;
};

/// What buckets add to the step.
struct BucketCosts {
  explicit BucketCosts(timing::CostModel model) : model(std::move(model)) {}

  /// Prices the buckets' scaling kernels and all-reduces.
  timing::CostModel model;
  /// Communication stream of each gradient's group.
  std::vector<unsigned> stream;
  /// Compute-stream time spent on each gradient before packing (the cast to
  /// the bucket's type) and after unpacking (the cast back), in seconds.
  std::vector<double> packTime;
  std::vector<double> unpackTime;
  /// Per communication stream: where the ranks of its group sit, and whether
  /// a bucket on it is scaled by 1/n on the compute stream before its
  /// all-reduce (an average the collective does not take itself).
  std::vector<timing::GroupPlacement> placement;
  std::vector<bool> prescaled;

  /// Megatron's distributed optimizer: buckets are reduce-scattered and the
  /// optimizer runs on the shards. `update` holds each gradient's update,
  /// `shardGroupSize` per stream the size of the group as the IR has it
  /// (which divides a bucket into shards; the simulated group may be
  /// larger).
  bool distributedOptimizer = false;
  std::vector<ShardedUpdate> update;
  std::vector<int64_t> shardGroupSize;
  /// With the distributed optimizer: ddp-overlap-param-gather's all-gathers
  /// in the forward (evaluate() only; the search prices the synchronous
  /// all-gathers), issued one after the other's wait or, aligned, all at
  /// the start of the step.
  bool overlapParamGather = false;
  bool alignParamGather = false;
  /// With the distributed optimizer: Megatron's distributed-optimizer
  /// instances. With more than one, `stream` and `shardGroupSize` are those
  /// of the group within an instance, and every bucket's shard is
  /// all-reduced across the instances on `acrossInstancesStream`.
  int64_t numInstances = 1;
  unsigned acrossInstancesStream = 0;

  /// Compute-stream time spent on a whole bucket of `stream` before its
  /// collective (the scaling), given its type and padded size.
  double getBucketIssueTime(unsigned stream, ElementType type,
                            int64_t paddedNumel) const;
  /// Time of a bucket's all-reduce (reduce-scatter with the distributed
  /// optimizer) on `stream`.
  double getCollectiveTime(unsigned stream, ElementType type,
                           int64_t paddedNumel) const;
};

/// Builds a bucket's ShardedTail gradient by gradient, as the search grows
/// buckets, in O(update classes) per gradient and per build.
class ShardedTailBuilder {
public:
  explicit ShardedTailBuilder(const BucketCosts &costs) : costs(costs) {}

  /// Adds `gradient` to the bucket.
  void add(size_t gradient);
  /// The tail of a bucket of the gradients added so far, reduced on
  /// `stream` in `bucketType`, of `paddedNumel` elements, whose first
  /// update is at tail position `position`.
  ShardedTail build(unsigned stream, ElementType bucketType,
                    int64_t paddedNumel, size_t position) const;

private:
  const BucketCosts &costs;
  /// Per update class, in the order of its first gradient in the bucket (the
  /// order of ddp-distribute-optimizer's groups): that gradient.
  llvm::SmallVector<size_t, 1> classes;
};

/// The unscheduled step without its data-parallel reductions, in block order.
class StepTimeline {
public:
  StepTimeline(size_t numGradients, unsigned numStreams, double slowdown)
      : numGradients(numGradients), numStreams(numStreams), slowdown(slowdown) {
  }

  /// Kernels on the compute stream taking `seconds` when nothing runs beside
  /// them.
  void addCompute(double seconds);
  /// A synchronous collective on communication stream `stream`.
  void addBlockingCollective(unsigned stream, double seconds);
  /// The `grad_ready` of gradient `gradient` (an index in ready order).
  void addGradientReady(size_t gradient);
  /// The first op of the step that names `gradient`'s parameter, the
  /// `ordinal`-th op of the step (ops naming several parameters mark each):
  /// where overlap-param-gather waits for the parameter's all-gather. A
  /// parameter without a mark is first named by its update in the tail.
  void addParamUse(size_t gradient, size_t ordinal);
  /// Ends the backward part: what follows consumes the reduced gradients.
  void beginTail();
  /// A kernel of the tail that uses the reduced `gradients`.
  void addTailCompute(double seconds, llvm::ArrayRef<size_t> gradients = {});
  /// The optimizer update of `gradient`'s parameter: a tail kernel that the
  /// distributed optimizer replaces by its bucket's shard optimizer.
  void addTailUpdate(double seconds, size_t gradient);

  /// Checks that every gradient became ready exactly once, in ready order,
  /// that the tail was begun, and that streams and times are valid.
  llvm::Error verify() const;

  double getSlowdown() const { return slowdown; }

private:
  friend class TimelineReplay;

  struct Item {
    enum Kind { Compute, Blocking, Ready, ParamUse } kind;
    double seconds = 0;
    unsigned stream = 0;
    size_t gradient = 0;
    /// For ParamUse: the op's ordinal.
    size_t ordinal = 0;
  };
  struct TailItem {
    double seconds;
    std::vector<size_t> gradients;
    bool isUpdate = false;
  };

  size_t numGradients;
  unsigned numStreams;
  double slowdown;
  std::vector<Item> backward;
  bool inTail = false;
  std::vector<TailItem> tail;
  /// A problem noticed while building, reported by verify().
  std::string buildError;
};

/// A timeline prepared for pricing layouts with given bucket costs. The
/// optimizer composes its primitives; evaluate() replays a whole layout.
class TimelineReplay {
public:
  TimelineReplay(const StepTimeline &timeline, const BucketCosts &costs);

  /// The same timeline and costs with compute never slowed down by
  /// communication in flight.
  TimelineReplay withoutSlowdown() const {
    TimelineReplay copy = *this;
    copy.slowdown = 1;
    return copy;
  }

  /// The state of every stream at a point of the replay.
  struct State {
    timing::StepClock clock;
    /// max over the buckets issued so far of the clock's getTailWaitBound
    /// for the bucket (its end, the tail work from its first use to the
    /// end): what the tail's waits add to the step (see finish()).
    double tailBound = -std::numeric_limits<double>::infinity();
    /// With the distributed optimizer, per communication stream `s` whose
    /// first all-gather in the tail is that of the bucket at getAnchor(s):
    /// when the compute stream can reach that all-gather at the earliest
    /// from the bucket's wait (its reduce-scatter's end plus its kernels
    /// before the all-gather), and the sharded work of the buckets issued so
    /// far from that all-gather on. Empty without it.
    llvm::SmallVector<double, 2> firstGatherReady, gatherWork;
    /// The sharded work of all buckets issued so far.
    double shardedWork = 0;
    /// With several instances: max over the buckets issued so far of the
    /// end of the bucket's all-reduce across instances, less the sharded
    /// work issued before it, plus the tail's kernels from its position.
    /// Plus the final sharded work, it bounds the step (see finish()).
    double acrossBound = -std::numeric_limits<double>::infinity();
  };

  /// Points of the backward part where the state matters beyond the compute
  /// clock: gradients becoming ready (buckets are issued right after them)
  /// and synchronous collectives on streams that buckets also use.
  struct Event {
    enum Kind { Ready, SharedCollective } kind = Ready;
    size_t gradient = 0;
    unsigned stream = 0;
    double seconds = 0;
  };

  size_t getNumEvents() const { return events.size(); }
  size_t getReadyEvent(size_t gradient) const { return readyEvent[gradient]; }
  /// Position in the tail before which the wait of a bucket holding
  /// `gradient` goes (the first kernel that needs the reduced gradient); the
  /// end of the tail when nothing uses it.
  size_t getFirstUse(size_t gradient) const { return firstUse[gradient]; }
  /// Tail work (kernels, unpacks included) from tail position `position` to
  /// the end.
  double getTailWorkFrom(size_t position) const { return tailSuffix[position]; }

  State initialState() const;
  /// Runs the kernels and non-shared synchronous collectives between event
  /// `index - 1` and event `index` (index == getNumEvents(): up to the tail).
  void runSegmentBefore(size_t index, State &state) const;
  /// Runs event `index` (a ready marker costs nothing).
  void runEvent(size_t index, State &state) const;
  /// Issues a bucket at the current point: `issueSeconds` of kernels, then
  /// its collective on `stream`, waited before tail position `firstUse`;
  /// with the distributed optimizer `sharded` is its work in the tail.
  /// Returns when the collective ends; with several instances, when the
  /// all-reduce of the shard across them, issued right after it and
  /// started once it ends, does.
  double issueBucket(State &state, double issueSeconds, unsigned stream,
                     double collectiveSeconds, size_t firstUse,
                     const ShardedTail *sharded = nullptr) const;
  /// The step time, from the state where the tail begins. With the
  /// distributed optimizer, in closed form on the overlap model only (no
  /// slowdown: what the search runs on); evaluate() replays the tail op by
  /// op. With several instances the closed form takes the tail's bucket
  /// order to be their issue order: it is exact where that holds.
  double finish(const State &state) const;

  /// Replaces components of `state` that cannot affect the step time by the
  /// values that make states easiest to compare, without changing any
  /// future: a stream free before `now` is free at `now` (nothing can start
  /// on it earlier), and the tail bound is at least what the compute stream
  /// already implies: the backward left from event `nextEvent` on, at full
  /// speed, then all the tail's kernels.
  void canonicalize(State &state, size_t nextEvent) const;

  /// The step time with `layout`, whose buckets are issued in the given
  /// order, each after its last gradient and after the bucket before it.
  /// Every gradient of the timeline must be in exactly one bucket.
  double evaluate(const BucketLayout &layout) const;

  /// Compute-stream time of a bucket's own kernels before its collective.
  double getIssueTime(const Bucket &bucket) const;
  double getCollectiveTime(const Bucket &bucket) const;
  size_t getFirstUse(const Bucket &bucket) const;
  ShardedTail getShardedTail(const Bucket &bucket) const;
  /// With the distributed optimizer, the tail position of the first update
  /// of a gradient of `stream` (where its first all-gather goes); SIZE_MAX
  /// for a stream without gradients.
  size_t getAnchor(unsigned stream) const { return anchor[stream]; }
  const BucketCosts &getCosts() const { return costs; }
  double getSlowdown() const { return slowdown; }

private:
  /// Adds a bucket whose reduction (across instances, with several) ends
  /// at `end` to the closed form's sums.
  void addShardedWork(State &state, double end,
                      const ShardedTail &sharded) const;
  /// Issues the buckets of `layout` that follow event `event`, recording
  /// when each one's reduction ends in `reductionEnd` (across instances,
  /// with several).
  void issueBucketsAt(size_t event, const BucketLayout &layout,
                      llvm::ArrayRef<std::vector<size_t>> issuedAt,
                      llvm::ArrayRef<ShardedTail> sharded, State &state,
                      std::vector<double> &reductionEnd) const;
  /// Runs the distributed optimizer's tail on `state`'s clock, where every
  /// bucket of `layout` was issued and its reduction ends at
  /// `reductionEnd`. With overlap-param-gather,
  /// `beforeShardOptimizer(bucket, group)` runs between the group's cast
  /// and its shard optimizer, and the group's updated shard is written into
  /// the parameters instead of gathered.
  double replayShardedTail(
      const BucketLayout &layout, llvm::ArrayRef<ShardedTail> sharded,
      llvm::ArrayRef<double> reductionEnd, State &state,
      llvm::function_ref<void(size_t, size_t)> beforeShardOptimizer = {}) const;
  /// evaluate() with overlap-param-gather.
  double evaluateWithParamGather(const BucketLayout &layout) const;
  /// For each event, the buckets issued right after it: bucket k after the
  /// ready event of its last gradient and after bucket k - 1 (the overlap
  /// pass keeps the layout's issue order).
  std::vector<std::vector<size_t>>
  getBucketsIssuedAt(const BucketLayout &layout) const;

  const BucketCosts &costs;
  unsigned numStreams;
  double slowdown;
  /// The items between events, flattened: kernels and synchronous
  /// collectives on streams that no bucket uses.
  timing::ComputeStreamWork work;
  std::vector<Event> events;
  /// Items [segmentBegin[i], segmentBegin[i + 1]) run before event i.
  std::vector<size_t> segmentBegin;
  std::vector<size_t> readyEvent;
  /// The first uses of parameters, in step order: the position in `work`
  /// before which it is, the gradient and the op's ordinal.
  struct ParamUse {
    /// The use is in the segment before event `event`, before item
    /// `workIndex` of `work`.
    size_t event;
    size_t workIndex;
    size_t gradient;
    size_t ordinal;
  };
  std::vector<ParamUse> paramUses;
  /// Tail work from each position to the end, unpack kernels included;
  /// with the distributed optimizer, the kernels of the step that stay
  /// (not the updates) from each position of the timeline's tail.
  std::vector<double> tailSuffix;
  /// With the distributed optimizer: the timeline's tail (updates are
  /// skipped in the replay), and getAnchor() per stream.
  std::vector<StepTimeline::TailItem> tail;
  std::vector<size_t> anchor;
  /// Compute-stream time of the backward from the segment before event i to
  /// the tail, with nothing in flight beside it.
  std::vector<double> backwardSuffix;
  std::vector<size_t> firstUse;
};

} // namespace ddp::bucketing

#endif // DDP_BUCKETING_STEPTIMELINE_H
