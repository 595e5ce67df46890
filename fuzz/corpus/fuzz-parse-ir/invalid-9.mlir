func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op gradient #0 at offset 9223372036854775807 with 4 elements ends past the 8 elements of the bucket}}
  %c = ddp.bucket_pack %a offsets [9223372036854775807] : tensor<4xf32> -> tensor<8xf32>
  return
}
