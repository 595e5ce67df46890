// RUN: ddp-opt -ddp-step-stats %s -o /dev/null | FileCheck %s
// RUN: ddp-opt -ddp-step-stats='output=%t.txt' %s | FileCheck %s --check-prefix=UNCHANGED
// RUN: FileCheck %s < %t.txt
// RUN: not ddp-opt -ddp-step-stats='output=%t.missing/x.txt' %s 2>&1 | FileCheck %s --check-prefix=NO-FILE
// Totals past int64 are an error, not a wrapped count (issue 25).
// RUN: not ddp-opt -ddp-step-stats %S/Transforms/Inputs/huge-params.mlir 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: huge-params.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the step's parameter, gradient and optimizer bytes add up to more than 2^63 - 1
// HUGE-NOT: total:

// The activations a step holds for its backwards, from what the importer
// records (tiny: 45056 bytes per layer and microbatch without sequence
// parallelism, 2304 for the embedding's inputs, 36864 for the output
// layer's; docs/Pipeline.md#activation-memory). Unpipelined, one
// microbatch through both layers; a pipelined step once it is split, per
// rank, as its schedule holds them: GPipe every microbatch. Without
// deallocate-pipeline-outputs (the pass's default, ModelParallelConfig's)
// rank 0 also keeps each forward's output it sent, 32x64 16-bit = 4096
// bytes, until that forward's backward: 3 more for 154368.
// RUN: ddp-import --preset=tiny | ddp-opt --ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=ACTIVATIONS
// ACTIVATIONS: activations per rank (bytes; Korthikanti et al. as Megatron-LM counts them):
// ACTIVATIONS-NEXT: per microbatch: 45056 per layer, 2304 embedding, 36864 output
// ACTIVATIONS-NEXT: @step: 129280 (126.25 KiB) at the peak: 1 forward(s) in flight, 2 layer(s)
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 | ddp-opt --ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=UNSPLIT
// UNSPLIT: @step: per pipeline rank once ddp-pipeline-stages has split it
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 --set num_microbatches=3 | ddp-opt -ddp-pipeline-stages="pipeline-schedule=gpipe deallocate-pipeline-outputs=true" --ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=GPIPE
// GPIPE: @step_stage0: 142080 (138.75 KiB) at the peak: 3 forward(s) in flight, 3 layer(s)
// GPIPE-NEXT: @step_stage1: 245760 (240.00 KiB) at the peak: 3 forward(s) in flight, 3 layer(s)
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 --set num_microbatches=3 | ddp-opt -ddp-pipeline-stages="pipeline-schedule=gpipe" --ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=KEPT
// KEPT: @step_stage0: 154368 (150.75 KiB) at the peak: 3 forward(s) in flight, 3 layer(s)
// KEPT-NEXT: @step_stage1: 245760 (240.00 KiB) at the peak: 3 forward(s) in flight, 3 layer(s)

// Split into stage programs, each is counted alone: what one pipeline
// rank runs and keeps (its parameters, 16 bytes each with Adam; the tied
// embedding's on both ranks), not the programs' sum. 4 layers on 2 ranks:
// rank 1 also runs the output layer, and both run 4 microbatches.
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 --set num_layers=4 --set num_microbatches=4 | ddp-opt --ddp-schedule --ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=STAGES
// STAGES: pipeline stage programs: 2 (each section is what the ranks of one pipeline rank run and keep)
// STAGES-NEXT: @step_stage0 (pipeline rank 0):
// STAGES-NEXT: mesh: pp=2 dp=2 tp=2 (8 ranks)
// STAGES-NEXT: parameters: 166528 in this program's part of the model, 84160 on this rank in 26 tensors
// STAGES-NEXT: flops per rank: 41287680
// STAGES:      recv[pp]: 5 ops, 163840 bytes
// STAGES:      total: 1346560 (16 bytes x 84160 parameters)
// STAGES:      @step_stage1 (pipeline rank 1):
// STAGES-NEXT: mesh: pp=2 dp=2 tp=2 (8 ranks)
// STAGES-NEXT: parameters: 165632 in this program's part of the model, 83264 on this rank in 27 tensors
// STAGES-NEXT: flops per rank: 67125760
// STAGES:      total: 1332224 (16 bytes x 83264 parameters)
// STAGES:      runtime memory per rank (ddp's lowering): not lowerable
// STAGES:      @step_stage0: 184832 (180.50 KiB) at the peak: 2 forward(s) in flight, 4 layer(s)

