// RUN: ddp-opt -ddp-step-stats %s -split-input-file -o /dev/null | FileCheck %s
// The second step scheduled as Megatron counts it (f32 gradients), with and
// without the distributed optimizer (alone: the others are scheduled
// already, which ddp-schedule refuses).
// RUN: awk '/^\/\/ -----/ { n++; next } n == 1' %s > %t.second.mlir
// RUN: ddp-opt %t.second.mlir --ddp-schedule="grad-reduce-in-fp32=true" -ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=WHOLE
// RUN: ddp-opt %t.second.mlir --ddp-schedule="grad-reduce-in-fp32=true use-distributed-optimizer=true" -ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=SHARDED
// Hybrid FSDP: the parameters stored as shards over [dp_shard], their
// optimizer state over both axes; each group counts the elements it shards
// (the stored shards' once read 0):
// RUN: ddp-opt %t.second.mlir --ddp-schedule="grad-reduce-in-fp32=true use-distributed-optimizer=true data-parallel-sharding-strategy=optim_grads_params num-distributed-optimizer-instances=2 outer-dp-sharding-strategy=optim" -ddp-step-stats -o /dev/null | FileCheck %s --check-prefix=HYBRID
// HYBRID: sharded over [dp_shard] (2 ranks; summed over them, 16 parameter elements): parameters 32, main parameters 0, optimizer state 0
// HYBRID-NEXT: sharded over [dp_shard,dp_replicate] (4 ranks; summed over them, 48 parameter elements): main parameters 192, optimizer state 384

// What the lowered step allocates per rank, counted by hand:
// parameters: @w, 8x4 bf16 = 64 bytes;
// buffers: %x 16x8 bf16 (256), %y 16x4 (128), %dw 8x4 (64) = 448
// (get_param and grad_ready alias, and the all-reduce writes its result
// into %dw, in place, so no buffer);
// optimizer state: Adam's two f32 moments of 32 elements = 256, and the f32
// main copy of the bf16 parameter = 128: 384;
// cpu working copies, f32: the largest GEMM lhs (16x8 = 128), rhs (16x4 =
// 64) and product (16x4 = 64), and the 32-element bf16 all-reduce: 288 x 4
// = 1152. Total 2048.
// Apart, what the deterministic reductions of ddp-run --verify on more than
// 2 ranks add (runtime/cpu/CpuCollectives.cpp) while the all-reduce runs:
// the 2 ranks' contributions gathered in f32 (2 x 32 x 4 = 256), the f32
// copies of the bf16 input and result (2 x 32 x 4 = 256), and the input
// scaled by 1/2 for avg, in bf16 (32 x 2 = 64): 576.

// CHECK: runtime memory per rank (ddp's lowering): 2048 bytes (2.00 KiB), what the lowered program allocates on ddp's runtime
// CHECK-NEXT:   parameters: 64
// Three buffers whose lives meet (the input lives through the step): each
// an arena of its own.
// CHECK-NEXT:   buffers: 448 (3 buffers of 448 bytes in 3 arenas)
// CHECK-NEXT:   optimizer state: 384
// CHECK-NEXT:   cpu working copies: 1152
// CHECK-NEXT:   not in the total: deterministic reductions (ddp-run --verify on more than 2 ranks): 576

// The model state as Megatron-LM counts it: the bf16 parameter (64), its
// bf16 gradient reduced alone (64), the f32 main copy (128) and the moments
// (256): 16 bytes per parameter, not Megatron's 18, as the gradient is not
// f32 (grad-reduce-in-fp32 makes it so).
// CHECK-NEXT: model state per rank (bytes, as Megatron-LM counts it):
// CHECK-NEXT:   parameters: 64
// CHECK-NEXT:   gradients: 64
// CHECK-NEXT:   main parameters: 128
// CHECK-NEXT:   optimizer state: 256
// CHECK-NEXT:   total: 512 (16 bytes x 32 parameters)
// CHECK-NEXT:   not in Megatron's count: gradient bucket padding 0

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<8x4xbf16>

func.func @step(%x: tensor<16x8xbf16>) {
  %w = ddp.get_param @w : tensor<8x4xbf16>
  %y = ddp.gemm fwd %x, %w : tensor<16x8xbf16>, tensor<8x4xbf16> -> tensor<16x4xbf16>
  %dw = ddp.gemm wgrad %x transposed, %y : tensor<16x8xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
  %g = ddp.grad_ready @w, %dw : tensor<8x4xbf16>
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<8x4xbf16>
  ddp.adam @w, %r lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<8x4xbf16>
  return
}

// -----

