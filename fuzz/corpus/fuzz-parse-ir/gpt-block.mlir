// One GPT transformer block (pre-norm, no linear biases), one microbatch of
// 32 tokens, hidden 64, 4 heads, FFN 256, in bf16, on one rank of a
// 2 (data-parallel) x 2 (tensor-parallel) mesh, laid out as Megatron-LM does:
// QKV and FC1 are column-parallel (their output dimension is split), PROJ and
// FC2 row-parallel (their input dimension is split), so each rank holds half
// of every linear weight and the partial outputs of PROJ and FC2 (and the
// partial input gradients of QKV and FC1) are summed over the `tp` group.
//
// Unscheduled form: gradients are averaged over the `dp` group after the
// whole backward, one synchronous all-reduce each, then Adam.

ddp.mesh @world(dp = 2, tp = 2)

ddp.param @layers.0.input_layernorm.weight layer 0 : tensor<64xbf16>
ddp.param @layers.0.input_layernorm.bias layer 0 : tensor<64xbf16>
ddp.param @layers.0.self_attention.linear_qkv.weight layer 0 tp_dim 1 : tensor<64x96xbf16>
ddp.param @layers.0.self_attention.linear_proj.weight layer 0 tp_dim 0 : tensor<32x64xbf16>
ddp.param @layers.0.pre_mlp_layernorm.weight layer 0 : tensor<64xbf16>
ddp.param @layers.0.pre_mlp_layernorm.bias layer 0 : tensor<64xbf16>
ddp.param @layers.0.mlp.linear_fc1.weight layer 0 tp_dim 1 : tensor<64x128xbf16>
ddp.param @layers.0.mlp.linear_fc2.weight layer 0 tp_dim 0 : tensor<128x64xbf16>

