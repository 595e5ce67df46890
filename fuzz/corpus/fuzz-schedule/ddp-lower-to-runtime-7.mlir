4// A NaN/Inf check names the bucket and where each parameter's gradient lies
// in it, so that the runtime's message (which gives the first bad element)
// says whose gradient is not finite.


ddp.mesh @world(dp = 2)
ddp.param @a : tensor<2x2xf32>
ddp.param @b : tensor<6xf32>

func.func @step(%ga: tensor<2x2xf32>, %gb: tensor<6xf32>) {
  %pack = ddp.bucket_pack %gb, %ga offsets [0, 8] : tensor<6xf32>, tensor<2x2xf32> -> tensor<12xf32>
  ddp.check_finite %pack bucket 3 params [@b, @a] offsets [0, 8] : tensor<12xf32>
  %r = ddp.all_reduce avg %pack over @world[dp] : tensor<12xf32>
  %rb, %ra = ddp.bucket_unpack %r offsets [0, 8] : tensor<12xf32> -> tensor<6xf32>, tensor<2x2xf32>
  ddp.sgd @a, %ra lr 1.0 : tensor<2x2xf32>
  ddp.sgd @b, %rb lr 1.0 : tensor<6xf32>
  return
}
