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

#endif // DDP_DIALECT_DDP_TRANSFORMS_PASSES_TD
