ddp.mesh @world(dp = 4)
func.func @f(%g: tensor<16x2xf32>) {
  // expected-error @+1 {{'ddp.reduce_scatter' op needs input and result of the same non-zero rank}}
  %r = ddp.reduce_scatter sum %g over @world[dp] : tensor<16x2xf32> -> tensor<8xf32>
  return
}
