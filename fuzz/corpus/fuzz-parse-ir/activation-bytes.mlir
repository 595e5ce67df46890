module attributes {ddp.activation_bytes = {embedding = 2304 : i64, layer = 45056 : i64, output = 36864 : i64}} {
  ddp.mesh @world(pp = 2, dp = 1)
  ddp.param @w layer 0 : tensor<4x4xf32>
  func.func @step_stage0(%x: tensor<4x4xf32>) attributes {ddp.pipeline_stage = 0 : i64} {
    %w = ddp.get_param @w {ddp.task = "F0.0"} : tensor<4x4xf32>
    %y = ddp.gemm fwd %x, %w {ddp.task = "F0.0"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %g = ddp.grad_ready @w, %y {ddp.task = "B0.0"} : tensor<4x4xf32>
    ddp.sgd @w, %g lr 0.5 : tensor<4x4xf32>
    return
  }
}
