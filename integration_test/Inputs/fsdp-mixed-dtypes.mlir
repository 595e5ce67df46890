// A two-layer MLP whose layers mix element types, for the fully sharded
// step (docs/FullySharded.md): bf16 weights and activations, f32 biases.
// Each layer is one FSDP unit of two buckets (one per type), so each run
// of a layer gathers two shards. Three data-parallel ranks; Adam.

ddp.mesh @world(dp = 3)

ddp.param @fc1.weight layer 0 : tensor<16x32xbf16>
ddp.param @fc1.bias layer 0 : tensor<32xf32>
ddp.param @fc2.weight layer 1 : tensor<32x8xbf16>
ddp.param @fc2.bias layer 1 : tensor<8xf32>

func.func @step(%x0: tensor<8x16xbf16>, %x1: tensor<8x16xbf16>) {
  %w1 = ddp.get_param @fc1.weight : tensor<16x32xbf16>
  %b1 = ddp.get_param @fc1.bias : tensor<32xf32>
  %w2 = ddp.get_param @fc2.weight : tensor<32x8xbf16>
  %b2 = ddp.get_param @fc2.bias : tensor<8xf32>

  // Microbatch 0: forward.
  %h0 = ddp.gemm fwd %x0, %w1 layer 0 : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %hb0 = ddp.compute "bias_add"(%h0, %b1) flops 256.0 bytes 2176.0 layer 0 : (tensor<8x32xbf16>, tensor<32xf32>) -> tensor<8x32xbf16>
  %a0 = ddp.compute "relu"(%hb0) flops 256.0 bytes 2048.0 layer 0 : (tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %y0 = ddp.gemm fwd %a0, %w2 layer 1 : tensor<8x32xbf16>, tensor<32x8xbf16> -> tensor<8x8xbf16>
  %yb0 = ddp.compute "bias_add"(%y0, %b2) flops 64.0 bytes 544.0 layer 1 : (tensor<8x8xbf16>, tensor<8xf32>) -> tensor<8x8xbf16>
  // Microbatch 0: backward from the loss gradient.
  %dy0 = ddp.compute "mse_loss_grad"(%yb0) flops 128.0 bytes 512.0 : (tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %db2_0 = ddp.compute "bias_grad"(%dy0) flops 64.0 bytes 288.0 layer 1 : (tensor<8x8xbf16>) -> tensor<8xf32>
  %dw2_0 = ddp.gemm wgrad %a0 transposed, %dy0 layer 1 : tensor<8x32xbf16>, tensor<8x8xbf16> -> tensor<32x8xbf16>
  %da0 = ddp.gemm dgrad %dy0, %w2 transposed layer 1 : tensor<8x8xbf16>, tensor<32x8xbf16> -> tensor<8x32xbf16>
  %dh0 = ddp.compute "relu_grad"(%da0, %hb0) flops 256.0 bytes 3072.0 layer 0 : (tensor<8x32xbf16>, tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %db1_0 = ddp.compute "bias_grad"(%dh0) flops 256.0 bytes 1152.0 layer 0 : (tensor<8x32xbf16>) -> tensor<32xf32>
  %dw1_0 = ddp.gemm wgrad %x0 transposed, %dh0 layer 0 : tensor<8x16xbf16>, tensor<8x32xbf16> -> tensor<16x32xbf16>

  // Microbatch 1: forward.
  %h1 = ddp.gemm fwd %x1, %w1 layer 0 : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %hb1 = ddp.compute "bias_add"(%h1, %b1) flops 256.0 bytes 2176.0 layer 0 : (tensor<8x32xbf16>, tensor<32xf32>) -> tensor<8x32xbf16>
  %a1 = ddp.compute "relu"(%hb1) flops 256.0 bytes 2048.0 layer 0 : (tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %y1 = ddp.gemm fwd %a1, %w2 layer 1 : tensor<8x32xbf16>, tensor<32x8xbf16> -> tensor<8x8xbf16>
  %yb1 = ddp.compute "bias_add"(%y1, %b2) flops 64.0 bytes 544.0 layer 1 : (tensor<8x8xbf16>, tensor<8xf32>) -> tensor<8x8xbf16>
  // Microbatch 1: backward; each gradient is final after its last wgrad.
  %dy1 = ddp.compute "mse_loss_grad"(%yb1) flops 128.0 bytes 512.0 : (tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %db2_1 = ddp.compute "bias_grad"(%dy1) flops 64.0 bytes 288.0 layer 1 : (tensor<8x8xbf16>) -> tensor<8xf32>
  %db2 = ddp.accumulate %db2_0, %db2_1 : tensor<8xf32>
  %g_fc2_bias = ddp.grad_ready @fc2.bias, %db2 : tensor<8xf32>
  %dw2_1 = ddp.gemm wgrad %a1 transposed, %dy1 layer 1 : tensor<8x32xbf16>, tensor<8x8xbf16> -> tensor<32x8xbf16>
  %dw2 = ddp.accumulate %dw2_0, %dw2_1 : tensor<32x8xbf16>
  %g_fc2_weight = ddp.grad_ready @fc2.weight, %dw2 : tensor<32x8xbf16>
  %da1 = ddp.gemm dgrad %dy1, %w2 transposed layer 1 : tensor<8x8xbf16>, tensor<32x8xbf16> -> tensor<8x32xbf16>
  %dh1 = ddp.compute "relu_grad"(%da1, %hb1) flops 256.0 bytes 3072.0 layer 0 : (tensor<8x32xbf16>, tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %db1_1 = ddp.compute "bias_grad"(%dh1) flops 256.0 bytes 1152.0 layer 0 : (tensor<8x32xbf16>) -> tensor<32xf32>
  %db1 = ddp.accumulate %db1_0, %db1_1 : tensor<32xf32>
  %g_fc1_bias = ddp.grad_ready @fc1.bias, %db1 : tensor<32xf32>
  %dw1_1 = ddp.gemm wgrad %x1 transposed, %dh1 layer 0 : tensor<8x16xbf16>, tensor<8x32xbf16> -> tensor<16x32xbf16>
  %dw1 = ddp.accumulate %dw1_0, %dw1_1 : tensor<16x32xbf16>
  %g_fc1_weight = ddp.grad_ready @fc1.weight, %dw1 : tensor<16x32xbf16>

  // Data-parallel average, one gradient at a time, in ready order.
  %r_fc2_bias = ddp.all_reduce avg %g_fc2_bias over @world[dp] : tensor<8xf32>
  %r_fc2_weight = ddp.all_reduce avg %g_fc2_weight over @world[dp] : tensor<32x8xbf16>
  %r_fc1_bias = ddp.all_reduce avg %g_fc1_bias over @world[dp] : tensor<32xf32>
  %r_fc1_weight = ddp.all_reduce avg %g_fc1_weight over @world[dp] : tensor<16x32xbf16>

  ddp.adam @fc2.bias, %r_fc2_bias lr 0.01 betas(0.9, 0.999) eps 1.0e-08 : tensor<8xf32>
  ddp.adam @fc2.weight, %r_fc2_weight lr 0.01 betas(0.9, 0.999) eps 1.0e-08 : tensor<32x8xbf16>
  ddp.adam @fc1.bias, %r_fc1_bias lr 0.01 betas(0.9, 0.999) eps 1.0e-08 : tensor<32xf32>
  ddp.adam @fc1.weight, %r_fc1_weight lr 0.01 betas(0.9, 0.999) eps 1.0e-08 : tensor<16x32xbf16>
  return
}
