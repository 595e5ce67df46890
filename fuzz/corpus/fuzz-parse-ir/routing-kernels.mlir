ddp.mesh @world(ep = 2)
func.func @step(%logits: tensor<16x4xf32>, %x: tensor<16x8xbf16>) {
  %r:3 = ddp.compute "moe_route"(%logits) routing select params [2, 16] flops 0.0 bytes 1.0 : (tensor<16x4xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<32xf32>)
  %p = ddp.compute "moe_permute"(%x, %r#1) routing gather flops 0.0 bytes 1.0 : (tensor<16x8xbf16>, tensor<64xf32>) -> tensor<64x8xbf16>
  %a = ddp.all_to_all %p over @world[ep] {ddp.routed = 2.0 : f64, ddp.routed_fill = 0.5 : f64} : tensor<64x8xbf16>
  %s:2 = ddp.compute "moe_sort_chunks"(%a) routing sort_chunks params [2, 16] flops 0.0 bytes 1.0 {ddp.routed_fill = 0.5 : f64} : (tensor<64x8xbf16>) -> (tensor<32x8xbf16>, tensor<32x8xbf16>)
  %u = ddp.compute "moe_unsort_chunks"(%s#0, %s#1) routing unsort_chunks params [2, 16] flops 0.0 bytes 1.0 : (tensor<32x8xbf16>, tensor<32x8xbf16>) -> tensor<64x8xbf16>
  %c = ddp.compute "moe_unpermute"(%u, %r#2) routing combine params [2] flops 0.0 bytes 1.0 : (tensor<64x8xbf16>, tensor<32xf32>) -> tensor<16x8xbf16>
  %g = ddp.compute "moe_route_grad"(%r#0, %logits, %r#2) routing select_grad params [2] flops 0.0 bytes 1.0 : (tensor<64xf32>, tensor<16x4xf32>, tensor<32xf32>) -> tensor<16x4xf32>
  return
}
