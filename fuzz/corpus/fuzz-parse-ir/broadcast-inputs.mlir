// The MLP example with fc2.bias's gradient left unreduced (as in
// mlp-unreduced.mlir) and the step's inputs broadcast from data-parallel
// rank 2: every rank sees the same batch, so fc2.bias stays the same on
// every rank without an all-reduce, where mlp-unreduced.mlir's ranks drift
// apart (integration_test/ddp-run/broadcast.test).


ddp.mesh @world(dp = 3)

ddp.param @fc1.weight layer 0 : tensor<16x32xf32>
ddp.param @fc1.bias layer 0 : tensor<32xf32>
ddp.param @fc2.weight layer 1 : tensor<32x8xf32>
ddp.param @fc2.bias layer 1 : tensor<8xf32>

func.func @step(%in0: tensor<8x16xf32>, %in1: tensor<8x16xf32>) {
  // Every rank trains on the batch of data-parallel rank 2 (as Megatron
  // broadcasts a batch over the tensor-parallel group from its rank 0): the
  // first microbatch synchronously, the second in flight over the first's
  // forward and backward.
  %x0 = ddp.broadcast %in0 root 2 over @world[dp] : tensor<8x16xf32>
  %x1, %tx1 = ddp.broadcast %in1 root 2 over @world[dp] async : tensor<8x16xf32>
  %w1 = ddp.get_param @fc1.weight : tensor<16x32xf32>
  %b1 = ddp.get_param @fc1.bias : tensor<32xf32>
  %w2 = ddp.get_param @fc2.weight : tensor<32x8xf32>
  %b2 = ddp.get_param @fc2.bias : tensor<8xf32>

  // Microbatch 0: forward.
  %h0 = ddp.gemm fwd %x0, %w1 layer 0 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %hb0 = ddp.compute "bias_add"(%h0, %b1) flops 256.0 bytes 2176.0 layer 0 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %a0 = ddp.compute "relu"(%hb0) flops 256.0 bytes 2048.0 layer 0 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y0 = ddp.gemm fwd %a0, %w2 layer 1 : tensor<8x32xf32>, tensor<32x8xf32> -> tensor<8x8xf32>
  %yb0 = ddp.compute "bias_add"(%y0, %b2) flops 64.0 bytes 544.0 layer 1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  // Microbatch 0: backward from the loss gradient.
  %dy0 = ddp.compute "mse_loss_grad"(%yb0) flops 128.0 bytes 512.0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %db2_0 = ddp.compute "bias_grad"(%dy0) flops 64.0 bytes 288.0 layer 1 : (tensor<8x8xf32>) -> tensor<8xf32>
  %dw2_0 = ddp.gemm wgrad %a0 transposed, %dy0 layer 1 : tensor<8x32xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
  %da0 = ddp.gemm dgrad %dy0, %w2 transposed layer 1 : tensor<8x8xf32>, tensor<32x8xf32> -> tensor<8x32xf32>
  %dh0 = ddp.compute "relu_grad"(%da0, %hb0) flops 256.0 bytes 3072.0 layer 0 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %db1_0 = ddp.compute "bias_grad"(%dh0) flops 256.0 bytes 1152.0 layer 0 : (tensor<8x32xf32>) -> tensor<32xf32>
  %dw1_0 = ddp.gemm wgrad %x0 transposed, %dh0 layer 0 : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>

  // Microbatch 1: forward.
  ddp.wait %tx1
  %h1 = ddp.gemm fwd %x1, %w1 layer 0 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %hb1 = ddp.compute "bias_add"(%h1, %b1) flops 256.0 bytes 2176.0 layer 0 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %a1 = ddp.compute "relu"(%hb1) flops 256.0 bytes 2048.0 layer 0 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y1 = ddp.gemm fwd %a1, %w2 layer 1 : tensor<8x32xf32>, tensor<32x8xf32> -> tensor<8x8xf32>
  %yb1 = ddp.compute "bias_add"(%y1, %b2) flops 64.0 bytes 544.0 layer 1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  // Microbatch 1: backward; each gradient is final after its last wgrad.
  %dy1 = ddp.compute "mse_loss_grad"(%yb1) flops 128.0 bytes 512.0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %db2_1 = ddp.compute "bias_grad"(%dy1) flops 64.0 bytes 288.0 layer 1 : (tensor<8x8xf32>) -> tensor<8xf32>
  %db2 = ddp.accumulate %db2_0, %db2_1 : tensor<8xf32>
  %g_fc2_bias = ddp.grad_ready @fc2.bias, %db2 : tensor<8xf32>
  %dw2_1 = ddp.gemm wgrad %a1 transposed, %dy1 layer 1 : tensor<8x32xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
  %dw2 = ddp.accumulate %dw2_0, %dw2_1 : tensor<32x8xf32>
  %g_fc2_weight = ddp.grad_ready @fc2.weight, %dw2 : tensor<32x8xf32>
  %da1 = ddp.gemm dgrad %dy1, %w2 transposed layer 1 : tensor<8x8xf32>, tensor<32x8xf32> -> tensor<8x32xf32>
  %dh1 = ddp.compute "relu_grad"(%da1, %hb1) flops 256.0 bytes 3072.0 layer 0 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %db1_1 = ddp.compute "bias_grad"(%dh1) flops 256.0 bytes 1152.0 layer 0 : (tensor<8x32xf32>) -> tensor<32xf32>
  %db1 = ddp.accumulate %db1_0, %db1_1 : tensor<32xf32>
  %g_fc1_bias = ddp.grad_ready @fc1.bias, %db1 : tensor<32xf32>
  %dw1_1 = ddp.gemm wgrad %x1 transposed, %dh1 layer 0 : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %dw1 = ddp.accumulate %dw1_0, %dw1_1 : tensor<16x32xf32>
  %g_fc1_weight = ddp.grad_ready @fc1.weight, %dw1 : tensor<16x32xf32>

  // Data-parallel average, one gradient at a time, in ready order.
  %r_fc2_weight = ddp.all_reduce avg %g_fc2_weight over @world[dp] : tensor<32x8xf32>
  %r_fc1_bias = ddp.all_reduce avg %g_fc1_bias over @world[dp] : tensor<32xf32>
  %r_fc1_weight = ddp.all_reduce avg %g_fc1_weight over @world[dp] : tensor<16x32xf32>

  ddp.sgd @fc2.bias, %g_fc2_bias lr 0.5 : tensor<8xf32>
  ddp.sgd @fc2.weight, %r_fc2_weight lr 0.5 : tensor<32x8xf32>
  ddp.sgd @fc1.bias, %r_fc1_bias lr 0.5 : tensor<32xf32>
  ddp.sgd @fc1.weight, %r_fc1_weight lr 0.5 : tensor<16x32xf32>
  return
}
