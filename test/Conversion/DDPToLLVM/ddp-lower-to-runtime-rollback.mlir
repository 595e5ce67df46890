// RUN: not ddp-opt %s --allow-unregistered-dialect --ddp-lower-to-runtime --mlir-print-ir-after-failure 2>&1 | FileCheck %s

// The conversion fails at the last op of the step, after the mesh and the
// ops before it have been lowered: it rolls all of that back, and the IR
// after the failed pass is the input.

// CHECK: error: failed to legalize operation 'test.scalar'
// CHECK: IR Dump After LowerDDPToRuntime Failed
// CHECK-NOT: llvm.
// CHECK: ddp.mesh @world(dp = 2)
// CHECK-NEXT: ddp.param @w : tensor<4xf32>
// CHECK-NEXT: func.func @step(%[[X:.*]]: tensor<4xf32>) {
// CHECK-NEXT: %[[R:[^,]*]], %{{.*}} = ddp.all_reduce avg %[[X]] over @world[dp] async : tensor<4xf32>
// CHECK-NEXT: ddp.wait %{{.*}}
// CHECK-NEXT: ddp.sgd @w, %[[R]] lr 1.0{{.*}} : tensor<4xf32>
// CHECK-NEXT: "test.scalar"() : () -> i32
// CHECK-NEXT: return
// CHECK-NOT: llvm.

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>

func.func @step(%x: tensor<4xf32>) {
  %r, %t = ddp.all_reduce avg %x over @world[dp] async : tensor<4xf32>
  ddp.wait %t
  ddp.sgd @w, %r lr 1.0 : tensor<4xf32>
  %n = "test.scalar"() : () -> i32
  return
}
