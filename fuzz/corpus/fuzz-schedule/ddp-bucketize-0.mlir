(// Buckets already materialised are left alone.
// A failing run changes nothing, not even the buckets that were valid.

// Bucket 0 is pre-scaled by 1/4 and summed (Megatron's default); bucket 1
// averages in the collective and is checked for NaN/Inf first. Each bucket
// goes where its last reduction was, and the optimizer reads the unpacked
// gradients.
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<10x10xf32>
ddp.param @b : tensor<100xf32>
ddp.param @c : tensor<4x25xf32>
ddp.param @d : tensor<50xf32>
func.func @two_buckets(%ga: tensor<10x10xf32>, %gb: tensor<100xf32>, %gc: tensor<4x25xf32>, %gd: tensor<50xf32>) attributes {
    ddp.buckets = [
      {dtype = f32, mesh = @world, axes = ["dp"], numel = 150 : i64, padded_numel = 150 : i64,
       average_in_collective = false, check_finite = false},
      {dtype = f32, mesh = @world, axes = ["dp"], numel = 228 : i64, padded_numel = 256 : i64,
       average_in_collective = true, check_finite = true}]} {
  %d = ddp.grad_ready @d, %gd {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<50xf32>
  %c = ddp.grad_ready @c, %gc {ddp.bucket = 0 : i64, ddp.bucket_offset = 50 : i64} : tensor<4x25xf32>
  %b = ddp.grad_ready @b, %gb {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64} : tensor<100xf32>
  %a = ddp.grad_ready @a, %ga {ddp.bucket = 1 : i64, ddp.bucket_offset = 128 : i64} : tensor<10x10xf32>
  %rd = ddp.all_reduce avg %d over @world[dp] : tensor<50xf32>
  %rc = ddp.all_reduce avg %c over @world[dp] : tensor<4x25xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<100xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<10x10xf32>
  ddp.sgd @d, %rd lr 0.1 : tensor<50xf32>
  ddp.sgd @c, %rc lr 0.1 : tensor<4x25xf32>
  ddp.sgd @b, %rb lr 0.1 : tensor<100xf32>
  ddp.sgd @a, %ra lr 0.1 : tensor<10x10xf32>
  return
}
