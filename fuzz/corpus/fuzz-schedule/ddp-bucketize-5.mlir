áddp.mesh @world(dp = 2, tp = 2)
ddp.param @a : tensor<4xf32>
func.func @wrong_group(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{bucket 0: the gradient of @a is reduced over @world[dp,tp] but the bucket over @world[dp]}}
  %ra = ddp.all_reduce avg %a over @world[dp, tp] : tensor<4xf32>
  return
}
