J// bf16 gradients, a shared embedding and an expert reduced over its own
// group. With the distributed optimizer Megatron isolates the shared
// embedding; the expert never shares a bucket with dense gradients; buckets
// are issued in the order they complete.
ddp.mesh @world(dp = 2, ep = 2)
ddp.param @emb shared_embedding : tensor<8x8xbf16>
ddp.param @l0.w layer 0 : tensor<16x8xbf16>
ddp.param @e0.w layer 0 expert : tensor<4x8xbf16>
ddp.param @l1.w layer 1 : tensor<16x8xbf16>
func.func @moe(%g1: tensor<16x8xbf16>, %ge: tensor<4x8xbf16>, %g0: tensor<16x8xbf16>, %gm: tensor<8x8xbf16>) {
  %l1 = ddp.grad_ready @l1.w, %g1 : tensor<16x8xbf16>
  %e0 = ddp.grad_ready @e0.w, %ge : tensor<4x8xbf16>
  %l0 = ddp.grad_ready @l0.w, %g0 : tensor<16x8xbf16>
  %em = ddp.grad_ready @emb, %gm : tensor<8x8xbf16>
  %r1 = ddp.all_reduce avg %l1 over @world[dp, ep] : tensor<16x8xbf16>
  %re = ddp.all_reduce avg %e0 over @world[dp] : tensor<4x8xbf16>
  %r0 = ddp.all_reduce avg %l0 over @world[dp, ep] : tensor<16x8xbf16>
  %rm = ddp.all_reduce avg %em over @world[dp, ep] : tensor<8x8xbf16>
  ddp.sgd @l1.w, %r1 lr 0.1 : tensor<16x8xbf16>
  ddp.sgd @e0.w, %re lr 0.1 : tensor<4x8xbf16>
  ddp.sgd @l0.w, %r0 lr 0.1 : tensor<16x8xbf16>
  ddp.sgd @emb, %rm lr 0.1 : tensor<8x8xbf16>
  return
}
