ddp.mesh @world(dp = 256)
ddp.param @w : tensor<8xf32>
func.func @step(%g: tensor<8xf32>) {
  %r = ddp.grad_ready @w, %g : tensor<8xf32>
  %a = ddp.all_reduce avg %r over @world[dp] : tensor<8xf32>
  ddp.sgd @w, %a lr 0.5 : tensor<8xf32>
  return
}
