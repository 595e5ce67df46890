ddp.mesh @world(dp = 2, tp = 2)
ddp.mesh @moe(edp = 2, ep = 2, tp = 1)
ddp.param @fc1.weight layer 0 tp_dim 1 : tensor<16x8xf32>
ddp.param @expert.weight layer 1 expert : tensor<8x4xf32>
ddp.param @embedding shared_embedding : tensor<4xbf16>
ddp.param @"0.bias" : tensor<4xf64>

func.func @compute(%x: tensor<32x16xf32>, %dy: tensor<32x8xf32>) {
  %w = ddp.get_param @fc1.weight : tensor<16x8xf32>
  %y = ddp.gemm fwd %x, %w layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %dx = ddp.gemm dgrad %dy, %w transposed layer 0 : tensor<32x8xf32>, tensor<16x8xf32> -> tensor<32x16xf32>
  %dw = ddp.gemm wgrad %x transposed, %dy : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %a = ddp.compute "gelu"(%y) flops 256.0 bytes 2048.0 layer 0 : (tensor<32x8xf32>) -> tensor<32x8xf32>
  %r:2 = ddp.compute "router"() flops 0.0 bytes 1.5e12 : () -> (tensor<4xf32>, tensor<2xf32>)
  %acc = ddp.accumulate %dw, %dw : tensor<16x8xf32>
  %s = ddp.scale %acc by 0.25 : tensor<16x8xf32>
  %c = ddp.cast %s : tensor<16x8xf32> to tensor<16x8xbf16>
  %g = ddp.grad_ready @fc1.weight, %acc : tensor<16x8xf32>
  %gr = ddp.all_reduce avg %g over @world[dp] : tensor<16x8xf32>
  ddp.sgd @fc1.weight, %gr lr 0.01 : tensor<16x8xf32>
  return
}

func.func @collectives(%g: tensor<64xf32>, %m: tensor<4x8xbf16>) {
  %r, %t0 = ddp.all_reduce sum %g over @world[dp, tp] async : tensor<64xf32>
  %rs, %t1 = ddp.reduce_scatter sum %g over @world[dp] async : tensor<64xf32> -> tensor<32xf32>
  %ag = ddp.all_gather %m over @world[tp] : tensor<4x8xbf16> -> tensor<8x8xbf16>
  %t2 = ddp.send %m to 1 over @world[tp] async : tensor<4x8xbf16>
  %rv, %t3 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  ddp.send %m to 1 over @world[tp] : tensor<4x8xbf16>
  %rv2 = ddp.recv from 1 over @world[tp] : tensor<4x8xbf16>
  %j = ddp.join %t0, %t1, %t2
  ddp.wait %j
  ddp.wait %t3
  %e = ddp.all_reduce sum %r over @moe[edp] : tensor<64xf32>
  %mx = ddp.all_reduce max %e over @world[tp] : tensor<64xf32>
  return
}

func.func @buckets(%g0: tensor<8x4xf32>, %g1: tensor<16x8xf32>, %c4: tensor<8xbf16>) {
  %b = ddp.bucket_pack %g0, %g1 offsets [0, 64] : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<256xf32>
  %u0, %u1 = ddp.bucket_unpack %b offsets [0, 64] : tensor<256xf32> -> tensor<8x4xf32>, tensor<16x8xf32>
  ddp.check_finite %b bucket 2 params [@expert.weight, @fc1.weight] offsets [0, 64] : tensor<256xf32>
  %wide = ddp.cast %c4 : tensor<8xbf16> to tensor<8xf32>
  ddp.check_finite %wide bucket 0 params [@embedding] offsets [4] : tensor<8xf32>
  ddp.adam @expert.weight, %u0 lr 1.0e-3 betas(0.9, 0.95) eps 1.0e-8 : tensor<8x4xf32>
  return
}
