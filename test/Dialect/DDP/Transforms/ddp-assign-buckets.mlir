// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=megatron bucket-size=200" -verify-diagnostics | FileCheck %s --check-prefix=MEGATRON
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=megatron bucket-size=200 use-distributed-optimizer=true" -verify-diagnostics | FileCheck %s --check-prefix=DISTOPT
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=megatron num-buckets=2" -verify-diagnostics | FileCheck %s --check-prefix=NUMBUCKETS
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=megatron bucket-size=1 overlap-grad-reduce=false" -verify-diagnostics | FileCheck %s --check-prefix=NOOVERLAP
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=pytorch first-bucket-bytes=400 bucket-cap-bytes=800" -verify-diagnostics | FileCheck %s --check-prefix=PYTORCH
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=pytorch bucket-cap-bytes=400" -verify-diagnostics | FileCheck %s --check-prefix=PYTORCHCAP
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=pytorch" -verify-diagnostics | FileCheck %s --check-prefix=PYTORCHDEFAULT
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=size bucket-bytes=400 average-in-collective=true check-for-nan-in-grad=true" -verify-diagnostics | FileCheck %s --check-prefix=SIZE
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=megatron use-distributed-optimizer=true grad-reduce-in-fp32=true" -verify-diagnostics | FileCheck %s --check-prefix=MIXED
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="policy=bogus" 2>&1 | FileCheck %s --check-prefix=BADPOLICY
// RUN: ddp-opt --help | FileCheck %s --check-prefix=HELP
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="policy=size" 2>&1 | FileCheck %s --check-prefix=NOBUDGET
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="num-distributed-optimizer-instances=2" 2>&1 | FileCheck %s --check-prefix=INSTANCES
// RUN: not ddp-opt %s -split-input-file --ddp-schedule="num-distributed-optimizer-instances=2" 2>&1 | FileCheck %s --check-prefix=INSTANCES
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="policy=auto use-distributed-optimizer=true num-distributed-optimizer-instances=2 dp=3" 2>&1 | FileCheck %s --check-prefix=AUTOINSTANCES
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="bucket-size=-5" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="bucket-size=10 num-buckets=2" 2>&1 | FileCheck %s --check-prefix=EXCLUSIVE
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="policy=auto bucket-size=10 num-buckets=2" 2>&1 | FileCheck %s --check-prefix=EXCLUSIVE
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="policy=size bucket-size=10 num-buckets=2" -verify-diagnostics -o /dev/null
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="use-distributed-optimizer=true num-distributed-optimizer-instances=0" 2>&1 | FileCheck %s --check-prefix=ZEROINSTANCES
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="overlap-param-gather=true" 2>&1 | FileCheck %s --check-prefix=PARAMGATHER
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="policy=pytorch bucket-cap-bytes=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVECAP
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="dp=9223372036854775807" 2>&1 | FileCheck %s --check-prefix=HUGEDP
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="dp=9223372036854775807 use-distributed-optimizer=true" 2>&1 | FileCheck %s --check-prefix=HUGEDPSHARDS
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="dp=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=HUGEGROUP
// RUN: not ddp-opt %s -split-input-file --ddp-assign-buckets="use-distributed-optimizer=true dp=4" 2>&1 | FileCheck %s --check-prefix=DPSHARDS
// RUN: ddp-opt %s -split-input-file --ddp-assign-buckets="use-distributed-optimizer=true dp=6" -verify-diagnostics -o /dev/null
// policy=auto on one rank's program of a pipeline prices the program
// alone (test/Pipelines/ddp-schedule-pipeline-auto.test: ddp-schedule
// weighs it against Megatron's layout in the whole pipeline).
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 | ddp-opt -ddp-pipeline-stages -ddp-assign-buckets="policy=auto" | FileCheck %s --check-prefix=AUTO-PP
// AUTO-PP: func.func @step_stage0({{.*}}ddp.bucket_policy = #ddp.bucket_policy<name = auto, hw = "h100-sxm-ib400", predicted_step_time_us =
// AUTO-PP: func.func @step_stage1({{.*}}ddp.bucket_policy = #ddp.bucket_policy<name = auto, hw = "h100-sxm-ib400", predicted_step_time_us =

