 // A parameter read after its own update must be read before it: ddp.get_param
// copies it into a buffer. The other parameter is only read before its
// update and is used in place.


ddp.mesh @world(dp = 2)
ddp.param @a : tensor<2x2xf32>
ddp.param @b : tensor<2x2xf32>

func.func @step(%x: tensor<2x2xf32>) {
  %a = ddp.get_param @a : tensor<2x2xf32>
  %b = ddp.get_param @b : tensor<2x2xf32>
  %r = ddp.all_reduce avg %x over @world[dp] : tensor<2x2xf32>
  ddp.sgd @a, %r lr 1.0 : tensor<2x2xf32>
  %y = ddp.gemm fwd %a, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  ddp.sgd @b, %y lr 1.0 : tensor<2x2xf32>
  return
}
