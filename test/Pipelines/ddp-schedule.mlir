// RUN: ddp-opt %s --ddp-schedule="policy=megatron ddp-bucket-size=40 check-for-nan-in-loss-and-grad ddp-average-in-collective print-bucket-layout=%t.json" | FileCheck %s
// RUN: FileCheck %s --check-prefix=LAYOUT < %t.json
// RUN: ddp-opt %s --ddp-schedule="policy=megatron overlap-grad-reduce=false bucket-size=40" | FileCheck %s --check-prefix=SYNC
// RUN: ddp-opt %s --ddp-schedule="policy=auto hw=a100-sxm-ib200 dp=64 accumulate-allreduce-grads-in-fp32" | FileCheck %s --check-prefix=AUTO
// RUN: ddp-opt %s --ddp-schedule="policy=pytorch bucket-cap-bytes=100" | FileCheck %s --check-prefix=PYTORCH
// RUN: not ddp-opt %s --ddp-schedule="policy=megatron bucket-size=40 ddp-num-buckets=2" 2>&1 | FileCheck %s --check-prefix=EXCLUSIVE
// RUN: ddp-opt --help | FileCheck %s --check-prefix=HELP

// Megatron's flag names work as the fields they set: buckets closed once they
// reach 40 elements (4 + 32 + 8, then 128), checked for NaN, averaged in the collective, each
// issued after its last gradient and waited before the optimizer needs it;
// the order check passes.
// CHECK-LABEL: func.func @step
// CHECK-SAME: ddp.bucket_policy = #ddp.bucket_policy<name = megatron>
// CHECK:      ddp.grad_ready @fc1.bias
// CHECK-NEXT: ddp.bucket_pack {{.*}}ddp.bucket = 0
// CHECK-NEXT: ddp.check_finite {{.*}} bucket 0 params [@fc2.bias, @fc2.weight, @fc1.bias]
// CHECK-NEXT: %[[R0:.*]], %[[T0:.*]] = ddp.all_reduce avg {{.*}} async {ddp.bucket = 0 : i64} : tensor<44xf32>
// CHECK-NEXT: ddp.gemm wgrad
// CHECK-NEXT: ddp.grad_ready @fc1.weight
// CHECK-NEXT: ddp.bucket_pack {{.*}}ddp.bucket = 1
// CHECK-NEXT: ddp.check_finite {{.*}} bucket 1 params [@fc1.weight]
// CHECK-NEXT: %[[R1:.*]], %[[T1:.*]] = ddp.all_reduce avg {{.*}} async {ddp.bucket = 1 : i64} : tensor<128xf32>
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: %[[U0:.*]]:3 = ddp.bucket_unpack %[[R0]]
// CHECK-NEXT: ddp.sgd @fc2.bias, %[[U0]]#0
// CHECK-NEXT: ddp.sgd @fc2.weight, %[[U0]]#1
// CHECK-NEXT: ddp.sgd @fc1.bias, %[[U0]]#2
// CHECK-NEXT: ddp.wait %[[T1]]

// LAYOUT:      "buckets": [
// LAYOUT:        "index": 0,
// LAYOUT-NEXT:   "dtype": "f32",
// LAYOUT-NEXT:   "group": "dp",
// LAYOUT:        "name": "fc2.bias",
// LAYOUT:        "name": "fc2.weight",
// LAYOUT:        "name": "fc1.bias",
// LAYOUT:        "numel": 44,
// LAYOUT-NEXT:   "padded_numel": 44
// LAYOUT:        "index": 1,
// LAYOUT:        "name": "fc1.weight",

// Without overlap: one bucket per buffer, reduced synchronously after the
// backward pass, scaled by 1/4 and summed (Megatron's default).
// SYNC-LABEL: func.func @step
// SYNC:     ddp.grad_ready @fc1.weight
// SYNC-NEXT: ddp.bucket_pack
// SYNC-NEXT: ddp.scale {{.*}} by 0.25
// SYNC-NEXT: ddp.all_reduce sum {{.*}} over @world[dp] {ddp.bucket = 0 : i64} : tensor<172xf32>
// SYNC-NOT: async
// SYNC-NOT: ddp.wait