// BADPOLICY: for the --policy option: Cannot find option named 'bogus'!

// HELP-LABEL: --ddp-assign-buckets
// HELP:       --policy=<value>
// HELP-NEXT:    =megatron
// HELP-NEXT:    =pytorch
// HELP-NEXT:    =size
// HELP-NEXT:    =auto
// The pass reports it when it starts; the pipeline at the module, with
// what the module records (here nothing).
// INSTANCES: error: {{(ddp-schedule: )?}}num-distributed-optimizer-instances=2 needs use-distributed-optimizer=true
// With dp=3 the simulator cannot resize the split mesh (dp_replicate,
// dp_shard = 2) of the scheduled step, so auto cannot price it.
// AUTOINSTANCES: error: the auto policy cannot price 2 distributed-optimizer instances: cannot simulate dp=3: it must be a multiple of 2, the size of the data-parallel axes after 'dp_replicate'

// NOBUDGET: error: the size policy needs exactly one of bucket-size (elements) and bucket-bytes
// NEGATIVE: error: bucket-size must not be negative, got -5
// NEGATIVECAP: error: bucket-cap-bytes must not be negative, got -1
// EXCLUSIVE: error: bucket-size and num-buckets are exclusive (Megatron: cannot specify both --ddp-num-buckets and --ddp-bucket-size)
// ZEROINSTANCES: error: num-distributed-optimizer-instances must be at least 1, got 0
// PARAMGATHER: error: overlap-param-gather=true needs use-distributed-optimizer=true
// Megatron's default bucket size, 1M elements x dp, would overflow int64; so
// would the group [dp, tp] of @model_parallel with dp resized to 2^62.
// HUGEDP: error: gradient of '{{.*}}' is reduced over a group of 9223372036854775807 ranks; bucketing supports at most 2147483647
// With the distributed optimizer too, not a dp= message whose padding
// overflowed (lcm(2^63 - 1, 128)).
// HUGEDPSHARDS-NOT: use-distributed-optimizer the buckets
// HUGEDPSHARDS: error: gradient of '{{.*}}' is reduced over a group of 9223372036854775807 ranks; bucketing supports at most 2147483647
// HUGEDPSHARDS-NOT: use-distributed-optimizer the buckets
// HUGEGROUP: error: with dp=4611686018427387904 the group ["dp", "tp"] of mesh model_parallel has more ranks than fit in int64
// Priced at dp=4, a bucket is padded to lcm(4, 128) = 128 elements, which
// the 3 ranks of @three_shards cannot shard; at dp=6, lcm(6, 128) = 384 they
// can.
// DPSHARDS: error: with dp=4 and use-distributed-optimizer the buckets of this group are padded to multiples of 128 elements for its 4 ranks, which do not split into the 3 shards the step's mesh gives it; import the step at that data-parallel size (ddp-import --set data_parallel_size=4) or pick a dp whose padding the mesh's group divides

// Four f32 gradients ready in reverse registration order over a 4-rank group.
// MEGATRON-LABEL: func.func @dense
// MEGATRON-SAME: ddp.bucket_policy = #ddp.bucket_policy<name = megatron>
// MEGATRON-SAME: ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 250, padded_numel = 250, average_in_collective = false, check_finite = false>,
// MEGATRON-SAME: #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 100, padded_numel = 100, average_in_collective = false, check_finite = false>]
// MEGATRON: ddp.grad_ready @d, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64}
// MEGATRON: ddp.grad_ready @c, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 50 : i64}
// MEGATRON: ddp.grad_ready @b, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 150 : i64}
// MEGATRON: ddp.grad_ready @a, %{{.*}} {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64}
// The reductions are untouched: assigning only records the decision.
// MEGATRON-COUNT-4: ddp.all_reduce avg

