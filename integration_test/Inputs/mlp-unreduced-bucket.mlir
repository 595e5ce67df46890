// The MLP example after ddp-schedule="policy=size bucket-size=300", with the
// bucket's all-reduce (and its wait) removed: every rank updates its
// parameters with its own gradient, a wrong schedule that --verify must catch
// (integration_test/ddp-run/verify-catches-broken-schedules.test).

module {
  ddp.mesh @world(dp = 2)
  ddp.param @fc1.weight layer 0 : tensor<16x32xf32>
  ddp.param @fc1.bias layer 0 : tensor<32xf32>
  ddp.param @fc2.weight layer 1 : tensor<32x8xf32>
  ddp.param @fc2.bias layer 1 : tensor<8xf32>
  func.func @step(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>) attributes {ddp.bucket_policy = #ddp.bucket_policy<name = size>, ddp.buckets = [#ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 808, padded_numel = 808, average_in_collective = false, check_finite = false>]} {
    %0 = ddp.get_param @fc1.weight : tensor<16x32xf32>
    %1 = ddp.get_param @fc1.bias : tensor<32xf32>
    %2 = ddp.get_param @fc2.weight : tensor<32x8xf32>
    %3 = ddp.get_param @fc2.bias : tensor<8xf32>
    %4 = ddp.gemm fwd %arg0, %0 layer 0 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %5 = ddp.compute "bias_add"(%4, %1) flops 256.0 bytes 2176.0 layer 0 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %6 = ddp.compute "relu"(%5) flops 256.0 bytes 2048.0 layer 0 : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %7 = ddp.gemm fwd %6, %2 layer 1 : tensor<8x32xf32>, tensor<32x8xf32> -> tensor<8x8xf32>
    %8 = ddp.compute "bias_add"(%7, %3) flops 64.0 bytes 544.0 layer 1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
    %9 = ddp.compute "mse_loss_grad"(%8) flops 128.0 bytes 512.0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %10 = ddp.compute "bias_grad"(%9) flops 64.0 bytes 288.0 layer 1 : (tensor<8x8xf32>) -> tensor<8xf32>
    %11 = ddp.gemm wgrad %6 transposed, %9 layer 1 : tensor<8x32xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
    %12 = ddp.gemm dgrad %9, %2 transposed layer 1 : tensor<8x8xf32>, tensor<32x8xf32> -> tensor<8x32xf32>
    %13 = ddp.compute "relu_grad"(%12, %5) flops 256.0 bytes 3072.0 layer 0 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
    %14 = ddp.compute "bias_grad"(%13) flops 256.0 bytes 1152.0 layer 0 : (tensor<8x32xf32>) -> tensor<32xf32>
    %15 = ddp.gemm wgrad %arg0 transposed, %13 layer 0 : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
    %16 = ddp.gemm fwd %arg1, %0 layer 0 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %17 = ddp.compute "bias_add"(%16, %1) flops 256.0 bytes 2176.0 layer 0 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %18 = ddp.compute "relu"(%17) flops 256.0 bytes 2048.0 layer 0 : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %19 = ddp.gemm fwd %18, %2 layer 1 : tensor<8x32xf32>, tensor<32x8xf32> -> tensor<8x8xf32>
    %20 = ddp.compute "bias_add"(%19, %3) flops 64.0 bytes 544.0 layer 1 : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
    %21 = ddp.compute "mse_loss_grad"(%20) flops 128.0 bytes 512.0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %22 = ddp.compute "bias_grad"(%21) flops 64.0 bytes 288.0 layer 1 : (tensor<8x8xf32>) -> tensor<8xf32>
    %23 = ddp.accumulate %10, %22 : tensor<8xf32>
    %24 = ddp.grad_ready @fc2.bias, %23 {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<8xf32>
    %25 = ddp.gemm wgrad %18 transposed, %21 layer 1 : tensor<8x32xf32>, tensor<8x8xf32> -> tensor<32x8xf32>
    %26 = ddp.accumulate %11, %25 : tensor<32x8xf32>
    %27 = ddp.grad_ready @fc2.weight, %26 {ddp.bucket = 0 : i64, ddp.bucket_offset = 8 : i64} : tensor<32x8xf32>
    %28 = ddp.gemm dgrad %21, %2 transposed layer 1 : tensor<8x8xf32>, tensor<32x8xf32> -> tensor<8x32xf32>
    %29 = ddp.compute "relu_grad"(%28, %17) flops 256.0 bytes 3072.0 layer 0 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
    %30 = ddp.compute "bias_grad"(%29) flops 256.0 bytes 1152.0 layer 0 : (tensor<8x32xf32>) -> tensor<32xf32>
    %31 = ddp.accumulate %14, %30 : tensor<32xf32>
    %32 = ddp.grad_ready @fc1.bias, %31 {ddp.bucket = 0 : i64, ddp.bucket_offset = 264 : i64} : tensor<32xf32>
    %33 = ddp.gemm wgrad %arg1 transposed, %29 layer 0 : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
    %34 = ddp.accumulate %15, %33 : tensor<16x32xf32>
    %35 = ddp.grad_ready @fc1.weight, %34 {ddp.bucket = 0 : i64, ddp.bucket_offset = 296 : i64} : tensor<16x32xf32>
    %36 = ddp.bucket_pack %24, %27, %32, %35 offsets [0, 8, 264, 296] {ddp.bucket = 0 : i64} : tensor<8xf32>, tensor<32x8xf32>, tensor<32xf32>, tensor<16x32xf32> -> tensor<808xf32>
    %37 = ddp.scale %36 by 0.5 {ddp.bucket = 0 : i64} : tensor<808xf32>
    %38:4 = ddp.bucket_unpack %37 offsets [0, 8, 264, 296] {ddp.bucket = 0 : i64} : tensor<808xf32> -> tensor<8xf32>, tensor<32x8xf32>, tensor<32xf32>, tensor<16x32xf32>
    ddp.sgd @fc2.bias, %38#0 lr 0.5 : tensor<8xf32>
    ddp.sgd @fc2.weight, %38#1 lr 0.5 : tensor<32x8xf32>
    ddp.sgd @fc1.bias, %38#2 lr 0.5 : tensor<32xf32>
    ddp.sgd @fc1.weight, %38#3 lr 0.5 : tensor<16x32xf32>
    return
  }
}