func.func @step(%x: tensor<32x64xbf16>) {
  %ln1_w = ddp.get_param @layers.0.input_layernorm.weight : tensor<64xbf16>
  %ln1_b = ddp.get_param @layers.0.input_layernorm.bias : tensor<64xbf16>
  %w_qkv = ddp.get_param @layers.0.self_attention.linear_qkv.weight : tensor<64x96xbf16>
  %w_proj = ddp.get_param @layers.0.self_attention.linear_proj.weight : tensor<32x64xbf16>
  %ln2_w = ddp.get_param @layers.0.pre_mlp_layernorm.weight : tensor<64xbf16>
  %ln2_b = ddp.get_param @layers.0.pre_mlp_layernorm.bias : tensor<64xbf16>
  %w_fc1 = ddp.get_param @layers.0.mlp.linear_fc1.weight : tensor<64x128xbf16>
  %w_fc2 = ddp.get_param @layers.0.mlp.linear_fc2.weight : tensor<128x64xbf16>

  // Forward: attention.
  %ln1 = ddp.compute "layernorm"(%x, %ln1_w, %ln1_b) flops 16384.0 bytes 8448.0 layer 0 : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  %qkv = ddp.gemm fwd %ln1, %w_qkv layer 0 : tensor<32x64xbf16>, tensor<64x96xbf16> -> tensor<32x96xbf16>
  %attn = ddp.compute "attention"(%qkv) flops 131072.0 bytes 8192.0 layer 0 : (tensor<32x96xbf16>) -> tensor<32x32xbf16>
  %proj_partial = ddp.gemm fwd %attn, %w_proj layer 0 : tensor<32x32xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
  %proj = ddp.all_reduce sum %proj_partial over @world[tp] : tensor<32x64xbf16>
  %h1 = ddp.compute "residual_add"(%x, %proj) flops 2048.0 bytes 12288.0 layer 0 : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>
  // Forward: MLP.
  %ln2 = ddp.compute "layernorm"(%h1, %ln2_w, %ln2_b) flops 16384.0 bytes 8448.0 layer 0 : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  %fc1 = ddp.gemm fwd %ln2, %w_fc1 layer 0 : tensor<32x64xbf16>, tensor<64x128xbf16> -> tensor<32x128xbf16>
  %act = ddp.compute "gelu"(%fc1) flops 32768.0 bytes 16384.0 layer 0 : (tensor<32x128xbf16>) -> tensor<32x128xbf16>
  %fc2_partial = ddp.gemm fwd %act, %w_fc2 layer 0 : tensor<32x128xbf16>, tensor<128x64xbf16> -> tensor<32x64xbf16>
  %fc2 = ddp.all_reduce sum %fc2_partial over @world[tp] : tensor<32x64xbf16>
  %out = ddp.compute "residual_add"(%h1, %fc2) flops 2048.0 bytes 12288.0 layer 0 : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>

  // The gradient arriving from the layers above (here: from the loss).
  %d_out = ddp.compute "loss_grad"(%out) flops 2048.0 bytes 8192.0 : (tensor<32x64xbf16>) -> tensor<32x64xbf16>

  // Backward: MLP.
  %dw_fc2 = ddp.gemm wgrad %act transposed, %d_out layer 0 : tensor<32x128xbf16>, tensor<32x64xbf16> -> tensor<128x64xbf16>
  %g_fc2 = ddp.grad_ready @layers.0.mlp.linear_fc2.weight, %dw_fc2 : tensor<128x64xbf16>
  %d_act = ddp.gemm dgrad %d_out, %w_fc2 transposed layer 0 : tensor<32x64xbf16>, tensor<128x64xbf16> -> tensor<32x128xbf16>
  %d_fc1 = ddp.compute "gelu_grad"(%d_act, %fc1) flops 65536.0 bytes 24576.0 layer 0 : (tensor<32x128xbf16>, tensor<32x128xbf16>) -> tensor<32x128xbf16>
  %dw_fc1 = ddp.gemm wgrad %ln2 transposed, %d_fc1 layer 0 : tensor<32x64xbf16>, tensor<32x128xbf16> -> tensor<64x128xbf16>
  %g_fc1 = ddp.grad_ready @layers.0.mlp.linear_fc1.weight, %dw_fc1 : tensor<64x128xbf16>
  %d_ln2_partial = ddp.gemm dgrad %d_fc1, %w_fc1 transposed layer 0 : tensor<32x128xbf16>, tensor<64x128xbf16> -> tensor<32x64xbf16>
  %d_ln2 = ddp.all_reduce sum %d_ln2_partial over @world[tp] : tensor<32x64xbf16>
  %d_h1_ln, %dln2_w, %dln2_b = ddp.compute "layernorm_grad"(%d_ln2, %h1, %ln2_w) flops 32768.0 bytes 12544.0 layer 0 : (tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64xbf16>) -> (tensor<32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
  %g_ln2_w = ddp.grad_ready @layers.0.pre_mlp_layernorm.weight, %dln2_w : tensor<64xbf16>
  %g_ln2_b = ddp.grad_ready @layers.0.pre_mlp_layernorm.bias, %dln2_b : tensor<64xbf16>
  %d_h1 = ddp.compute "residual_add"(%d_out, %d_h1_ln) flops 2048.0 bytes 12288.0 layer 0 : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>

  // Backward: attention.
  %dw_proj = ddp.gemm wgrad %attn transposed, %d_h1 layer 0 : tensor<32x32xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
  %g_proj = ddp.grad_ready @layers.0.self_attention.linear_proj.weight, %dw_proj : tensor<32x64xbf16>
  %d_attn = ddp.gemm dgrad %d_h1, %w_proj transposed layer 0 : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x32xbf16>
  %d_qkv = ddp.compute "attention_grad"(%d_attn, %qkv) flops 262144.0 bytes 16384.0 layer 0 : (tensor<32x32xbf16>, tensor<32x96xbf16>) -> tensor<32x96xbf16>
  %dw_qkv = ddp.gemm wgrad %ln1 transposed, %d_qkv layer 0 : tensor<32x64xbf16>, tensor<32x96xbf16> -> tensor<64x96xbf16>
  %g_qkv = ddp.grad_ready @layers.0.self_attention.linear_qkv.weight, %dw_qkv : tensor<64x96xbf16>
  %d_ln1_partial = ddp.gemm dgrad %d_qkv, %w_qkv transposed layer 0 : tensor<32x96xbf16>, tensor<64x96xbf16> -> tensor<32x64xbf16>
  %d_ln1 = ddp.all_reduce sum %d_ln1_partial over @world[tp] : tensor<32x64xbf16>
  %dln1_w, %dln1_b = ddp.compute "layernorm_grad"(%d_ln1, %x, %ln1_w) flops 32768.0 bytes 8448.0 layer 0 : (tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64xbf16>) -> (tensor<64xbf16>, tensor<64xbf16>)
  %g_ln1_w = ddp.grad_ready @layers.0.input_layernorm.weight, %dln1_w : tensor<64xbf16>
  %g_ln1_b = ddp.grad_ready @layers.0.input_layernorm.bias, %dln1_b : tensor<64xbf16>

  // Data-parallel average in ready order, then Adam.
  %r_fc2 = ddp.all_reduce avg %g_fc2 over @world[dp] : tensor<128x64xbf16>
  %r_fc1 = ddp.all_reduce avg %g_fc1 over @world[dp] : tensor<64x128xbf16>
  %r_ln2_w = ddp.all_reduce avg %g_ln2_w over @world[dp] : tensor<64xbf16>
  %r_ln2_b = ddp.all_reduce avg %g_ln2_b over @world[dp] : tensor<64xbf16>
  %r_proj = ddp.all_reduce avg %g_proj over @world[dp] : tensor<32x64xbf16>
  %r_qkv = ddp.all_reduce avg %g_qkv over @world[dp] : tensor<64x96xbf16>
  %r_ln1_w = ddp.all_reduce avg %g_ln1_w over @world[dp] : tensor<64xbf16>
  %r_ln1_b = ddp.all_reduce avg %g_ln1_b over @world[dp] : tensor<64xbf16>

  ddp.adam @layers.0.mlp.linear_fc2.weight, %r_fc2 lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<128x64xbf16>
  ddp.adam @layers.0.mlp.linear_fc1.weight, %r_fc1 lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<64x128xbf16>
  ddp.adam @layers.0.pre_mlp_layernorm.weight, %r_ln2_w lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<64xbf16>
  ddp.adam @layers.0.pre_mlp_layernorm.bias, %r_ln2_b lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<64xbf16>
  ddp.adam @layers.0.self_attention.linear_proj.weight, %r_proj lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<32x64xbf16>
  ddp.adam @layers.0.self_attention.linear_qkv.weight, %r_qkv lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<64x96xbf16>
  ddp.adam @layers.0.input_layernorm.weight, %r_ln1_w lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<64xbf16>
  ddp.adam @layers.0.input_layernorm.bias, %r_ln1_b lr 0.0001 betas(0.9, 0.95) eps 1.0e-08 : tensor<64xbf16>
  return
}
