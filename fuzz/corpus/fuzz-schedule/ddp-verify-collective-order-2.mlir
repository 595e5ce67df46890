Sddp.mesh @world(dp = 2)
func.func @read_before_joined_wait(%g: tensor<8xf32>, %h: tensor<8xf32>) -> tensor<8xf32> {
  // expected-note @+1 {{the asynchronous op}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  %s, %u = ddp.all_reduce sum %h over @world[dp] async : tensor<8xf32>
  %j = ddp.join %t, %u
  // expected-error @+1 {{uses the result of 'ddp.all_reduce' before its token is waited}}
  ddp.sgd @w, %r lr 0.1 : tensor<8xf32>
  // expected-note @+1 {{the wait}}
  ddp.wait %j
  return %s : tensor<8xf32>
}
ddp.param @w : tensor<8xf32>
