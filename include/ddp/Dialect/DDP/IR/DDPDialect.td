//===- DDPDialect.td - The ddp dialect ---------------------*- tablegen -*-===//
//
// One data-parallel training step: compute, the moment each gradient is final,
// collectives (synchronous or asynchronous), gradient buckets and the
// optimizer. See docs/RationaleDDP.md for why the dialect looks as it does.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_TD
#define DDP_DIALECT_TD

include "mlir/IR/OpBase.td"

def DDP_Dialect : Dialect {
  let name = "ddp";
  let cppNamespace = "::ddp";
  let summary = "The communication schedule of one data-parallel training step";
  let description = [{
    The `ddp` dialect models one training step of a data-parallel (and
    tensor-parallel) model on one rank: the GEMMs and other compute in issue
    order, the moment each parameter's gradient becomes final
    (`ddp.grad_ready`), the collectives over process groups of a device mesh,
    the gradient buckets that pack several gradients into one flat buffer, and
    the optimizer step.

    Values are builtin tensors with value semantics. The order of the ops in
    the step's block is the issue order on the compute stream. A collective is
    either synchronous (its result is ready when it returns) or asynchronous:
    it then also returns a `!ddp.token`, runs on a communication stream, and
    its result may only be used after a `ddp.wait` on that token.

    The program is SPMD: every rank runs the same step, so every rank of a
    group issues the same collectives in the same order.

    The scheduling passes record their per-op decisions as builtin
    attributes, which the dialect checks wherever they appear:

    | attribute | on | value |
    |---|---|---|
    | `ddp.bucket` | any `ddp` op | `i64` >= 0: the bucket's index (on a `ddp.grad_ready`, with `ddp.bucket_offset`; on the ops `ddp-bucketize` creates, the bucket they belong to) |
    | `ddp.bucket_offset` | `ddp.grad_ready`, with `ddp.bucket` | `i64` >= 0: the gradient's first element in its bucket |
    | `ddp.tp_comm_splits` | `ddp.gemm` | `i64` >= 1: its number of row chunks (`ddp-overlap-tp-comm`) |
    | `ddp.fsdp_unit` | `ddp.get_param_shard` | `i64` >= 0: the FSDP unit, in forward order, whose run this shard is gathered for (`ddp-shard-params`; `fsdp-unit-prefetch` counts units in this order) |
    | `ddp.tp_comm_bulk` | an asynchronous collective | unit: made bulk by `ddp-overlap-tp-comm` |
    | `ddp.tp_comm_predicted_step_us` | a function | `f64` >= 0: the simulated step time, in microseconds, that `ddp-overlap-tp-comm`'s search chose on |
    | `ddp.delayed_wgrad` | a `ddp.gemm wgrad` | unit: moved later, into the waits after it, by `ddp-schedule-compute` |
    | `ddp.compute_predicted_step_us` | a function | `f64` >= 0: the simulated step time, in microseconds, of the order `ddp-schedule-compute` chose |
    | `ddp.batch_split` | a function | `i64` >= 1: the row slices `ddp-split-batch` split each row-wise span of the step into (1: none) |
    | `ddp.pipeline_stage` | a function, or any `ddp` op | `i64` >= 0: the pipeline rank (coordinate on the mesh's `pp` axis) whose ranks run this function as their step; on an op of a step not yet split into stages, the rank that runs the op (`ddp-pipeline-stages`) |
    | `ddp.keeps_pipeline_outputs` | a function | unit: a pipeline rank's program that keeps each forward output it sends until that forward's backward, as Megatron does without `deallocate_pipeline_outputs` (`ddp-pipeline-stages`); the activation memory counts it |
    | `ddp.program_groups` | a module | array of strings, each a group as its axes joined by commas (`"dp,tp"`): the groups a lowered program creates first, in this order, so that programs that differ from rank to rank (one pipeline rank's each, `ddp-extract-pipeline-stage`) create the same groups in the same order on every rank |
    | `ddp.task` | any `ddp` op | string `F<m>.<c>`, `B<m>.<c>` or `W<m>.<c>`: the forward, backward or weight-gradient pass of microbatch `m` through model chunk `c` that the op belongs to (the importer sets it on a pipelined step) |
    | `ddp.schedule_node` | any `ddp` op | string `F<m>.pre_process`, `F<m>.L<l>.attn`, `.dispatch`, `.mlp`, `.combine` or `F<m>.post_process` (`B<m>...` for the backward): the node of Megatron's combined 1F1B schedule that the op belongs to (the importer sets it on an MoE step with the all-to-all dispatcher; `ddp-combined-1f1b` and `ddp-pipeline-stages` order by it) |
    | `ddp.routed` | `ddp.gemm`, `ddp.compute` or a collective | `f64`: the op's rows are the tokens routed to this rank's experts, sized for balanced routing; the simulator's `moe-imbalance` scales its cost by the busiest rank's share over the balanced one, up to this value (a capacity factor that drops the rest), or without limit when it is 0 |
    | `ddp.routed_fill` | `ddp.gemm`, `ddp.compute` or a collective | `f64` in (0, 1]: the op's routed rows are buffers for the worst case (each expert's capacity, or all of a rank's tokens when dropless), of which balanced routing fills this fraction; the cost model prices the op at that fraction of its rows (a GEMM's M, or K for a weight gradient), before `moe-imbalance` |
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;

  // The decisions above, as builtin attributes so that the IR prints as it
  // did: each gets a `<Name>AttrHelper` (its name, typed get and set), and
  // verifyOperationAttribute checks them.
  let discardableAttrs = (ins
    "::mlir::IntegerAttr":$bucket,
    "::mlir::IntegerAttr":$bucket_offset,
    "::mlir::IntegerAttr":$tp_comm_splits,
    "::mlir::IntegerAttr":$fsdp_unit,
    "::mlir::UnitAttr":$tp_comm_bulk,
    "::mlir::FloatAttr":$tp_comm_predicted_step_us,
    "::mlir::UnitAttr":$delayed_wgrad,
    "::mlir::FloatAttr":$compute_predicted_step_us,
    "::mlir::IntegerAttr":$batch_split,
    "::mlir::IntegerAttr":$pipeline_stage,
    "::mlir::UnitAttr":$keeps_pipeline_outputs,
    "::mlir::ArrayAttr":$program_groups,
    "::mlir::StringAttr":$task,
    "::mlir::StringAttr":$schedule_node,
    "::mlir::FloatAttr":$routed,
    "::mlir::FloatAttr":$routed_fill,
    "::mlir::DictionaryAttr":$activation_bytes
  );
  let hasOperationAttrVerify = 1;
}

class DDP_Op<string mnemonic, list<Trait> traits = []>
    : Op<DDP_Dialect, mnemonic, traits>;

#endif // DDP_DIALECT_TD
