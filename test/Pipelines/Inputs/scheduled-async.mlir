// A hand-written step with an asynchronous collective of its own, and no
// gradient: ddp-schedule takes it (ddp-schedule-option-errors.test).
ddp.mesh @world(dp = 2)
func.func @step(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  ddp.wait %t
  return %r : tensor<8xf32>
}
