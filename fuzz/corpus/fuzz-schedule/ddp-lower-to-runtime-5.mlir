ê// An asynchronous collective reads its input until its wait: a parameter it
// reads must be copied when the wait comes after the parameter's update.


ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>

func.func @step(%x: tensor<4xf32>) {
  %w = ddp.get_param @w : tensor<4xf32>
  %all, %t = ddp.all_gather %w over @world[dp] async : tensor<4xf32> -> tensor<8xf32>
  ddp.sgd @w, %x lr 1.0 : tensor<4xf32>
  ddp.wait %t
  return
}
