// RUN: ddp-opt %s --split-input-file --canonicalize | FileCheck %s
// RUN: ddp-opt %s --split-input-file --canonicalize --ddp-verify-collective-order > /dev/null

// A join of one token is that token: the wait takes it directly. A join of
// two stays.
// CHECK-LABEL: func.func @join_of_one_token
// CHECK-SAME: (%[[G:.*]]: tensor<8xf32>, %[[H:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[R:.*]], %[[T:.*]] = ddp.all_reduce sum %[[G]] over @world[dp] async
// CHECK-NEXT: ddp.wait %[[T]]
// CHECK-NEXT: %[[S:.*]], %[[U:.*]] = ddp.all_reduce sum %[[H]] over @world[dp] async
// CHECK-NEXT: %[[V:.*]], %[[W:.*]] = ddp.all_reduce sum %[[H]] over @world[dp] async
// CHECK-NEXT: %[[J:.*]] = ddp.join %[[U]], %[[W]]
// CHECK-NEXT: ddp.wait %[[J]]
// CHECK-NOT: ddp.join
ddp.mesh @world(dp = 2)
func.func @join_of_one_token(%g: tensor<8xf32>, %h: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  %j = ddp.join %t
  ddp.wait %j
  %s, %u = ddp.all_reduce sum %h over @world[dp] async : tensor<8xf32>
  %v, %w = ddp.all_reduce sum %h over @world[dp] async : tensor<8xf32>
  %k = ddp.join %u, %w
  ddp.wait %k
  return %r, %s, %v : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Scaling by 1 is the identity; the bucket then goes to its collective
// directly, as when the average is taken in the collective. Another factor
// stays.
// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME: (%[[G:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[B:.*]] = ddp.bucket_pack %[[G]] offsets [0]
// CHECK-NEXT: %[[R:.*]] = ddp.all_reduce sum %[[B]] over @world[dp]
// CHECK-NEXT: %[[H:.*]] = ddp.scale %[[R]] by 0.5
// CHECK-NEXT: return %[[H]]
ddp.mesh @world(dp = 1)
func.func @scale_by_one(%g: tensor<8xf32>) -> tensor<8xf32> {
  %b = ddp.bucket_pack %g offsets [0] : tensor<8xf32> -> tensor<8xf32>
  %s = ddp.scale %b by 1.0 : tensor<8xf32>
  %r = ddp.all_reduce sum %s over @world[dp] : tensor<8xf32>
  %h = ddp.scale %r by 0.5 : tensor<8xf32>
  return %h : tensor<8xf32>
}

// -----

// A cast to its own type is the identity; one that converts stays.
// CHECK-LABEL: func.func @cast_to_same_type
// CHECK-SAME: (%[[G:.*]]: tensor<8xbf16>)
// CHECK-NEXT: %[[W:.*]] = ddp.cast %[[G]] : tensor<8xbf16> to tensor<8xf32>
// CHECK-NEXT: return %[[G]], %[[W]]
func.func @cast_to_same_type(%g: tensor<8xbf16>) -> (tensor<8xbf16>, tensor<8xf32>) {
  %same = ddp.cast %g : tensor<8xbf16> to tensor<8xbf16>
  %wide = ddp.cast %g : tensor<8xbf16> to tensor<8xf32>
  return %same, %wide : tensor<8xbf16>, tensor<8xf32>
}

// -----

// Ops on the compute stream stay when nothing reads their results: a kernel
// the schedule issues is part of its timing. Ops that only read (a
// parameter, a bucket's views) go when unused.
// CHECK-LABEL: func.func @unused_results
// CHECK-NEXT: ddp.gemm fwd
// CHECK-NEXT: ddp.compute "gelu"
// CHECK-NEXT: ddp.accumulate
// CHECK-NEXT: ddp.scale {{.*}} by 0.25
// CHECK-NEXT: ddp.cast
// CHECK-NEXT: ddp.bucket_pack
// CHECK-NEXT: return
ddp.param @w : tensor<4x4xf32>
func.func @unused_results(%x: tensor<4x4xf32>) {
  %w = ddp.get_param @w : tensor<4x4xf32>
  %y = ddp.gemm fwd %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %z = ddp.compute "gelu"(%x) flops 16.0 bytes 128.0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = ddp.accumulate %x, %x : tensor<4x4xf32>
  %s = ddp.scale %x by 0.25 : tensor<4x4xf32>
  %c = ddp.cast %x : tensor<4x4xf32> to tensor<4x4xbf16>
  %b = ddp.bucket_pack %x offsets [0] : tensor<4x4xf32> -> tensor<16xf32>
  %u = ddp.bucket_unpack %b offsets [0] : tensor<16xf32> -> tensor<4x4xf32>
  return
}
