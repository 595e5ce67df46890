šddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
// expected-error @+1 {{bucket 3: no ddp.all_reduce carries its 'ddp.bucket'}}
func.func @no_collective(%ga: tensor<4xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<4xf32>
  %p = ddp.bucket_pack %a offsets [0] {ddp.bucket = 3 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}
