// outer-dp-sharding-strategy=optim (Megatron-FSDP's hybrid FSDP): with 2
// instances the optimizer is sharded across them too. Each bucket is
// reduce-scattered within the instance, its shard reduce-scattered across
// the instances, the shard optimizer runs on the rank's quarter over
// [dp_shard, dp_replicate], and the quarter is gathered across the
// instances, then within the instance.
// RUN: ddp-opt %s -split-input-file --ddp-distribute-optimizer="num-distributed-optimizer-instances=2 outer-dp-sharding-strategy=optim" -verify-diagnostics | FileCheck %s
// Buckets already sharded are left alone.
// RUN: ddp-opt %s -split-input-file --ddp-distribute-optimizer="num-distributed-optimizer-instances=2 outer-dp-sharding-strategy=optim" --ddp-distribute-optimizer="num-distributed-optimizer-instances=2 outer-dp-sharding-strategy=optim" -verify-diagnostics | FileCheck %s
// One instance has nothing to shard across; Megatron-FSDP's outer strategy
// takes no_shard or optim.
// RUN: not ddp-opt %s -split-input-file --ddp-distribute-optimizer="outer-dp-sharding-strategy=optim" 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: error: outer-dp-sharding-strategy=optim shards the optimizer across the distributed-optimizer instances; give num-distributed-optimizer-instances above 1
// RUN: not ddp-opt %s -split-input-file --ddp-distribute-optimizer="num-distributed-optimizer-instances=2 outer-dp-sharding-strategy=optim_grads" 2>&1 | FileCheck %s --check-prefix=VALUE
// VALUE: error: --ddp-distribute-optimizer: outer-dp-sharding-strategy=optim_grads is not one of its values (no_shard, optim)

// CHECK-LABEL: ddp.mesh @world(dp_replicate = 2, dp_shard = 2)
// CHECK-LABEL: func.func @two_buckets
// CHECK:      %[[R0:.*]] = ddp.reduce_scatter sum %{{.*}} over @world[dp_shard] {ddp.bucket = 0 : i64} : tensor<152xf32> -> tensor<76xf32>
// CHECK-NEXT: %[[O0:.*]] = ddp.reduce_scatter sum %[[R0]] over @world[dp_replicate] {ddp.bucket = 0 : i64} : tensor<76xf32> -> tensor<38xf32>
// CHECK:      %[[R1:.*]] = ddp.reduce_scatter avg %{{.*}} over @world[dp_shard] {ddp.bucket = 1 : i64} : tensor<256xf32> -> tensor<128xf32>
// CHECK-NEXT: %[[O1:.*]] = ddp.reduce_scatter avg %[[R1]] over @world[dp_replicate] {ddp.bucket = 1 : i64} : tensor<128xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[N0:.*]] = ddp.shard_sgd %[[O0]] params [@d, @c] offsets [0, 52] over @world[dp_shard, dp_replicate] lr 0.1 : tensor<38xf32> -> tensor<38xf32>
// CHECK-NEXT: %[[I0:.*]] = ddp.all_gather %[[N0]] over @world[dp_replicate] : tensor<38xf32> -> tensor<76xf32>
// CHECK-NEXT: %[[G0:.*]] = ddp.all_gather %[[I0]] over @world[dp_shard] : tensor<76xf32> -> tensor<152xf32>
// CHECK-NEXT: ddp.set_params %[[G0]] params [@d, @c] offsets [0, 52] : tensor<152xf32>
// CHECK-NEXT: %[[N1:.*]] = ddp.shard_sgd %[[O1]] params [@b, @a] offsets [0, 128] over @world[dp_shard, dp_replicate] lr 0.1 : tensor<64xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[I1:.*]] = ddp.all_gather %[[N1]] over @world[dp_replicate] : tensor<64xf32> -> tensor<128xf32>
// CHECK-NEXT: %[[G1:.*]] = ddp.all_gather %[[I1]] over @world[dp_shard] : tensor<128xf32> -> tensor<256xf32>
// CHECK-NEXT: ddp.set_params %[[G1]] params [@b, @a] offsets [0, 128] : tensor<256xf32>
// CHECK-NEXT: return
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<10x10xf32>
ddp.param @b : tensor<100xf32>
ddp.param @c : tensor<4x25xf32>
ddp.param @d : tensor<50xf32>
func.func @two_buckets(%ga: tensor<10x10xf32>, %gb: tensor<100xf32>, %gc: tensor<4x25xf32>, %gd: tensor<50xf32>) {
  %p0 = ddp.bucket_pack %gd, %gc offsets [0, 52] {ddp.bucket = 0 : i64} : tensor<50xf32>, tensor<4x25xf32> -> tensor<152xf32>
  %r0 = ddp.all_reduce sum %p0 over @world[dp] {ddp.bucket = 0 : i64} : tensor<152xf32>
  %u0:2 = ddp.bucket_unpack %r0 offsets [0, 52] {ddp.bucket = 0 : i64} : tensor<152xf32> -> tensor<50xf32>, tensor<4x25xf32>
  %p1 = ddp.bucket_pack %gb, %ga offsets [0, 128] {ddp.bucket = 1 : i64} : tensor<100xf32>, tensor<10x10xf32> -> tensor<256xf32>
  %r1 = ddp.all_reduce avg %p1 over @world[dp] {ddp.bucket = 1 : i64} : tensor<256xf32>
  %u1:2 = ddp.bucket_unpack %r1 offsets [0, 128] {ddp.bucket = 1 : i64} : tensor<256xf32> -> tensor<100xf32>, tensor<10x10xf32>
  ddp.sgd @d, %u0#0 lr 0.1 : tensor<50xf32>
  ddp.sgd @c, %u0#1 lr 0.1 : tensor<4x25xf32>
  ddp.sgd @b, %u1#0 lr 0.1 : tensor<100xf32>
  ddp.sgd @a, %u1#1 lr 0.1 : tensor<10x10xf32>
  return
}

// -----

// A bucket that splits into an instance's shards (6 = 2 x 3) but not into
// the whole group's (4): sharded across the instances it cannot be.
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<6xf32>
func.func @instance_divides(%g: tensor<6xf32>) {
  // expected-error @+1 {{bucket 0 of 6 elements cannot be split into 4 equal shards (outer-dp-sharding-strategy=optim shards it across the instances too); pad the buckets to a multiple of the data-parallel size}}
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<6xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<6xf32> -> tensor<6xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<6xf32>
  return
}
