//===- Passes.td - Passes of the ddp dialect ---------------*- tablegen -*-===//
//
// Every pass of the dialect is declared here, with its options and
// statistics; each is implemented in its own file under
// lib/Dialect/DDP/Transforms with GEN_PASS_DEF_<NAME>. It is over 600 lines
// because each pass's description and option help is its documentation
// (`ddp-opt --help` prints it) and because the schedule pipeline's options
// are generated from these declarations (tools/ddp-tblgen): one file keeps
// one declaration of each.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_PASSES_TD
#define DDP_DIALECT_DDP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def Simulate : Pass<"ddp-simulate", "mlir::ModuleOp"> {
  let summary = "predict the step time of a step and draw its timeline";
  let description = [{
    Executes the step against the cost model of a hardware profile: one
    compute stream running the ops in block order, one communication stream
    per process group for asynchronous collectives, `ddp.wait` blocking the
    compute stream until its token's collective is done, synchronous
    collectives blocking it for their whole duration. Prints a summary (step
    time, compute, communication, exposed communication, overlap, a lower
    bound on the step time and the ratio to it) and, on request, writes a
    JSON report, a Chrome trace and an SVG timeline.

    The IR is left unchanged, so the pass composes after any pipeline. The
    semantics, formulas and file formats are in docs/CostModel.md.

    ```
    ddp-opt step.mlir -o /dev/null \
      --ddp-simulate="hw=h100-sxm-ib400 dp=512 trace=step.trace.json report=step.json timeline=step.svg"
    ```
  }];
  let options = [
    Option<"hardware", "hw", "std::string", /*default=*/"\"h100-sxm-ib400\"",
           "A built-in hardware profile (h100-sxm-nvlink, h100-sxm-ib400, "
           "a100-sxm-ib200, h200-sxm-ib400, cpu-mpi-2core) or the path of a "
           "JSON profile; not given: the one the auto policy recorded, else "
           "the default">,
    Option<"dataParallelSize", "dp", "int64_t", /*default=*/"0",
           "Simulate this data-parallel size instead of the mesh's: the first "
           "data-parallel mesh axis is resized so that the product of the "
           "data-parallel axes is dp (0 keeps the mesh)">,
    Option<"algorithm", "algorithm", "::ddp::timing::CollectiveAlgorithm",
           /*default=*/"::ddp::timing::CollectiveAlgorithm::Auto",
           "All-reduce algorithm", [{::llvm::cl::values(
             clEnumValN(::ddp::timing::CollectiveAlgorithm::Ring, "ring",
                        "NCCL's ring"),
             clEnumValN(::ddp::timing::CollectiveAlgorithm::Tree, "tree",
                        "NCCL's tree (all-reduce only; others use the ring)"),
             clEnumValN(::ddp::timing::CollectiveAlgorithm::Auto, "auto",
                        "the faster one per collective, as NCCL's tuner "
                        "picks"))}]>,
    Option<"fp8Gemms", "fp8-gemms", "bool", /*default=*/"false",
           "Price GEMMs on f16/bf16 tensors as Transformer Engine's FP8 "
           "recipe runs them (FP8 tensor cores, 1-byte operands); needs a "
           "profile with peak_tflops.fp8">,
    Option<"moeImbalance", "moe-imbalance", "double", /*default=*/"1.0",
           "MoE routing imbalance: the busiest expert-parallel rank's "
           "routed tokens over the balanced share (>= 1); the ops the "
           "importer marks ddp.routed (the expert GEMMs, the token "
           "all-to-alls) cost that much more, up to a capacity factor">,
    Option<"stepName", "step", "std::string", /*default=*/"\"\"",
           "The function to simulate (default: the only one with a body)">,
    Option<"outputPath", "output", "std::string", /*default=*/"\"-\"",
           "Where the text summary goes ('-' for stdout)">,
    Option<"reportPath", "report", "std::string", /*default=*/"\"\"",
           "Write the JSON report here">,
    Option<"tracePath", "trace", "std::string", /*default=*/"\"\"",
           "Write the Chrome trace (Trace Event Format) here">,
    Option<"timelinePath", "timeline", "std::string", /*default=*/"\"\"",
           "Write an SVG picture of the timeline here">,
  ];
  let statistics = [
    Statistic<"numSimulatedOps", "simulated-ops", "Ops simulated">,
    Statistic<"numSimulatedCollectives", "simulated-collectives",
              "Collectives simulated">,
    Statistic<"stepTimeMicros", "step-time-us",
              "Simulated step time in microseconds">,
  ];
}

def AssignBuckets : Pass<"ddp-assign-buckets", "mlir::func::FuncOp"> {
  let summary = "decide the gradient bucket layout and record it as attributes";
  let description = [{
    Groups the data-parallel reductions of the unscheduled step (one
    synchronous `ddp.all_reduce` per `ddp.grad_ready` result) into buckets
    and records the decision, without changing any op:

    - on each `ddp.grad_ready`: `ddp.bucket` (the bucket's index, which is
      its position in issue order) and `ddp.bucket_offset` (the gradient's
      first element in the bucket);
    - on the step function: `ddp.buckets`, one `#ddp.bucket` per bucket with
      its `dtype`, `mesh` and `axes` (the group), `numel`, `padded_numel`,
      `average_in_collective` and `check_finite`; and `ddp.bucket_policy`, a
      `#ddp.bucket_policy` naming the policy (for `auto` also the hardware
      profile and the predicted step time).

    Runs on each step function; it reads the module's `ddp.param`s and
    `ddp.mesh`, which no function pass changes.

    `ddp-bucketize` applies the attributes; edit them to override a decision.
    Policies (docs/Bucketing.md gives the sources):

    - `megatron`: Megatron-Core's `_ParamAndGradBuffer` layout;
    - `pytorch`: PyTorch DDP's `compute_bucket_assignment_by_size` over the
      ready order;
    - `size`: close a bucket once it holds `bucket-size` elements or
      `bucket-bytes` bytes;
    - `auto`: the boundaries that minimise the simulated step time on `hw`,
      found exactly by dynamic programming over the split points of the
      ready order.

    ```
    ddp-opt step.mlir --ddp-assign-buckets="policy=megatron use-distributed-optimizer=true"
    ```
  }];
  let options = [
    Option<"policy", "policy", "::ddp::BucketPolicy",
           /*default=*/"::ddp::BucketPolicy::Megatron", "Bucketing policy",
           "::ddp::getBucketPolicyOptionValues()">,
    Option<"bucketSize", "bucket-size", "int64_t", /*default=*/"0",
           "Elements per bucket (Megatron's bucket_size / --ddp-bucket-size; "
           "the size policy's budget); 0: the policy's default">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "The size policy's budget in bytes instead of elements">,
    Option<"numBuckets", "num-buckets", "int64_t", /*default=*/"0",
           "Megatron's --ddp-num-buckets: bucket size = all parameter "
           "elements / this; 0: unset">,
    Option<"overlapGradReduce", "overlap-grad-reduce", "bool",
           /*default=*/"true",
           "Megatron's overlap_grad_reduce; without it megatron and auto make "
           "one bucket per buffer, reduced at the end">,
    Option<"useDistributedOptimizer", "use-distributed-optimizer", "bool",
           /*default=*/"false",
           "Megatron's use_distributed_optimizer: gradient starts padded to "
           "64 elements, bucket ends to lcm(group size, 128); the shared "
           "embedding gets its own bucket (megatron)">,
    Option<"overlapParamGather", "overlap-param-gather", "bool",
           /*default=*/"false",
           "With use-distributed-optimizer, auto predicts the step that "
           "ddp-overlap-param-gather makes: the all-gathers in the forward, "
           "each waited before its parameters' first use">,
    Option<"alignParamGather", "align-param-gather", "bool",
           /*default=*/"false",
           "With overlap-param-gather, auto predicts every all-gather issued "
           "at the start of the step">,
    Option<"numDistributedOptimizerInstances",
           "num-distributed-optimizer-instances", "int64_t", /*default=*/"1",
           "Megatron's num_distributed_optimizer_instances; anything but 1 "
           "without use-distributed-optimizer is an error, as in Megatron "
           "(ddp-distribute-optimizer splits the group)">,
    Option<"padBucketsForHighNcclBusbw", "pad-buckets-for-high-nccl-busbw",
           "bool", /*default=*/"false",
           "Megatron's pad_buckets_for_high_nccl_busbw: bucket ends padded to "
           "lcm(group size, 128, 2^16) (with use-distributed-optimizer)">,
    Option<"gradReduceInFp32", "grad-reduce-in-fp32", "bool",
           /*default=*/"false",
           "Megatron's grad_reduce_in_fp32: 16-bit gradients are reduced in "
           "f32 buckets">,
    Option<"averageInCollective", "average-in-collective", "bool",
           /*default=*/"false",
           "Megatron's average_in_collective: the collective averages; "
           "otherwise each bucket is pre-scaled by 1/n and summed">,
    Option<"checkForNanInGrad", "check-for-nan-in-grad", "bool",
           /*default=*/"false",
           "Megatron's check_for_nan_in_grad: check each bucket for NaN and "
           "Inf before its collective">,
    Option<"firstBucketBytes", "first-bucket-bytes", "int64_t",
           /*default=*/"0",
           "PyTorch's first bucket cap in bytes; 0: as torch 2.x, "
           "dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB) unless bucket-cap-bytes "
           "is given, then bucket-cap-bytes">,
    Option<"bucketCapBytes", "bucket-cap-bytes", "int64_t",
           /*default=*/"0",
           "PyTorch's bucket_cap_mb, in bytes; 0: the default 25 MiB">,
    Option<"hardware", "hw", "std::string", /*default=*/"\"h100-sxm-ib400\"",
           "Hardware profile the auto policy optimises for (a built-in name "
           "or a JSON file, as ddp-simulate's hw=)">,
    Option<"dataParallelSize", "dp", "int64_t", /*default=*/"0",
           "Lay out and optimise as if the mesh's data-parallel size were "
           "this (as ddp-simulate's dp=); 0 keeps the mesh">,
    Option<"maxBucketGradients", "max-bucket-gradients", "int64_t",
           /*default=*/"0",
           "The auto policy considers buckets of at most this many gradients "
           "(0: no limit); bounds its search on very large graphs">,
  ];
  let statistics = [
    Statistic<"numBucketsMade", "buckets", "Buckets laid out">,
    Statistic<"numGradientsBucketed", "gradients", "Gradients assigned to a bucket">,
    Statistic<"predictedStepTimeMicros", "predicted-step-time-us",
              "Simulated step time of the auto policy's layout (microseconds)">,
  ];
}

