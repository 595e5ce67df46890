.ddp.mesh @world(dp = 2)
func.func @read_before_wait(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-note @+1 {{the asynchronous op}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  // expected-error @+1 {{uses the result of 'ddp.all_reduce' before its token is waited}}
  %y = ddp.compute "read"(%r) flops 8.0 bytes 64.0 : (tensor<8xf32>) -> tensor<8xf32>
  // expected-note @+1 {{the wait}}
  ddp.wait %t
  return %y : tensor<8xf32>
}
