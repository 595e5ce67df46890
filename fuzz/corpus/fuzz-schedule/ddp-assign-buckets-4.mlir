¹ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8xf32>
func.func @reduced_twice(%g: tensor<8xf32>) {
  // expected-error @+1 {{the gradient of @a is reduced by more than one ddp.all_reduce; bucketing needs exactly one}}
  %a = ddp.grad_ready @a, %g : tensor<8xf32>
  %r0 = ddp.all_reduce avg %a over @world[dp] : tensor<8xf32>
  %r1 = ddp.all_reduce sum %a over @world[dp] : tensor<8xf32>
  return
}
