¼ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
func.func @end_overflows(%ga: tensor<4xf32>) attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  // expected-error @+1 {{bucket 0: the gradient of @a at offset 9223372036854775807 with 4 elements ends past the 4 elements of the bucket}}
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 9223372036854775807 : i64} : tensor<4xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<4xf32>
  return
}
