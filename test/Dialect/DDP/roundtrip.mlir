// Strict whitespace: the printed form has one space between its elements.
// RUN: ddp-opt %s --verify-roundtrip | FileCheck %s --strict-whitespace
// RUN: ddp-opt %s --mlir-print-op-generic | ddp-opt --verify-roundtrip | FileCheck %s --strict-whitespace

// CHECK: ddp.mesh @world(dp = 2, tp = 2)
ddp.mesh @world(dp = 2, tp = 2)
// CHECK: ddp.mesh @moe(edp = 2, ep = 2, tp = 1)
ddp.mesh @moe(edp = 2, ep = 2, tp = 1)
// CHECK: ddp.param @fc1.weight layer 0 tp_dim 1 : tensor<16x8xf32>
ddp.param @fc1.weight layer 0 tp_dim 1 : tensor<16x8xf32>
// CHECK: ddp.param @expert.weight layer 1 expert : tensor<8x4xf32>
ddp.param @expert.weight layer 1 expert : tensor<8x4xf32>
// CHECK: ddp.param @embedding shared_embedding : tensor<4xbf16>
ddp.param @embedding shared_embedding : tensor<4xbf16>
// CHECK: ddp.param @"0.bias" : tensor<4xf64>
ddp.param @"0.bias" : tensor<4xf64>

