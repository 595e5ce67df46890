%// Megatron's default bucket size, 1M elements x dp, would overflow int64; so
// would the group [dp, tp] of @model_parallel with dp resized to 2^62.

// Four f32 gradients ready in reverse registration order over a 4-rank group.
// The reductions are untouched: assigning only records the decision.
// MEGATRON-COUNT-4: ddp.all_reduce avg

// Starts padded to 64 elements, ends to lcm(4, 128): b ends at 292.

// 350 elements / 2 = 175 per bucket.

// Without overlap Megatron ignores the bucket size: one bucket.

// 4-byte elements: d + c reach the first 400 bytes, b + a the 800 after.

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
