// The text summary of a two-layer step on a profile with round numbers
// (Inputs/unit-profile.json: 1 TFLOP/s, 1 TB/s, 1 GB/s links, no latency).
// RUN: ddp-opt %s -o %t.mlir --ddp-simulate="hw=%S/Inputs/unit-profile.json report=%t.report.json trace=%t.trace.json timeline=%t.svg" | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.report.json
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// RUN: FileCheck %s --check-prefix=SVG < %t.svg

// Without hw=, the profile the auto policy laid the step out for (its
// ddp.bucket_policy): the prediction is for that machine; hw= still wins.
// RUN: ddp-import --preset=tiny | ddp-opt --ddp-schedule="policy=auto hw=a100-sxm-ib200" --ddp-simulate -o /dev/null | FileCheck %s --check-prefix=RECORDED-HW
// Any policy: ddp-schedule records the hw it was given with the module's
// schedule options, in the same pipeline or in a later run.
// RUN: ddp-import --preset=tiny | ddp-opt --ddp-schedule="hw=a100-sxm-ib200" --ddp-simulate -o /dev/null | FileCheck %s --check-prefix=RECORDED-HW
// RUN: ddp-import --preset=tiny | ddp-opt --ddp-schedule="hw=a100-sxm-ib200" -o %t.scheduled-a100.mlir
// RUN: ddp-opt %t.scheduled-a100.mlir --ddp-simulate -o /dev/null | FileCheck %s --check-prefix=RECORDED-HW
// A profile file is recorded by its absolute path: a run from another
// directory finds it.
// RUN: rm -rf %t.hwdir && mkdir -p %t.hwdir && cp %S/Inputs/unit-profile.json %t.hwdir/prof.json
// RUN: ddp-import --preset=tiny | (cd %t.hwdir && ddp-opt --ddp-schedule="hw=prof.json" -o %t.scheduled-file.mlir)
// RUN: ddp-opt %t.scheduled-file.mlir --ddp-simulate -o /dev/null | FileCheck %s --check-prefix=FILE-HW
// FILE-HW: simulated step @step on lit-unit
// RUN: ddp-import --preset=tiny | ddp-opt --ddp-schedule --ddp-simulate -o /dev/null | FileCheck %s --check-prefix=DEFAULT-HW
// DEFAULT-HW: simulated step @step on h100-sxm-ib400
// RECORDED-HW: simulated step @step on a100-sxm-ib200
// RUN: ddp-import --preset=tiny | ddp-opt --ddp-schedule="policy=auto hw=a100-sxm-ib200" --ddp-simulate="hw=h100-sxm-ib400" -o /dev/null | FileCheck %s --check-prefix=GIVEN-HW
// Megatron's blocking interleaved calls: every rank receives from the
// previous rank and sends to the next in one batch, a ring the simulator
// runs as the runtime issues it (a batch's sends with its receives), not
// as a ring of receives each waiting for the next rank's send.
// RUN: ddp-import --preset=tiny --set num_layers=6 --set pipeline_model_parallel_size=3 --set virtual_pipeline_model_parallel_size=2 --set num_microbatches=6 --set data_parallel_size=1 --set tensor_model_parallel_size=1 | ddp-opt --ddp-schedule="overlap-p2p-comm=false" --ddp-simulate -o /dev/null | FileCheck %s --check-prefix=RING
// RING: pipeline of 3 ranks on h100-sxm-ib400: step {{[0-9.]+}} ms
// GIVEN-HW: simulated step @step on h100-sxm-ib400