// CHECK-LABEL: func.func @compute
// CHECK-SAME: (%[[X:.*]]: tensor<32x16xf32>, %[[DY:.*]]: tensor<32x8xf32>)
func.func @compute(%x: tensor<32x16xf32>, %dy: tensor<32x8xf32>) {
  // CHECK: %[[W:.*]] = ddp.get_param @fc1.weight : tensor<16x8xf32>
  %w = ddp.get_param @fc1.weight : tensor<16x8xf32>
  // CHECK: %[[Y:.*]] = ddp.gemm fwd %[[X]], %[[W]] layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %y = ddp.gemm fwd %x, %w layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  // CHECK: ddp.gemm dgrad %[[DY]], %[[W]] transposed layer 0 : tensor<32x8xf32>, tensor<16x8xf32> -> tensor<32x16xf32>
  %dx = ddp.gemm dgrad %dy, %w transposed layer 0 : tensor<32x8xf32>, tensor<16x8xf32> -> tensor<32x16xf32>
  // CHECK: %[[DW:.*]] = ddp.gemm wgrad %[[X]] transposed, %[[DY]] : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %dw = ddp.gemm wgrad %x transposed, %dy : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  // CHECK: %[[A:.*]] = ddp.compute "gelu"(%[[Y]]) flops 256.0 bytes 2048.0 layer 0 : (tensor<32x8xf32>) -> tensor<32x8xf32>
  %a = ddp.compute "gelu"(%y) flops 256.0 bytes 2048.0 layer 0 : (tensor<32x8xf32>) -> tensor<32x8xf32>
  // CHECK: ddp.compute "router"() flops 0.0 bytes 1.5e+12 : () -> (tensor<4xf32>, tensor<2xf32>)
  %r:2 = ddp.compute "router"() flops 0.0 bytes 1.5e12 : () -> (tensor<4xf32>, tensor<2xf32>)
  // A routing kernel, which the runtime computes for real: the router of
  // 32 tokens over 8 experts, top 2, capacity 4, then the permutation.
  // CHECK: %[[ROUTE:.*]]:3 = ddp.compute "moe_route"(%[[Y]]) routing select params [2, 4] flops 0.0 bytes 1.0 : (tensor<32x8xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<64xf32>)
  %route:3 = ddp.compute "moe_route"(%y) routing select params [2, 4] flops 0.0 bytes 1.0 : (tensor<32x8xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<64xf32>)
  // CHECK: ddp.compute "moe_permute"(%[[Y]], %[[ROUTE]]#1) routing gather flops 0.0 bytes 1.0 : (tensor<32x8xf32>, tensor<32xf32>) -> tensor<32x8xf32>
  %p = ddp.compute "moe_permute"(%y, %route#1) routing gather flops 0.0 bytes 1.0 : (tensor<32x8xf32>, tensor<32xf32>) -> tensor<32x8xf32>
  // Each expert's rows, for the counted all-to-all.
  // CHECK: %[[COUNTS:.*]] = ddp.compute "moe_count"(%[[ROUTE]]#1) routing count params [4] flops 0.0 bytes 1.0 : (tensor<32xf32>) -> tensor<8xf32>
  %counts = ddp.compute "moe_count"(%route#1) routing count params [4] flops 0.0 bytes 1.0 : (tensor<32xf32>) -> tensor<8xf32>
  // CHECK: %[[ACC:.*]] = ddp.accumulate %[[DW]], %[[DW]] : tensor<16x8xf32>
  %acc = ddp.accumulate %dw, %dw : tensor<16x8xf32>
  // CHECK: %[[S:.*]] = ddp.scale %[[ACC]] by 0.25 : tensor<16x8xf32>
  %s = ddp.scale %acc by 0.25 : tensor<16x8xf32>
  // CHECK: ddp.cast %[[S]] : tensor<16x8xf32> to tensor<16x8xbf16>
  %c = ddp.cast %s : tensor<16x8xf32> to tensor<16x8xbf16>
  // CHECK: %[[G:.*]] = ddp.grad_ready @fc1.weight, %[[ACC]] : tensor<16x8xf32>
  %g = ddp.grad_ready @fc1.weight, %acc : tensor<16x8xf32>
  // CHECK: %[[R:.*]] = ddp.all_reduce avg %[[G]] over @world[dp] : tensor<16x8xf32>
  %gr = ddp.all_reduce avg %g over @world[dp] : tensor<16x8xf32>
  // CHECK: ddp.sgd @fc1.weight, %[[R]] lr 0.01 : tensor<16x8xf32>
  ddp.sgd @fc1.weight, %gr lr 0.01 : tensor<16x8xf32>
  return
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%g: tensor<64xf32>, %m: tensor<4x8xbf16>) {
  // CHECK: %[[R:.*]], %[[T0:.*]] = ddp.all_reduce sum %{{.*}} over @world[dp, tp] async : tensor<64xf32>
  %r, %t0 = ddp.all_reduce sum %g over @world[dp, tp] async : tensor<64xf32>
  // CHECK: ddp.reduce_scatter sum %{{.*}} over @world[dp] async : tensor<64xf32> -> tensor<32xf32>
  %rs, %t1 = ddp.reduce_scatter sum %g over @world[dp] async : tensor<64xf32> -> tensor<32xf32>
  // CHECK: ddp.all_gather %{{.*}} over @world[tp] : tensor<4x8xbf16> -> tensor<8x8xbf16>
  %ag = ddp.all_gather %m over @world[tp] : tensor<4x8xbf16> -> tensor<8x8xbf16>
  // CHECK: ddp.send %{{.*}} to 1 over @world[tp] async : tensor<4x8xbf16>
  %t2 = ddp.send %m to 1 over @world[tp] async : tensor<4x8xbf16>
  // CHECK: ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  %rv, %t3 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  // CHECK: ddp.send %{{.*}} to 1 over @world[tp] : tensor<4x8xbf16>
  ddp.send %m to 1 over @world[tp] : tensor<4x8xbf16>
  // CHECK: ddp.recv from 1 over @world[tp] : tensor<4x8xbf16>
  %rv2 = ddp.recv from 1 over @world[tp] : tensor<4x8xbf16>
  // CHECK: ddp.broadcast %{{.*}} root 1 over @world[tp] : tensor<4x8xbf16>
  %bc = ddp.broadcast %m root 1 over @world[tp] : tensor<4x8xbf16>
  // CHECK: ddp.broadcast %{{.*}} root 0 over @world[dp, tp] async : tensor<64xf32>
  %bc2, %tb = ddp.broadcast %g root 0 over @world[dp, tp] async : tensor<64xf32>
  // CHECK: ddp.all_to_all %{{.*}} over @world[tp] : tensor<4x8xbf16>
  %a2a = ddp.all_to_all %m over @world[tp] : tensor<4x8xbf16>
  // CHECK: ddp.all_to_all %{{.*}} over @world[dp, tp] async : tensor<64xf32>
  %a2a2, %ta = ddp.all_to_all %g over @world[dp, tp] async : tensor<64xf32>
  // Counted rows: 2 ranks x 2 sub-blocks of counts.
  // CHECK: ddp.all_to_all_v %{{.*}} counts %[[C:.*]], %[[C]] over @world[tp] : tensor<4x8xbf16>, tensor<4xf32>
  %cnt = ddp.compute "counts"() flops 0.0 bytes 1.0 : () -> tensor<4xf32>
  %a2av = ddp.all_to_all_v %m counts %cnt, %cnt over @world[tp] : tensor<4x8xbf16>, tensor<4xf32>
  // CHECK: ddp.all_to_all_v %{{.*}} counts %{{.*}}, %{{.*}} over @world[tp] async after %{{.*}} : tensor<4x8xbf16>, tensor<4xf32>
  %a2av2, %tv = ddp.all_to_all_v %m counts %cnt, %cnt over @world[tp] async after %ta : tensor<4x8xbf16>, tensor<4xf32>
  ddp.wait %tv
  ddp.wait %tb
  // CHECK: %[[J:.*]] = ddp.join %[[T0]], %{{.*}}, %{{.*}}
  %j = ddp.join %t0, %t1, %t2
  // CHECK: %{{.*}}, %[[T4:.*]] = ddp.all_gather %{{.*}} over @world[tp] async after %[[J]] : tensor<4x8xbf16> -> tensor<8x8xbf16>
  %ag2, %t4 = ddp.all_gather %m over @world[tp] async after %j : tensor<4x8xbf16> -> tensor<8x8xbf16>
  // CHECK: %{{.*}}, %[[T5:.*]] = ddp.all_reduce sum %{{.*}} over @world[dp] async after %[[T4]], %{{.*}} : tensor<32xf32>
  %t6 = ddp.send %m to 1 over @world[tp] async : tensor<4x8xbf16>
  %r2, %t5 = ddp.all_reduce sum %rs over @world[dp] async after %t4, %t6 : tensor<32xf32>
  // CHECK: ddp.wait %[[T5]]
  ddp.wait %t5
  // CHECK: ddp.wait %{{.*}}
  ddp.wait %t3
  // CHECK: ddp.all_reduce sum %{{.*}} over @moe[edp] : tensor<64xf32>
  %e = ddp.all_reduce sum %r over @moe[edp] : tensor<64xf32>
  // CHECK: ddp.all_reduce max %{{.*}} over @world[tp] : tensor<64xf32>
  %mx = ddp.all_reduce max %e over @world[tp] : tensor<64xf32>
  // CHECK: ddp.all_reduce max %{{.*}} over @world[tp] {note = 1 : i64} : tensor<64xf32>
  %mx2 = ddp.all_reduce max %e over @world[tp] {note = 1 : i64} : tensor<64xf32>
  // CHECK: ddp.all_gather %{{.*}} over @world[tp] async {note = 1 : i64} : tensor<4x8xbf16> -> tensor<8x8xbf16>
  %ag3, %t7 = ddp.all_gather %m over @world[tp] async {note = 1 : i64} : tensor<4x8xbf16> -> tensor<8x8xbf16>
  ddp.wait %t7
  return
}

// CHECK-LABEL: func.func @buckets
func.func @buckets(%g0: tensor<8x4xf32>, %g1: tensor<16x8xf32>, %c4: tensor<8xbf16>) {
  // CHECK: %[[B:.*]] = ddp.bucket_pack %{{.*}}, %{{.*}} offsets [0, 64] : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<256xf32>
  %b = ddp.bucket_pack %g0, %g1 offsets [0, 64] : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<256xf32>
  // CHECK: %[[U:.*]]:2 = ddp.bucket_unpack %[[B]] offsets [0, 64] : tensor<256xf32> -> tensor<8x4xf32>, tensor<16x8xf32>
  %u0, %u1 = ddp.bucket_unpack %b offsets [0, 64] : tensor<256xf32> -> tensor<8x4xf32>, tensor<16x8xf32>
  // CHECK: ddp.check_finite %[[B]] bucket 2 params [@expert.weight, @fc1.weight] offsets [0, 64] : tensor<256xf32>
  ddp.check_finite %b bucket 2 params [@expert.weight, @fc1.weight] offsets [0, 64] : tensor<256xf32>
  // CHECK: ddp.check_finite %{{.*}} bucket 0 params [@embedding] offsets [4] : tensor<8xf32>
  %wide = ddp.cast %c4 : tensor<8xbf16> to tensor<8xf32>
  ddp.check_finite %wide bucket 0 params [@embedding] offsets [4] : tensor<8xf32>
  // CHECK: ddp.adam @expert.weight, %[[U]]#0 lr 0.001 betas(0.9, 0.95) eps 1.0e-08 : tensor<8x4xf32>
  ddp.adam @expert.weight, %u0 lr 1.0e-3 betas(0.9, 0.95) eps 1.0e-8 : tensor<8x4xf32>
  // CHECK: %[[S:.*]] = ddp.reduce_scatter sum %[[B]] over @world[dp] : tensor<256xf32> -> tensor<128xf32>
  %s = ddp.reduce_scatter sum %b over @world[dp] : tensor<256xf32> -> tensor<128xf32>
  // CHECK: %[[P:.*]] = ddp.shard_sgd %[[S]] params [@expert.weight, @fc1.weight] offsets [0, 64] over @world[dp] lr 0.1 : tensor<128xf32> -> tensor<128xf32>
  %p = ddp.shard_sgd %s params [@expert.weight, @fc1.weight] offsets [0, 64] over @world[dp] lr 0.1 : tensor<128xf32> -> tensor<128xf32>
  // CHECK: ddp.shard_adam %[[S]] params [@fc1.weight] offsets [64] over @world[dp] lr 0.001 betas(0.9, 0.95) eps 1.0e-08 : tensor<128xf32> -> tensor<128xf32>
  %q = ddp.shard_adam %s params [@fc1.weight] offsets [64] over @world[dp] lr 1.0e-3 betas(0.9, 0.95) eps 1.0e-8 : tensor<128xf32> -> tensor<128xf32>
  // CHECK: %[[W:.*]] = ddp.all_gather %[[P]] over @world[dp] : tensor<128xf32> -> tensor<256xf32>
  %w = ddp.all_gather %p over @world[dp] : tensor<128xf32> -> tensor<256xf32>
  // CHECK: ddp.set_params %[[W]] params [@expert.weight, @fc1.weight] offsets [0, 64] : tensor<256xf32>
  ddp.set_params %w params [@expert.weight, @fc1.weight] offsets [0, 64] : tensor<256xf32>
  // CHECK: ddp.set_param_shard %[[P]] params [@expert.weight, @fc1.weight] offsets [0, 64] over @world[dp] : tensor<128xf32>
  ddp.set_param_shard %p params [@expert.weight, @fc1.weight] offsets [0, 64] over @world[dp] : tensor<128xf32>
  // CHECK: ddp.get_param_shard params [@expert.weight, @fc1.weight] offsets [0, 64] over @world[dp] : tensor<128xf32>
  %r = ddp.get_param_shard params [@expert.weight, @fc1.weight] offsets [0, 64] over @world[dp] : tensor<128xf32>
  return
}

// Row chunks and stacks (ddp-overlap-tp-comm); interleave 1 is not printed.
// CHECK-LABEL: func.func @chunks
func.func @chunks(%x: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  // CHECK: %[[C0:.*]] = ddp.chunk %{{.*}}[0 of 2] : tensor<16x8xf32> -> tensor<8x8xf32>
  %c0 = ddp.chunk %x[0 of 2] interleave 1 : tensor<16x8xf32> -> tensor<8x8xf32>
  // CHECK: %[[C1:.*]] = ddp.chunk %{{.*}}[1 of 2] interleave 4 : tensor<16x8xf32> -> tensor<8x8xf32>
  %c1 = ddp.chunk %x[1 of 2] interleave 4 : tensor<16x8xf32> -> tensor<8x8xf32>
  // CHECK: ddp.concat %[[C0]], %[[C1]] : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  %y = ddp.concat %c0, %c1 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  // CHECK: ddp.concat %[[C0]], %[[C1]] interleave 4 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  %z = ddp.concat %c0, %c1 interleave 4 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  return %y, %z : tensor<16x8xf32>, tensor<16x8xf32>
}