// CHECK: mesh: dp=2 ep=2 tp=4 (16 ranks)
// Model: 8x4 split over tp (x4) = 128, 4x4 expert (x ep 2) = 32, 2x4 expert
// split over tp (x 8) = 64, 16 replicated = 16: 240. This rank: 32+16+8+16.
// CHECK-NEXT: parameters: 240 in model, 72 on this rank in 4 tensors
// fwd 2*32*4*8 = 2048, dgrad 2*32*8*4 = 2048, wgrad 2*8*4*32 = 2048,
// compute 100 + 20.
// CHECK-NEXT: flops per rank: 6264
// CHECK-NEXT:   gemm fwd: 2048
// CHECK-NEXT:   gemm dgrad: 2048
// CHECK-NEXT:   gemm wgrad: 2048
// CHECK-NEXT:   compute: 120
// CHECK-NEXT: flops per tensor-parallel group (x4): 25056
// CHECK-NEXT: compute bytes per rank: 300
// CHECK-NEXT: collectives:
// Payloads: 8x4 f32 = 128 bytes (what a rank sends to the gather), 32x8 f32
// = 1024 bytes.
// CHECK-NEXT:   all_gather[tp]: 1 ops, 128 bytes
// CHECK-NEXT:   all_reduce[dp]: 2 ops, 256 bytes
// CHECK-NEXT:   all_reduce[tp]: 1 ops, 1024 bytes
// CHECK-NEXT: ops: 14
// CHECK-NEXT:   ddp.all_gather: 1
// CHECK-NEXT:   ddp.all_reduce: 3
// CHECK-NEXT:   ddp.compute: 2
// CHECK-NEXT:   ddp.gemm: 3
// CHECK-NEXT:   ddp.get_param: 1
// CHECK-NEXT:   ddp.grad_ready: 1
// CHECK-NEXT:   ddp.sgd: 1
// CHECK-NEXT:   func.return: 2
// The second function's %unused.
// CHECK-NEXT: unused results: 1
// CHECK-NEXT: runtime memory per rank (ddp's lowering): not lowerable: cannot lower a module with more than one function; the step is @step
// A step the importer did not make has no activation model.
// CHECK-NOT: activations per rank

// UNCHANGED: ddp.mesh @world(dp = 2, ep = 2, tp = 4)
// UNCHANGED: func.func @step
// UNCHANGED: ddp.sgd @w

// NO-FILE: error: -ddp-step-stats: cannot open output file

ddp.mesh @world(dp = 2, ep = 2, tp = 4)
ddp.param @w layer 0 tp_dim 1 : tensor<8x4xf32>
ddp.param @e layer 0 expert : tensor<4x4xf32>
ddp.param @et layer 0 tp_dim 0 expert : tensor<2x4xf32>
ddp.param @n : tensor<16xf32>

func.func @step(%x: tensor<32x8xf32>) -> tensor<32x8xf32> {
  %w = ddp.get_param @w : tensor<8x4xf32>
  %y = ddp.gemm fwd %x, %w layer 0 : tensor<32x8xf32>, tensor<8x4xf32> -> tensor<32x4xf32>
  %a = ddp.compute "gelu"(%y) flops 100.0 bytes 200.0 layer 0 : (tensor<32x4xf32>) -> tensor<32x4xf32>
  %dx = ddp.gemm dgrad %a, %w transposed layer 0 : tensor<32x4xf32>, tensor<8x4xf32> -> tensor<32x8xf32>
  %dxr = ddp.all_reduce sum %dx over @world[tp] : tensor<32x8xf32>
  %dw = ddp.gemm wgrad %x transposed, %a layer 0 : tensor<32x8xf32>, tensor<32x4xf32> -> tensor<8x4xf32>
  %g = ddp.grad_ready @w, %dw : tensor<8x4xf32>
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<8x4xf32>
  ddp.sgd @w, %r lr 1.0e-2 : tensor<8x4xf32>
  return %dxr : tensor<32x8xf32>
}

func.func @other(%s: tensor<8x4xf32>) -> tensor<32x4xf32> {
  %unused = ddp.all_reduce sum %s over @world[dp] : tensor<8x4xf32>
  %gathered = ddp.all_gather %s over @world[tp] : tensor<8x4xf32> -> tensor<32x4xf32>
  %c = ddp.compute "scale"(%gathered) flops 20.0 bytes 100.0 : (tensor<32x4xf32>) -> tensor<32x4xf32>
  return %c : tensor<32x4xf32>
}
