// A gradient's reduction made asynchronous by hand: the mark of a step
// scheduled already (ddp-schedule-option-errors.test).
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<8xf32>
func.func @step(%dw: tensor<8xf32>) {
  %g = ddp.grad_ready @w, %dw : tensor<8xf32>
  %r, %t = ddp.all_reduce avg %g over @world[dp] async : tensor<8xf32>
  ddp.wait %t
  ddp.sgd @w, %r lr 0.1 : tensor<8xf32>
  return
}
