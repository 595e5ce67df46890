// RUN: ddp-opt %s -split-input-file --ddp-overlap-grad-reduce -verify-diagnostics | FileCheck %s
// Running it again changes nothing.
// RUN: ddp-opt %s -split-input-file --ddp-overlap-grad-reduce --ddp-overlap-grad-reduce -verify-diagnostics | FileCheck %s

// Each bucket is issued right after its last grad_ready, overlapping the
// GEMMs that follow; it is waited right before the first use of its result.
// CHECK-LABEL: func.func @two_buckets
// CHECK:      %[[D:.*]] = ddp.grad_ready @d
// CHECK-NEXT: %[[X:.*]] = ddp.gemm dgrad
// CHECK-NEXT: %[[C:.*]] = ddp.grad_ready @c
// CHECK-NEXT: %[[P0:.*]] = ddp.bucket_pack %[[D]], %[[C]] offsets [0, 32] {ddp.bucket = 0 : i64}
// CHECK-NEXT: %[[S0:.*]] = ddp.scale %[[P0]] by 0.5 {ddp.bucket = 0 : i64}
// CHECK-NEXT: %[[R0:.*]], %[[T0:.*]] = ddp.all_reduce sum %[[S0]] over @world[dp] async {ddp.bucket = 0 : i64}
// CHECK-NEXT: ddp.gemm dgrad
// CHECK-NEXT: %[[B:.*]] = ddp.grad_ready @b
// CHECK-NEXT: %[[A:.*]] = ddp.grad_ready @a
// CHECK-NEXT: %[[CB:.*]] = ddp.cast %[[B]] {ddp.bucket = 1 : i64}
// CHECK-NEXT: %[[P1:.*]] = ddp.bucket_pack %[[CB]], %[[A]]
// CHECK-NEXT: ddp.check_finite %[[P1]] bucket 1
// CHECK-NEXT: %[[R1:.*]], %[[T1:.*]] = ddp.all_reduce avg %[[P1]] over @world[dp] async {ddp.bucket = 1 : i64}
// CHECK-NEXT: ddp.compute "loss"
// CHECK-NEXT: ddp.wait %[[T0]] {ddp.bucket = 0 : i64}
// CHECK-NEXT: %[[U0:.*]]:2 = ddp.bucket_unpack %[[R0]]
// CHECK-NEXT: ddp.sgd @d, %[[U0]]#0
// CHECK-NEXT: ddp.sgd @c, %[[U0]]#1
// CHECK-NEXT: ddp.wait %[[T1]] {ddp.bucket = 1 : i64}
// CHECK-NEXT: %[[U1:.*]]:2 = ddp.bucket_unpack %[[R1]]
// CHECK-NEXT: ddp.sgd @a, %[[U1]]#1
// CHECK-NEXT: %[[BB:.*]] = ddp.cast %[[U1]]#0 {ddp.bucket = 1 : i64} : tensor<16xf32> to tensor<16xbf16>
// CHECK-NEXT: ddp.sgd @b, %[[BB]]
// CHECK-NEXT: return
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<16xf32>
ddp.param @b : tensor<16xbf16>
ddp.param @c : tensor<32xf32>
ddp.param @d : tensor<32xf32>
func.func @two_buckets(%dy: tensor<8x8xf32>, %w: tensor<8x8xf32>, %ga: tensor<16xf32>, %gb: tensor<16xbf16>, %gc: tensor<32xf32>, %gd: tensor<32xf32>) {
  %d = ddp.grad_ready @d, %gd : tensor<32xf32>
  %x = ddp.gemm dgrad %dy, %w transposed : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %c = ddp.grad_ready @c, %gc : tensor<32xf32>
  %y = ddp.gemm dgrad %x, %w transposed : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %b = ddp.grad_ready @b, %gb : tensor<16xbf16>
  %a = ddp.grad_ready @a, %ga : tensor<16xf32>
  %p0 = ddp.bucket_pack %d, %c offsets [0, 32] {ddp.bucket = 0 : i64} : tensor<32xf32>, tensor<32xf32> -> tensor<64xf32>
  %s0 = ddp.scale %p0 by 0.5 {ddp.bucket = 0 : i64} : tensor<64xf32>
  %r0 = ddp.all_reduce sum %s0 over @world[dp] {ddp.bucket = 0 : i64} : tensor<64xf32>
  %u0:2 = ddp.bucket_unpack %r0 offsets [0, 32] {ddp.bucket = 0 : i64} : tensor<64xf32> -> tensor<32xf32>, tensor<32xf32>
  %cb = ddp.cast %b {ddp.bucket = 1 : i64} : tensor<16xbf16> to tensor<16xf32>
  %p1 = ddp.bucket_pack %cb, %a offsets [0, 16] {ddp.bucket = 1 : i64} : tensor<16xf32>, tensor<16xf32> -> tensor<32xf32>
  ddp.check_finite %p1 bucket 1 params [@b, @a] offsets [0, 16] {ddp.bucket = 1 : i64} : tensor<32xf32>
  %r1 = ddp.all_reduce avg %p1 over @world[dp] {ddp.bucket = 1 : i64} : tensor<32xf32>
  %u1:2 = ddp.bucket_unpack %r1 offsets [0, 16] {ddp.bucket = 1 : i64} : tensor<32xf32> -> tensor<16xf32>, tensor<16xf32>
  %bb = ddp.cast %u1#0 {ddp.bucket = 1 : i64} : tensor<16xf32> to tensor<16xbf16>
  %loss = ddp.compute "loss"(%y) flops 64.0 bytes 256.0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  ddp.sgd @d, %u0#0 lr 0.1 : tensor<32xf32>
  ddp.sgd @c, %u0#1 lr 0.1 : tensor<32xf32>
  ddp.sgd @a, %u1#1 lr 0.1 : tensor<16xf32>
  ddp.sgd @b, %bb lr 0.1 : tensor<16xbf16>
  return
}

