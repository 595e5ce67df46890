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
           "JSON profile">,
    Option<"dataParallelSize", "dp", "int64_t", /*default=*/"0",
           "Simulate this data-parallel size instead of the mesh's: the first "
           "data-parallel mesh axis is resized so that the product of the "
           "data-parallel axes is dp (0 keeps the mesh)">,
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"auto\"",
           "All-reduce algorithm: ring, tree, or auto (the faster one per "
           "collective, as NCCL's tuner picks)">,
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
