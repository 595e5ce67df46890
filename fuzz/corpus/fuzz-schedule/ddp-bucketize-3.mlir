—ddp.mesh @world(dp = 2)
// expected-error @+1 {{bucket 0: no gradient is assigned to it}}
func.func @empty() attributes {ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 4, padded_numel = 4, average_in_collective = false, check_finite = false>]} {
  return
}
