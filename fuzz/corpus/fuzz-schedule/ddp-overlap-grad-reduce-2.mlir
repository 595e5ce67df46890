uddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @two_collectives(%ga: tensor<4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<4xf32>
  %r0 = ddp.all_reduce avg %a over @world[dp] {ddp.bucket = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{bucket 0: expected one ddp.all_reduce per bucket}}
  %r1 = ddp.all_reduce avg %a over @world[dp] {ddp.bucket = 0 : i64} : tensor<4xf32>
  return
}
