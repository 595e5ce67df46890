”ddp.mesh @model_parallel(dp = 2, tp = 2)
ddp.param @a : tensor<8xf32>
func.func @two_axes(%g: tensor<8xf32>) {
  %a = ddp.grad_ready @a, %g : tensor<8xf32>
  %r = ddp.all_reduce avg %a over @model_parallel[dp, tp] : tensor<8xf32>
  return
}
