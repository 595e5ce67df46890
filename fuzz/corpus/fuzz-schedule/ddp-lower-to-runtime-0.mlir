1// The program interface: init passes the ABI version of ddprt.h and the mesh;
// setup creates the groups, then registers the parameters and allocates a
// buffer per stored tensor in loops over constant tables, and fills the
// inputs; teardown frees the buffers.


// Each runtime function is declared once, with the type of its C prototype
// (the step calls ddprt_gemm twice).




// A synchronous all-reduce passes a null handle; the parameter's own storage
// feeds the GEMM (no update comes before its last use).


ddp.mesh @world(dp = 2, tp = 2)
ddp.param @w : tensor<4x2xf32>

func.func @step(%x: tensor<3x4xf32>) {
  %w = ddp.get_param @w : tensor<4x2xf32>
  %y = ddp.gemm fwd %x, %w : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %dw = ddp.gemm wgrad %x transposed, %y : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %g = ddp.grad_ready @w, %dw : tensor<4x2xf32>
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<4x2xf32>
  ddp.sgd @w, %r lr 0.5 : tensor<4x2xf32>
  return
}
