// RUN: ddp-opt %s -split-input-file --ddp-bucketize -verify-diagnostics | FileCheck %s
// Buckets already materialised are left alone.
// RUN: ddp-opt %s -split-input-file --ddp-bucketize --ddp-bucketize -verify-diagnostics | FileCheck %s
// A failing run changes nothing, not even the buckets that were valid.
// RUN: not ddp-opt %s -split-input-file --ddp-bucketize --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=UNTOUCHED

// Bucket 0 is pre-scaled by 1/4 and summed (Megatron's default); bucket 1
// averages in the collective and is checked for NaN/Inf first. Each bucket
// goes where its last reduction was, and the optimizer reads the unpacked
// gradients.
// CHECK-LABEL: func.func @two_buckets
// CHECK-SAME: (%[[GA:.*]]: tensor<10x10xf32>, %[[GB:.*]]: tensor<100xf32>, %[[GC:.*]]: tensor<4x25xf32>, %[[GD:.*]]: tensor<50xf32>)
// CHECK:      %[[D:.*]] = ddp.grad_ready @d
// CHECK:      %[[C:.*]] = ddp.grad_ready @c
// CHECK:      %[[B:.*]] = ddp.grad_ready @b
// CHECK:      %[[A:.*]] = ddp.grad_ready @a
// CHECK-NEXT: %[[P0:.*]] = ddp.bucket_pack %[[D]], %[[C]] offsets [0, 50] {ddp.bucket = 0 : i64} : tensor<50xf32>, tensor<4x25xf32> -> tensor<150xf32>
// CHECK-NEXT: %[[S0:.*]] = ddp.scale %[[P0]] by 0.25 {ddp.bucket = 0 : i64} : tensor<150xf32>
// CHECK-NEXT: %[[R0:.*]] = ddp.all_reduce sum %[[S0]] over @world[dp] {ddp.bucket = 0 : i64} : tensor<150xf32>
// CHECK-NEXT: %[[U0:.*]]:2 = ddp.bucket_unpack %[[R0]] offsets [0, 50] {ddp.bucket = 0 : i64} : tensor<150xf32> -> tensor<50xf32>, tensor<4x25xf32>
// CHECK-NEXT: %[[P1:.*]] = ddp.bucket_pack %[[B]], %[[A]] offsets [0, 128] {ddp.bucket = 1 : i64} : tensor<100xf32>, tensor<10x10xf32> -> tensor<256xf32>
// CHECK-NEXT: ddp.check_finite %[[P1]] bucket 1 params [@b, @a] offsets [0, 128] {ddp.bucket = 1 : i64} : tensor<256xf32>
// CHECK-NEXT: %[[R1:.*]] = ddp.all_reduce avg %[[P1]] over @world[dp] {ddp.bucket = 1 : i64} : tensor<256xf32>
// CHECK-NEXT: %[[U1:.*]]:2 = ddp.bucket_unpack %[[R1]] offsets [0, 128] {ddp.bucket = 1 : i64} : tensor<256xf32> -> tensor<100xf32>, tensor<10x10xf32>
// CHECK-NEXT: ddp.sgd @d, %[[U0]]#0
// CHECK-NEXT: ddp.sgd @c, %[[U0]]#1
// CHECK-NEXT: ddp.sgd @b, %[[U1]]#0
// CHECK-NEXT: ddp.sgd @a, %[[U1]]#1
// CHECK-NOT: ddp.all_reduce
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<10x10xf32>
ddp.param @b : tensor<100xf32>
ddp.param @c : tensor<4x25xf32>
ddp.param @d : tensor<50xf32>
func.func @two_buckets(%ga: tensor<10x10xf32>, %gb: tensor<100xf32>, %gc: tensor<4x25xf32>, %gd: tensor<50xf32>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 150, padded_numel = 150, average_in_collective = false, check_finite = false>,
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 228, padded_numel = 256, average_in_collective = true, check_finite = true>]} {
  %d = ddp.grad_ready @d, %gd {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<50xf32>
  %c = ddp.grad_ready @c, %gc {ddp.bucket = 0 : i64, ddp.bucket_offset = 50 : i64} : tensor<4x25xf32>
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64} : tensor<100xf32>
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 1 : i64, ddp.bucket_offset = 128 : i64} : tensor<10x10xf32>
  %rd = ddp.all_reduce avg %d over @world[dp] : tensor<50xf32>
  %rc = ddp.all_reduce avg %c over @world[dp] : tensor<4x25xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<100xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<10x10xf32>
  ddp.sgd @d, %rd lr 0.1 : tensor<50xf32>
  ddp.sgd @c, %rc lr 0.1 : tensor<4x25xf32>
  ddp.sgd @b, %rb lr 0.1 : tensor<100xf32>
  ddp.sgd @a, %ra lr 0.1 : tensor<10x10xf32>
  return
}