def Bucketize : Pass<"ddp-bucketize", "mlir::func::FuncOp"> {
  let summary = "reduce gradients in the buckets their attributes assign";
  let description = [{
    Applies the layout recorded by `ddp-assign-buckets` (or written by hand):
    the per-gradient reductions of a bucket are replaced by one reduction of
    the packed bucket, issued where the last of them was:

    ```mlir
    %c = ddp.cast %g1 : tensor<64x16xbf16> to tensor<64x16xf32>       // grad-reduce-in-fp32
    %b = ddp.bucket_pack %c, ... offsets [0, ...] : ... -> tensor<2048xf32>
    ddp.check_finite %b bucket 0 params [@w1, ...] offsets [0, ...]    // check-for-nan-in-grad
    %s = ddp.scale %b by 0.125 : tensor<2048xf32>                     // 1/dp unless average-in-collective
    %r = ddp.all_reduce sum %s over @world[dp] : tensor<2048xf32>
    %u:2 = ddp.bucket_unpack %r offsets [0, ...] : ...
    %o = ddp.cast %u#0 : tensor<64x16xf32> to tensor<64x16xbf16>
    ```

    Every created op carries `ddp.bucket = <index>`. Nothing is changed when
    the attributes are inconsistent (a gradient outside its bucket, two
    gradients overlapping, a bucket mixing groups, a use of a reduced
    gradient before its bucket is complete): the error names the bucket and
    the parameter. Buckets already materialised are left alone.
  }];
  let statistics = [
    Statistic<"numBucketsMaterialized", "buckets", "Buckets materialised">,
    Statistic<"numReductionsReplaced", "reductions-replaced",
              "Per-gradient reductions replaced by bucket reductions">,
  ];
}