// Two bf16 parameters, 48 elements, Adam, 4 data-parallel ranks.
// Unscheduled: each gradient reduced alone in bf16.
// CHECK: mesh: dp=4 (4 ranks)
// CHECK: model state per rank (bytes, as Megatron-LM counts it):
// CHECK-NEXT:   parameters: 96
// CHECK-NEXT:   gradients: 96
// CHECK-NEXT:   main parameters: 192
// CHECK-NEXT:   optimizer state: 384
// CHECK-NEXT:   total: 768 (16 bytes x 48 parameters)
// CHECK-NEXT:   not in Megatron's count: gradient bucket padding 0

// One f32 bucket of 48 elements, unpadded: 2 + 4 + 4 + 8 = 18 bytes per
// parameter.
// WHOLE: mesh: dp=4 (4 ranks)
// WHOLE: model state per rank (bytes, as Megatron-LM counts it):
// WHOLE-NEXT:   parameters: 96
// WHOLE-NEXT:   gradients: 192
// WHOLE-NEXT:   main parameters: 192
// WHOLE-NEXT:   optimizer state: 384
// WHOLE-NEXT:   total: 864 (18 bytes x 48 parameters)
// WHOLE-NEXT:   not in Megatron's count: gradient bucket padding 0

// The main parameters (192) and moments (384) sharded over the 4 ranks:
// 6 + 12/4 bytes per parameter. The bucket is padded as Megatron pads it:
// @b at 0, @a at 64 (gradient starts at multiples of 64), the end at 128
// (lcm(4, 128)): 80 f32 elements of padding.
// SHARDED: mesh: dp=4 (4 ranks)
// The bucket's reduce-scatter (128 f32 elements, pre-scaled, so a sum) under
// the deterministic reductions: the 4 ranks' contributions to this rank's
// 32 elements, in f32 (4 x 32 x 4 = 512); no copies, no avg.
// SHARDED: not in the total: deterministic reductions (ddp-run --verify on more than 2 ranks): 512{{$}}
// SHARDED: model state per rank (bytes, as Megatron-LM counts it):
// SHARDED-NEXT:   parameters: 96
// SHARDED-NEXT:   gradients: 192
// SHARDED-NEXT:   main parameters: 0
// SHARDED-NEXT:   optimizer state: 0
// SHARDED-NEXT:   sharded over [dp] (4 ranks; summed over them, 48 parameter elements): main parameters 192, optimizer state 384
// SHARDED-NEXT:   total: 288 + 576/4 = 432 (6 + 12/4 bytes x 48 parameters)
// SHARDED-NEXT:   not in Megatron's count: gradient bucket padding 320

ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8x4xbf16>
ddp.param @b : tensor<16xbf16>

func.func @step(%x: tensor<16x8xbf16>, %db: tensor<16xbf16>) {
  %a = ddp.get_param @a : tensor<8x4xbf16>
  %y = ddp.gemm fwd %x, %a : tensor<16x8xbf16>, tensor<8x4xbf16> -> tensor<16x4xbf16>
  %da = ddp.gemm wgrad %x transposed, %y : tensor<16x8xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
  %gb = ddp.grad_ready @b, %db : tensor<16xbf16>
  %ga = ddp.grad_ready @a, %da : tensor<8x4xbf16>
  %rb = ddp.all_reduce avg %gb over @world[dp] : tensor<16xbf16>
  %ra = ddp.all_reduce avg %ga over @world[dp] : tensor<8x4xbf16>
  ddp.adam @a, %ra lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<8x4xbf16>
  ddp.adam @b, %rb lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<16xbf16>
  return
}

// -----

// Two buckets whose shard is all-reduced across instances after its
// reduce-scatter (`async after`). Each collective's deterministic scratch is
// the group's 2 contributions to 4 f32 elements (2 x 4 x 4 = 32 bytes); the
// all-reduce's wait completes its reduce-scatter too, so the first pair is
// freed before the second is issued: the peak is one pair, 64 (not 96).
// CHECK-LABEL: mesh: dp_replicate=2 dp_shard=2 (4 ranks)
// CHECK: not in the total: deterministic reductions (ddp-run --verify on more than 2 ranks): 64{{$}}
ddp.mesh @world(dp_replicate = 2, dp_shard = 2)
func.func @step(%g0: tensor<8xf32>, %g1: tensor<8xf32>) {
  %s0, %t0 = ddp.reduce_scatter sum %g0 over @world[dp_shard] async : tensor<8xf32> -> tensor<4xf32>
  %a0, %u0 = ddp.all_reduce sum %s0 over @world[dp_replicate] async after %t0 : tensor<4xf32>
  ddp.wait %u0
  %s1, %t1 = ddp.reduce_scatter sum %g1 over @world[dp_shard] async : tensor<8xf32> -> tensor<4xf32>
  %a1, %u1 = ddp.all_reduce sum %s1 over @world[dp_replicate] async after %t1 : tensor<4xf32>
  ddp.wait %u1
  return
}

