// RUN: ddp-opt %s --split-input-file --cse | FileCheck %s

// Two identical GEMMs are two kernels on the compute stream: CSE keeps both,
// in order.
// CHECK-LABEL: func.func @identical_kernels
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: %[[A:.*]] = ddp.gemm fwd %[[X]], %[[X]]
// CHECK-NEXT: %[[B:.*]] = ddp.gemm fwd %[[X]], %[[X]]
// CHECK-NEXT: %[[C:.*]] = ddp.compute "gelu"(%[[X]])
// CHECK-NEXT: %[[D:.*]] = ddp.compute "gelu"(%[[X]])
// CHECK-NEXT: %[[E:.*]] = ddp.scale %[[X]] by 0.25
// CHECK-NEXT: %[[F:.*]] = ddp.scale %[[X]] by 0.25
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]], %[[F]]
func.func @identical_kernels(%x: tensor<4x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>,
        tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = ddp.gemm fwd %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %b = ddp.gemm fwd %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %c = ddp.compute "gelu"(%x) flops 16.0 bytes 128.0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %d = ddp.compute "gelu"(%x) flops 16.0 bytes 128.0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %e = ddp.scale %x by 0.25 : tensor<4x4xf32>
  %f = ddp.scale %x by 0.25 : tensor<4x4xf32>
  return %a, %b, %c, %d, %e, %f : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A parameter read before its update and one read after are different
// values; two reads with no update between are the same value.
// CHECK-LABEL: func.func @reads_around_an_update
// CHECK-SAME: (%[[G:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: %[[BEFORE:.*]] = ddp.get_param @w
// CHECK-NEXT: ddp.sgd @w, %[[G]]
// CHECK-NEXT: %[[AFTER:.*]] = ddp.get_param @w
// CHECK-NEXT: return %[[BEFORE]], %[[BEFORE]], %[[AFTER]]
ddp.param @w : tensor<4x4xf32>
func.func @reads_around_an_update(%g: tensor<4x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %w0 = ddp.get_param @w : tensor<4x4xf32>
  %w1 = ddp.get_param @w : tensor<4x4xf32>
  ddp.sgd @w, %g lr 0.01 : tensor<4x4xf32>
  %w2 = ddp.get_param @w : tensor<4x4xf32>
  return %w0, %w1, %w2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// The same around an Adam update.
// CHECK-LABEL: func.func @reads_around_adam
// CHECK-NEXT: %[[BEFORE:.*]] = ddp.get_param @w
// CHECK-NEXT: ddp.adam @w
// CHECK-NEXT: %[[AFTER:.*]] = ddp.get_param @w
// CHECK-NEXT: return %[[BEFORE]], %[[AFTER]]
ddp.param @w : tensor<4x4xf32>
func.func @reads_around_adam(%g: tensor<4x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %w0 = ddp.get_param @w : tensor<4x4xf32>
  ddp.adam @w, %g lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<4x4xf32>
  %w1 = ddp.get_param @w : tensor<4x4xf32>
  return %w0, %w1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Unpacking emits no code (its results are views of the bucket's buffer), so
// two unpacks of one bucket with no write between are the same views; the
// one kept is still after the wait.
// CHECK-LABEL: func.func @views_after_wait
// CHECK-SAME: (%[[G:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[B:.*]] = ddp.bucket_pack %[[G]]
// CHECK-NEXT: %[[R:.*]], %[[T:.*]] = ddp.all_reduce sum %[[B]] over @world[dp] async
// CHECK-NEXT: ddp.wait %[[T]]
// CHECK-NEXT: %[[V:.*]] = ddp.bucket_unpack %[[R]]
// CHECK-NEXT: return %[[V]], %[[V]]
ddp.mesh @world(dp = 2)
func.func @views_after_wait(%g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %b = ddp.bucket_pack %g offsets [0] : tensor<8xf32> -> tensor<8xf32>
  %r, %t = ddp.all_reduce sum %b over @world[dp] async : tensor<8xf32>
  ddp.wait %t
  %v0 = ddp.bucket_unpack %r offsets [0] : tensor<8xf32> -> tensor<8xf32>
  %v1 = ddp.bucket_unpack %r offsets [0] : tensor<8xf32> -> tensor<8xf32>
  return %v0, %v1 : tensor<8xf32>, tensor<8xf32>
}