// A pipeline's stage programs are simulated together (docs/Pipeline.md):
// per pipeline rank, when it ends, its compute and its idle time.
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 | ddp-opt -ddp-pipeline-stages -ddp-simulate="hw=%S/Inputs/unit-profile.json report=%t.pp.json" -o /dev/null | FileCheck %s --check-prefix=PIPELINE
// RUN: FileCheck %s --check-prefix=PIPELINE-REPORT < %t.pp.json
// Its trace has a process per pipeline rank, and its timeline a panel per
// rank, on the pipeline's one clock.
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 | ddp-opt -ddp-pipeline-stages -ddp-simulate="hw=%S/Inputs/unit-profile.json trace=%t.pp.trace.json timeline=%t.pp.svg" -o /dev/null
// RUN: FileCheck %s --check-prefix=PIPELINE-TRACE < %t.pp.trace.json
// RUN: FileCheck %s --check-prefix=PIPELINE-SVG < %t.pp.svg
// PIPELINE-TRACE: {"name":"process_name","ph":"M","pid":0,"args":{"name":"pipeline rank 0"}}
// PIPELINE-TRACE-SAME: {"name":"send","cat":"comm","ph":"X",{{[^}]*}}"pid":0,
// PIPELINE-TRACE-SAME: {"name":"process_name","ph":"M","pid":1,"args":{"name":"pipeline rank 1"}}
// PIPELINE-TRACE-SAME: {"name":"recv","cat":"comm","ph":"X",{{[^}]*}}"pid":1,
// PIPELINE-SVG: pipeline rank 0
// PIPELINE-SVG: pipeline rank 1
// PIPELINE: pipeline of 2 ranks on lit-unit: step {{[0-9]+\.[0-9]+}} ms (when the last rank finishes)
// PIPELINE-NEXT: rank      ends ms   compute ms      idle ms    bubble ms      p2p ms   idle/ideal
// PIPELINE-NEXT: 0 {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}}%
// PIPELINE-NEXT: 1 {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}} {{[0-9.]+}}%
// What each rank holds for its backwards (tiny: 45056 bytes per layer and
// microbatch, 2304 for the embedding's inputs, 36864 for the output
// layer's): rank 0 two microbatches through its layer and, as the pass's
// default does not free them (deallocate-pipeline-outputs), the two
// outputs it sent (32x64 16-bit, 8 KiB in all); rank 1 one.
// Model state: rank 0 keeps 58976 f32 parameters under Adam (16 bytes
// each), rank 1 58080.
// PIPELINE-NEXT: idle: the bubble (waiting for another rank), the stage-to-stage transfers (p2p) and the data- and tensor-parallel communication a rank waits for
// PIPELINE-NEXT: bubble: mean {{[0-9.]+}} ms ({{[0-9.]+}}% of the step); exposed p2p: mean {{[0-9.]+}} ms
// PIPELINE-NEXT: lower bound {{[0-9]+\.[0-9]+}} ms (fill, a rank's tasks, drain); step / lower bound {{[0-9]+\.[0-9]+}}
// PIPELINE-NEXT: memory per rank: model state + activations at the peak (Korthikanti et al.)
// PIPELINE-NEXT: 0 921.50 KiB + 100.50 KiB (2 forwards) = 1022.00 KiB
// PIPELINE-NEXT: 1 907.50 KiB + 80.00 KiB (1 forward) = 987.50 KiB
// PIPELINE-NEXT: most memory: rank 0, 1022.00 KiB{{$}}
// With the device's memory in the profile, the report says whether it fits.
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 | ddp-opt -ddp-pipeline-stages -ddp-simulate="hw=%S/Inputs/unit-profile-small-memory.json report=%t.small.json" -o /dev/null | FileCheck %s --check-prefix=NO-FIT
// RUN: FileCheck %s --check-prefix=NO-FIT-REPORT < %t.small.json
// NO-FIT: most memory: rank 0, 1022.00 KiB: more than the device's 943.72 KiB; more pipeline stages, more tensor parallelism, the distributed optimizer, sequence parallelism where it is off or activation recomputation lower it
// NO-FIT-REPORT: "device_memory_bytes": 966367.6
// NO-FIT-REPORT: "fits_device_memory": false
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 | ddp-opt -ddp-pipeline-stages -ddp-simulate="hw=h100-sxm-ib400" -o /dev/null | FileCheck %s --check-prefix=FITS
// FITS: most memory: rank 0, 1022.00 KiB of the device's 79.65 GiB
// PIPELINE-REPORT: "lower_bound_ms":
// PIPELINE-REPORT: "mean_bubble_ms":
// PIPELINE-REPORT: "mean_exposed_p2p_ms":
// PIPELINE-REPORT: "memory_peak_rank": 0
// PIPELINE-REPORT: "activation_bytes": 102912
// PIPELINE-REPORT: "bubble_ms":
// PIPELINE-REPORT: "exposed_p2p_ms":
// PIPELINE-REPORT: "idle_fraction":
// PIPELINE-REPORT: "memory_bytes": 1046528
// PIPELINE-REPORT: "model_state_bytes": 943616
// PIPELINE-REPORT: "rank": 0
// PIPELINE-REPORT: "activation_bytes": 81920
// PIPELINE-REPORT: "rank": 1
// PIPELINE-REPORT: "step_ms":

