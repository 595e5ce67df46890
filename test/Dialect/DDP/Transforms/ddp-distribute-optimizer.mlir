// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-distribute-optimizer -verify-diagnostics | FileCheck %s
// Buckets already sharded are left alone.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-distribute-optimizer --ddp-distribute-optimizer -verify-diagnostics | FileCheck %s
// A failing run changes nothing, not even the buckets that were valid.
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-distribute-optimizer --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=UNTOUCHED

// Two f32 buckets on dp = 4 (what ddp-bucketize makes of them): each
// all-reduce becomes a reduce-scatter into a quarter of the bucket, in its
// place; the optimizer ops of a bucket become one shard_sgd, all_gather and
// set_params where the bucket's first optimizer op was.
// CHECK-LABEL: func.func @two_buckets
// CHECK:      %[[P0:.*]] = ddp.bucket_pack
// CHECK-NEXT: %[[S0:.*]] = ddp.scale %[[P0]] by 0.25 {ddp.bucket = 0 : i64} : tensor<152xf32>
// CHECK-NEXT: %[[R0:.*]] = ddp.reduce_scatter sum %[[S0]] over @world[dp] {ddp.bucket = 0 : i64} : tensor<152xf32> -> tensor<38xf32>
// CHECK-NEXT: %[[P1:.*]] = ddp.bucket_pack
// CHECK-NEXT: %[[R1:.*]] = ddp.reduce_scatter avg %[[P1]] over @world[dp] {ddp.bucket = 1 : i64} : tensor<256xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[N0:.*]] = ddp.shard_sgd %[[R0]] params [@d, @c] offsets [0, 52] over @world[dp] lr 0.1 : tensor<38xf32> -> tensor<38xf32>
// CHECK-NEXT: %[[G0:.*]] = ddp.all_gather %[[N0]] over @world[dp] : tensor<38xf32> -> tensor<152xf32>
// CHECK-NEXT: ddp.set_params %[[G0]] params [@d, @c] offsets [0, 52] : tensor<152xf32>
// CHECK-NEXT: %[[N1:.*]] = ddp.shard_sgd %[[R1]] params [@b, @a] offsets [0, 128] over @world[dp] lr 0.1 : tensor<64xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[G1:.*]] = ddp.all_gather %[[N1]] over @world[dp] : tensor<64xf32> -> tensor<256xf32>
// CHECK-NEXT: ddp.set_params %[[G1]] params [@b, @a] offsets [0, 128] : tensor<256xf32>
// CHECK-NEXT: return
// CHECK-NOT: ddp.sgd
// CHECK-NOT: ddp.all_reduce
// CHECK-NOT: ddp.bucket_unpack
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<10x10xf32>
ddp.param @b : tensor<100xf32>
ddp.param @c : tensor<4x25xf32>
ddp.param @d : tensor<50xf32>
func.func @two_buckets(%ga: tensor<10x10xf32>, %gb: tensor<100xf32>, %gc: tensor<4x25xf32>, %gd: tensor<50xf32>) {
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

// grad-reduce-in-fp32 with Adam on bf16 parameters, dp = 3: the f32 shard is
// cast to bf16 as each gradient was cast back (so the optimizer reads what
// ddp.adam read), the shard optimizer returns bf16 parameters, and the
// gathered bucket is bf16. The optimizer ops were apart (a get_param of
// another parameter between them): the shard's ops go to the first.
// CHECK-LABEL: func.func @fp32_bucket_adam
// CHECK:      %[[R:.*]] = ddp.reduce_scatter sum %{{.*}} over @world[dp] {ddp.bucket = 0 : i64} : tensor<384xf32> -> tensor<128xf32>
// CHECK-NEXT: %[[C:.*]] = ddp.cast %[[R]] {ddp.bucket = 0 : i64} : tensor<128xf32> to tensor<128xbf16>
// CHECK-NEXT: %[[N:.*]] = ddp.shard_adam %[[C]] params [@w, @v] offsets [0, 128] over @world[dp] lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<128xbf16> -> tensor<128xbf16>
// CHECK-NEXT: %[[G:.*]] = ddp.all_gather %[[N]] over @world[dp] : tensor<128xbf16> -> tensor<384xbf16>
// CHECK-NEXT: ddp.set_params %[[G]] params [@w, @v] offsets [0, 128] : tensor<384xbf16>
// CHECK-NEXT: ddp.get_param @x
// CHECK-NEXT: return
ddp.mesh @world(dp = 3)
ddp.param @v : tensor<16x16xbf16>
ddp.param @w : tensor<100xbf16>
ddp.param @x : tensor<4xbf16>
func.func @fp32_bucket_adam(%gw: tensor<100xbf16>, %gv: tensor<16x16xbf16>) {
  %w = ddp.grad_ready @w, %gw : tensor<100xbf16>
  %v = ddp.grad_ready @v, %gv : tensor<16x16xbf16>
  %cw = ddp.cast %w {ddp.bucket = 0 : i64} : tensor<100xbf16> to tensor<100xf32>
  %cv = ddp.cast %v {ddp.bucket = 0 : i64} : tensor<16x16xbf16> to tensor<16x16xf32>
  %p = ddp.bucket_pack %cw, %cv offsets [0, 128] {ddp.bucket = 0 : i64} : tensor<100xf32>, tensor<16x16xf32> -> tensor<384xf32>
  %r = ddp.all_reduce sum %p over @world[dp] {ddp.bucket = 0 : i64} : tensor<384xf32>
  %u:2 = ddp.bucket_unpack %r offsets [0, 128] {ddp.bucket = 0 : i64} : tensor<384xf32> -> tensor<100xf32>, tensor<16x16xf32>
  %bw = ddp.cast %u#0 {ddp.bucket = 0 : i64} : tensor<100xf32> to tensor<100xbf16>
  %bv = ddp.cast %u#1 {ddp.bucket = 0 : i64} : tensor<16x16xf32> to tensor<16x16xbf16>
  ddp.adam @w, %bw lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<100xbf16>
  %x = ddp.get_param @x : tensor<4xbf16>
  ddp.adam @v, %bv lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<16x16xbf16>
  return
}

// -----

// A step without buckets is left alone.
// CHECK-LABEL: func.func @no_buckets
// CHECK-NEXT: ddp.all_reduce avg
// CHECK-NEXT: ddp.sgd @a
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @no_buckets(%g: tensor<8xf32>) {
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<8xf32>
  ddp.sgd @a, %r lr 0.1 : tensor<8xf32>
  return
}

// -----

// Errors. The first bucket is valid; the failing run must not touch it.
// UNTOUCHED-LABEL: func.func @not_divisible
// UNTOUCHED: ddp.all_reduce sum %{{.*}} over @world[dp] {ddp.bucket = 0 : i64} : tensor<9xf32>
// UNTOUCHED: ddp.sgd @a
ddp.mesh @world(dp = 3)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<10xf32>
func.func @not_divisible(%ga: tensor<9xf32>, %gb: tensor<10xf32>) {
  %r0 = ddp.all_reduce sum %ga over @world[dp] {ddp.bucket = 0 : i64} : tensor<9xf32>
  %u0 = ddp.bucket_unpack %r0 offsets [0] {ddp.bucket = 0 : i64} : tensor<9xf32> -> tensor<8xf32>
  ddp.sgd @a, %u0 lr 0.1 : tensor<8xf32>
  // expected-error @+1 {{bucket 1: its 10 elements do not split into 3 equal shards; lay the buckets out with use-distributed-optimizer, which pads them to a multiple of the group size}}
  %r1 = ddp.all_reduce sum %gb over @world[dp] {ddp.bucket = 1 : i64} : tensor<10xf32>
  %u1 = ddp.bucket_unpack %r1 offsets [0] {ddp.bucket = 1 : i64} : tensor<10xf32> -> tensor<10xf32>
  ddp.sgd @b, %u1 lr 0.1 : tensor<10xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @gradient_used_elsewhere(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  // expected-error @+1 {{bucket 0: the reduced gradient at offset 0 has 2 uses; the distributed optimizer needs it to feed its parameter's optimizer alone}}
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<8xf32>
  return %u : tensor<8xf32>
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @gradient_not_optimized(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  // expected-error @+1 {{bucket 0: the reduced gradient at offset 0 is read by 'func.return'; the distributed optimizer needs it to feed its parameter's optimizer (ddp.sgd or ddp.adam at the top level of the step) alone}}
  return %u : tensor<8xf32>
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @bucket_read_directly(%g: tensor<8xf32>) {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  // expected-error @+1 {{bucket 0: reads the reduced bucket; only ddp.bucket_unpack may}}
  ddp.sgd @a, %r lr 0.1 : tensor<8xf32>
  return
}

// -----

// A bucket whose parameters differ in element type, gradient type or
// optimizer settings (a policy other than megatron can mix them) gets one
// shard optimizer, all_gather and set_params per kind of update, in order of
// the kinds' first parameters; the shard is cast once per gradient type.
// CHECK-LABEL: func.func @mixed_updates
// CHECK:      %[[R:.*]] = ddp.reduce_scatter sum %{{.*}} : tensor<32xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[N0:.*]] = ddp.shard_sgd %[[R]] params [@a, @d] offsets [0, 24] over @world[dp] lr 0.1 : tensor<16xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[G0:.*]] = ddp.all_gather %[[N0]] {{.*}} -> tensor<32xf32>
// CHECK-NEXT: ddp.set_params %[[G0]] params [@a, @d] offsets [0, 24] : tensor<32xf32>
// CHECK-NEXT: %[[N1:.*]] = ddp.shard_sgd %[[R]] params [@b] offsets [8] over @world[dp] lr 0.2 : tensor<16xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[G1:.*]] = ddp.all_gather %[[N1]] {{.*}} -> tensor<32xf32>
// CHECK-NEXT: ddp.set_params %[[G1]] params [@b] offsets [8] : tensor<32xf32>
// CHECK-NEXT: %[[C:.*]] = ddp.cast %[[R]] {ddp.bucket = 0 : i64} : tensor<16xf32> to tensor<16xbf16>
// CHECK-NEXT: %[[N2:.*]] = ddp.shard_sgd %[[C]] params [@c] offsets [16] over @world[dp] lr 0.1 : tensor<16xbf16> -> tensor<16xbf16>
// CHECK-NEXT: %[[G2:.*]] = ddp.all_gather %[[N2]] {{.*}} -> tensor<32xbf16>
// CHECK-NEXT: ddp.set_params %[[G2]] params [@c] offsets [16] : tensor<32xbf16>
// CHECK-NEXT: return
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
ddp.param @c : tensor<8xbf16>
ddp.param @d : tensor<8xf32>
func.func @mixed_updates(%g: tensor<32xf32>) {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<32xf32>
  %u:4 = ddp.bucket_unpack %r offsets [0, 8, 16, 24] {ddp.bucket = 0 : i64} : tensor<32xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  %c = ddp.cast %u#2 {ddp.bucket = 0 : i64} : tensor<8xf32> to tensor<8xbf16>
  ddp.sgd @a, %u#0 lr 0.1 : tensor<8xf32>
  ddp.sgd @b, %u#1 lr 0.2 : tensor<8xf32>
  ddp.sgd @c, %c lr 0.1 : tensor<8xbf16>
  ddp.sgd @d, %u#3 lr 0.1 : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @updated_twice(%g: tensor<8xf32>, %h: tensor<8xf32>) {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  // expected-error @+1 {{bucket 0: @a is updated 2 times in the step; the distributed optimizer updates each parameter once}}
  ddp.sgd @a, %u lr 0.1 : tensor<8xf32>
  ddp.sgd @a, %h lr 0.1 : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @read_between_updates(%g: tensor<16xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<16xf32>
  %u:2 = ddp.bucket_unpack %r offsets [0, 8] {ddp.bucket = 0 : i64} : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
  // expected-note @+1 {{the bucket's first optimizer update}}
  ddp.sgd @a, %u#0 lr 0.1 : tensor<8xf32>
  // expected-error @+1 {{bucket 0: reads @b after the bucket's first optimizer update, before its own; the distributed optimizer writes the bucket's parameters at the first}}
  %b = ddp.get_param @b : tensor<8xf32>
  ddp.sgd @b, %u#1 lr 0.1 : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @already_async(%g: tensor<8xf32>) {
  // expected-error @+1 {{bucket 0: its reduction is already asynchronous; distribute the optimizer before ddp-overlap-grad-reduce}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async {ddp.bucket = 0 : i64} : tensor<8xf32>
  ddp.wait %t {ddp.bucket = 0 : i64}
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @max_reduction(%g: tensor<8xf32>) {
  // expected-error @+1 {{bucket 0: a 'max' reduction has no optimizer to shard}}
  %r = ddp.all_reduce max %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
  %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
  ddp.sgd @a, %u lr 0.1 : tensor<8xf32>
  return
}

// -----

// (An unknown op with two regions stands for control flow; with one it could
// be a symbol table hiding the mesh.)
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @nested_reduction(%g: tensor<8xf32>) {
  "test.region"() ({
    // expected-error @+1 {{bucket 0: its reduction must be at the top level of the step, where the shard optimizer goes}}
    %r = ddp.all_reduce sum %g over @world[dp] {ddp.bucket = 0 : i64} : tensor<8xf32>
    %u = ddp.bucket_unpack %r offsets [0] {ddp.bucket = 0 : i64} : tensor<8xf32> -> tensor<8xf32>
    ddp.sgd @a, %u lr 0.1 : tensor<8xf32>
    "test.yield"() : () -> ()
  }, {
    "test.yield"() : () -> ()
  }) : () -> ()
  return
}
