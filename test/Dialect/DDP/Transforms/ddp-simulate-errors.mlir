// Bad options and bad hardware profiles: a clear error naming what is wrong.
// RUN: not ddp-opt %s --ddp-simulate="hw=%S/Inputs/missing-field.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not ddp-opt %s --ddp-simulate="hw=%S/Inputs/negative-bandwidth.json" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not ddp-opt %s --ddp-simulate="hw=h100-sxm-infiniband" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: python3 -c "print('[' * 50000)" > %t.deep.json
// RUN: not ddp-opt %s --ddp-simulate="hw=%t.deep.json" 2>&1 | FileCheck %s --check-prefix=DEEP
// RUN: not ddp-opt %s --ddp-simulate="hw=%S/Inputs/does-not-exist.json" 2>&1 | FileCheck %s --check-prefix=NOFILE
// A field twice is an error, as in every JSON input (llvm::json keeps the
// last one); a number is echoed with every digit it needs.
// RUN: printf '{"base": "a100-sxm-ib200",\n "gpus_per_node": 4, "gpus_per_node": 8}' > %t.twice.json
// RUN: not ddp-opt %s --ddp-simulate="hw=%t.twice.json" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: printf '{"base": "a100-sxm-ib200", "comm_compute_slowdown": 0.9999999}' > %t.slowdown.json
// RUN: not ddp-opt %s --ddp-simulate="hw=%t.slowdown.json" 2>&1 | FileCheck %s --check-prefix=SLOWDOWN
// Parameters and gradients that take more bytes than int64 counts.
// RUN: not ddp-opt %S/Inputs/huge-params.mlir --ddp-simulate 2>&1 | FileCheck %s --check-prefix=HUGE-STATE
// RUN: not ddp-opt %S/Inputs/huge-params.mlir --ddp-simulate="output= report=-" 2>&1 | FileCheck %s --check-prefix=HUGE-STATE
// RUN: not ddp-opt %s --ddp-simulate="algorithm=butterfly" 2>&1 | FileCheck %s --check-prefix=ALGO
// RUN: not ddp-opt %s --ddp-simulate="dp=6" 2>&1 | FileCheck %s --check-prefix=DP
// RUN: not ddp-opt %s --ddp-simulate="dp=-4" 2>&1 | FileCheck %s --check-prefix=DP-NEGATIVE
// RUN: not ddp-opt %s --ddp-simulate="dp=4194304" 2>&1 | FileCheck %s --check-prefix=DP-HUGE
// RUN: not ddp-opt %s --ddp-simulate="dp=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=DP-OVERFLOW
// RUN: not ddp-opt %s --ddp-simulate="step=nope" 2>&1 | FileCheck %s --check-prefix=STEP
// RUN: not ddp-opt %s --ddp-simulate="report=/nonexistent-dir/r.json" 2>&1 | FileCheck %s --check-prefix=WRITE
// RUN: not ddp-opt %s --ddp-simulate="hw=a100-sxm-ib200 fp8-gemms=true" 2>&1 | FileCheck %s --check-prefix=FP8
// A latency of 1e300 us (a unit mistake) makes the step too long to report:
// the microseconds would overflow int64 and the milliseconds print as inf.
// RUN: not ddp-opt %s --ddp-simulate="hw=%S/Inputs/huge-latency.json" 2>&1 | FileCheck %s --check-prefix=HUGE-LATENCY
// A pipelined step, before and after ddp-pipeline-stages.
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 > %t.pp.mlir
// RUN: not ddp-opt %t.pp.mlir --ddp-simulate 2>&1 | FileCheck %s --check-prefix=PIPELINED
// RUN: not ddp-opt %t.pp.mlir --ddp-pipeline-stages --ddp-simulate="dp=4" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: printf 'ddp.mesh @world(pp = 2)\nfunc.func private @s0() attributes {ddp.pipeline_stage = 0 : i64}\nfunc.func private @s1() attributes {ddp.pipeline_stage = 1 : i64}\n' | not ddp-opt --ddp-simulate 2>&1 | FileCheck %s --check-prefix=BODILESS
// BODILESS: error: pipeline rank 0's program has no body
// RUN: printf 'ddp.mesh @world(pp = 2)\nfunc.func @s0(%%%%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0 : i64} {\n  %%%%t = ddp.send %%%%x to 1 over @world[pp] async : tensor<4xf32>\n  ddp.wait %%%%t\n  return\n}\nfunc.func @s1() attributes {ddp.pipeline_stage = 1 : i64} {\n  return\n}\n' | not ddp-opt --ddp-simulate 2>&1 | FileCheck %s --check-prefix=UNMATCHED
// UNMATCHED: error: pipeline rank 0 sends 1 time(s) to rank 1, which receives 0 time(s); run ddp-verify-collective-order
// PIPELINED: error: @step is a pipelined step not yet split into its stage programs; run ddp-pipeline-stages (or ddp-schedule) first, and the simulator runs them together
// STAGES: error: ddp-simulate: a pipeline is simulated whole; step and dp are not for pipelines yet

