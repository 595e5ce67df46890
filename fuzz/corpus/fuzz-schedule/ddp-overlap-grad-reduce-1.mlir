P// Bucket 1's gradient is ready before bucket 0 completes; it is still issued
// after bucket 0, keeping the layout's issue order. A bucket nobody reads is
// waited at the end of the step.
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @issue_order(%ga: tensor<4xf32>, %gb: tensor<4xf32>) {
  %b = ddp.grad_ready @b, %gb : tensor<4xf32>
  %a = ddp.grad_ready @a, %ga : tensor<4xf32>
  %p0 = ddp.bucket_pack %a offsets [0] {ddp.bucket = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %r0 = ddp.all_reduce avg %p0 over @world[dp] {ddp.bucket = 0 : i64} : tensor<4xf32>
  %u0 = ddp.bucket_unpack %r0 offsets [0] {ddp.bucket = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %p1 = ddp.bucket_pack %b offsets [0] {ddp.bucket = 1 : i64} : tensor<4xf32> -> tensor<4xf32>
  %r1 = ddp.all_reduce avg %p1 over @world[dp] {ddp.bucket = 1 : i64} : tensor<4xf32>
  %u1 = ddp.bucket_unpack %r1 offsets [0] {ddp.bucket = 1 : i64} : tensor<4xf32> -> tensor<4xf32>
  ddp.sgd @b, %u1 lr 0.1 : tensor<4xf32>
  return
}
