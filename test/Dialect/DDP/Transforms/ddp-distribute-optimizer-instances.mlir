// num-distributed-optimizer-instances=2 (Megatron's partial distributed
// optimizer): the dp axis becomes dp_replicate x dp_shard, each bucket is
// reduce-scattered within an instance, its shard all-reduced across the
// instances, and the shard optimizer and all-gather run within an instance.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-distribute-optimizer=num-distributed-optimizer-instances=2 -verify-diagnostics | FileCheck %s
// Buckets already sharded are left alone, and the mesh is split once.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-distribute-optimizer=num-distributed-optimizer-instances=2 --ddp-distribute-optimizer=num-distributed-optimizer-instances=2 -verify-diagnostics | FileCheck %s
// A failing run changes nothing: neither the valid buckets nor the mesh.
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-distribute-optimizer=num-distributed-optimizer-instances=2 --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=UNTOUCHED
// k < 1 is refused, naming the value.
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-distribute-optimizer=num-distributed-optimizer-instances=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: num-distributed-optimizer-instances must be at least 1, not 0

// dp = 4 x tp = 2 in 2 instances: the mesh's dp axis is split in place
// (instance slowest, so ranks 0-1 and 2-3 of a dp group are the instances,
// as in Megatron), and every group over dp, in the step and in the recorded
// layout, becomes the same group over [dp_replicate, dp_shard]; tp is
// untouched. The 152-element bucket is scattered into 2 shards of 76 (not 4
// of 38); sum and avg are kept in both collectives.
// CHECK-LABEL: ddp.mesh @world(dp_replicate = 2, dp_shard = 2, tp = 2)
// CHECK-LABEL: func.func @two_buckets
// CHECK-SAME: ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp_replicate", "dp_shard"], numel = 150, padded_numel = 152
// CHECK:      %[[L:.*]] = ddp.all_reduce avg %{{.*}} over @world[dp_replicate, dp_shard] : tensor<1xf32>
// CHECK-NEXT: ddp.all_reduce sum %[[L]] over @world[tp] : tensor<1xf32>
// CHECK:      %[[P0:.*]] = ddp.bucket_pack
// CHECK-NEXT: %[[S0:.*]] = ddp.scale %[[P0]] by 0.25 {ddp.bucket = 0 : i64} : tensor<152xf32>
// CHECK-NEXT: %[[R0:.*]] = ddp.reduce_scatter sum %[[S0]] over @world[dp_shard] {ddp.bucket = 0 : i64} : tensor<152xf32> -> tensor<76xf32>
// CHECK-NEXT: %[[A0:.*]] = ddp.all_reduce sum %[[R0]] over @world[dp_replicate] {ddp.bucket = 0 : i64} : tensor<76xf32>
// CHECK-NEXT: %[[P1:.*]] = ddp.bucket_pack
// CHECK-NEXT: %[[R1:.*]] = ddp.reduce_scatter avg %[[P1]] over @world[dp_shard] {ddp.bucket = 1 : i64} : tensor<256xf32> -> tensor<128xf32>
// CHECK-NEXT: %[[A1:.*]] = ddp.all_reduce avg %[[R1]] over @world[dp_replicate] {ddp.bucket = 1 : i64} : tensor<128xf32>
// CHECK-NEXT: %[[N0:.*]] = ddp.shard_sgd %[[A0]] params [@d, @c] offsets [0, 52] over @world[dp_shard] lr 0.1 : tensor<76xf32> -> tensor<76xf32>
// CHECK-NEXT: %[[G0:.*]] = ddp.all_gather %[[N0]] over @world[dp_shard] : tensor<76xf32> -> tensor<152xf32>
// CHECK-NEXT: ddp.set_params %[[G0]] params [@d, @c] offsets [0, 52] : tensor<152xf32>
// CHECK-NEXT: %[[N1:.*]] = ddp.shard_sgd %[[A1]] params [@b, @a] offsets [0, 128] over @world[dp_shard] lr 0.1 : tensor<128xf32> -> tensor<128xf32>
// CHECK-NEXT: %[[G1:.*]] = ddp.all_gather %[[N1]] over @world[dp_shard] : tensor<128xf32> -> tensor<256xf32>
// CHECK-NEXT: ddp.set_params %[[G1]] params [@b, @a] offsets [0, 128] : tensor<256xf32>
// CHECK-NEXT: return
// CHECK-NOT: ddp.sgd
// CHECK-NOT: @world[dp]
ddp.mesh @world(dp = 4, tp = 2)
ddp.param @a : tensor<10x10xf32>
ddp.param @b : tensor<100xf32>
ddp.param @c : tensor<4x25xf32>
ddp.param @d : tensor<50xf32>
func.func @two_buckets(%loss: tensor<1xf32>, %ga: tensor<10x10xf32>, %gb: tensor<100xf32>, %gc: tensor<4x25xf32>, %gd: tensor<50xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 150, padded_numel = 152, average_in_collective = false, check_finite = false>, #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 228, padded_numel = 256, average_in_collective = true, check_finite = false>]} {
  %l = ddp.all_reduce avg %loss over @world[dp] : tensor<1xf32>
  %lt = ddp.all_reduce sum %l over @world[tp] : tensor<1xf32>
  %d = ddp.grad_ready @d, %gd : tensor<50xf32>
  %c = ddp.grad_ready @c, %gc : tensor<4x25xf32>
  %b = ddp.grad_ready @b, %gb : tensor<100xf32>
  %a = ddp.grad_ready @a, %ga : tensor<10x10xf32>
  %p0 = ddp.bucket_pack %d, %c offsets [0, 52] {ddp.bucket = 0 : i64} : tensor<50xf32>, tensor<4x25xf32> -> tensor<152xf32>
  %s0 = ddp.scale %p0 by 0.25 {ddp.bucket = 0 : i64} : tensor<152xf32>
  %r0 = ddp.all_reduce sum %s0 over @world[dp] {ddp.bucket = 0 : i64} : tensor<152xf32>
  %u0:2 = ddp.bucket_unpack %r0 offsets [0, 52] {ddp.bucket = 0 : i64} : tensor<152xf32> -> tensor<50xf32>, tensor<4x25xf32>
  %p1 = ddp.bucket_pack %b, %a offsets [0, 128] {ddp.bucket = 1 : i64} : tensor<100xf32>, tensor<10x10xf32> -> tensor<256xf32>
  %r1 = ddp.all_reduce avg %p1 over @world[dp] {ddp.bucket = 1 : i64} : tensor<256xf32>
  %u1:2 = ddp.bucket_unpack %r1 offsets [0, 128] {ddp.bucket = 1 : i64} : tensor<256xf32> -> tensor<100xf32>, tensor<10x10xf32>
  ddp.sgd @d, %u0#0 lr 0.1 : tensor<50xf32>
  ddp.sgd @c, %u0#1 lr 0.1 : tensor<4x25xf32>
  ddp.sgd @b, %u1#0 lr 0.1 : tensor<100xf32>
  ddp.sgd @a, %u1#1 lr 0.1 : tensor<10x10xf32>
  return
}

