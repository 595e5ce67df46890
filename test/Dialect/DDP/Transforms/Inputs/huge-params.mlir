// Two f32 parameters of 2^59 elements: each takes 2^61 bytes and passes
// every per-op check, but parameters plus gradients take 2^63 bytes, one
// more than int64 counts (issue 25: ddp-simulate and ddp-step-stats printed
// a total of -9223372036854775808 bytes, ddp-lower-to-runtime overflowed
// summing its buffers).
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<576460752303423488xf32>
ddp.param @b : tensor<576460752303423488xf32>
func.func @step(%ga: tensor<576460752303423488xf32>, %gb: tensor<576460752303423488xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<576460752303423488xf32>
  %b = ddp.grad_ready @b, %gb : tensor<576460752303423488xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<576460752303423488xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<576460752303423488xf32>
  ddp.sgd @a, %ra lr 0.5 : tensor<576460752303423488xf32>
  ddp.sgd @b, %rb lr 0.5 : tensor<576460752303423488xf32>
  return
}