// -----

// Scratch past int64 (2^40 ranks' contributions to 2^30 f32 elements)
// stays reported as such when a later, smaller collective fits; the step
// still lowers, since only --verify on more than 2 ranks needs the scratch.
// CHECK-LABEL: mesh: dp=1099511627776 (1099511627776 ranks)
// CHECK: runtime memory per rank (ddp's lowering): {{[0-9]+}} bytes
// CHECK: not in the total: deterministic reductions (ddp-run --verify on more than 2 ranks): more than 2^63 - 1{{$}}
ddp.mesh @world(dp = 1099511627776)
func.func @step(%x: tensor<1073741824xf32>, %y: tensor<8xf32>) -> (tensor<1073741824xf32>, tensor<8xf32>) {
  %a = ddp.all_reduce sum %x over @world[dp] : tensor<1073741824xf32>
  %b = ddp.all_reduce sum %y over @world[dp] : tensor<8xf32>
  return %a, %b : tensor<1073741824xf32>, tensor<8xf32>
}

// -----

// Buffers past int64 in all (two inputs of 2^62 bytes and their sum): the
// runtime memory is not counted, and says why; the rest of the summary is.
// CHECK-LABEL: mesh: dp=2 (2 ranks)
// CHECK: runtime memory per rank (ddp's lowering): not lowerable: the step needs more than 2^63 - 1 bytes per rank for its parameters, buffers, optimizer state and working copies; no rank can hold it
// CHECK-NEXT: model state per rank
ddp.mesh @world(dp = 2)
func.func @step(%x: tensor<1152921504606846976xf32>, %y: tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32> {
  %z = ddp.accumulate %x, %y : tensor<1152921504606846976xf32>
  return %z : tensor<1152921504606846976xf32>
}

// -----

// Buffers apart in time share an arena (docs/Lowering.md, Storage, rule 9):
// the second microbatch's forward result takes the first's bytes, and the
// accumulated gradient the second's (the all-reduce is in place). The 7
// buffers of 256 bytes (1792) are 3 arenas: the inputs' two, filled once by
// the setup, and a shared one of 768 bytes for the other five, of which
// three are live at once: 1280.
// CHECK:   buffers: 1280 (7 buffers of 1792 bytes in 3 arenas)
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<8x8xf32>

func.func @step(%x0: tensor<8x8xf32>, %x1: tensor<8x8xf32>) {
  %w = ddp.get_param @w : tensor<8x8xf32>
  %y0 = ddp.gemm fwd %x0, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %g0 = ddp.gemm wgrad %x0 transposed, %y0 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %y1 = ddp.gemm fwd %x1, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %g1 = ddp.gemm wgrad %x1 transposed, %y1 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %acc = ddp.accumulate %g0, %g1 : tensor<8x8xf32>
  %r = ddp.all_reduce avg %acc over @world[dp] : tensor<8x8xf32>
  ddp.sgd @w, %r lr 1.0 : tensor<8x8xf32>
  return
}


// -----

// Parameters stored as the rank's shard (docs/Lowering.md, Storage, rule
// 10): @a (8 elements) and @b (4) fill a bucket of 4 elements per rank at
// dp 3, rank 0 keeping @a's first half, rank 1 its second, rank 2 @b: 16
// bytes on every rank (the largest of each parameter's part would count
// 32), and @c, read whole, 16 bytes more.
// CHECK-LABEL: mesh: dp=3 (3 ranks)
// CHECK: runtime memory per rank (ddp's lowering):
// CHECK-NEXT:   parameters: 32
// CHECK-NEXT:   parameters stored as this rank's shard: 2 (their bytes counted on the rank that keeps the most)
ddp.mesh @world(dp = 3)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<2x2xf32>
ddp.param @c : tensor<4xf32>

func.func @step(%g: tensor<4xf32>) -> tensor<4xf32> {
  %s = ddp.get_param_shard params [@a, @b] offsets [0, 8] over @world[dp] : tensor<4xf32>
  %w = ddp.all_gather %s over @world[dp] : tensor<4xf32> -> tensor<12xf32>
  %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  ddp.set_param_shard %p params [@a, @b] offsets [0, 8] over @world[dp] : tensor<4xf32>
  %c = ddp.get_param @c : tensor<4xf32>
  return %c : tensor<4xf32>
}
