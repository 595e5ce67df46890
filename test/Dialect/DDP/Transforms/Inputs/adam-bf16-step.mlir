// Two bf16 parameters (48 elements) updated by Adam over 4 data-parallel
// ranks, for ddp-simulate's model state (ddp-simulate.mlir).
ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8x4xbf16>
ddp.param @b : tensor<16xbf16>

func.func @step(%x: tensor<16x8xbf16>, %db: tensor<16xbf16>) {
  %a = ddp.get_param @a : tensor<8x4xbf16>
  %y = ddp.gemm fwd %x, %a : tensor<16x8xbf16>, tensor<8x4xbf16> -> tensor<16x4xbf16>
  %da = ddp.gemm wgrad %x transposed, %y : tensor<16x8xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
  %gb = ddp.grad_ready @b, %db : tensor<16xbf16>
  %ga = ddp.grad_ready @a, %da : tensor<8x4xbf16>
  %rb = ddp.all_reduce avg %gb over @world[dp] : tensor<16xbf16>
  %ra = ddp.all_reduce avg %ga over @world[dp] : tensor<8x4xbf16>
  ddp.adam @a, %ra lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<8x4xbf16>
  ddp.adam @b, %rb lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<16xbf16>
  return
}
