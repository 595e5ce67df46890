ddp.param @w : tensor<4xf32>
ddp.param @v : tensor<2x2xf32>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op parameter @v (elements [2, 6)) overlaps parameter @w (elements [0, 4))}}
  ddp.check_finite %b bucket 0 params [@w, @v] offsets [0, 2] : tensor<8xf32>
  return
}
