func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.compute' op needs at least one result}}
  ddp.compute "softmax"(%a) flops 1.0 bytes 1.0 : (tensor<4xf32>) -> ()
  return
}
