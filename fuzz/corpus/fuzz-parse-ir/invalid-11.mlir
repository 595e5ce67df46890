ddp.param @w : tensor<4xf32>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op has 1 parameters but 2 offsets; it needs one offset per parameter}}
  ddp.check_finite %b bucket 0 params [@w] offsets [0, 4] : tensor<8xf32>
  return
}