// Starts padded to 64 elements, ends to lcm(4, 128): b ends at 292.
// DISTOPT-LABEL: func.func @dense
// DISTOPT-SAME: numel = 292, padded_numel = 384
// DISTOPT-SAME: numel = 100, padded_numel = 128
// DISTOPT: ddp.grad_ready @d, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64}
// DISTOPT: ddp.grad_ready @c, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 64 : i64}
// DISTOPT: ddp.grad_ready @b, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 192 : i64}

// 350 elements / 2 = 175 per bucket.
// NUMBUCKETS-LABEL: func.func @dense
// NUMBUCKETS-SAME: numel = 250
// NUMBUCKETS-SAME: numel = 100

// Without overlap Megatron ignores the bucket size: one bucket.
// NOOVERLAP-LABEL: func.func @dense
// NOOVERLAP-SAME: ddp.buckets = [#ddp.bucket<{{[^>]*}}numel = 350, padded_numel = 350, {{[^>]*}}>]

// 4-byte elements: d + c reach the first 400 bytes, b + a the 800 after.
// PYTORCH-LABEL: func.func @dense
// PYTORCH-SAME: ddp.bucket_policy = #ddp.bucket_policy<name = pytorch>
// PYTORCH-SAME: numel = 150
// PYTORCH-SAME: numel = 200
// PYTORCH: ddp.grad_ready @d, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64}
// PYTORCH: ddp.grad_ready @c, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 50 : i64}
// PYTORCH: ddp.grad_ready @b, %{{.*}} {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64}
// PYTORCH: ddp.grad_ready @a, %{{.*}} {ddp.bucket = 1 : i64, ddp.bucket_offset = 100 : i64}

// As torch 2.x, an explicit bucket cap caps the first bucket too: d + c reach
// 400 bytes, then b and a.
// PYTORCHCAP-LABEL: func.func @dense
// PYTORCHCAP-SAME: ddp.buckets = [#ddp.bucket<{{[^>]*}} numel = 150, padded_numel = 150,
// PYTORCHCAP-SAME: #ddp.bucket<{{[^>]*}} numel = 100, padded_numel = 100,
// PYTORCHCAP-SAME: #ddp.bucket<{{[^>]*}} numel = 100, padded_numel = 100, {{[^>]*}}>]

// By default the first bucket holds up to 1 MiB: one bucket.
// PYTORCHDEFAULT-LABEL: func.func @dense
// PYTORCHDEFAULT-SAME: ddp.buckets = [#ddp.bucket<{{[^>]*}} numel = 350, padded_numel = 350, {{[^>]*}}>]