def DistributeOptimizer
    : Pass<"ddp-distribute-optimizer", "mlir::ModuleOp"> {
  let summary = "shard the optimizer over the data-parallel group, per bucket";
  let description = [{
    Megatron-Core's distributed optimizer on the buckets `ddp-bucketize`
    made: each bucket's all-reduce becomes a reduce-scatter, so that rank
    `r` of an `n`-rank group keeps elements `[r * P/n, (r + 1) * P/n)` of
    the reduced bucket of `P` elements; the optimizer ops of the bucket's
    parameters become one `ddp.shard_sgd` or `ddp.shard_adam` on that
    shard; and a `ddp.all_gather` of the updated shards, written back by
    `ddp.set_params`, gives every rank the whole updated parameters:

    ```mlir
    %s = ddp.scale %b by 0.5 {ddp.bucket = 0 : i64} : tensor<2048xf32>
    %g = ddp.reduce_scatter sum %s over @world[dp] {ddp.bucket = 0 : i64}
        : tensor<2048xf32> -> tensor<1024xf32>
    %p = ddp.shard_sgd %g params [@b, @a] offsets [0, 1024] over @world[dp]
        lr 0.1 : tensor<1024xf32> -> tensor<1024xf32>
    %w = ddp.all_gather %p over @world[dp] : tensor<1024xf32> -> tensor<2048xf32>
    ddp.set_params %w params [@b, @a] offsets [0, 1024] : tensor<2048xf32>
    ```

    The decision is the bucket layout (`ddp-assign-buckets` with
    `use-distributed-optimizer` pads every bucket to a multiple of the
    group size); this pass applies it. Every element gets the update the
    unsharded optimizer gives it, bitwise (docs/DistributedOptimizer.md).
    A bucket whose parameters differ in element type or optimizer settings
    (possible outside the megatron policy) gets one shard optimizer and
    all-gather per kind. Nothing changes when a bucket cannot be sharded:
    its size is not a multiple of the group's, its reduction is already
    asynchronous or a `max`, a reduced gradient feeds anything but its
    parameter's optimizer, a parameter is updated twice, or its value is
    read between the bucket's first update and its own; the error names the
    bucket and the parameter. Buckets already sharded are left alone.

    With `num-distributed-optimizer-instances=k` (Megatron's partial
    distributed optimizer, HSDP in PyTorch's terms) the data-parallel axis
    `dp` of the buckets' group is split into `dp_replicate = k` (the
    instance, slowest) and `dp_shard = dp/k` (the rank in the instance), and
    every group over `dp` in the module becomes the same group over
    `[dp_replicate, dp_shard]`. The bucket is reduce-scattered within the
    instance (`[dp_shard]`), its shard all-reduced across the instances
    (`[dp_replicate]`), and the shard optimizer and all-gather run within
    the instance:

    ```mlir
    ddp.mesh @world(dp_replicate = 2, dp_shard = 2)
    %g = ddp.reduce_scatter sum %s over @world[dp_shard] {ddp.bucket = 0 : i64}
        : tensor<2048xf32> -> tensor<1024xf32>
    %a = ddp.all_reduce sum %g over @world[dp_replicate] : tensor<1024xf32>
    %p = ddp.shard_sgd %a params [@b, @a] offsets [0, 1024]
        over @world[dp_shard] lr 0.1 : tensor<1024xf32> -> tensor<1024xf32>
    %w = ddp.all_gather %p over @world[dp_shard] : tensor<1024xf32> -> tensor<2048xf32>
    ```

    `k` must divide the axis, the buckets must all reduce over that one
    axis of one mesh, and the mesh must not have the two new axis names.

    With `outer-dp-sharding-strategy=optim` (Megatron-FSDP's hybrid FSDP)
    the optimizer is sharded across the instances too: the instance's shard
    is reduce-scattered across them instead of all-reduced, the shard
    optimizer runs on the rank's part of it over `[dp_shard, dp_replicate]`
    (its rank there is `dp_shard x k + dp_replicate`, so its part lies
    where the two reduce-scatters put it), and an all-gather across the
    instances gives back the instance's shard, which the all-gather within
    the instance spreads:

    ```mlir
    %g = ddp.reduce_scatter sum %s over @world[dp_shard] : tensor<2048xf32> -> tensor<1024xf32>
    %o = ddp.reduce_scatter sum %g over @world[dp_replicate] : tensor<1024xf32> -> tensor<512xf32>
    %p = ddp.shard_sgd %o params [@b, @a] offsets [0, 1024]
        over @world[dp_shard, dp_replicate] lr 0.1 : tensor<512xf32> -> tensor<512xf32>
    %i = ddp.all_gather %p over @world[dp_replicate] : tensor<512xf32> -> tensor<1024xf32>
    %w = ddp.all_gather %i over @world[dp_shard] : tensor<1024xf32> -> tensor<2048xf32>
    ```

    Each bucket must then split into `dp` equal shards.
  }];
  let options = [
    Option<"numInstances", "num-distributed-optimizer-instances", "int64_t",
           /*default=*/"1",
           "Split the data-parallel group into this many instances, each "
           "sharding the optimizer alone (Megatron's "
           "num_distributed_optimizer_instances); 1: one instance">,
    Option<"outerDpShardingStrategy", "outer-dp-sharding-strategy",
           "::ddp::ShardingStrategy",
           /*default=*/"::ddp::ShardingStrategy::NoShard",
           "With several instances, what the ranks across them shard "
           "(Megatron-FSDP's outer_dp_sharding_strategy): no_shard "
           "(replicated, HSDP) or optim (the optimizer state, hybrid FSDP)",
           "::ddp::getOuterShardingStrategyOptionValues()">,
  ];
  let statistics = [
    Statistic<"numBucketsSharded", "buckets-sharded",
              "Bucket reductions turned into reduce-scatters">,
    Statistic<"numOptimizerOpsReplaced", "optimizer-ops-replaced",
              "Per-parameter optimizer ops replaced by shard optimizers">,
  ];
}

def OverlapGradReduce : Pass<"ddp-overlap-grad-reduce", "mlir::func::FuncOp"> {
  let summary = "issue bucket reductions asynchronously, overlapped with the backward pass";
  let description = [{
    Makes each bucket's collective (the ops `ddp-bucketize` marked with
    `ddp.bucket`) asynchronous: the bucket's packing, checks, scaling and
    collective move to right after the last `ddp.grad_ready` they need (and
    after the previous bucket's collective, keeping the issue order), the
    collective returns a token, and `ddp.wait` goes right before the first
    use of its result; the unpacking and casts back sink to their first use.
    Megatron's --overlap-grad-reduce; without this pass the buckets are
    reduced synchronously at the end of the backward pass. A bucket of
    several distributed-optimizer instances also has the all-reduce of its
    reduce-scatter's shard across instances: the reduce-scatter's wait and
    that all-reduce, asynchronous, go right before the next bucket is
    issued (for the last bucket, where the all-reduce was).
  }];
  let statistics = [
    Statistic<"numCollectivesMadeAsync", "async-collectives",
              "Bucket collectives made asynchronous">,
  ];
}

def OverlapParamGather
    : Pass<"ddp-overlap-param-gather", "mlir::func::FuncOp"> {
  let summary = "gather the distributed optimizer's updated parameters in the next forward";
  let description = [{
    Megatron's --overlap-param-gather on the step `ddp-distribute-optimizer`
    made. Each `ddp.all_gather` of a shard optimizer's result and its
    `ddp.set_params` move from after the optimizer to the start of the step:
    the step ends by writing the rank's updated shard into the parameters
    (`ddp.set_param_shard`), and begins by reading it back
    (`ddp.get_param_shard`) and gathering it asynchronously, so that the
    gather of step `k`'s update runs during step `k + 1`'s forward:

    ```mlir
    %s = ddp.get_param_shard params [@b, @a] offsets [0, 1024] over @world[dp]
        : tensor<1024xf32>
    %w, %t = ddp.all_gather %s over @world[dp] async
        : tensor<1024xf32> -> tensor<2048xf32>
    ...
    ddp.wait %t
    ddp.set_params %w params [@b, @a] offsets [0, 1024] : tensor<2048xf32>
    %x = ddp.get_param @b : tensor<32x32xf32>
    ...
    %p = ddp.shard_sgd %g params [@b, @a] offsets [0, 1024] over @world[dp]
        lr 0.1 : tensor<1024xf32> -> tensor<1024xf32>
    ddp.set_param_shard %p params [@b, @a] offsets [0, 1024] over @world[dp]
        : tensor<1024xf32>
    ```

    The gathers are issued in the order their parameters are first read
    (forward order). Each is waited, and its parameters written, right
    before the first op that names one of its parameters; the next gather
    is issued right after that wait, as Megatron's forward pre-hooks chain
    them, or all at the start of the step with `align-param-gather`. On a
    pipeline rank's program with several model chunks each chunk has a
    chain of its own (Megatron keeps a buffer per chunk), started at the
    chunk's first use; `align-param-gather` then issues chunks 0 and 1 at
    the start and chunk c > 1 where Megatron's interleaved schedule calls
    its param_sync_func (docs/Pipeline.md#parameter-gathers-per-model-chunk).
    On a pipeline rank with one chunk `align-param-gather` is off, as
    Megatron's arguments turn it off without the interleaved schedule. A
    caller that reads the parameters between steps first calls
    `ddprt_finish_param_sync`. A full optimizer op (`ddp.sgd`, `ddp.adam`)
    in the step is an error: overlapping the parameter gather needs the
    distributed optimizer. So is a `ddp.set_params` that does not write a
    shard optimizer's all-gathered result; the error names the parameters.
  }];
  let options = [
    Option<"alignParamGather", "align-param-gather", "bool",
           /*default=*/"false",
           "Issue every parameter gather at the start of the step (with "
           "model chunks, where Megatron's interleaved schedule issues "
           "each chunk's; off on a pipeline rank with one chunk, as "
           "Megatron's arguments make it) instead of chaining each to the "
           "previous one's wait">,
  ];
  let statistics = [
    Statistic<"numGathersDeferred", "gathers-deferred",
              "Parameter all-gathers moved into the next step's forward">,
  ];
}

def ShardParams : Pass<"ddp-shard-params", "mlir::func::FuncOp"> {
  let summary = "gather each FSDP unit's parameters where it uses them (optim_grads_params)";
  let description = [{
    Megatron-FSDP's `optim_grads_params` and PyTorch FSDP2's `fully_shard`
    on the step that `ddp-overlap-param-gather` made: the parameters stay
    sharded between uses instead of being gathered once and written whole
    into every rank's parameters. A unit is the buckets whose parameters
    share a `layer`, joined transitively; a bucket with a parameter outside
    every layer (the embeddings, the final norm) stays gathered once and
    kept whole, as Megatron-FSDP keeps what is outside its units. The
    parameters a unit's
    ops read in one run (its forward of a microbatch, its backward: a
    maximal stretch of the step in which no other unit's parameters are
    read) come from an all-gather of the rank's shards issued for that run
    and unpacked right before it, and die after it:

    ```mlir
    %s = ddp.get_param_shard params [@b, @a] offsets [0, 1024] over @world[dp]
        : tensor<1024xf32>
    %w, %t = ddp.all_gather %s over @world[dp] async
        : tensor<1024xf32> -> tensor<2048xf32>
    ...
    ddp.wait %t
    %b, %a = ddp.bucket_unpack %w offsets [0, 1024]
        : tensor<2048xf32> -> tensor<1024xf32>, tensor<32x32xf32>
    ```

    The gather of run k is issued right after the wait of run
    k - `fsdp-prefetch` (the first `fsdp-prefetch` runs' at the start of
    the step), so that many runs' gathers are in flight beside the one
    computing: FSDP2's
    default is 1. With 0 each gather is issued right before its wait. With
    `reshard-after-forward=false` a run that holds a forward GEMM keeps its
    parameters through the unit's next run when that holds none (its
    backward), as FSDP2's `reshard_after_forward=False`; with
    `fsdp-keep-last-units=N` only the last N units in forward order do.
    The last unit's forward and backward are one run either way.

    `fsdp-unit-prefetch=d0,d1,...` gives each unit its own depth, one per
    unit in forward order (the order `ddp.fsdp_unit` numbers each run's
    gathered shard in): a run of unit u is issued after the wait of the
    run d_u before it, and no earlier than the run before it, so that the
    gathers keep run order. `policy=auto` chooses it from the simulated
    step (docs/FullySharded.md).

    `suggested-communication-unit-size=N` (elements) sets each run's depth
    as Megatron-FSDP's does instead of `fsdp-prefetch`: run k's turn
    gathers the runs after it while the elements they add stay below N / 2,
    the run that crosses it included (none when N / 2 is 0). With
    `fsdp-double-buffer` at most two units' parameters are gathered at once,
    the computing one's and the next: a depth of one at most, and an error
    for `fsdp-prefetch` above 1, `reshard-after-forward=false` or
    `fsdp-keep-last-units`. The step keeps
    `ddp-overlap-param-gather`'s end: each rank writes its updated shard
    back (`ddp.set_param_shard`), which the next step's gathers read.

    Errors: a step without those gathers ("run ddp-overlap-param-gather
    first"), a gather that is not the shape that pass makes, and a
    parameter read after its unit's update.
  }];
  let options = [
    Option<"fsdpPrefetch", "fsdp-prefetch", "unsigned", /*default=*/"1",
           "How many runs ahead of the one computing each unit's "
           "all-gather is issued (FSDP2's forward and backward prefetch: "
           "1)">,
    Option<"reshardAfterForward", "reshard-after-forward", "bool",
           /*default=*/"true",
           "Free a unit's gathered parameters after its forward and gather "
           "them again for its backward (FSDP2's reshard_after_forward)">,
    Option<"fsdpKeepLastUnits", "fsdp-keep-last-units", "unsigned",
           /*default=*/"0",
           "With reshard-after-forward, the last this many units in forward "
           "order keep their forward's gather through their backward (FSDP2's "
           "reshard_after_forward=False on those modules only)">,
    Option<"suggestedCommunicationUnitSize",
           "suggested-communication-unit-size", "uint64_t", /*default=*/"0",
           "Megatron-FSDP's prefetch budget: each run gathers the runs after "
           "it while they add fewer than half this many elements (0: "
           "fsdp-prefetch decides)">,
    Option<"fsdpDoubleBuffer", "fsdp-double-buffer", "bool",
           /*default=*/"false",
           "At most two units' parameters gathered at once, the computing "
           "one's and the next (Megatron-FSDP's fsdp_double_buffer)">,
    Option<"fsdpUnitPrefetch", "fsdp-unit-prefetch", "std::string",
           /*default=*/"\"\"",
           "fsdp-prefetch per unit: one depth per unit in forward order, "
           "separated by commas (\"2,1,1\"); each of the unit's runs is "
           "gathered that many runs ahead, in place of fsdp-prefetch "
           "(empty: fsdp-prefetch for every unit)">,
  ];
  let statistics = [
    Statistic<"numUnits", "units", "FSDP units">,
    Statistic<"numRunGathers", "run-gathers",
              "All-gathers of one unit's buckets for one run">,
  ];
}

def OverlapTpComm : Pass<"ddp-overlap-tp-comm", "mlir::func::FuncOp"> {
  let summary = "overlap the tensor-parallel collectives with the GEMMs beside them";
  let description = [{
    Megatron's --tp-comm-overlap (Transformer Engine's userbuffers), decided
    at compile time. Three rewrites, each chosen per GEMM or collective:

    - **pipeline** (TE's `split_overlap_rs`): a forward GEMM (or, with
      `tp-comm-overlap-rs-dgrad`, a dgrad GEMM) whose result is reduced by a
      synchronous `ddp.reduce_scatter` (sequence parallelism) or
      `ddp.all_reduce` (without it) becomes N GEMMs on row chunks of M (the
      token dimension). Each chunk's collective is issued asynchronously
      right after its GEMM, so that the reduction of chunk i runs beside the
      GEMM of chunk i + 1; the results are waited and stacked
      (`ddp.concat`) where the collective was:

      ```mlir
      %x0 = ddp.chunk %x[0 of 2] interleave 8 : tensor<2048x1536xbf16> -> tensor<1024x1536xbf16>
      %y0 = ddp.gemm fwd %x0, %w transposed : ... -> tensor<1024x12288xbf16>
      %s0, %t0 = ddp.reduce_scatter sum %y0 over @world[tp] async : ... -> tensor<128x12288xbf16>
      %x1 = ddp.chunk %x[1 of 2] interleave 8 : ...
      ...
      ddp.wait %t0
      ddp.wait %t1
      %s = ddp.concat %s0, %s1 : ... -> tensor<256x12288xbf16>
      ```

      For a reduce-scatter over n ranks, chunk i holds rows
      `[r M/n + i m, r M/n + (i + 1) m)` of every block r (`interleave n`,
      `m = M / (n N)`), so that rank r receives exactly its rows of the
      whole reduce-scatter, in order.
    - **pipelined all-gather** (TE's `split_overlap_ag`, as N chunked
      all-gathers rather than a ring of send/recv): with
      `tp-comm-overlap-ag`, a GEMM (not a wgrad) whose lhs is a synchronous
      tensor-parallel `ddp.all_gather` (the forward GEMM of a
      column-parallel layer under sequence parallelism, the dgrad GEMM of a
      row-parallel one) becomes N asynchronous all-gathers of row chunks of
      the rank's shard, issued where the all-gather was, and N GEMMs, each
      waiting for its chunk, so that the gather of chunk i + 1 runs beside
      the GEMM of chunk i. Gathered chunk i holds chunk i of every rank's
      rows, so the GEMM results are stacked back with `ddp.concat ...
      interleave n`; ops after the GEMM that read the gathered tensor (the
      wgrad GEMM) read the gathered chunks stacked back the same way, which
      the lowering copies (and the simulator prices):

      ```mlir
      %x0 = ddp.chunk %x[0 of 2] : tensor<256x12288xbf16> -> tensor<128x12288xbf16>
      %g0, %t0 = ddp.all_gather %x0 over @world[tp] async : ... -> tensor<1024x12288xbf16>
      ...
      ddp.wait %t0
      %y0 = ddp.gemm fwd %g0, %w transposed : ... -> tensor<1024x4608xbf16>
      ddp.wait %t1
      %y1 = ddp.gemm fwd %g1, %w transposed : ...
      %y = ddp.concat %y0, %y1 interleave 8 : ... -> tensor<2048x4608xbf16>
      ```
    - **bulk** (TE's `tp_comm_bulk_dgrad` / `tp_comm_bulk_wgrad`): in the
      backward pass, the all-gather of a layer's input that only its wgrad
      GEMM reads runs asynchronously beside the dgrad GEMM, and the
      reduce-scatter (or all-reduce) of a dgrad GEMM's result that is not
      pipelined runs beside the wgrad GEMM. Each is waited right before the
      first op that reads its result.

    N is `tp-comm-num-splits`, or with `auto` (the default) the count in
    {1, 2, 3, 4, 6, 8, 12, 16} that the rows allow and that ends the
    simulated step soonest, chosen GEMM by GEMM in block order on the
    simulator's own clock; so the simulation of the rewritten step predicts
    exactly the time the choices were made on. N = 1 leaves the GEMM whole.

    Decisions are attributes: `ddp.tp_comm_splits = N` on each GEMM the
    pass considered (a user-set value is taken as it is and checked), and
    `ddp.tp_comm_bulk` on each collective made bulk. Every decision is
    checked before the first op changes: an invalid one is an error that
    leaves the IR untouched.

    An all-gather read before its GEMM, or by no GEMM's lhs, stays whole;
    the statistic `ag-left-whole` counts those.
  }];
  let options = [
    Option<"tpCommOverlap", "tp-comm-overlap", "bool", /*default=*/"true",
           "Overlap the tensor-parallel collectives (false: leave the step "
           "as it is). --ddp-schedule's default is false, as Megatron's">,
    Option<"overlapAg", "tp-comm-overlap-ag", "bool", /*default=*/"true",
           "Pipeline the all-gather before a GEMM with the GEMM's row "
           "chunks">,
    Option<"overlapRs", "tp-comm-overlap-rs", "bool", /*default=*/"true",
           "Pipeline forward GEMMs with the reduce-scatter or all-reduce of "
           "their result">,
    Option<"overlapRsDgrad", "tp-comm-overlap-rs-dgrad", "bool",
           /*default=*/"false",
           "Pipeline dgrad GEMMs with the reduce-scatter or all-reduce of "
           "their result">,
    Option<"bulkDgrad", "tp-comm-bulk-dgrad", "bool", /*default=*/"true",
           "Run the all-gather of a layer's input for its wgrad GEMM beside "
           "its dgrad GEMM">,
    Option<"bulkWgrad", "tp-comm-bulk-wgrad", "bool", /*default=*/"true",
           "Run the reduction of a dgrad GEMM's result beside the wgrad "
           "GEMM">,
    Option<"disableQkv", "tp-comm-overlap-disable-qkv", "bool",
           /*default=*/"false",
           "Leave the collectives of the attention's QKV projection alone">,
    Option<"disableFc1", "tp-comm-overlap-disable-fc1", "bool",
           /*default=*/"false",
           "Leave the collectives of the MLP's first projection alone">,
    Option<"numSplits", "tp-comm-num-splits", "::ddp::TpCommNumSplits",
           /*default=*/"::ddp::TpCommNumSplits::getAuto()",
           "Chunks per pipelined GEMM: a positive number, or auto (the cost "
           "model picks each GEMM's)">,
    Option<"hardware", "hw", "std::string", /*default=*/"\"h100-sxm-ib400\"",
           "Hardware profile for tp-comm-num-splits=auto (built-in name or "
           "JSON file)">,
    Option<"dataParallelSize", "dp", "int64_t", /*default=*/"0",
           "Data-parallel size to price the step at (0: the mesh's)">,
  ];
  let statistics = [
    Statistic<"numGemmsPipelined", "gemms-pipelined",
              "GEMMs split into chunks, each chunk's collective beside the "
              "next chunk">,
    Statistic<"numChunks", "chunks", "GEMM chunks made">,
    Statistic<"numBulkCollectives", "bulk-collectives",
              "Collectives made asynchronous beside the next GEMM">,
    Statistic<"numAllGathersLeftWhole", "ag-left-whole",
              "Tensor-parallel all-gathers left synchronous, neither "
              "pipelined nor bulk">,
  ];
}

def ScheduleCompute : Pass<"ddp-schedule-compute", "mlir::func::FuncOp"> {
  let summary = "run weight-gradient GEMMs where the compute stream would wait for a collective";
  let description = [{
    A list scheduler on the simulator's clock (docs/ComputeScheduling.md,
    "Delayed weight gradients"). A layer's wgrad GEMMs depend on nothing the
    backward computes after them, so they can run beside a later
    collective: Megatron's `delay_wgrad_compute` and the B/W split of
    zero-bubble pipelines. The pass walks the step in block order and holds
    back each wgrad GEMM of a transformer layer (one with a `layer`); before
    each `ddp.wait` whose collective is still in flight on the simulated
    clock, it runs held GEMMs, oldest first, until the wait would no longer
    hold the compute stream. A held GEMM of layer l runs at the latest
    before the first op of a layer other than l and l - 1 (it may fill the
    waits of its own layer's backward and the next layer's), before any op
    of another pipeline task or combined-1F1B node, and before the first op
    the scheduler does not move past (the optimizer, a parameter write, a
    stage-to-stage call that reads it). Every other op keeps its order; the
    ops that read a held GEMM's result (its accumulation, its grad_ready, a
    bucket and its reduction) run right after it.

    ```mlir
    // wgrad-schedule=delayed: layer 1's wgrad runs while the next layer's
    // dgrad all-reduce is in flight, not before it is issued
    %dx1 = ddp.gemm dgrad %dy1, %w1 layer 1 : ...
    %r, %t = ddp.all_reduce sum %dx0 over @world[tp] async : ...
    %dw1 = ddp.gemm wgrad %dy1 transposed, %x1 layer 1 {ddp.delayed_wgrad} : ...
    ddp.wait %t
    ```

    `wgrad-schedule=delayed` holds every layer's wgrads (the fixed rule);
    `auto` holds them only in the layers where one filled a wait, and only
    when that ends the simulated step sooner than `in-place` and than
    `delayed`. Holding a GEMM keeps its operands live longer:
    `memory-cap-gib` bounds the live tensors of the whole step (each from
    the op that makes it to its last reader), and where the rule would go
    over it the scheduler holds fewer bytes at once. The W passes of a
    zero-bubble pipeline are placed by `ddp-pipeline-stages` and stay.

    Decisions are attributes: `ddp.delayed_wgrad` on each GEMM that moved,
    and `ddp.compute_predicted_step_us` on the function (what ddp-simulate
    of the result reproduces). Run it after the passes that make
    collectives asynchronous, which it fills around.
  }];
  let options = [
    Option<"wgradSchedule", "wgrad-schedule", "::ddp::WgradSchedule",
           /*default=*/"::ddp::WgradSchedule::InPlace",
           "Where the layers' weight-gradient GEMMs run",
           [{::llvm::cl::values(
             clEnumValN(::ddp::WgradSchedule::InPlace, "in-place",
                        "beside their dgrad, as imported"),
             clEnumValN(::ddp::WgradSchedule::Delayed, "delayed",
                        "every layer's held back into the waits after it "
                        "(Megatron's delay_wgrad_compute as a rule)"),
             clEnumValN(::ddp::WgradSchedule::Auto, "auto",
                        "held back in the layers where the cost model "
                        "finds it ends the step sooner"))}]>,
    Option<"memoryCapGib", "memory-cap-gib", "double", /*default=*/"0",
           "The most GiB of live tensors the reordered step may hold at "
           "once (0: no cap)">,
    Option<"hardware", "hw", "std::string", /*default=*/"\"h100-sxm-ib400\"",
           "Hardware profile that prices the step (built-in name or JSON "
           "file)">,
    Option<"dataParallelSize", "dp", "int64_t", /*default=*/"0",
           "Data-parallel size to price the step at (0: the mesh's)">,
  ];
  let statistics = [
    Statistic<"numDelayed", "wgrads-delayed",
              "Weight-gradient GEMMs that run later than they were">,
    Statistic<"livePeakKiB", "live-peak-kib",
              "KiB of tensors live at once in the chosen order">,
    Statistic<"inPlaceLivePeakKiB", "in-place-live-peak-kib",
              "KiB of tensors live at once in the order as it was">,
  ];
}

