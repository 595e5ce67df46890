Þddp.mesh @world(dp = 4)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @mixed_reductions(%ga: tensor<8xf32>, %gb: tensor<8xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<8xf32>
  %b = ddp.grad_ready @b, %gb : tensor<8xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<8xf32>
  // expected-error @+1 {{reduces with 'sum' where @a in the same group [dp] uses 'avg'; a bucket has one reduction}}
  %rb = ddp.all_reduce sum %b over @world[dp] : tensor<8xf32>
  return
}