// SIZE-LABEL: func.func @dense
// SIZE-SAME: ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 150, padded_numel = 150, average_in_collective = true, check_finite = true>,
// SIZE-SAME: numel = 100
// SIZE-SAME: numel = 100
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<10x10xf32>
ddp.param @b : tensor<100xf32>
ddp.param @c : tensor<4x25xf32>
ddp.param @d : tensor<50xf32>
func.func @dense(%ga: tensor<10x10xf32>, %gb: tensor<100xf32>, %gc: tensor<4x25xf32>, %gd: tensor<50xf32>) {
  %d = ddp.grad_ready @d, %gd : tensor<50xf32>
  %c = ddp.grad_ready @c, %gc : tensor<4x25xf32>
  %b = ddp.grad_ready @b, %gb : tensor<100xf32>
  %a = ddp.grad_ready @a, %ga : tensor<10x10xf32>
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

// bf16 gradients, a shared embedding and an expert reduced over its own
// group. With the distributed optimizer Megatron isolates the shared
// embedding; the expert never shares a bucket with dense gradients; buckets
// are issued in the order they complete.
// MIXED-LABEL: func.func @moe
// MIXED-SAME: ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 32, padded_numel = 128, average_in_collective = false, check_finite = false>,
// MIXED-SAME: #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp", "ep"], numel = 256, padded_numel = 256, average_in_collective = false, check_finite = false>,
// MIXED-SAME: #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp", "ep"], numel = 64, padded_numel = 128, average_in_collective = false, check_finite = false>]
// MIXED: ddp.grad_ready @l1.w, %{{.*}} {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64}
// MIXED: ddp.grad_ready @e0.w, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64}
// MIXED: ddp.grad_ready @l0.w, %{{.*}} {ddp.bucket = 1 : i64, ddp.bucket_offset = 128 : i64}
// MIXED: ddp.grad_ready @emb, %{{.*}} {ddp.bucket = 2 : i64, ddp.bucket_offset = 0 : i64}
ddp.mesh @world(dp = 2, ep = 2)
ddp.param @emb shared_embedding : tensor<8x8xbf16>
ddp.param @l0.w layer 0 : tensor<16x8xbf16>
ddp.param @e0.w layer 0 expert : tensor<4x8xbf16>
ddp.param @l1.w layer 1 : tensor<16x8xbf16>
func.func @moe(%g1: tensor<16x8xbf16>, %ge: tensor<4x8xbf16>, %g0: tensor<16x8xbf16>, %gm: tensor<8x8xbf16>) {
  %l1 = ddp.grad_ready @l1.w, %g1 : tensor<16x8xbf16>
  %e0 = ddp.grad_ready @e0.w, %ge : tensor<4x8xbf16>
  %l0 = ddp.grad_ready @l0.w, %g0 : tensor<16x8xbf16>
  %em = ddp.grad_ready @emb, %gm : tensor<8x8xbf16>
  %r1 = ddp.all_reduce avg %l1 over @world[dp, ep] : tensor<16x8xbf16>
  %re = ddp.all_reduce avg %e0 over @world[dp] : tensor<4x8xbf16>
  %r0 = ddp.all_reduce avg %l0 over @world[dp, ep] : tensor<16x8xbf16>
  %rm = ddp.all_reduce avg %em over @world[dp, ep] : tensor<8x8xbf16>
  ddp.sgd @l1.w, %r1 lr 0.1 : tensor<16x8xbf16>
  ddp.sgd @e0.w, %re lr 0.1 : tensor<4x8xbf16>
  ddp.sgd @l0.w, %r0 lr 0.1 : tensor<16x8xbf16>
  ddp.sgd @emb, %rm lr 0.1 : tensor<8x8xbf16>
  return
}

// -----

// bf16 weights and f32 norms (issue 11). The f32 bucket never fills and is
// issued last, after the bf16 bucket that closes after it started; sorted by
// smallest index it would come second and hold back w1 and w0.
// PYTORCH-LABEL: func.func @norms
// PYTORCH-SAME: ddp.buckets = [#ddp.bucket<dtype = bf16{{[^>]*}} numel = 200, padded_numel = 200,
// PYTORCH-SAME: #ddp.bucket<dtype = bf16{{[^>]*}} numel = 400, padded_numel = 400,
// PYTORCH-SAME: #ddp.bucket<dtype = f32{{[^>]*}} numel = 8, padded_numel = 8,
// PYTORCH: ddp.grad_ready @w2, %{{.*}} {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64}
// PYTORCH: ddp.grad_ready @n1, %{{.*}} {ddp.bucket = 2 : i64, ddp.bucket_offset = 0 : i64}
// PYTORCH: ddp.grad_ready @w1, %{{.*}} {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64}
// PYTORCH: ddp.grad_ready @n0, %{{.*}} {ddp.bucket = 2 : i64, ddp.bucket_offset = 4 : i64}
// PYTORCH: ddp.grad_ready @w0, %{{.*}} {ddp.bucket = 1 : i64, ddp.bucket_offset = 200 : i64}
ddp.mesh @world(dp = 4)
ddp.param @w0 : tensor<200xbf16>
ddp.param @n0 : tensor<4xf32>
ddp.param @w1 : tensor<200xbf16>
ddp.param @n1 : tensor<4xf32>
ddp.param @w2 : tensor<200xbf16>
func.func @norms(%gw0: tensor<200xbf16>, %gn0: tensor<4xf32>, %gw1: tensor<200xbf16>, %gn1: tensor<4xf32>, %gw2: tensor<200xbf16>) {
  %w2 = ddp.grad_ready @w2, %gw2 : tensor<200xbf16>
  %n1 = ddp.grad_ready @n1, %gn1 : tensor<4xf32>
  %w1 = ddp.grad_ready @w1, %gw1 : tensor<200xbf16>
  %n0 = ddp.grad_ready @n0, %gn0 : tensor<4xf32>
  %w0 = ddp.grad_ready @w0, %gw0 : tensor<200xbf16>
  %rw2 = ddp.all_reduce avg %w2 over @world[dp] : tensor<200xbf16>
  %rn1 = ddp.all_reduce avg %n1 over @world[dp] : tensor<4xf32>
  %rw1 = ddp.all_reduce avg %w1 over @world[dp] : tensor<200xbf16>
  %rn0 = ddp.all_reduce avg %n0 over @world[dp] : tensor<4xf32>
  %rw0 = ddp.all_reduce avg %w0 over @world[dp] : tensor<200xbf16>
  ddp.sgd @w2, %rw2 lr 0.1 : tensor<200xbf16>
  ddp.sgd @n1, %rn1 lr 0.1 : tensor<4xf32>
  ddp.sgd @w1, %rw1 lr 0.1 : tensor<200xbf16>
  ddp.sgd @n0, %rn0 lr 0.1 : tensor<4xf32>
  ddp.sgd @w0, %rw0 lr 0.1 : tensor<200xbf16>
  return
}

// -----

// 2^59 f32 elements are 2^61 bytes; two such gradients with their padding
// take more than the 2^62 bytes that keep every layout's arithmetic in int64.
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<576460752303423488xf32>
ddp.param @b : tensor<576460752303423488xf32>
// expected-error @+1 {{the gradients up to 'b' take more than 2^62 bytes; bucketing supports no more}}
func.func @too_many_bytes(%ga: tensor<576460752303423488xf32>, %gb: tensor<576460752303423488xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<576460752303423488xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<576460752303423488xf32>
  %b = ddp.grad_ready @b, %gb : tensor<576460752303423488xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<576460752303423488xf32>
  return
}

// -----

ddp.mesh @model_parallel(dp = 2, tp = 2)
ddp.param @a : tensor<8xf32>
func.func @two_axes(%g: tensor<8xf32>) {
  %a = ddp.grad_ready @a, %g : tensor<8xf32>
  %r = ddp.all_reduce avg %a over @model_parallel[dp, tp] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8xf32>
func.func @reduced_twice(%g: tensor<8xf32>) {
  // expected-error @+1 {{the gradient of @a is reduced by more than one ddp.all_reduce; bucketing needs exactly one}}
  %a = ddp.grad_ready @a, %g : tensor<8xf32>
  %r0 = ddp.all_reduce avg %a over @world[dp] : tensor<8xf32>
  %r1 = ddp.all_reduce sum %a over @world[dp] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @mixed_reductions(%ga: tensor<8xf32>, %gb: tensor<8xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %b = ddp.grad_ready @b, %gb : tensor<8xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<8xf32>
  // expected-error @+1 {{reduces with 'sum' where @a in the same group [dp] uses 'avg'; a bucket has one reduction}}
  %rb = ddp.all_reduce sum %b over @world[dp] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 4)
ddp.mesh @other(dp = 4)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @two_meshes(%ga: tensor<8xf32>, %gb: tensor<8xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %b = ddp.grad_ready @b, %gb : tensor<8xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<8xf32>
  // expected-error @+1 {{bucketing needs every gradient reduced over one mesh; this one uses @other and an earlier one @world}}
  %rb = ddp.all_reduce avg %b over @other[dp] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 3)
ddp.param @a : tensor<8xf32>
func.func @three_shards(%ga: tensor<8xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<8xf32>
  ddp.sgd @a, %ra lr 0.5 : tensor<8xf32>
  return
}