def SplitBatch : Pass<"ddp-split-batch", "mlir::ModuleOp"> {
  let summary = "split each layer's row-wise spans into slices whose collectives overlap each other (Domino)";
  let description = [{
    Domino's idea (Wang et al., *Domino: Eliminating Communication in LLM
    Training via Generic Tensor Slicing and Overlapping*, 2024), mostly on
    the forward pass. Between one layer's attention and the next, every op works
    row by row (token by token): the projections, the bias, dropout and
    residual adds, the norms, the MLP, and their tensor-parallel
    collectives. Each such span (a run of forward GEMMs, row-wise
    `ddp.compute` kernels and synchronous tensor-parallel all-reduces,
    reduce-scatters and all-gathers, in one pipeline task; in the backward,
    a gradient's add and the next all-gather) is split into N
    row slices. Each slice's collectives are issued asynchronously and the
    slices interleaved, each slice up to its next collective, so that one
    slice's collective runs beside the next slice's compute:

    ```mlir
    // batch-split=2: the proj all-reduce of slice 0 runs beside slice 1's
    // projection, slice 1's beside slice 0's MLP
    %p0 = ddp.gemm fwd %a0, %w transposed layer 0 : ...
    %r0, %t0 = ddp.all_reduce sum %p0 over @world[tp] async : ...
    %p1 = ddp.gemm fwd %a1, %w transposed layer 0 : ...
    %r1, %t1 = ddp.all_reduce sum %p1 over @world[tp] async : ...
    ddp.wait %t0
    %h0 = ddp.compute "bias_dropout_add"(%r0, %b, %x0) ...
    ```

    Under sequence parallelism a slice of the residual stream is a
    contiguous range of the rank's rows, and a slice of a gathered tensor
    holds that range of every rank's rows (`ddp.chunk ... interleave n`),
    as ddp-overlap-tp-comm's pipelined chunks do. What the ops after a span
    read (the attention, the backward) is the slices stacked back
    (`ddp.concat`), the tensor they read before: each row is computed by
    the same kernel on the same values, so the step is bitwise the same.

    A kernel that mixes rows (the attention, the embedding, the loss, the
    router and the experts) ends a span, as does a row-wise kernel whose
    operands the runtime's stand-in does not read row by row
    (docs/RationaleDDP.md). A count the rows do not allow leaves the span
    whole. `batch-split=auto` prices 1 to 4 by simulating the step split
    each way and keeps the fastest; the count is recorded on the function
    as `ddp.batch_split`. Run it before ddp-overlap-tp-comm, which then
    schedules the collectives left synchronous.
  }];
  let options = [
    Option<"batchSplit", "batch-split", "::ddp::TpCommNumSplits",
           /*default=*/"::ddp::TpCommNumSplits::get(1)",
           "Row slices per span: a positive number (1: leave the step), or "
           "auto (the cost model picks)">,
    Option<"hardware", "hw", "std::string", /*default=*/"\"h100-sxm-ib400\"",
           "Hardware profile that prices the step (built-in name or JSON "
           "file)">,
    Option<"dataParallelSize", "dp", "int64_t", /*default=*/"0",
           "Data-parallel size to price the step at (0: the mesh's)">,
  ];
  let statistics = [
    Statistic<"numSpansSplit", "spans-split",
              "Spans split into row slices">,
  ];
}

