// RUN: ddp-opt %s --ddp-lower-to-runtime | FileCheck %s

// Byte offsets into a bucket of 2^28 bytes and more. llvm.getelementptr keeps
// a constant index in 29 signed bits; a larger offset must be an i64 value,
// or it wraps and the gradient is written 2^29 bytes before its slice (a
// full-width llama2-7b layer ran past its buffer so).

ddp.mesh @world(dp = 2)
ddp.param @small : tensor<16xf32>
ddp.param @big : tensor<67108864xf32>
ddp.param @after : tensor<16xf32>

// CHECK-LABEL: llvm.func @ddp_program_step
// The slice of @big starts at 64 bytes, a constant index; @after's at
// 64 + 2^28 bytes, which needs the value.
// CHECK-DAG: %[[AFTER:.*]] = llvm.mlir.constant(268435520 : i64) : i64
// CHECK-DAG: llvm.getelementptr %{{.*}}[64] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-DAG: llvm.getelementptr %{{.*}}[%[[AFTER]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NOT: llvm.getelementptr %{{.*}}[-{{[0-9]+}}]
func.func @step(%x: tensor<16xf32>, %y: tensor<67108864xf32>) {
  %0 = ddp.accumulate %x, %x : tensor<16xf32>
  %1 = ddp.accumulate %y, %y : tensor<67108864xf32>
  %2 = ddp.accumulate %x, %x : tensor<16xf32>
  %g0 = ddp.grad_ready @small, %0 : tensor<16xf32>
  %g1 = ddp.grad_ready @big, %1 : tensor<67108864xf32>
  %g2 = ddp.grad_ready @after, %2 : tensor<16xf32>
  %b = ddp.bucket_pack %g0, %g1, %g2 offsets [0, 16, 67108880] : tensor<16xf32>, tensor<67108864xf32>, tensor<16xf32> -> tensor<67108896xf32>
  %r = ddp.all_reduce avg %b over @world[dp] : tensor<67108896xf32>
  %u:3 = ddp.bucket_unpack %r offsets [0, 16, 67108880] : tensor<67108896xf32> -> tensor<16xf32>, tensor<67108864xf32>, tensor<16xf32>
  ddp.sgd @small, %u#0 lr 0.5 : tensor<16xf32>
  ddp.sgd @big, %u#1 lr 0.5 : tensor<67108864xf32>
  ddp.sgd @after, %u#2 lr 0.5 : tensor<16xf32>
  return
}