// -----

// A bucket that splits into shards of an instance (6 = 3 x 2) but not of
// the whole group (4) is sharded: what must divide is the instance size.
// CHECK-LABEL: ddp.mesh @world(dp_replicate = 2, dp_shard = 2)
// CHECK-LABEL: func.func @instance_divides
// CHECK: ddp.reduce_scatter sum %{{.*}} over @world[dp_shard] {ddp.bucket = 0 : i64} : tensor<6xf32> -> tensor<3xf32>
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<6xf32>
func.func @instance_divides(%g: tensor<6xf32>) {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<6xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<6xf32> -> tensor<6xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<6xf32>
  return
}

// -----

// A module without buckets keeps its mesh.
// CHECK-LABEL: ddp.mesh @world(dp = 4)
// CHECK-LABEL: func.func @no_buckets
// CHECK-NEXT: ddp.all_reduce avg %{{.*}} over @world[dp]
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8xf32>
func.func @no_buckets(%g: tensor<8xf32>) {
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<8xf32>
  ddp.sgd @a, %r lr 0.1 : tensor<8xf32>
  return
}

// -----

// Errors. The mesh cannot be factored: 2 does not divide dp = 5.
// UNTOUCHED: ddp.mesh @world(dp = 5)
// UNTOUCHED-LABEL: func.func @not_factorable
// UNTOUCHED: ddp.all_reduce sum %{{.*}} over @world[dp] {ddp.bucket = 0 : i64} : tensor<10xf32>
// UNTOUCHED: ddp.sgd @a
// expected-error @+1 {{num-distributed-optimizer-instances=2 does not divide axis 'dp' (5 ranks) of mesh @world: the data-parallel group cannot be split into equal instances}}
ddp.mesh @world(dp = 5)
ddp.param @a : tensor<10xf32>
func.func @not_factorable(%g: tensor<10xf32>) {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<10xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<10xf32> -> tensor<10xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<10xf32>
  return
}

