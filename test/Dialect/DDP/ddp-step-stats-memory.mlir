// RUN: ddp-opt -ddp-step-stats %s -o /dev/null | FileCheck %s

// What the lowered step allocates per rank, counted by hand:
// parameters: @w, 8x4 bf16 = 64 bytes;
// buffers: %x 16x8 bf16 (256), %y 16x4 (128), %dw 8x4 (64), the reduced
// gradient 8x4 (64) = 512 (get_param and grad_ready alias, so no buffer);
// optimizer state: Adam's two f32 moments of 32 elements = 256, and the f32
// main copy of the bf16 parameter = 128: 384;
// cpu working copies, f32: the largest GEMM lhs (16x8 = 128), rhs (16x4 =
// 64) and product (16x4 = 64), and the 32-element bf16 all-reduce: 288 x 4
// = 1152. Total 2112.

// CHECK: runtime memory per rank: 2112 bytes (2.06 KiB)
// CHECK-NEXT:   parameters: 64
// CHECK-NEXT:   buffers: 512
// CHECK-NEXT:   optimizer state: 384
// CHECK-NEXT:   cpu working copies: 1152

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<8x4xbf16>

func.func @step(%x: tensor<16x8xbf16>) {
  %w = ddp.get_param @w : tensor<8x4xbf16>
  %y = ddp.gemm fwd %x, %w : tensor<16x8xbf16>, tensor<8x4xbf16> -> tensor<16x4xbf16>
  %dw = ddp.gemm wgrad %x transposed, %y : tensor<16x8xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
  %g = ddp.grad_ready @w, %dw : tensor<8x4xbf16>
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<8x4xbf16>
  ddp.adam @w, %r lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<8x4xbf16>
  return
}
