// A step with a second block: the runtime runs straight-line steps only.
ddp.mesh @world(dp = 1)
ddp.param @w : tensor<4xf32>

func.func @step(%x: tensor<4xf32>) {
  ddp.sgd @w, %x lr 1.0 : tensor<4xf32>
  return
^unreachable:
  return
}
