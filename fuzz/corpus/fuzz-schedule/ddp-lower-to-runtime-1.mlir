V// Gradient as bucket view: both wgrads write straight into their slices of
// the bucket (byte offsets 0 and 16), packing copies nothing, the
// asynchronous all-reduce gets a handle slot that the wait reads, and the
// optimizer reads views of the reduced bucket.


ddp.mesh @world(dp = 2)
ddp.param @w0 : tensor<4x2xf32>
ddp.param @w1 : tensor<2x2xf32>

func.func @step(%x: tensor<3x4xf32>, %dy: tensor<3x2xf32>) {
  %w0 = ddp.get_param @w0 : tensor<4x2xf32>
  %y = ddp.gemm fwd %x, %w0 : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %dw0 = ddp.gemm wgrad %x transposed, %dy : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %g0 = ddp.grad_ready @w0, %dw0 : tensor<4x2xf32>
  %dw1 = ddp.gemm wgrad %y transposed, %dy : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  %g1 = ddp.grad_ready @w1, %dw1 : tensor<2x2xf32>
  %b = ddp.bucket_pack %g1, %g0 offsets [0, 4] : tensor<2x2xf32>, tensor<4x2xf32> -> tensor<16xf32>
  %r, %t = ddp.all_reduce avg %b over @world[dp] async : tensor<16xf32>
  ddp.wait %t
  %r1, %r0 = ddp.bucket_unpack %r offsets [0, 4] : tensor<16xf32> -> tensor<2x2xf32>, tensor<4x2xf32>
  ddp.sgd @w0, %r0 lr 0.5 : tensor<4x2xf32>
  ddp.sgd @w1, %r1 lr 0.5 : tensor<2x2xf32>
  return
}
