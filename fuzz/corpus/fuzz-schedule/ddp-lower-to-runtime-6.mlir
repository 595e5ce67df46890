// Compute ops pass their operands as ddprt_tensor arrays on the stack, one
// array per kind for the whole step; joins pass an array of handles;
// reductions are DDPRT_REDUCTION_SUM (0) and _MAX (2).


ddp.mesh @world(dp = 2)
ddp.param @w : tensor<2x3xbf16>

func.func @step(%x: tensor<2x3xbf16>, %y: tensor<3x2xbf16>) {
  %z = ddp.compute "silu"(%x, %y) flops 6.0 bytes 24.0 : (tensor<2x3xbf16>, tensor<3x2xbf16>) -> tensor<2x3xbf16>
  %f = ddp.cast %z : tensor<2x3xbf16> to tensor<2x3xf32>
  %acc = ddp.accumulate %f, %f : tensor<2x3xf32>
  %s, %t0 = ddp.reduce_scatter sum %acc over @world[dp] async : tensor<2x3xf32> -> tensor<1x3xf32>
  %r, %t1 = ddp.all_reduce max %acc over @world[dp] async : tensor<2x3xf32>
  %t = ddp.join %t0, %t1
  ddp.wait %t
  ddp.adam @w, %r lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<2x3xf32>
  return
}