// -----

// grad-reduce-in-fp32: bf16 gradients cast into an f32 bucket and back;
// a gradient reduced with `sum` is not pre-scaled.
// CHECK-LABEL: func.func @fp32_bucket
// CHECK:      %[[W:.*]] = ddp.grad_ready @w
// CHECK-NEXT: %[[V:.*]] = ddp.grad_ready @v
// CHECK-NEXT: %[[CW:.*]] = ddp.cast %[[W]] {ddp.bucket = 0 : i64} : tensor<4x4xbf16> to tensor<4x4xf32>
// CHECK-NEXT: %[[CV:.*]] = ddp.cast %[[V]] {ddp.bucket = 0 : i64} : tensor<8xbf16> to tensor<8xf32>
// CHECK-NEXT: %[[P:.*]] = ddp.bucket_pack %[[CW]], %[[CV]] offsets [0, 16] {ddp.bucket = 0 : i64}
// CHECK-NEXT: %[[R:.*]] = ddp.all_reduce sum %[[P]] over @world[dp]
// CHECK-NEXT: %[[U:.*]]:2 = ddp.bucket_unpack %[[R]] offsets [0, 16] {ddp.bucket = 0 : i64} : tensor<24xf32> -> tensor<4x4xf32>, tensor<8xf32>
// CHECK-NEXT: %[[BW:.*]] = ddp.cast %[[U]]#0 {ddp.bucket = 0 : i64} : tensor<4x4xf32> to tensor<4x4xbf16>
// CHECK-NEXT: %[[BV:.*]] = ddp.cast %[[U]]#1 {ddp.bucket = 0 : i64} : tensor<8xf32> to tensor<8xbf16>
// CHECK-NEXT: ddp.sgd @w, %[[BW]]
// CHECK-NEXT: ddp.sgd @v, %[[BV]]
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4x4xbf16>
ddp.param @v : tensor<8xbf16>
func.func @fp32_bucket(%gw: tensor<4x4xbf16>, %gv: tensor<8xbf16>) attributes {
    ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 24, padded_numel = 24, average_in_collective = false, check_finite = false>]} {
  %w = ddp.grad_ready @w, %gw {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4x4xbf16>
  %v = ddp.grad_ready @v, %gv {ddp.bucket = 0 : i64, ddp.bucket_offset = 16 : i64} : tensor<8xbf16>
  %rw = ddp.all_reduce sum %w over @world[dp] : tensor<4x4xbf16>
  %rv = ddp.all_reduce sum %v over @world[dp] : tensor<8xbf16>
  ddp.sgd @w, %rw lr 0.1 : tensor<4x4xbf16>
  ddp.sgd @v, %rv lr 0.1 : tensor<8xbf16>
  return
}

// -----

// PyTorch's order: bucket 0 ({a, d}) completes after bucket 1 ({b}), but is
// still issued first; bucket 1 follows it.
// CHECK-LABEL: func.func @issue_order
// CHECK:      ddp.all_reduce avg %{{.*}} {ddp.bucket = 0 : i64} : tensor<2xf32>
// CHECK-NEXT: ddp.bucket_unpack {{.*}}ddp.bucket = 0
// CHECK-NEXT: ddp.bucket_pack {{.*}}ddp.bucket = 1
// CHECK-NEXT: ddp.all_reduce avg %{{.*}} {ddp.bucket = 1 : i64} : tensor<1xf32>
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<1xf32>
ddp.param @b : tensor<1xf32>
ddp.param @d : tensor<1xf32>
func.func @issue_order(%ga: tensor<1xf32>, %gb: tensor<1xf32>, %gd: tensor<1xf32>) attributes {
    ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 2, padded_numel = 2, average_in_collective = true, check_finite = false>,
                   #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 1, padded_numel = 1, average_in_collective = true, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<1xf32>
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64} : tensor<1xf32>
  %d = ddp.grad_ready @d, %gd {ddp.bucket = 0 : i64, ddp.bucket_offset = 1 : i64} : tensor<1xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<1xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<1xf32>
  %rd = ddp.all_reduce avg %d over @world[dp] : tensor<1xf32>
  ddp.sgd @a, %ra lr 0.1 : tensor<1xf32>
  ddp.sgd @b, %rb lr 0.1 : tensor<1xf32>
  ddp.sgd @d, %rd lr 0.1 : tensor<1xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
// expected-error @+1 {{'ddp.buckets' must be an array of #ddp.bucket attributes}}
func.func @not_an_array(%g: tensor<4xf32>) attributes {ddp.buckets = 3} {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{#ddp.bucket needs 'dtype', one of f16, bf16, f32, f64, got 'i32'}}
func.func @no_dtype() attributes {ddp.buckets = [#ddp.bucket<dtype = i32, mesh = @world, axes = ["dp"], numel = 1, padded_numel = 1, average_in_collective = false, check_finite = false>]} {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{#ddp.bucket has numel 8 and padded_numel 4; it needs 1 <= numel <= padded_numel}}
func.func @bad_sizes() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 8, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{expected 'true' or 'false'}}
func.func @bad_flag() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 1, padded_numel = 1, average_in_collective = 0, check_finite = false>]} {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{#ddp.bucket is missing 'numel'}}
func.func @missing_field() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], padded_numel = 1, average_in_collective = false, check_finite = false>]} {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{#ddp.bucket has 'numel' twice}}
func.func @field_twice() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 1, numel = 1, padded_numel = 1, average_in_collective = false, check_finite = false>]} {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{#ddp.bucket has no field 'size'}}
func.func @unknown_field() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], size = 1, numel = 1, padded_numel = 1, average_in_collective = false, check_finite = false>]} {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{#ddp.bucket needs 'axes', a non-empty array of mesh axis names}}
func.func @no_axes() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = [], numel = 1, padded_numel = 1, average_in_collective = false, check_finite = false>]} {
  return
}