// pytorch with an explicit bucket cap (100 bytes) caps the first bucket too,
// as torch 2.x: fc2.bias + fc2.weight reach it, then fc1.bias + fc1.weight.
// PYTORCH-LABEL: func.func @step
// PYTORCH-SAME: ddp.bucket_policy = #ddp.bucket_policy<name = pytorch>
// PYTORCH: ddp.all_reduce {{.*}} async {ddp.bucket = 0 : i64} : tensor<36xf32>
// PYTORCH: ddp.all_reduce {{.*}} async {ddp.bucket = 1 : i64} : tensor<136xf32>

// The auto policy records what it optimised for and predicted.
// AUTO-LABEL: func.func @step
// AUTO-SAME: ddp.bucket_policy = #ddp.bucket_policy<name = auto, hw = "a100-sxm-ib200", predicted_step_time_us = {{[0-9.e+]+}}>
// AUTO: ddp.all_reduce sum {{.*}} async
// AUTO: ddp.wait

// EXCLUSIVE: error: ddp-schedule: bucket-size and num-buckets are exclusive

// The pipeline's help says what its options do.
// HELP-LABEL: --ddp-schedule - Bucket the data-parallel gradient reduction
// HELP: --tp-comm-overlap-ag - Pipeline the all-gather before a GEMM with the GEMM's row chunks{{$}}

ddp.mesh @world(dp = 4)
ddp.param @fc1.weight layer 0 : tensor<16x8xf32>
ddp.param @fc1.bias layer 0 : tensor<8xf32>
ddp.param @fc2.weight layer 1 : tensor<8x4xf32>
ddp.param @fc2.bias layer 1 : tensor<4xf32>
func.func @step(%x: tensor<32x16xf32>, %dy: tensor<32x4xf32>) {
  %w1 = ddp.get_param @fc1.weight : tensor<16x8xf32>
  %w2 = ddp.get_param @fc2.weight : tensor<8x4xf32>
  %h = ddp.gemm fwd %x, %w1 layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %y = ddp.gemm fwd %h, %w2 layer 1 : tensor<32x8xf32>, tensor<8x4xf32> -> tensor<32x4xf32>
  %db2 = ddp.compute "bias_grad"(%dy) flops 128.0 bytes 512.0 layer 1 : (tensor<32x4xf32>) -> tensor<4xf32>
  %g3 = ddp.grad_ready @fc2.bias, %db2 : tensor<4xf32>
  %dw2 = ddp.gemm wgrad %h transposed, %dy layer 1 : tensor<32x8xf32>, tensor<32x4xf32> -> tensor<8x4xf32>
  %g2 = ddp.grad_ready @fc2.weight, %dw2 : tensor<8x4xf32>
  %dh = ddp.gemm dgrad %dy, %w2 transposed layer 1 : tensor<32x4xf32>, tensor<8x4xf32> -> tensor<32x8xf32>
  %db1 = ddp.compute "bias_grad"(%dh) flops 256.0 bytes 1024.0 layer 0 : (tensor<32x8xf32>) -> tensor<8xf32>
  %g1 = ddp.grad_ready @fc1.bias, %db1 : tensor<8xf32>
  %dw1 = ddp.gemm wgrad %x transposed, %dh layer 0 : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %g0 = ddp.grad_ready @fc1.weight, %dw1 : tensor<16x8xf32>
  %r3 = ddp.all_reduce avg %g3 over @world[dp] : tensor<4xf32>
  %r2 = ddp.all_reduce avg %g2 over @world[dp] : tensor<8x4xf32>
  %r1 = ddp.all_reduce avg %g1 over @world[dp] : tensor<8xf32>
  %r0 = ddp.all_reduce avg %g0 over @world[dp] : tensor<16x8xf32>
  ddp.sgd @fc2.bias, %r3 lr 0.1 : tensor<4xf32>
  ddp.sgd @fc2.weight, %r2 lr 0.1 : tensor<8x4xf32>
  ddp.sgd @fc1.bias, %r1 lr 0.1 : tensor<8xf32>
  ddp.sgd @fc1.weight, %r0 lr 0.1 : tensor<16x8xf32>
  return
}