// The pass is an analysis: the IR comes out unchanged.
// RUN: ddp-opt %s --ddp-simulate="hw=%S/Inputs/unit-profile.json output=%t.txt" | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s < %t.txt

// dp=8 rescales the mesh: all-reduces of 1 MB over 8 ranks move
// 2*7/8 MB each (1.75 ms): 1.5-3.25 and 3.25-5 ms, then the two SGDs.
// RUN: ddp-opt %s -o /dev/null --ddp-simulate="hw=%S/Inputs/unit-profile.json dp=8" | FileCheck %s --check-prefix=DP8

// fp8-gemms prices only 16-bit GEMMs at the FP8 peak: this step's GEMMs are
// f32, so its times do not move (CostModelTest checks the bf16 case).
// RUN: ddp-opt %s -o /dev/null --ddp-simulate="hw=%S/Inputs/unit-profile-fp8.json fp8-gemms=true report=%t.fp8.json" | FileCheck %s --check-prefix=FP8
// RUN: FileCheck %s --check-prefix=FP8-REPORT < %t.fp8.json
// The model state per rank (docs/DistributedOptimizer.md) at the simulated
// size: a distributed-optimizer step laid out for 4 ranks, simulated at 16,
// keeps 1/16 of the sharded main parameters and moments.
// RUN: ddp-opt %S/Inputs/adam-bf16-step.mlir -o /dev/null --ddp-schedule="grad-reduce-in-fp32=true use-distributed-optimizer=true" --ddp-simulate="hw=%S/Inputs/unit-profile.json dp=16 report=%t.sharded.json" | FileCheck %s --check-prefix=SHARDED
// RUN: FileCheck %s --check-prefix=SHARDED-REPORT < %t.sharded.json
// SHARDED:      model state per rank (bytes, as Megatron-LM counts it):
// SHARDED-NEXT:   parameters: 96
// SHARDED-NEXT:   gradients: 192
// SHARDED-NEXT:   main parameters: 0
// SHARDED-NEXT:   optimizer state: 0
// SHARDED-NEXT:   sharded over [dp] (16 ranks; summed over them, 48 parameter elements): main parameters 192, optimizer state 384
// SHARDED-NEXT:   total: 288 + 576/16 = 324 (6 + 12/16 bytes x 48 parameters)
// SHARDED-NEXT:   not in Megatron's count: gradient bucket padding 320
// SHARDED-REPORT:      "model_state": {
// SHARDED-REPORT-NEXT:   "bytes_per_rank": 324,
// SHARDED-REPORT-NEXT:   "grad_padding_bytes": 320,
// SHARDED-REPORT-NEXT:   "grads_bytes": 192,
// SHARDED-REPORT-NEXT:   "main_params_bytes": 0,
// SHARDED-REPORT-NEXT:   "optimizer_state_bytes": 0,
// SHARDED-REPORT-NEXT:   "param_elements": 48,
// SHARDED-REPORT-NEXT:   "params_bytes": 96,
// SHARDED-REPORT-NEXT:   "sharded": [
// SHARDED-REPORT-NEXT:     {
// SHARDED-REPORT-NEXT:       "group": "dp",
// SHARDED-REPORT-NEXT:       "main_params_bytes": 192,
// SHARDED-REPORT-NEXT:       "optimizer_state_bytes": 384,
// SHARDED-REPORT-NEXT:       "param_elements": 48,
// SHARDED-REPORT-NEXT:       "params_bytes": 0,
// SHARDED-REPORT-NEXT:       "ranks": 16
// SHARDED-REPORT-NEXT:     }
// SHARDED-REPORT-NEXT:   ]
// SHARDED-REPORT-NEXT: },

