~// grad-reduce-in-fp32: the cast of a bf16 gradient to f32 and the
// accumulation over microbatches write straight into the f32 bucket.


ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<2x2xbf16>

func.func @step(%a0: tensor<4xf32>, %a1: tensor<4xf32>, %b: tensor<2x2xbf16>) {
  %acc = ddp.accumulate %a0, %a1 : tensor<4xf32>
  %ga = ddp.grad_ready @a, %acc : tensor<4xf32>
  %gb = ddp.grad_ready @b, %b : tensor<2x2xbf16>
  %cb = ddp.cast %gb : tensor<2x2xbf16> to tensor<2x2xf32>
  %pack = ddp.bucket_pack %ga, %cb offsets [0, 4] : tensor<4xf32>, tensor<2x2xf32> -> tensor<8xf32>
  %r = ddp.all_reduce avg %pack over @world[dp] : tensor<8xf32>
  %ra, %rb = ddp.bucket_unpack %r offsets [0, 4] : tensor<8xf32> -> tensor<4xf32>, tensor<2x2xf32>
  %rb16 = ddp.cast %rb : tensor<2x2xf32> to tensor<2x2xbf16>
  ddp.sgd @a, %ra lr 1.0 : tensor<4xf32>
  ddp.sgd @b, %rb16 lr 1.0 : tensor<2x2xbf16>
  return
}
