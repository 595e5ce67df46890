// 2^62 elements of 4 bytes: 2^64 bytes, which wraps to 0 in int64.
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op result #0 must be statically shaped 1-D tensor of less than 2^63 bytes}}
  %b = ddp.bucket_pack %g offsets [0] : tensor<4xf32> -> tensor<4611686018427387904xf32>
  return
}
