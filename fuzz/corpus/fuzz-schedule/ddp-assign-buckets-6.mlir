ddp.mesh @world(dp = 4)
ddp.mesh @other(dp = 4)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @two_meshes(%ga: tensor<8xf32>, %gb: tensor<8xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %b = ddp.grad_ready @b, %gb : tensor<8xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<8xf32>
  // expected-error @+1 {{bucketing needs every gradient reduced over one mesh; this one uses @other and an earlier one @world}}
  %rb = ddp.all_reduce avg %b over @other[dp] : tensor<8xf32>
  return
}
