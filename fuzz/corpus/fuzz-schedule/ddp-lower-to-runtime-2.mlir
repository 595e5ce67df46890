{// A gradient that is not computed in the step (here a step input) cannot be
// produced in its bucket: it is copied into its slice at the pack.


ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>

func.func @step(%g: tensor<4xf32>) {
  %gr = ddp.grad_ready @w, %g : tensor<4xf32>
  %b = ddp.bucket_pack %gr offsets [2] : tensor<4xf32> -> tensor<8xf32>
  %r = ddp.all_reduce sum %b over @world[dp] : tensor<8xf32>
  %v = ddp.bucket_unpack %r offsets [2] : tensor<8xf32> -> tensor<4xf32>
  ddp.sgd @w, %v lr 1.0 : tensor<4xf32>
  return
}
