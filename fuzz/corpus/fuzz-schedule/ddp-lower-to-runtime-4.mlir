Å// A ddp.get_param after its parameter's update reads the updated value in
// place: only the updates after it matter.


ddp.mesh @world(dp = 2)
ddp.param @a : tensor<2x2xf32>

func.func @step(%x: tensor<2x2xf32>) {
  ddp.sgd @a, %x lr 1.0 : tensor<2x2xf32>
  %a = ddp.get_param @a : tensor<2x2xf32>
  %y = ddp.gemm fwd %a, %x : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return
}