// -----

// Bucket 1's gradient is ready before bucket 0 completes; it is still issued
// after bucket 0, keeping the layout's issue order. A bucket nobody reads is
// waited at the end of the step.
// CHECK-LABEL: func.func @issue_order
// CHECK:      ddp.grad_ready @b
// CHECK-NEXT: ddp.grad_ready @a
// CHECK-NEXT: ddp.bucket_pack {{.*}}ddp.bucket = 0
// CHECK-NEXT: %[[R0:.*]], %[[T0:.*]] = ddp.all_reduce avg {{.*}}ddp.bucket = 0
// CHECK-NEXT: ddp.bucket_pack {{.*}}ddp.bucket = 1
// CHECK-NEXT: %[[R1:.*]], %[[T1:.*]] = ddp.all_reduce avg {{.*}}ddp.bucket = 1
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: %[[U1:.*]] = ddp.bucket_unpack %[[R1]]
// CHECK-NEXT: ddp.sgd @b, %[[U1]]
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: ddp.bucket_unpack %[[R0]]
// CHECK-NEXT: return
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @issue_order(%ga: tensor<4xf32>, %gb: tensor<4xf32>) {
  %b = ddp.grad_ready @b, %gb : tensor<4xf32>
  %a = ddp.grad_ready @a, %ga : tensor<4xf32>
  %p0 = ddp.bucket_pack %a offsets [0] {ddp.bucket = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %r0 = ddp.all_reduce avg %p0 over @world[dp] {ddp.bucket = 0 : i64} : tensor<4xf32>
  %u0 = ddp.bucket_unpack %r0 offsets [0] {ddp.bucket = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %p1 = ddp.bucket_pack %b offsets [0] {ddp.bucket = 1 : i64} : tensor<4xf32> -> tensor<4xf32>
  %r1 = ddp.all_reduce avg %p1 over @world[dp] {ddp.bucket = 1 : i64} : tensor<4xf32>
  %u1 = ddp.bucket_unpack %r1 offsets [0] {ddp.bucket = 1 : i64} : tensor<4xf32> -> tensor<4xf32>
  ddp.sgd @b, %u1 lr 0.1 : tensor<4xf32>
  return
}

// -----

// Under the distributed optimizer the bucket's collective is a
// reduce-scatter: issued asynchronously after the bucket's last gradient like
// an all-reduce, waited before its first use; the shard's cast back sinks to
// the shard optimizer, and the all-gather stays where it is.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK:      ddp.grad_ready @a
// CHECK-NEXT: %[[P:.*]] = ddp.bucket_pack {{.*}}ddp.bucket = 0
// CHECK-NEXT: %[[R:.*]], %[[T:.*]] = ddp.reduce_scatter sum %[[P]] over @world[dp] async {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<4xf32>
// CHECK-NEXT: ddp.gemm
// CHECK-NEXT: ddp.wait %[[T]] {ddp.bucket = 0 : i64}
// CHECK-NEXT: %[[C:.*]] = ddp.cast %[[R]] {ddp.bucket = 0 : i64}
// CHECK-NEXT: %[[N:.*]] = ddp.shard_sgd %[[C]]
// CHECK-NEXT: ddp.all_gather %[[N]]
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xbf16>
func.func @reduce_scatter(%ga: tensor<8xf32>, %x: tensor<4x4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %p = ddp.bucket_pack %a offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  %r = ddp.reduce_scatter sum %p over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<4xf32>
  %c = ddp.cast %r {ddp.bucket = 0 : i64} : tensor<4xf32> to tensor<4xbf16>
  %y = ddp.gemm dgrad %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %n = ddp.shard_sgd %c params [@a] offsets [0] over @world[dp] lr 0.1 : tensor<4xbf16> -> tensor<4xbf16>
  %w = ddp.all_gather %n over @world[dp] : tensor<4xbf16> -> tensor<8xbf16>
  ddp.set_params %w params [@a] offsets [0] : tensor<8xbf16>
  return
}

// -----

// Several distributed-optimizer instances: a bucket's reduce-scatter within
// an instance is followed by the all-reduce of its shard across instances.
// Both are issued after the bucket's last gradient, the all-reduce after the
// reduce-scatter on a communication stream (`async after`), so the compute
// stream never waits for the reduce-scatter; the all-reduce's wait, which
// covers both, goes before the shard optimizer.
// CHECK-LABEL: func.func @across_instances
// CHECK:      ddp.grad_ready @a
// CHECK-NEXT: %[[R0:.*]], %[[T0:.*]] = ddp.reduce_scatter sum %{{.*}} over @world[dp_shard] async {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[A0:.*]], %[[U0:.*]] = ddp.all_reduce sum %[[R0]] over @world[dp_replicate] async after %[[T0]] {ddp.bucket = 0 : i64} : tensor<4xf32>
// CHECK-NEXT: ddp.gemm
// CHECK-NEXT: ddp.grad_ready @b
// CHECK-NEXT: %[[R1:.*]], %[[T1:.*]] = ddp.reduce_scatter sum %{{.*}} over @world[dp_shard] async {ddp.bucket = 1 : i64} : tensor<8xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[A1:.*]], %[[U1:.*]] = ddp.all_reduce sum %[[R1]] over @world[dp_replicate] async after %[[T1]] {ddp.bucket = 1 : i64} : tensor<4xf32>
// CHECK-NEXT: ddp.gemm
// CHECK-NEXT: ddp.wait %[[U0]] {ddp.bucket = 0 : i64}
// CHECK-NEXT: ddp.shard_sgd %[[A0]]
// CHECK-NEXT: ddp.wait %[[U1]] {ddp.bucket = 1 : i64}
// CHECK-NEXT: ddp.shard_sgd %[[A1]]
// CHECK-NEXT: return
ddp.mesh @world(dp_replicate = 2, dp_shard = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @across_instances(%ga: tensor<8xf32>, %gb: tensor<8xf32>, %x: tensor<4x4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %y = ddp.gemm dgrad %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %b = ddp.grad_ready @b, %gb : tensor<8xf32>
  %z = ddp.gemm dgrad %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %r0 = ddp.reduce_scatter sum %a over @world[dp_shard] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<4xf32>
  %a0 = ddp.all_reduce sum %r0 over @world[dp_replicate] {ddp.bucket = 0 : i64} : tensor<4xf32>
  %r1 = ddp.reduce_scatter sum %b over @world[dp_shard] {ddp.bucket = 1 : i64} : tensor<8xf32> -> tensor<4xf32>
  %a1 = ddp.all_reduce sum %r1 over @world[dp_replicate] {ddp.bucket = 1 : i64} : tensor<4xf32>
  %n0 = ddp.shard_sgd %a0 params [@a] offsets [0] over @world[dp_shard] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %n1 = ddp.shard_sgd %a1 params [@b] offsets [0] over @world[dp_shard] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Something else reads the reduce-scatter's shard too: the one wait goes
// before it, the first reader of either collective's result.
// CHECK-LABEL: func.func @shard_read_elsewhere
// CHECK:      %[[R0:.*]], %[[T0:.*]] = ddp.reduce_scatter sum
// CHECK-NEXT: %[[A0:.*]], %[[U0:.*]] = ddp.all_reduce sum %[[R0]] over @world[dp_replicate] async after %[[T0]]
// CHECK-NEXT: ddp.gemm
// CHECK-NEXT: ddp.wait %[[U0]] {ddp.bucket = 0 : i64}
// CHECK-NEXT: ddp.compute "norm"(%[[R0]])
// CHECK-NEXT: ddp.shard_sgd %[[A0]]
ddp.mesh @world(dp_replicate = 2, dp_shard = 2)
ddp.param @a : tensor<8xf32>
func.func @shard_read_elsewhere(%ga: tensor<8xf32>, %x: tensor<4x4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %y = ddp.gemm dgrad %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %r0 = ddp.reduce_scatter sum %a over @world[dp_shard] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<4xf32>
  %a0 = ddp.all_reduce sum %r0 over @world[dp_replicate] {ddp.bucket = 0 : i64} : tensor<4xf32>
  %n = ddp.compute "norm"(%r0) flops 4.0 bytes 16.0 : (tensor<4xf32>) -> tensor<1xf32>
  %n0 = ddp.shard_sgd %a0 params [@a] offsets [0] over @world[dp_shard] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @two_collectives(%ga: tensor<4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<4xf32>
  %r0 = ddp.all_reduce avg %a over @world[dp] {ddp.bucket = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{bucket 0: expected one ddp.all_reduce per bucket}}
  %r1 = ddp.all_reduce avg %a over @world[dp] {ddp.bucket = 0 : i64} : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
// expected-error @+1 {{bucket 3: no ddp.all_reduce carries its 'ddp.bucket'}}
func.func @no_collective(%ga: tensor<4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<4xf32>
  %p = ddp.bucket_pack %a offsets [0] {ddp.bucket = 3 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @not_all_reduce(%ga: tensor<4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<4xf32>
  // expected-error @+1 {{bucket 0: expected one ddp.all_reduce per bucket (or one ddp.reduce_scatter, under the distributed optimizer)}}
  %r = ddp.all_gather %a over @world[dp] {ddp.bucket = 0 : i64} : tensor<4xf32> -> tensor<8xf32>
  return
}
