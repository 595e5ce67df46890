// Two microbatches of a two-layer MLP on the same input: their GEMMs are
// identical op for op, and the forward's output is not read (the backward
// starts from a given dy), so a pass that took them for pure values would
// merge the second microbatch into the first and drop the forward.
ddp.mesh @world(dp = 4)
ddp.param @fc1.weight layer 0 : tensor<16x8xf32>
ddp.param @fc2.weight layer 1 : tensor<8x4xf32>
func.func @step(%x: tensor<32x16xf32>, %dy: tensor<32x4xf32>) {
  %w1 = ddp.get_param @fc1.weight : tensor<16x8xf32>
  %w2 = ddp.get_param @fc2.weight : tensor<8x4xf32>
  %h0 = ddp.gemm fwd %x, %w1 layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %y0 = ddp.gemm fwd %h0, %w2 layer 1 : tensor<32x8xf32>, tensor<8x4xf32> -> tensor<32x4xf32>
  %dw2a = ddp.gemm wgrad %h0 transposed, %dy layer 1 : tensor<32x8xf32>, tensor<32x4xf32> -> tensor<8x4xf32>
  %dh0 = ddp.gemm dgrad %dy, %w2 transposed layer 1 : tensor<32x4xf32>, tensor<8x4xf32> -> tensor<32x8xf32>
  %dw1a = ddp.gemm wgrad %x transposed, %dh0 layer 0 : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %h1 = ddp.gemm fwd %x, %w1 layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %y1 = ddp.gemm fwd %h1, %w2 layer 1 : tensor<32x8xf32>, tensor<8x4xf32> -> tensor<32x4xf32>
  %dw2b = ddp.gemm wgrad %h1 transposed, %dy layer 1 : tensor<32x8xf32>, tensor<32x4xf32> -> tensor<8x4xf32>
  %dw2 = ddp.accumulate %dw2a, %dw2b : tensor<8x4xf32>
  %g1 = ddp.grad_ready @fc2.weight, %dw2 : tensor<8x4xf32>
  %dh1 = ddp.gemm dgrad %dy, %w2 transposed layer 1 : tensor<32x4xf32>, tensor<8x4xf32> -> tensor<32x8xf32>
  %dw1b = ddp.gemm wgrad %x transposed, %dh1 layer 0 : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %dw1 = ddp.accumulate %dw1a, %dw1b : tensor<16x8xf32>
  %g0 = ddp.grad_ready @fc1.weight, %dw1 : tensor<16x8xf32>
  %r1 = ddp.all_reduce avg %g1 over @world[dp] : tensor<8x4xf32>
  %r0 = ddp.all_reduce avg %g0 over @world[dp] : tensor<16x8xf32>
  ddp.sgd @fc2.weight, %r1 lr 0.1 : tensor<8x4xf32>
  ddp.sgd @fc1.weight, %r0 lr 0.1 : tensor<16x8xf32>
  return
}
