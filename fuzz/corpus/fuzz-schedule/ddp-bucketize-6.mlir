ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @used_too_early(%ga: tensor<4xf32>, %gb: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 8, padded_numel = 8, average_in_collective = false, check_finite = false>]} {
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  // expected-error @+1 {{bucket 0: uses the reduced gradient of @a before the bucket is complete}}
  ddp.sgd @a, %ra lr 0.1 : tensor<4xf32>
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 0 : i64, ddp.bucket_offset = 4 : i64} : tensor<4xf32>
  // expected-note @+1 {{the bucket's collective goes after this op}}
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<4xf32>
  ddp.sgd @b, %rb lr 0.1 : tensor<4xf32>
  return
}
