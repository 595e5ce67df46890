ä// The text summary of a two-layer step on a profile with round numbers
// (Inputs/unit-profile.json: 1 TFLOP/s, 1 TB/s, 1 GB/s links, no latency).

// The pass is an analysis: the IR comes out unchanged.

// dp=8 rescales the mesh: all-reduces of 1 MB over 8 ranks move
// 2*7/8 MB each (1.75 ms): 1.5-3.25 and 3.25-5 ms, then the two SGDs.

// fp8-gemms prices only 16-bit GEMMs at the FP8 peak: this step's GEMMs are
// f32, so its times do not move (CostModelTest checks the bf16 case).
// FP8:      simulated step @step on lit-unit-fp8 (auto collectives, FP8 GEMMs)
// FP8:        step time                  3.506 ms
// FP8-REPORT: "fp8_gemms": true

// Timeline (ms): fwd 0-0.5, 0.5-1; wgrad w1 1-1.5; all-reduce w1 1.5-2.5 on
// comm0 beside dgrad 1.5-2 and wgrad w0 2-2.5; all-reduce w0 queued behind it
// 2.5-3.5; the second wait blocks 2.5-3.5; two SGDs (3 MB each: 3 us).
// Lower bound: tail = 2.5 ms of compute + 1 ms for w0's all-reduce + 3 us.


// Keys come out sorted.




// DP8:      mesh @world(dp = 8 (2 in the IR)): 8 ranks on 1 node, data-parallel size 8
// DP8-NEXT: step time                  5.006 ms
// DP8:      comm0   busy        3.500 ms         2 ops  [dp] 8 ranks on 1 node

ddp.mesh @world(dp = 2)
ddp.param @w0 layer 0 : tensor<500x500xf32>
ddp.param @w1 layer 1 : tensor<500x500xf32>
func.func @step(%x: tensor<1000x500xf32>, %dy: tensor<1000x500xf32>) {
  %w0 = ddp.get_param @w0 : tensor<500x500xf32>
  %w1 = ddp.get_param @w1 : tensor<500x500xf32>
  %h = ddp.gemm fwd %x, %w0 layer 0 : tensor<1000x500xf32>, tensor<500x500xf32> -> tensor<1000x500xf32>
  %y = ddp.gemm fwd %h, %w1 layer 1 : tensor<1000x500xf32>, tensor<500x500xf32> -> tensor<1000x500xf32>
  %dw1 = ddp.gemm wgrad %h transposed, %dy layer 1 : tensor<1000x500xf32>, tensor<1000x500xf32> -> tensor<500x500xf32>
  %g1 = ddp.grad_ready @w1, %dw1 : tensor<500x500xf32>
  %r1, %t1 = ddp.all_reduce avg %g1 over @world[dp] async : tensor<500x500xf32>
  %dh = ddp.gemm dgrad %dy, %w1 transposed layer 1 : tensor<1000x500xf32>, tensor<500x500xf32> -> tensor<1000x500xf32>
  %dw0 = ddp.gemm wgrad %x transposed, %dh layer 0 : tensor<1000x500xf32>, tensor<1000x500xf32> -> tensor<500x500xf32>
  %g0 = ddp.grad_ready @w0, %dw0 : tensor<500x500xf32>
  %r0, %t0 = ddp.all_reduce avg %g0 over @world[dp] async : tensor<500x500xf32>
  ddp.wait %t1
  ddp.wait %t0
  ddp.sgd @w1, %r1 lr 1.0e-2 : tensor<500x500xf32>
  ddp.sgd @w0, %r0 lr 1.0e-2 : tensor<500x500xf32>
  return
}
