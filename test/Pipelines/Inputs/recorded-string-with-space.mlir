// A recorded string whose space would, unquoted, start a second option.
module attributes {ddp.schedule_options = {"hw" = "h100-sxm-ib400 policy=pytorch"}} {
  ddp.mesh @world(dp = 2)
  ddp.param @w : tensor<8xf32>
  func.func @step(%g: tensor<8xf32>) {
    %r = ddp.grad_ready @w, %g : tensor<8xf32>
    %a = ddp.all_reduce avg %r over @world[dp] : tensor<8xf32>
    ddp.sgd @w, %a lr 0.5 : tensor<8xf32>
    return
  }
}
