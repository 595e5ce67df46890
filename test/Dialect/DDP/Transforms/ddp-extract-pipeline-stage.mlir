// RUN: ddp-opt %s -split-input-file -ddp-extract-pipeline-stage=rank=1 | FileCheck %s
// RUN: ddp-opt %s -split-input-file -ddp-extract-pipeline-stage=rank=0 | FileCheck %s --check-prefix=RANK0
// RUN: ddp-opt %s -split-input-file -ddp-extract-pipeline-stage=rank=1 -ddp-lower-to-runtime | FileCheck %s --check-prefix=LOWERED
// RUN: not ddp-opt %s -split-input-file -ddp-extract-pipeline-stage=rank=2 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'ddp.mesh @world(dp = 2)' | not ddp-opt -ddp-extract-pipeline-stage 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: no pipeline stage programs (functions with ddp.pipeline_stage); run ddp-pipeline-stages first

// Rank 1 keeps its program, without its stage, and the parameter it uses;
// the groups of both programs are recorded, sorted, so that both ranks
// create [dp], [pp], [tp] in that order although rank 0 uses [tp] first.

// CHECK: module attributes {ddp.program_groups = ["dp", "pp", "tp"]}
// CHECK-NOT: ddp.param @w0
// CHECK: ddp.param @w1
// CHECK-NOT: @step_stage0
// CHECK: func.func @step_stage1(%{{.*}}: tensor<4xf32>) -> tensor<4xf32> {
// CHECK: ddp.recv from -1 over @world[pp]
// CHECK-NOT: func.func

// RANK0: ddp.param @w0
// RANK0-NOT: ddp.param @w1
// RANK0: func.func @step_stage0(

// The lowered program creates the recorded groups first, in their order.
// LOWERED: @[[DP:__ddp_str_[0-9]+]]("dp\00")
// LOWERED: @[[PP:__ddp_str_[0-9]+]]("pp\00")
// LOWERED: @[[TP:__ddp_str_[0-9]+]]("tp\00")
// LOWERED: llvm.func @ddp_program_setup
// LOWERED: %[[G0:.*]] = llvm.mlir.addressof @[[DP]]
// LOWERED-NEXT: llvm.mlir.addressof @__ddp_groups
// LOWERED-NEXT: llvm.getelementptr
// LOWERED-NEXT: llvm.call @ddprt_group_create(%{{.*}}, %[[G0]],
// LOWERED: %[[G1:.*]] = llvm.mlir.addressof @[[PP]]
// LOWERED: llvm.call @ddprt_group_create(%{{.*}}, %[[G1]],
// LOWERED: %[[G2:.*]] = llvm.mlir.addressof @[[TP]]
// LOWERED: llvm.call @ddprt_group_create(%{{.*}}, %[[G2]],

// MISSING: error: no program for pipeline rank 2 among the module's 2 stage programs

// The kept program's sends and receives pair with the other ranks'
// programs, which its module lacks: the order check refuses it rather than
// report hazards that are not there, and the simulator warns that alone it
// waits on no other rank (its own streams' figures still hold).
// RUN: ddp-opt %s -ddp-extract-pipeline-stage=rank=1 | not ddp-opt -ddp-verify-collective-order 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: '@step_stage1' is one pipeline rank's program, extracted from a pipeline ('ddp.program_groups'): its sends and receives pair with the other ranks' programs, which this module lacks; check the module that holds every stage program, before ddp-extract-pipeline-stage
// ORDER-NOT: error
// RUN: ddp-opt %s -ddp-extract-pipeline-stage=rank=1 | ddp-opt -ddp-simulate -o /dev/null 2>&1 | FileCheck %s --check-prefix=SIMULATE
// SIMULATE: warning: '@step_stage1' is one pipeline rank's program, extracted from a pipeline ('ddp.program_groups'): simulated alone it waits on no other rank, so its step time leaves out the bubble
// SIMULATE: simulated step @step_stage1

ddp.mesh @world(pp = 2, dp = 2, tp = 2)
ddp.param @w0 layer 0 : tensor<4xf32>
ddp.param @w1 layer 1 : tensor<4xf32>

func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  %w = ddp.get_param @w0 : tensor<4xf32>
  %a = ddp.all_reduce sum %x over @world[tp] : tensor<4xf32>
  %b = ddp.compute "f"(%a, %w) flops 1.0 bytes 1.0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = ddp.send %b to 1 over @world[pp] async : tensor<4xf32>
  %g = ddp.all_reduce avg %w over @world[dp] : tensor<4xf32>
  ddp.wait %t
  return
}

func.func @step_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {ddp.pipeline_stage = 1} {
  %r, %t = ddp.recv from -1 over @world[pp] async : tensor<4xf32>
  ddp.wait %t
  %w = ddp.get_param @w1 : tensor<4xf32>
  %y = ddp.compute "g"(%r, %w) flops 1.0 bytes 1.0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