def OverlapMoeComm : Pass<"ddp-overlap-moe-comm", "mlir::func::FuncOp"> {
  let summary = "run the expert all-to-alls beside the compute issued after them";
  let description = [{
    Megatron's --moe-shared-expert-overlap. Each synchronous `ddp.all_to_all`
    and `ddp.all_to_all_v` (the all-to-all token dispatcher's, with the
    exchange of its counts) becomes asynchronous, and its
    `ddp.wait` goes right before the first op that reads its result. What the
    step issues in between then runs beside it. The importer places the shared
    experts where Megatron launches them when they overlap: fc1 after the
    tokens' all-to-all, fc2 after the combine's, and in the backward fc2's
    after the first all-to-all and fc1's after the tokens' last. So the shared
    experts compute while the tokens are in flight. The probabilities'
    all-to-all also runs beside the tokens'. Nothing moves but the waits, so
    the collectives keep their order on every rank.

    ```mlir
    %t = ddp.all_to_all %x over @world[ep] : tensor<32x64xbf16>
    %s = ddp.gemm fwd %y, %w transposed : ...
    %u = ddp.all_gather %t over @world[tp] : ...
    ```
    becomes
    ```mlir
    %t, %tok = ddp.all_to_all %x over @world[ep] async : tensor<32x64xbf16>
    %s = ddp.gemm fwd %y, %w transposed : ...
    ddp.wait %tok
    %u = ddp.all_gather %t over @world[tp] : ...
    ```
  }];
  let options = [
    Option<"sharedExpertOverlap", "moe-shared-expert-overlap", "bool",
           /*default=*/"true",
           "Issue the expert all-to-alls asynchronously, waited for at their "
           "first reader, so that the shared experts run beside them. "
           "--ddp-schedule's default is false, as Megatron's">,
  ];
  let statistics = [
    Statistic<"numAllToAllsMadeAsync", "async-all-to-alls",
              "All-to-alls made asynchronous">,
  ];
}