// FP8:      simulated step @step on lit-unit-fp8 (auto collectives, FP8 GEMMs)
// FP8:        step time                  3.506 ms
// FP8-REPORT: "fp8_gemms": true

// Timeline (ms): fwd 0-0.5, 0.5-1; wgrad w1 1-1.5; all-reduce w1 1.5-2.5 on
// comm0 beside dgrad 1.5-2 and wgrad w0 2-2.5; all-reduce w0 queued behind it
// 2.5-3.5; the second wait blocks 2.5-3.5; two SGDs (3 MB each: 3 us).
// Lower bound: tail = 2.5 ms of compute + 1 ms for w0's all-reduce + 3 us.

// CHECK:      simulated step @step on lit-unit (auto collectives)
// CHECK-NEXT:   mesh @world(dp = 2): 2 ranks on 1 node, data-parallel size 2
// CHECK-NEXT:   step time                  3.506 ms
// CHECK-NEXT:   compute                    2.506 ms   (2.506 ms without slowdown, 7 kernels)
// CHECK-NEXT:   compute rate                1.0 TFLOP/s (0.0025 TFLOP of GEMMs and costed kernels)
// CHECK-NEXT:   communication              2.000 ms   (2 collectives)
// CHECK-NEXT:   exposed comm               1.000 ms
// CHECK-NEXT:   overlap                     50.0 %
// CHECK-NEXT:   lower bound                3.503 ms   (compute 2.506, communication 2.000, tail 3.503 ms; bound by tail)
// CHECK-NEXT:   step / lower bound         1.001
// CHECK-NEXT:   streams:
// CHECK-NEXT:     compute busy        2.506 ms         7 ops
// CHECK-NEXT:     comm0   busy        2.000 ms         2 ops  [dp] 2 ranks on 1 node
// Two f32 parameters of 250000 elements, SGD: 4 + 4 bytes per parameter.
// CHECK-NEXT: model state per rank (bytes, as Megatron-LM counts it):
// CHECK-NEXT:   parameters: 2000000
// CHECK-NEXT:   gradients: 2000000
// CHECK-NEXT:   main parameters: 0
// CHECK-NEXT:   optimizer state: 0
// CHECK-NEXT:   total: 4000000 (8 bytes x 500000 parameters)
// CHECK-NEXT:   not in Megatron's count: gradient bucket padding 0
// The live tensors peak at 4 MB twice: %h and %y (2 MB each) where %y is
// made, and %r1 (1 MB), %dh (2 MB) and %dw0 (1 MB) at layer 0's wgrad.
// CHECK-NEXT: live tensors at their peak (activations, gradients, gathered parameters; each from its op to its last reader): 4000000 bytes

// Keys come out sorted.
// REPORT:      "collectives": [
// REPORT:          "algorithm": "ring",
// REPORT-NEXT:     "async": true,
// REPORT-NEXT:     "bus_bandwidth_gbps": 1,
// REPORT-NEXT:     "bytes": 1000000,
// REPORT-NEXT:     "end_ms": 2.5
// REPORT:          "start_ms": 1.5
// REPORT:      "compute_tflops_per_s": 0.99
// REPORT:      "flops": 2500000000,
// REPORT:      "grad_ready": [
// REPORT-NEXT:   {
// REPORT-NEXT:     "dtype": "f32",
// REPORT-NEXT:     "numel": 250000,
// REPORT-NEXT:     "param": "w1",
// REPORT-NEXT:     "time_ms": 1.5
// REPORT:          "param": "w0",
// REPORT-NEXT:     "time_ms": 2.5
// REPORT:      "live_tensor_peak_bytes": 4000000,
// REPORT:      "lower_bound_ms": {
// REPORT-NEXT:   "binding": "tail",
// REPORT:      "model_state": {
// REPORT-NEXT:   "bytes_per_rank": 4000000,
// REPORT:        "sharded": []
// REPORT:      "overlap_fraction": 0.5,
// REPORT:      "schema_version": 1
// REPORT:      "step_over_lower_bound": 1.000
// REPORT:      "times_ms": {
// REPORT-NEXT:   "communication": 2,
// REPORT-NEXT:   "compute": 2.50{{[0-9]+}},
// REPORT:        "exposed_communication": 1,