// -----

// A bucket that does not split into the shards of an instance; the valid
// bucket before it and the mesh stay as they were.
// UNTOUCHED: ddp.mesh @world(dp = 6)
// UNTOUCHED-LABEL: func.func @not_divisible
// UNTOUCHED: ddp.all_reduce sum %{{.*}} over @world[dp] {ddp.bucket = 0 : i64} : tensor<6xf32>
ddp.mesh @world(dp = 6)
ddp.param @a : tensor<6xf32>
ddp.param @b : tensor<8xf32>
func.func @not_divisible(%ga: tensor<6xf32>, %gb: tensor<8xf32>) {
  %r0 = ddp.all_reduce sum %ga over @world[dp] {ddp.bucket = 0 : i64} : tensor<6xf32>
  %u0 = ddp.bucket_unpack %r0 offsets [0] {ddp.bucket = 0 : i64} : tensor<6xf32> -> tensor<6xf32>
  ddp.sgd @a, %u0 lr 0.1 : tensor<6xf32>
  // expected-error @+1 {{bucket 1: its 8 elements do not split into 3 equal shards (the 6 ranks of the group in 2 instances of 3); lay the buckets out with use-distributed-optimizer, which pads them to a multiple of the group size}}
  %r1 = ddp.all_reduce sum %gb over @world[dp] {ddp.bucket = 1 : i64} : tensor<8xf32>
  %u1 = ddp.bucket_unpack %r1 offsets [0] {ddp.bucket = 1 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @b, %u1 lr 0.1 : tensor<8xf32>
  return
}

// -----

// A bucket reduced over two axes: which one holds the instances?
ddp.mesh @world(dp = 2, cp = 2)
ddp.param @a : tensor<8xf32>
func.func @two_axes(%g: tensor<8xf32>) {
  // expected-error @+1 {{bucket 0: its group @world[dp,cp] spans 2 axes; num-distributed-optimizer-instances=2 splits one data-parallel axis into instances}}
  %r = ddp.all_reduce sum %g over @world[dp, cp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<8xf32>
  return
}

// -----

// Buckets over different axes: only one can be split.
ddp.mesh @world(dp = 2, ep = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @different_axes(%ga: tensor<8xf32>, %gb: tensor<8xf32>) {
  // expected-note @+1 {{bucket 0}}
  %r0 = ddp.all_reduce sum %ga over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  %u0 = ddp.bucket_unpack %r0 offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @a, %u0 lr 0.1 : tensor<8xf32>
  // expected-error @+1 {{bucket 1: reduces over @world[ep] where bucket 0 reduces over @world[dp]; num-distributed-optimizer-instances splits one axis}}
  %r1 = ddp.all_reduce sum %gb over @world[ep] {ddp.bucket = 1 : i64} : tensor<8xf32>
  %u1 = ddp.bucket_unpack %r1 offsets [0] {ddp.bucket = 1 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @b, %u1 lr 0.1 : tensor<8xf32>
  return
}

// -----

// The mesh already has one of the new axes.
// expected-error @+1 {{num-distributed-optimizer-instances=2 splits axis "dp" into "dp_replicate" and "dp_shard", but the mesh already has an axis "dp_shard"}}
ddp.mesh @world(dp = 2, dp_shard = 2)
ddp.param @a : tensor<8xf32>
func.func @name_taken(%g: tensor<8xf32>) {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<8xf32>
  return
}
