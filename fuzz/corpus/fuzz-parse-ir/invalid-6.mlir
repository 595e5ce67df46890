ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op returns a token that is used 2 times; it must be waited exactly once}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  ddp.wait %t
  ddp.wait %t
  return
}