def Combined1F1B : Pass<"ddp-combined-1f1b", "mlir::func::FuncOp"> {
  let summary = "run each microbatch's forward beside the previous one's backward, node by node (Megatron's combined 1F1B)";
  let description = [{
    Megatron's --overlap-moe-expert-parallel-comm without pipeline stages
    (`combined_1f1b_schedule_for_no_pipelining`). The importer builds an MoE
    step with the all-to-all dispatcher in program order (per microbatch,
    its forward, then its backward) and tags each op with its node of
    Megatron's schedule plan (`ddp.schedule_node`): the embedding
    (`pre_process`); per layer the attention with the router and the
    permutation (`attn`), the dispatch all-to-alls (`dispatch`), the experts
    (`mlp`) and the combine all-to-all with the residual (`combine`); the
    output layer and the loss (`post_process`).

    This pass puts the nodes in the order Megatron runs them: microbatch 0's
    forward alone; then the forward of each microbatch m beside the backward
    of m - 1, forward layer i with backward layer L - 1 - i; then the last
    backward alone. Megatron runs a pair of layers on two streams
    (TransformerLayerSchedulePlan.run): the compute stream runs the
    forward's attn, the backward's mlp, the forward's mlp, the backward's
    attn; the communication stream the backward's combine, then the
    forward's dispatch (once the forward's attn has ended), the backward's
    dispatch, then the forward's combine. A ddp step issues each collective
    where the program reaches it, so the pass puts each communication node
    where Megatron's communication stream starts it: the backward's
    combine, the forward's attn and dispatch, the backward's mlp and
    dispatch, the forward's mlp and combine, the backward's attn, then the
    compute of the forward's combine after its last collective. With the
    all-to-alls asynchronous (`ddp-overlap-moe-comm`, which ddp-schedule
    runs after this pass), each one's all-to-alls run beside the other's
    compute.

    Ops keep their order within a node. An untagged op goes with the tagged
    op before it; the ops before the first tagged op go first, the ops after
    the last one stay last. A `ddp.get_param` goes right before its first
    reader, where `ddp-overlap-param-gather` later waits for its gather.
    Only the order changes: what the step computes, and the order of every
    sum, is the same. The new order is checked before any op moves: an op
    that would run before a value it reads is an error naming both nodes,
    as is a parameter read or update moved across an update, and a step
    that already waits for a collective; each leaves the IR as it was. A
    function without tags is an error: the overlap was asked for a step the
    importer did not tag.

    `delay-wgrad-compute` (Megatron's `delay_wgrad_compute`, which needs
    the combined 1F1B) takes each backward's weight-gradient GEMMs but the
    router's (a plain parameter in Megatron, not a TE module), and what
    their node computes from them, out of their nodes, as Megatron's
    `backward_dw` runs them: the mlp's after the backward's dispatch is
    issued, so that the dispatch all-to-all runs beside them; the attn's
    after the next pair's backward combine is issued, and for the
    backward's layer 0 after the layers, before the post-process.
  }];
  let options = [
    Option<"overlapMoeExpertParallelComm", "overlap-moe-expert-parallel-comm",
           "bool", /*default=*/"true",
           "Order the step's nodes as Megatron's combined 1F1B (false: leave "
           "the step as it is). --ddp-schedule's default is false, as "
           "Megatron's">,
    Option<"delayWgradCompute", "delay-wgrad-compute", "bool",
           /*default=*/"false",
           "Megatron's delay_wgrad_compute: the backward's weight gradients "
           "run after the all-to-all they can hide, out of their nodes; "
           "needs overlap-moe-expert-parallel-comm, as Megatron's">,
  ];
  let statistics = [
    Statistic<"numNodes", "nodes", "Schedule nodes placed">,
  ];
}

