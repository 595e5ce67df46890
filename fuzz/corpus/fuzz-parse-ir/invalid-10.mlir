ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{'ddp.sgd' op gradient has shape 2x2 but @w has shape 4}}
  ddp.sgd @w, %g lr 0.1 : tensor<2x2xf32>
  return
}
