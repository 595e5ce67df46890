// A bucket over an axis its mesh lacks (ddp-print-bucket-layout.mlir).
ddp.mesh @world(dp = 2)
ddp.param @r : tensor<8xf32>
func.func @step(%r: tensor<8xf32>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["tp"], numel = 8, padded_numel = 8, average_in_collective = false, check_finite = false>]} {
  %g = ddp.grad_ready @r, %r {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<8xf32>
  %a = ddp.all_reduce avg %g over @world[dp] : tensor<8xf32>
  ddp.sgd @r, %a lr 0.1 : tensor<8xf32>
  return
}
