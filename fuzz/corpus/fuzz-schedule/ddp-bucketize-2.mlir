rddp.mesh @world(dp = 2)
// expected-error @+1 {{bucket 0 in 'ddp.buckets' needs boolean 'average_in_collective' and 'check_finite'}}
func.func @no_flags() attributes {ddp.buckets = [{dtype = f32, mesh = @world, axes = ["dp"], numel = 1 : i64, padded_numel = 1 : i64}]} {
  return
}