// TRACE:      {"displayTimeUnit":"ms","traceEvents":[
// TRACE-SAME: {"name":"process_name","ph":"M","pid":0,"args":{"name":"simulated"}}
// TRACE-SAME: {"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"compute"}}
// TRACE-SAME: {"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"comm0"}}
// TRACE-SAME: {"name":"gemm fwd","cat":"compute","ph":"X","ts":0,"dur":500,"pid":0,"tid":0,"args":{"op":"ddp.gemm","layer":0,"m":1000,"n":500,"k":500,"flops":500000000}}
// TRACE-SAME: {"name":"all_reduce","cat":"comm","ph":"X","ts":1500,"dur":1000,"pid":0,"tid":1,"args":{"op":"ddp.all_reduce","group":"dp","bytes":1000000,"async":true,"algorithm":"ring","bus_bandwidth_gbps":1}}
// TRACE-SAME: {"name":"wait","cat":"wait","ph":"X","ts":2500,"dur":1000,"pid":0,"tid":0,"args":{"op":"ddp.wait"}}

// SVG:      <svg xmlns="http://www.w3.org/2000/svg"
// SVG:      @step on lit-unit: step 3.506 ms, exposed communication 1.000 ms</text>
// SVG:      >compute</text>
// SVG:      >comm0 [dp]</text>
// SVG:      time (ms)</text>
// SVG:      </svg>

// IR-LABEL: func.func @step
// IR:         ddp.gemm fwd
// IR:         ddp.all_reduce avg %{{.*}} over @world[dp] async
// IR:         ddp.sgd @w0

// DP8:      mesh @world(dp = 8 (2 in the IR)): 8 ranks on 1 node, data-parallel size 8
// DP8-NEXT: step time                  5.006 ms
// DP8:      comm0   busy        3.500 ms         2 ops  [dp] 8 ranks on 1 node

ddp.mesh @world(dp = 2)
ddp.param @w0 layer 0 : tensor<500x500xf32>
ddp.param @w1 layer 1 : tensor<500x500xf32>
func.func @step(%x: tensor<1000x500xf32>, %dy: tensor<1000x500xf32>) {
  %w0 = ddp.get_param @w0 : tensor<500x500xf32>
  %w1 = ddp.get_param @w1 : tensor<500x500xf32>
  %h = ddp.gemm fwd %x, %w0 layer 0 : tensor<1000x500xf32>, tensor<500x500xf32> -> tensor<1000x500xf32>
  %y = ddp.gemm fwd %h, %w1 layer 1 : tensor<1000x500xf32>, tensor<500x500xf32> -> tensor<1000x500xf32>
  %dw1 = ddp.gemm wgrad %h transposed, %dy layer 1 : tensor<1000x500xf32>, tensor<1000x500xf32> -> tensor<500x500xf32>
  %g1 = ddp.grad_ready @w1, %dw1 : tensor<500x500xf32>
  %r1, %t1 = ddp.all_reduce avg %g1 over @world[dp] async : tensor<500x500xf32>
  %dh = ddp.gemm dgrad %dy, %w1 transposed layer 1 : tensor<1000x500xf32>, tensor<500x500xf32> -> tensor<1000x500xf32>
  %dw0 = ddp.gemm wgrad %x transposed, %dh layer 0 : tensor<1000x500xf32>, tensor<1000x500xf32> -> tensor<500x500xf32>
  %g0 = ddp.grad_ready @w0, %dw0 : tensor<500x500xf32>
  %r0, %t0 = ddp.all_reduce avg %g0 over @world[dp] async : tensor<500x500xf32>
  ddp.wait %t1
  ddp.wait %t0
  ddp.sgd @w1, %r1 lr 1.0e-2 : tensor<500x500xf32>
  ddp.sgd @w0, %r0 lr 1.0e-2 : tensor<500x500xf32>
  return
}
