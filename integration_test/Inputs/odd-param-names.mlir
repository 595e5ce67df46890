// Parameter names that a --dump-params line must escape to stay one line of
// four fields (dump-params.test): a space, a newline, a backslash, a tab,
// DEL, and a non-ASCII letter (UTF-8, written as it is). A step as
// ddp-import --inventory makes it, on one rank.
module {
  ddp.mesh @world(dp = 1)
  ddp.param @"a b" : tensor<8x8xf32>
  ddp.param @"nl\0Aname" : tensor<8xf32>
  ddp.param @"back\\slash\09tab\7F" : tensor<8xf32>
  ddp.param @"\CE\B1.weight" : tensor<4x8xf32>
  func.func @step(%arg0: tensor<4x8xf32>) -> tensor<1xf32> {
    %0 = ddp.get_param @"a b" : tensor<8x8xf32>
    %1 = ddp.gemm fwd %arg0, %0 transposed : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %2 = ddp.get_param @"nl\0Aname" : tensor<8xf32>
    %3 = ddp.compute "elementwise"(%1, %2) flops 32.0 bytes 288.0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %4 = ddp.get_param @"back\\slash\09tab\7F" : tensor<8xf32>
    %5 = ddp.compute "elementwise"(%3, %4) flops 32.0 bytes 288.0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %6 = ddp.get_param @"\CE\B1.weight" : tensor<4x8xf32>
    %7 = ddp.gemm fwd %5, %6 transposed : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
    %8 = ddp.compute "loss"(%7) flops 48.0 bytes 68.0 : (tensor<4x4xf32>) -> tensor<1xf32>
    %9 = ddp.compute "loss_grad"(%7) flops 48.0 bytes 128.0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %10 = ddp.gemm dgrad %9, %6 : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %11 = ddp.gemm wgrad %9 transposed, %5 : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %12 = ddp.grad_ready @"\CE\B1.weight", %11 : tensor<4x8xf32>
    %13:2 = ddp.compute "elementwise_grad"(%10, %3, %4) flops 64.0 bytes 448.0 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
    %14 = ddp.grad_ready @"back\\slash\09tab\7F", %13#1 : tensor<8xf32>
    %15:2 = ddp.compute "elementwise_grad"(%13#0, %1, %2) flops 64.0 bytes 448.0 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
    %16 = ddp.grad_ready @"nl\0Aname", %15#1 : tensor<8xf32>
    %17 = ddp.gemm wgrad %15#0 transposed, %arg0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %18 = ddp.grad_ready @"a b", %17 : tensor<8x8xf32>
    %result = ddp.all_reduce avg %12 over @world[dp] : tensor<4x8xf32>
    %result_0 = ddp.all_reduce avg %14 over @world[dp] : tensor<8xf32>
    %result_1 = ddp.all_reduce avg %16 over @world[dp] : tensor<8xf32>
    %result_2 = ddp.all_reduce avg %18 over @world[dp] : tensor<8x8xf32>
    ddp.sgd @"\CE\B1.weight", %result lr 0.5 : tensor<4x8xf32>
    ddp.sgd @"back\\slash\09tab\7F", %result_0 lr 0.5 : tensor<8xf32>
    ddp.sgd @"nl\0Aname", %result_1 lr 0.5 : tensor<8xf32>
    ddp.sgd @"a b", %result_2 lr 0.5 : tensor<8x8xf32>
    return %8 : tensor<1xf32>
  }
}
