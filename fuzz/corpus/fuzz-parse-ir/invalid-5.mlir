ddp.param @w : tensor<4x4xf32>
func.func @f(%g: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.grad_ready' op gradient has shape 16 but @w has shape 4x4}}
  %r = ddp.grad_ready @w, %g : tensor<16xf32>
  return
}
