// RUN: ddp-opt %s -ddp-pipeline-stages | FileCheck %s
// RUN: ddp-opt %s -ddp-pipeline-stages -ddp-verify-collective-order -ddp-print-pipeline-schedule -o /dev/null | FileCheck %s --check-prefix=PRINT
// RUN: ddp-opt %s -ddp-pipeline-stages="overlap-p2p-comm=true" -ddp-verify-collective-order -ddp-print-pipeline-schedule -o /dev/null | FileCheck %s --check-prefix=PRINT

// A weight-gradient pass (W) runs after the rank's schedule, in microbatch
// order, as Megatron's finish_embedding_wgrad_compute runs the deferred
// output-layer wgrads after the flush: rank 1 runs F0 B0 F1 B1, then W0
// W1; its last gradient goes to rank 0 before the W passes.
// PRINT: {"0":["F0.0","F1.0","B0.0","B1.0"],"1":["F0.0","B0.0","F1.0","B1.0","W0.0","W1.0"]}
// CHECK-LABEL: func.func @deferred_stage1(
// CHECK:         ddp.compute "b1"{{.*}}{ddp.task = "B1.0"}
// CHECK-NEXT:    %[[G:.*]] = ddp.send {{.*}} to -1 over @world[pp] async {ddp.task = "B1.0"}
// CHECK-NEXT:    ddp.wait %[[G]]
// CHECK-NEXT:    ddp.compute "w1"({{.*}}) {{.*}}{ddp.task = "W0.0"}
// CHECK-NEXT:    ddp.compute "w1"({{.*}}) {{.*}}{ddp.task = "W1.0"}
// CHECK-NEXT:    ddp.accumulate {{.*}} {ddp.task = "W1.0"}
// CHECK-NEXT:    return

ddp.mesh @world(pp = 2, dp = 1)
func.func @deferred(%x0: tensor<4xf32>, %x1: tensor<4xf32>) {
  %a0 = ddp.compute "f0"(%x0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %y0 = ddp.compute "f1"(%a0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %b0 = ddp.compute "b1"(%y0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %g0 = ddp.compute "b0"(%b0, %x0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "B0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a1 = ddp.compute "f0"(%x1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F1.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %y1 = ddp.compute "f1"(%a1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F1.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %b1 = ddp.compute "b1"(%y1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B1.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %g1 = ddp.compute "b0"(%b1, %x1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "B1.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %w0 = ddp.compute "w1"(%y0, %a0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "W0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %w1 = ddp.compute "w1"(%y1, %a1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "W1.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = ddp.accumulate %w0, %w1 {ddp.pipeline_stage = 1, ddp.task = "W1.0"} : tensor<4xf32>
  return
}