// -----

// The dictionaries ddp.buckets held before #ddp.bucket are named as such.
ddp.mesh @world(dp = 2)
// expected-error @+1 {{bucket 0 in 'ddp.buckets' is not a #ddp.bucket: {average_in_collective = false}}}
func.func @dictionary() attributes {ddp.buckets = [{average_in_collective = false}]} {
  return
}

// -----

// expected-error @+1 {{#ddp.bucket_policy: only the auto policy records 'hw' and 'predicted_step_time_us', not megatron}}
func.func @policy_with_hw() attributes {ddp.bucket_policy = #ddp.bucket_policy<name = megatron, hw = "h100-sxm-ib400">} {
  return
}

// -----

// expected-error @+1 {{#ddp.bucket_policy: 'predicted_step_time_us' must be finite and not negative, got -1.000000e+00}}
func.func @negative_time() attributes {ddp.bucket_policy = #ddp.bucket_policy<name = auto, predicted_step_time_us = -1.0>} {
  return
}

// -----

// expected-error @+2 {{expected ::ddp::BucketPolicy to be one of: megatron, pytorch, size, auto}}
// expected-error @+1 {{failed to parse DDP_BucketPolicyAttr parameter 'name' which is to be a `::ddp::BucketPolicy`}}
func.func @unknown_policy() attributes {ddp.bucket_policy = #ddp.bucket_policy<name = bogus>} {
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @out_of_range(%g: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  // expected-error @+1 {{is assigned to bucket 1, but 'ddp.buckets' of the step has 1 buckets}}
  %a = ddp.grad_ready @a, %g {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  %r = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{bucket 0: no gradient is assigned to it}}
func.func @empty() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @overlap(%ga: tensor<4xf32>, %gb: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 6, padded_numel = 8, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{bucket 0: the gradient of @b at offset 2 overlaps the gradient before it, which ends at element 4}}
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 0 : i64, ddp.bucket_offset = 2 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @past_the_end(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  // expected-error @+1 {{bucket 0: the gradient of @a ends at element 5, past the 4 elements of the bucket}}
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 1 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @end_overflows(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  // expected-error @+1 {{bucket 0: the gradient of @a at offset 9223372036854775807 with 4 elements ends past the 4 elements of the bucket}}
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 9223372036854775807 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
// A bucket of 2^62 f32 elements would take 2^64 bytes.
// expected-error @+1 {{#ddp.bucket has padded_numel 4611686018427387904; its 'f32' buffer would take 2^63 bytes or more}}
func.func @bucket_too_large(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4611686018427387904, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
// expected-error @+1 {{bucket 0: 'numel' is 3 but its last gradient ends at element 4}}
func.func @wrong_numel(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 3, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2, tp = 2)
ddp.param @a : tensor<4xf32>
func.func @wrong_group(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{bucket 0: the gradient of @a is reduced over @world[dp,tp] but the bucket over @world[dp]}}
  %ra = ddp.all_reduce avg %a over @world[dp, tp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @mixed_reduction(%ga: tensor<4xf32>, %gb: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 8, padded_numel = 8, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 0 : i64, ddp.bucket_offset = 4 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  // expected-error @+1 {{bucket 0: the gradient of @b is reduced with 'sum', the bucket's first gradient with 'avg'}}
  %rb = ddp.all_reduce sum %b over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @not_reduced(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  // expected-error @+1 {{bucket 0: the gradient of @a has no synchronous ddp.all_reduce to replace}}
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  ddp.sgd @a, %a lr 0.1 : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @used_too_early(%ga: tensor<4xf32>, %gb: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 8, padded_numel = 8, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  // expected-error @+1 {{bucket 0: uses the reduced gradient of @a before the bucket is complete}}
  ddp.sgd @a, %ra lr 0.1 : tensor<4xf32>
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 0 : i64, ddp.bucket_offset = 4 : i64} : tensor<4xf32>
  // expected-note @+1 {{the bucket's collective goes after this op}}
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<4xf32>
  ddp.sgd @b, %rb lr 0.1 : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
// expected-error @+1 {{bucket 0: 1 of its 2 gradients are already in a materialised bucket; assign the others to a bucket of their own}}
func.func @partly(%ga: tensor<4xf32>, %gb: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 8, padded_numel = 8, average_in_collective = true, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 0 : i64, ddp.bucket_offset = 4 : i64} : tensor<4xf32>
  %p = ddp.bucket_pack %a offsets [0] {ddp.bucket = 0 : i64} : tensor<4xf32> -> tensor<8xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<4xf32>
  return
}

// -----

// UNTOUCHED-LABEL: func.func @untouched
// UNTOUCHED-NOT: ddp.bucket_pack
// UNTOUCHED-COUNT-2: ddp.all_reduce avg
// UNTOUCHED: return
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @untouched(%ga: tensor<4xf32>, %gb: tensor<4xf32>) attributes {ddp.buckets = [
    #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>,
    #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{bucket 1: the gradient of @b ends at element 6, past the 4 elements of the bucket}}
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 1 : i64, ddp.bucket_offset = 2 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<4xf32>
  return
}
