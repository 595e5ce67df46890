// A step with an asynchronous all-reduce, which only the schedule passes
// create (ddp-schedule-option-errors.test).
ddp.mesh @world(dp = 2)
func.func @step(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  ddp.wait %t
  return %r : tensor<8xf32>
}
