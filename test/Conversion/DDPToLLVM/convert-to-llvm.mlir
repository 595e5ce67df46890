// RUN: ddp-opt %s --convert-to-llvm | FileCheck %s
// RUN: ddp-opt %s --ddp-lower-to-runtime | sort > %t.pass
// RUN: ddp-opt %s --convert-to-llvm | sort > %t.convert
// RUN: diff %t.pass %t.convert

// -convert-to-llvm finds ddp's patterns through the dialect's
// ConvertToLLVMPatternInterface, and func's and arith's through theirs. The
// first op of the program it visits plans the module and lowers the program;
// the result is ddp-lower-to-runtime's, line for line (the diff of the sorted
// outputs), but for where the globals are: the pass moves them before the
// functions after its conversion, -convert-to-llvm leaves them where they
// were made, at the end of the module as it was then.

// CHECK: llvm.func @ddp_program_init
// CHECK: llvm.call @ddprt_init
// CHECK: llvm.func @ddp_program_setup
// CHECK: llvm.func @host_clock() -> i64
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: %[[CLOCK:.*]] = llvm.call @host_clock() : () -> i64
// CHECK: llvm.add %[[CLOCK]], %{{.*}} : i64
// CHECK: llvm.call @ddprt_all_reduce(
// CHECK: llvm.call @ddprt_wait(
// CHECK: llvm.call @ddprt_sgd(
// CHECK: llvm.mlir.global internal @__ddp_buffers()
// CHECK: llvm.func @ddp_program_teardown
// CHECK-NOT: ddp.
// CHECK-NOT: func.

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func private @host_clock() -> i64

func.func @step(%x: tensor<4xf32>) {
  %c = func.call @host_clock() : () -> i64
  %one = arith.constant 1 : i64
  %later = arith.addi %c, %one : i64
  %r, %t = ddp.all_reduce avg %x over @world[dp] async : tensor<4xf32>
  ddp.wait %t
  ddp.sgd @w, %r lr 1.0 : tensor<4xf32>
  return
}