// MISSING: error: ddp-simulate: hardware profile '{{.*}}missing-field.json': missing field 'inter_node.latency_us'
// NEGATIVE: error: ddp-simulate: hardware profile '{{.*}}negative-bandwidth.json': field 'intra_node.bus_bandwidth_gbps' must be greater than 0, got -5
// UNKNOWN: error: ddp-simulate: unknown hardware profile 'h100-sxm-infiniband'; built-in profiles are: h100-sxm-nvlink, h100-sxm-ib400, a100-sxm-ib200, h200-sxm-ib400, cpu-mpi-2core
// DEEP: error: ddp-simulate: hardware profile '{{.*}}deep.json' is not valid JSON: [1:256, byte=256]: arrays and objects nest more than 256 levels deep
// NOFILE: error: ddp-simulate: cannot read hardware profile '{{.*}}does-not-exist.json'
// TWICE: error: ddp-simulate: hardware profile '{{.*}}twice.json' is not valid JSON: [2:22, byte=48]: duplicate key 'gpus_per_node' in an object (first on line 2)
// SLOWDOWN: error: ddp-simulate: hardware profile '{{.*}}slowdown.json': field 'comm_compute_slowdown' must be at least 1, got 0.9999999{{$}}
// HUGE-STATE: huge-params.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the step's parameter, gradient and optimizer bytes add up to more than 2^63 - 1; ddp counts them in int64 (no rank could hold them)
// ALGO: for the --algorithm option: Cannot find option named 'butterfly'!
// DP-NEGATIVE: error: ddp-simulate: dp must be positive (or 0 to keep the mesh), got -4{{$}}
// DP-HUGE: ddp-simulate-errors.mlir:{{[0-9]+}}:1: error: cannot simulate a mesh of sizes (1048576, 4, 2): it has more than 1048576 ranks, the most the simulator places
// DP-OVERFLOW: error: cannot simulate a mesh of sizes (1152921504606846976, 4, 2): it has more than 1048576 ranks
// DP: [[@LINE+6]]:1: error: cannot simulate dp=6: it must be a multiple of 4, the size of the data-parallel axes after 'edp'
// STEP: error: no function named 'nope' with a body to simulate
// WRITE: error: ddp-simulate: cannot write the report to '/nonexistent-dir/r.json'
// HUGE-LATENCY: ddp-simulate-errors.mlir:[[@LINE+4]]:1: error: the simulated step takes more than 9e12 s with hardware profile 'lit-unit': its latencies, overheads or rates are out of any hardware's range
// FP8: error: ddp-simulate: fp8-gemms needs an FP8 peak, but hardware profile 'a100-sxm-ib200' has no 'peak_tflops.fp8'

ddp.mesh @world(edp = 2, ep = 4, tp = 2)
func.func @step(%x: tensor<8xf32>) {
  %a = ddp.all_reduce sum %x over @world[edp, ep] : tensor<8xf32>
  return
}