def PipelineStages : Pass<"ddp-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "split a pipelined step into one program per pipeline rank, in Megatron's schedule order";
  let description = [{
    The importer builds a pipelined model (`pipeline_model_parallel_size`
    > 1) as one step in program order (per microbatch, its forward, then its
    backward) on a mesh with a `pp` axis. Each of its ops records the
    pipeline rank that runs it (`ddp.pipeline_stage`) and, inside the
    pipeline, the pass it belongs to (`ddp.task`: `F<m>.<c>` is the forward
    of microbatch `m` through this rank's model chunk `c`, `B<m>.<c>` its
    backward). That step is the reference: run on every rank, it computes
    what the pipeline computes.

    This pass replaces it with one function per pipeline rank `r`,
    `@<step>_stage<r>` with `ddp.pipeline_stage = r`, whose ops are:

    - the ops before the pipeline (none from the importer);
    - the tasks of rank `r` in the order `schedule` runs them (the order
      `--ddp-print-pipeline-schedule` prints), each task's ops in program
      order, then its weight-gradient passes the schedule does not place
      (`W<m>.<c>`: the output layer's deferred wgrads) in microbatch order;
    - the ops after the pipeline (the gradient reductions and the
      optimizer).

    An op with no `ddp.pipeline_stage` runs on every rank that computes one
    of its operands (the tied word embedding's gradient sum and update run
    on the first and the last stage, as `finalize_model_grads` all-reduces
    that gradient over the embedding group); a `ddp.get_param` is copied to
    every rank that uses it. A value that one rank computes and another
    uses crosses by a `ddp.send` and a `ddp.recv` over `[pp]`: activations
    go to offset `+1` and their gradients to `-1`, the last rank's chunk `c`
    feeding the first rank's chunk `c + 1`. Each rank returns the step's
    results it computes.

    Where a rank sends and receives, and when it waits, follows Megatron's
    P2PCommunicator calls for the schedule and the p2p options
    (docs/Pipeline.md): by default every call blocks, sending the output of
    the task just run and receiving the input of a later one, its
    operations issued together (one batch); `overlap-p2p-comm` makes the
    interleaved schedule's calls asynchronous, each receive waited right
    before its task. With `overlap-p2p-comm` on 1f1b or gpipe (which
    Megatron refuses) a value is sent right after it is computed and
    received early, and the pass refuses a schedule whose sends between two
    ranks would not arrive in the order the receiver uses them. A value
    used after the pipeline (the tied embedding's gradient) is exchanged
    once both ranks are past their pipeline.

    `pipeline-schedule` is Megatron-Core's: `1f1b`
    (`forward_backward_pipelining_without_interleaving`), `interleaved`
    (`forward_backward_pipelining_with_interleaving`, with
    `microbatch-group-size` contiguous microbatches per model chunk), or
    `gpipe` (every forward, then every backward); or `zb-h1` (Qi et al.'s
    zero-bubble ZB-H1, in PaddlePaddle's order), which runs the W tasks an
    import with `pipeline_schedule` `zb-h1` makes (each backward's weight
    gradients, `W<m>.<c>`) among the others, some after the last backward,
    and exchanges as `overlap-p2p-comm` does on 1f1b (Megatron has no calls
    for it to follow). docs/Pipeline.md gives
    the rules and cites Megatron's lines. A module whose ops name no
    pipeline rank is left as it is. `ddp-schedule` runs this pass first, with
    the group size the importer recorded from the model's
    `microbatch_group_size_per_vp_stage`.

    On a step whose ops carry `ddp.schedule_node` (ddp-import sets them on
    a pipelined MoE model with `overlap_moe_expert_parallel_comm`),
    `overlap-moe-expert-parallel-comm` runs Megatron's
    `combined_1f1b_schedule_for_interleaved_pipelining` (interleaved only,
    as Megatron requires a virtual size with pipeline stages): one more
    warmup forward, and in each steady-state step the forward's and the
    backward's schedule nodes (`ddp.schedule_node`, which ddp-import sets
    on such a model) run node by node as ddp-combined-1f1b runs them
    without stages, the layers of the two model chunks paired first with
    last; the step's receive waits go before it and its two calls after
    it, as Megatron's pre and post hooks run them
    (docs/ExpertParallelism.md).
  }];
  let options = [
    Option<"pipelineSchedule", "pipeline-schedule", "std::string",
           /*default=*/"\"\"",
           "1f1b, interleaved, gpipe or zb-h1; empty means Megatron's choice: "
           "interleaved when the ranks hold several model chunks, else 1f1b">,
    Option<"microbatchGroupSize", "microbatch-group-size", "int64_t",
           /*default=*/"0",
           "Megatron's microbatch_group_size_per_vp_stage for the "
           "interleaved schedule; 0 means the number of pipeline ranks">,
    Option<"overlapP2PComm", "overlap-p2p-comm", "bool", /*default=*/"false",
           "Megatron's overlap_p2p_comm: the interleaved schedule's "
           "exchanges are asynchronous, each waited right before its use; "
           "with 1f1b or gpipe, ddp posts each receive early by its own "
           "rule (Megatron has no such mode)">,
    Option<"batchP2PComm", "batch-p2p-comm", "bool", /*default=*/"true",
           "Megatron's batch_p2p_comm: a call's sends and receives in "
           "batch_isend_irecv's order, else in _p2p_ops'; off with "
           "overlap-p2p-comm, as Megatron's arguments make it">,
    Option<"overlapP2PCommWarmupFlush", "overlap-p2p-comm-warmup-flush",
           "bool", /*default=*/"false",
           "Megatron's overlap_p2p_comm_warmup_flush: the interleaved "
           "warmup and flush receive one iteration ahead too; needs "
           "overlap-p2p-comm">,
    Option<"deallocatePipelineOutputs", "deallocate-pipeline-outputs",
           "bool", /*default=*/"false",
           "Megatron's deallocate_pipeline_outputs: a forward's output is "
           "freed once sent, so an asynchronous send of it is waited at "
           "once (ddp's own rule: before the next forward) and the rank "
           "does not hold it until its backward; ModelParallelConfig's "
           "default is false, Megatron-LM's training sets it">,
    Option<"overlapMoeExpertParallelComm", "overlap-moe-expert-parallel-comm",
           "bool", /*default=*/"true",
           "Megatron's overlap_moe_expert_parallel_comm with pipeline "
           "stages, for a step whose ops carry ddp.schedule_node: the "
           "interleaved schedule's steady steps run each forward beside a "
           "backward, node by node (false: the plain schedule). "
           "--ddp-schedule's default is false, as Megatron's">,
    Option<"delayWgradCompute", "delay-wgrad-compute", "bool",
           /*default=*/"false",
           "Megatron's delay_wgrad_compute within those steps (needs the "
           "option above)">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numStages", "stages", "Stage programs made">,
    Statistic<"numTransfers", "transfers",
              "Values sent from one pipeline rank to another">,
  ];
}

def ExtractPipelineStage
    : Pass<"ddp-extract-pipeline-stage", "mlir::ModuleOp"> {
  let summary = "keep one pipeline rank's program as the module's step";
  let description = [{
    After `ddp-pipeline-stages`: keeps the program of pipeline rank `rank`
    (the function with `ddp.pipeline_stage = rank`) as the module's only
    function, without its `ddp.pipeline_stage`, and erases the other ranks'
    programs and the parameters the kept one does not use. So that every
    rank's lowered program creates the same process groups in the same
    order (their creation is collective), it records every group that any
    rank's program uses, sorted, in the module's `ddp.program_groups`.

    `ddp-run` does this on each rank before it lowers a pipelined program;
    the result lowers as any step does.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "The pipeline rank (coordinate on the mesh's pp axis) to keep">,
  ];
}

def PrintPipelineSchedule : Pass<"ddp-print-pipeline-schedule", "mlir::ModuleOp"> {
  let summary = "print each pipeline rank's compute order as JSON";
  let description = [{
    After `ddp-pipeline-stages`, prints every pipeline rank's tasks in the
    order its program runs them, read from the `ddp.task` of its ops:

    ```json
    {"0": ["F0.0", "F1.0", "F2.0", "F3.0", "B0.0", "F4.0", "B1.0", ...],
     "1": ["F0.0", "F1.0", "F2.0", "B0.0", "F3.0", ...]}
    ```

    `F<m>.<c>` is the forward of microbatch `m` through the rank's model
    chunk `c`, `B<m>.<c>` its backward, `W<m>.<c>` a weight-gradient pass
    run apart from its backward. A forward and a backward whose ops
    interleave (a combined step of `overlap-moe-expert-parallel-comm`) are
    one entry, `F<m>.<c>+B<m>.<c>`. The IR is not changed.
  }];
  let options = [
    Option<"outputPath", "output", "std::string", /*default=*/"\"-\"",
           "Where the JSON goes ('-' for stdout)">,
  ];
}

def PrintBucketLayout : Pass<"ddp-print-bucket-layout", "mlir::ModuleOp"> {
  let summary = "print the bucket layout recorded in the IR, as JSON or as a table";
  let description = [{
    Prints the layout recorded by `ddp-assign-buckets` (before or after
    `ddp-bucketize`), buckets in the order their collectives are issued:

    ```json
    {"buckets": [{"index": 0, "dtype": "bf16", "group": "dp",
                  "params": [{"name": "layers.9.weight", "offset": 0, "numel": 9025} ],
                  "numel": 9025, "padded_numel": 9088} ]}
    ```

    `offset` is the parameter's first element in the bucket, `numel` the end
    of the last parameter, `padded_numel` the size with end padding; the
    schema is in docs/Bucketing.md. The IR is not changed. A layout that
    `ddp-bucketize` would refuse is refused with the same error.

    With `use-distributed-optimizer`, each bucket also lists the shard of
    it that each rank of its group owns (rank `r` of `n`: elements
    `[r * padded_numel/n, (r + 1) * padded_numel/n)`) and which elements of
    which parameters that shard holds: the parameter elements whose main
    parameters and optimizer state the rank keeps.

    `format=table` prints the layout to read instead: a row per bucket (its
    group, element type, parameters, elements, padded elements, bytes, and
    first and last parameter; with `use-distributed-optimizer` the shard
    each rank owns), then the totals. JSON stays the default, for the
    tools and scripts that read it.
  }];
  let options = [
    Option<"outputPath", "output", "std::string", /*default=*/"\"-\"",
           "Where the layout goes ('-' for stdout)">,
    Option<"format", "format", "std::string", /*default=*/"\"json\"",
           "json (the schema of docs/Bucketing.md) or table (to read)">,
    Option<"useDistributedOptimizer", "use-distributed-optimizer", "bool",
           /*default=*/"false",
           "Also print each rank's shard of every bucket (the layout must "
           "pad every bucket to a multiple of its group size)">,
  ];
}

def VerifyCollectiveOrder : Pass<"ddp-verify-collective-order", "mlir::ModuleOp"> {
  let summary = "prove tokens are waited before use and collectives are issued alike on every rank";
  let description = [{
    A static check, run at the end of `ddp-schedule` and available alone:

    - every token is waited exactly once (through `ddp.join`s), in the same
      block as its op, and before any use of the op's results;
    - every collective is issued unconditionally in a single-block function:
      not inside a region of another op (whose execution could depend on the
      rank) nor in a function with control flow between blocks. The program
      is SPMD and groups, shapes and element types are static, so every rank
      of a group then issues that group's collectives in the same order;
    - the `i`-th `ddp.send` to offset `d` over a group pairs with the `i`-th
      `ddp.recv` from offset `-d` (modulo the group size) over the same
      group, with as many elements of the same element type, and both are
      issued in one batch: the first asynchronous, and no wait, other
      collective or call of a function that issues collectives between
      them. A ring exchange then cannot deadlock, on MPI or NCCL;
    - the programs of a pipeline's ranks (functions with
      `ddp.pipeline_stage`, one per rank of the mesh's `pp` axis), run
      together, cannot hang: the `i`-th send from rank `a` to rank `b` over
      `[pp]` pairs with the `i`-th receive at `b` from `a`, with the same
      type, and with no buffering (a rank's back-to-back sends and receives
      issued as one batch at its next wait, collective or synchronous send or
      receive, its batches completing in order) every rank reaches the end.
      A hang names where each rank waits, the interleaved schedule's
      wraparound from the last rank to the first included.

    Errors name the ops involved. The IR is not changed.
  }];
  let statistics = [
    Statistic<"numCollectivesChecked", "collectives", "Collectives checked">,
    Statistic<"numTokensChecked", "tokens", "Tokens checked">,
    Statistic<"numPairsChecked", "pairs", "Send/receive pairs checked">,
  ];
}

def StepStats : Pass<"ddp-step-stats", "mlir::ModuleOp"> {
  let summary = "Print the parameter count, FLOPs and op counts of a step";
  let description = [{
    An analysis that prints what the step holds and computes, read from the
    IR alone, to standard output (add `-o /dev/null` to drop the IR that
    ddp-opt prints after it) or to the file named by `output`:

    - the mesh;
    - parameters: elements on this rank, and in the whole model (a
      parameter with a `tp_dim` counts once per rank of the `tp` axis, an
      `expert` one once per rank of the `ep` axis, others once);
    - FLOPs per rank: `2*M*N*K` of each `ddp.gemm` by phase, plus the
      `flops` of each `ddp.compute`; and the same times the `tp` axis size;
    - HBM bytes of the `ddp.compute` ops;
    - collectives per op and process group, with their payload bytes;
    - op counts by name, and the number of op results that are never used;
    - what the lowered step allocates per rank (docs/Lowering.md);
    - the model state per rank as Megatron-LM counts it: parameters,
      gradients (in the type they are reduced in), f32 main parameters and
      Adam moments, the shard optimizers' state summed over their group,
      the total per rank and per parameter (18, or 6 + 12/d with the
      distributed optimizer, for 16-bit parameters with grad-reduce-in-fp32),
      and bucket padding apart (docs/DistributedOptimizer.md).

    The IR is left unchanged.

    ```
    $ ddp-import --preset=tiny | ddp-opt -ddp-step-stats -o /dev/null
    mesh: dp=2 tp=2 (4 ranks)
    parameters: 147712 in model, 79104 on this rank in 28 tensors
    ...
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "File to print the statistics to ('-' for standard output)">,
  ];
  let statistics = [
    Statistic<"numParams", "num-params", "Number of ddp.param ops">,
    Statistic<"numOps", "num-ops", "Number of ops in the step's functions">,
    Statistic<"numUnusedResults", "num-unused-results",
              "Number of op results that are never used">,
  ];
}

#endif // DDP_DIALECT_DDP_TRANSFORMS_PASSES_TD
