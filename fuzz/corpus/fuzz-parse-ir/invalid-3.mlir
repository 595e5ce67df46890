func.func @f(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{'ddp.gemm' op result shape 4x8 is not M x N = 4x2}}
  %c = ddp.gemm dgrad %a, %b transposed : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return
}
