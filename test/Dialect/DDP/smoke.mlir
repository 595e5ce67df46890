// RUN: ddp-opt %s | FileCheck %s
// CHECK: ddp.mesh
ddp.mesh @world(dp = 2, tp = 2)
ddp.param @w1 layer 0 tp_dim 1 : tensor<16x8xf32>
ddp.param @w2 layer 1 expert : tensor<8x4xf32>
func.func @step(%x: tensor<32x16xf32>, %dy: tensor<32x4xf32>) {
  %w1 = ddp.get_param @w1 : tensor<16x8xf32>
  %w2 = ddp.get_param @w2 : tensor<8x4xf32>
  %h = ddp.gemm fwd %x, %w1 layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %a = ddp.compute "gelu"(%h) flops 256.0 bytes 2048.0 layer 0 : (tensor<32x8xf32>) -> tensor<32x8xf32>
  %dw2 = ddp.gemm wgrad %a transposed, %dy layer 1 : tensor<32x8xf32>, tensor<32x4xf32> -> tensor<8x4xf32>
  %g2 = ddp.grad_ready @w2, %dw2 : tensor<8x4xf32>
  %dh = ddp.gemm dgrad %dy, %w2 transposed layer 1 : tensor<32x4xf32>, tensor<8x4xf32> -> tensor<32x8xf32>
  %dw1 = ddp.gemm wgrad %x transposed, %dh layer 0 : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %g1 = ddp.grad_ready @w1, %dw1 : tensor<16x8xf32>
  %b = ddp.bucket_pack %g2, %g1 offsets [0, 32] : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<192xf32>
  %r, %t = ddp.all_reduce avg %b over @world[dp] async : tensor<192xf32>
  %s, %t2 = ddp.reduce_scatter sum %b over @world[dp, tp] async : tensor<192xf32> -> tensor<48xf32>
  %j = ddp.join %t, %t2
  ddp.wait %j
  %r2, %r1 = ddp.bucket_unpack %r offsets [0, 32] : tensor<192xf32> -> tensor<8x4xf32>, tensor<16x8xf32>
  ddp.sgd @w1, %r1 lr 1.0e-2 : tensor<16x8xf32>
  ddp.adam @w2, %r2 lr 1.0e-3 betas(0.9, 0.999) eps 1.0e-8 : tensor<8x4xf32>
  return
}
