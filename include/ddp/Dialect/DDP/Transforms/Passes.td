//===- Passes.td - Passes of the ddp dialect ---------------*- tablegen -*-===//
//
// Every pass of the dialect is declared here, with its options and
// statistics; each is implemented in its own file under
// lib/Dialect/DDP/Transforms with GEN_PASS_DEF_<NAME>.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_DIALECT_DDP_TRANSFORMS_PASSES_TD
#define DDP_DIALECT_DDP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    - op counts by name, and the number of op results that are never used.

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
