o// 2^59 f32 elements are 2^61 bytes; two such gradients with their padding
// take more than the 2^62 bytes that keep every layout's arithmetic in int64.
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<576460752303423488xf32>
ddp.param @b : tensor<576460752303423488xf32>
// expected-error @+1 {{the gradients up to 'b' take more than 2^62 bytes; bucketing supports no more}}
func.func @too_many_bytes(%ga: tensor<576460752303423488xf32>, %gb: tensor<576460752303423488xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<576460752303423488xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<576460752303423488xf32>
  %b = ddp.grad_ready @b, %gb : tensor<576460752303423488xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<576460752303423488xf32>
  return
}
