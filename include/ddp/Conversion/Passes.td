//===- Passes.td - Conversions out of the ddp dialect ------*- tablegen -*-===//
//
// Each conversion is implemented under lib/Conversion/<From>To<To>/ with
// GEN_PASS_DEF_<NAME>.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_CONVERSION_PASSES_TD
#define DDP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerDDPToRuntime : Pass<"ddp-lower-to-runtime", "mlir::ModuleOp"> {
  let summary = "lower a step to LLVM-dialect code that calls libddprt";
  let description = [{
    Turns a module holding one step (a `ddp.mesh`, the `ddp.param`s and the
    step `func.func`, scheduled or not) into LLVM-dialect functions that call
    the runtime's C ABI (`include/ddp/Runtime/ddprt.h`). The result is the
    program interface of `include/ddp/Runtime/ddp_program.h`:

    - `ddp_program_init` starts the runtime on this rank with the ABI version
      the compiler was built with (the runtime rejects any other) and the
      mesh of the module;
    - `ddp_program_setup` creates the process groups, allocates the
      buffers' arenas, registers the parameters and fills the step's inputs
      with seeded small integers;
    - `ddp_program_step` runs the step once, one runtime call per op in block
      order;
    - `ddp_program_teardown` frees the arenas.

    Every runtime call's status is checked: the first failure is returned.

    Storage: every tensor value gets a buffer, except that
    - a gradient packed into a bucket (`ddp.bucket_pack`) is produced by its
      defining op directly into its slice of the bucket's buffer, so packing
      copies nothing (a gradient that cannot be placed, e.g. a step input or
      one packed twice, is copied at the pack);
    - `ddp.bucket_unpack` results are views (pointer arithmetic) into the
      bucket;
    - `ddp.grad_ready` returns its operand's storage;
    - `ddp.get_param` returns the parameter's own storage, unless the value
      is used (or read by an asynchronous collective not yet waited) after
      that parameter's optimizer update, where it copies.

    Buffers whose values are never live at the same time share the bytes of
    one arena (`reuse-buffers`): a microbatch's activations, a unit's
    gathered parameters, a backward's temporaries give their memory to what
    the step writes after their last read. Step inputs, buckets that store
    parameters and buckets with padding keep memory of their own.

    Tokens become runtime handles (`ddprt_handle`) in stack slots.

    The pass is a full dialect conversion (the patterns of
    `ddp/Conversion/DDPToLLVM/DDPToLLVM.h`) that also lowers `func` and
    `arith` ops: a step may hold scalar ops of other dialects (e.g. calls of
    declared host functions) that touch no tensor or token.

    Values the step returns (the importer returns the losses) are computed
    and stay in their buffers.

    The pass validates the whole module before changing anything: a step
    with control flow, a foreign op on tensors, an input that is not a tensor
    or a missing mesh get an error at their location and leave the IR
    untouched; an op no pattern lowers fails the conversion at its location,
    which rolls back everything.

    ```
    ddp-opt examples/mlp-2layer.mlir --ddp-lower-to-runtime
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"paramPrefix", "param-prefix", "std::string", /*default=*/"\"\"",
           "Prepended to every parameter name registered with the runtime, "
           "so that two programs can share one runtime context (ddp-run "
           "--verify runs the scheduled program under a prefix)">,
    Option<"validateStorage", "validate-storage", "bool",
           /*default=*/"DDP_VALIDATE_STORAGE_DEFAULT",
           "Check the storage plan independently before lowering: every "
           "value inside its buffer, every view inside its base, no two live "
           "values sharing bytes (default: on in builds configured with "
           "DDP_VALIDATE_STORAGE, as utils/setup.sh configures the test "
           "builds)">,
    Option<"reuseBuffers", "reuse-buffers", "bool", /*default=*/"true",
           "Let buffers whose values are never live at the same time share "
           "bytes (docs/Lowering.md, Storage, rule 9); off, every buffer is "
           "allocated on its own for the whole run">,
    Option<"abiVersion", "abi-version", "int32_t",
           /*default=*/"DDPRT_ABI_VERSION",
           "The ABI version passed to ddprt_init (default: the version of the "
           "ddprt.h the compiler was built with); another value exists to "
           "test the runtime's check">,
  ];
  let statistics = [
    Statistic<"numRuntimeCalls", "runtime-calls",
              "Runtime calls emitted in the step function">,
    Statistic<"numBuffers", "buffers", "Buffers allocated by the setup">,
    Statistic<"numArenas", "arenas",
              "Allocations the setup makes for the buffers">,
    Statistic<"numBufferBytes", "buffer-bytes",
              "Bytes the setup allocates for the buffers">,
    Statistic<"numGradientsInBuckets", "gradients-in-buckets",
              "Gradients produced directly in their bucket's buffer">,
    Statistic<"numInPlaceReduceScatters", "in-place-reduce-scatters",
              "Reduce-scatters whose result is the rank's shard of their "
              "input">,
    Statistic<"numInPlaceAllGathers", "in-place-all-gathers",
              "All-gathers whose input is the rank's shard of their result">,
    Statistic<"numInPlaceAllReduces", "in-place-all-reduces",
              "All-reduces whose result is their input's storage">,
    Statistic<"numInPlaceScales", "in-place-scales",
              "Scales whose result is their input's storage">,
    Statistic<"numPackCopies", "pack-copies",
              "Gradients copied into a bucket because they could not be "
              "produced there">,
    Statistic<"numParamAliases", "param-aliases",
              "ddp.get_param results that alias the parameter's storage">,
    Statistic<"numParamCopies", "param-copies",
              "ddp.get_param results copied because they are used after the "
              "parameter's update">,
  ];
}

#endif // DDP_CONVERSION_PASSES_TD
