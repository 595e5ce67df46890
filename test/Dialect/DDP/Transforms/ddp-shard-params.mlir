// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params -verify-diagnostics | FileCheck %s
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=fsdp-prefetch=0 -verify-diagnostics | FileCheck %s --check-prefix=DEPTH0
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=fsdp-prefetch=2 -verify-diagnostics | FileCheck %s --check-prefix=DEPTH2
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=reshard-after-forward=false -verify-diagnostics | FileCheck %s --check-prefix=KEEP
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=fsdp-keep-last-units=2 -verify-diagnostics | FileCheck %s --check-prefix=KEEP2
// Megatron-FSDP's prefetch budget (half the unit size; each run gathers 16
// elements): 1 element, none ahead; 32, one; 64, two; 64 in double buffers,
// one.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=suggested-communication-unit-size=1 -verify-diagnostics | FileCheck %s --check-prefix=DEPTH0
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=suggested-communication-unit-size=32 -verify-diagnostics | FileCheck %s
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=suggested-communication-unit-size=64 -verify-diagnostics | FileCheck %s --check-prefix=DEPTH2
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params="suggested-communication-unit-size=64 fsdp-double-buffer=true" -verify-diagnostics | FileCheck %s
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params=fsdp-double-buffer=true -verify-diagnostics | FileCheck %s
// fsdp-unit-prefetch, on the first step (three units): one depth each
// gives what fsdp-prefetch gives; 2,0,1 gathers layer 0 two runs ahead,
// layer 1 none, layer 2 one. Its errors name the fix.
// RUN: sed -n '1,/^\/\/ -----/p' %s | ddp-opt --ddp-shard-params=fsdp-unit-prefetch=1,1,1 | FileCheck %s
// RUN: sed -n '1,/^\/\/ -----/p' %s | ddp-opt --ddp-shard-params=fsdp-unit-prefetch=0,0,0 | FileCheck %s --check-prefix=DEPTH0
// RUN: sed -n '1,/^\/\/ -----/p' %s | ddp-opt --ddp-shard-params=fsdp-unit-prefetch=2,2,2 | FileCheck %s --check-prefix=DEPTH2
// RUN: sed -n '1,/^\/\/ -----/p' %s | ddp-opt --ddp-shard-params=fsdp-unit-prefetch=2,0,1 | FileCheck %s --check-prefix=UNIT
// RUN: sed -n '1,/^\/\/ -----/p' %s | not ddp-opt --ddp-shard-params=fsdp-unit-prefetch=1,1 2>&1 | FileCheck %s --check-prefix=UNITCOUNT
// RUN: sed -n '1,/^\/\/ -----/p' %s | not ddp-opt --ddp-shard-params=fsdp-unit-prefetch=1,x,1 2>&1 | FileCheck %s --check-prefix=UNITWORD
// RUN: sed -n '1,/^\/\/ -----/p' %s | not ddp-opt --ddp-shard-params="fsdp-unit-prefetch=1,1,1 suggested-communication-unit-size=64" 2>&1 | FileCheck %s --check-prefix=UNITBUDGET
// RUN: sed -n '1,/^\/\/ -----/p' %s | not ddp-opt --ddp-shard-params="fsdp-unit-prefetch=1,2,1 fsdp-double-buffer=true" 2>&1 | FileCheck %s --check-prefix=UNITDB
// UNITCOUNT: error: fsdp-unit-prefetch gives 2 depths, but the step has 3 units; give one per unit, in forward order
// UNITWORD: error: fsdp-unit-prefetch='1,x,1': 'x' is not a depth; give non-negative integers separated by commas, one per unit in forward order
// UNITBUDGET: error: fsdp-unit-prefetch and suggested-communication-unit-size both set how far ahead each unit is gathered; give one
// UNITDB: error: fsdp-double-buffer holds two units' gathered parameters, the computing one's and the next: fsdp-unit-prefetch gives a depth above 1; use 1 or 0
// Double buffers hold two units: more is an error naming the fix.
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params="fsdp-double-buffer=true fsdp-prefetch=2" 2>&1 | FileCheck %s --check-prefix=DBPREFETCH
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params="fsdp-double-buffer=true reshard-after-forward=false" 2>&1 | FileCheck %s --check-prefix=DBKEEP
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params="fsdp-double-buffer=true fsdp-keep-last-units=1" 2>&1 | FileCheck %s --check-prefix=DBKEEPLAST
// DBPREFETCH: error: fsdp-double-buffer holds two units' gathered parameters, the computing one's and the next: fsdp-prefetch=2 needs 3; use fsdp-prefetch=1 or 0
// DBKEEP: error: fsdp-double-buffer holds two units' gathered parameters, but reshard-after-forward=false keeps units gathered from their forward to their backward beside the others; drop it or fsdp-double-buffer
// DBKEEPLAST: error: fsdp-double-buffer holds two units' gathered parameters, but fsdp-keep-last-units keeps units gathered from their forward to their backward beside the others; drop it or fsdp-double-buffer
// Running it again changes nothing.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params --ddp-shard-params -verify-diagnostics | FileCheck %s
// A failing run changes nothing.
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-shard-params --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=UNTOUCHED

// Three layers (one FSDP unit each) and an embedding outside them, two
// microbatches, in the form ddp-overlap-param-gather leaves: every bucket
// gathered at the start of the step and written whole into the parameters.
// Each unit's reads form runs: layer 0's forward (its norm and GEMM),
// layer 1's forward, layer 2's forward and backward (the last unit: no
// other unit's read between), layer 1's backward, layer 0's backward (its
// dgrad and norm_grad); then microbatch 1 alike. Layer 0's backward and the
// next forward have only the embedding between: the forward GEMM after a
// backward read starts a new run, which takes the norm before it. The
// embedding's gather stays as it was.

// CHECK-LABEL: func.func @step
// The first run's gather at the start, and the embedding's as before.
// Each run's shard records its unit in forward order (ddp.fsdp_unit).
// CHECK-NEXT: %[[S0:.*]] = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] {ddp.fsdp_unit = 0 : i64} : tensor<8xf32>
// CHECK-NEXT: %[[G0:.*]], %[[T0:.*]] = ddp.all_gather %[[S0]] over @world[dp] async
// CHECK-NEXT: %[[SE:.*]] = ddp.get_param_shard params [@emb]
// CHECK-NEXT: %[[GE:.*]], %[[TE:.*]] = ddp.all_gather %[[SE]]
// CHECK-NEXT: ddp.wait %[[TE]]
// CHECK-NEXT: ddp.set_params %[[GE]] params [@emb]
// CHECK-NEXT: %[[E:.*]] = ddp.get_param @emb
// CHECK-NEXT: ddp.compute "embedding"(%{{.*}}, %[[E]])
// Run 0 (layer 0's forward): waited and unpacked before its first read; the
// next run's gather issued right after.
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: %[[W0:.*]] = ddp.bucket_unpack %[[G0]] offsets [0] : tensor<16xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[S1:.*]] = ddp.get_param_shard params [@l1.w] offsets [0] over @world[dp] {ddp.fsdp_unit = 1 : i64}
// CHECK-NEXT: %[[G1:.*]], %[[T1:.*]] = ddp.all_gather %[[S1]]
// CHECK-NEXT: ddp.compute "norm"(%{{.*}}, %[[W0]])
// CHECK-NEXT: ddp.gemm fwd %{{.*}}, %[[W0]]
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: %[[W1:.*]] = ddp.bucket_unpack %[[G1]]
// CHECK-NEXT: ddp.get_param_shard params [@l2.w]
// CHECK-NEXT: %[[G2:.*]], %[[T2:.*]] = ddp.all_gather
// CHECK-NEXT: ddp.gemm fwd %{{.*}}, %[[W1]] layer 1
// Layer 2's forward and backward read one gather.
// CHECK-NEXT: ddp.wait %[[T2]]
// CHECK-NEXT: %[[W2:.*]] = ddp.bucket_unpack %[[G2]]
// CHECK-NEXT: ddp.get_param_shard params [@l1.w]
// CHECK-NEXT: %[[G1B:.*]], %[[T1B:.*]] = ddp.all_gather
// CHECK-NEXT: ddp.gemm fwd %{{.*}}, %[[W2]] layer 2
// CHECK-NEXT: ddp.gemm dgrad %{{.*}}, %[[W2]] layer 2
// Layer 1 is gathered again for its backward.
// CHECK-NEXT: ddp.wait %[[T1B]]
// CHECK-NEXT: %[[W1B:.*]] = ddp.bucket_unpack %[[G1B]]
// CHECK-NEXT: ddp.get_param_shard params [@l0.w]
// CHECK-NEXT: %[[G0B:.*]], %[[T0B:.*]] = ddp.all_gather
// CHECK-NEXT: ddp.gemm dgrad %{{.*}}, %[[W1B]] layer 1
// CHECK-NEXT: ddp.wait %[[T0B]]
// CHECK-NEXT: %[[W0B:.*]] = ddp.bucket_unpack %[[G0B]]
// CHECK-NEXT: ddp.get_param_shard params [@l0.w]
// CHECK-NEXT: %[[G0N:.*]], %[[T0N:.*]] = ddp.all_gather
// CHECK-NEXT: ddp.gemm dgrad %{{.*}}, %[[W0B]] layer 0
// CHECK-NEXT: ddp.compute "norm_grad"(%{{.*}}, %[[W0B]])
// Microbatch 1: layer 0's forward is a run of its own from its norm on.
// CHECK-NEXT: ddp.compute "embedding"(%{{.*}}, %[[E]])
// CHECK-NEXT: ddp.wait %[[T0N]]
// CHECK-NEXT: %[[W0N:.*]] = ddp.bucket_unpack %[[G0N]]
// CHECK-NEXT: ddp.get_param_shard params [@l1.w]
// CHECK-NEXT: ddp.all_gather
// CHECK-NEXT: ddp.compute "norm"(%{{.*}}, %[[W0N]])
// CHECK-NEXT: ddp.gemm fwd %{{.*}}, %[[W0N]] layer 0
// Ten runs in all; the last issues nothing after its wait.
// CHECK-COUNT-4: ddp.bucket_unpack
// CHECK-NOT: ddp.all_gather
// CHECK-NOT: ddp.get_param @l
// CHECK-NOT: ddp.set_params
// The end of the step still writes the rank's updated shards.
// CHECK: ddp.set_param_shard %{{.*}} params [@l0.w]
// CHECK: return

// With no prefetch each gather is issued right before its wait.
// DEPTH0-LABEL: func.func @step
// DEPTH0-NOT: params [@l0.w]
// DEPTH0: ddp.compute "embedding"
// DEPTH0-NEXT: ddp.get_param_shard params [@l0.w]
// DEPTH0-NEXT: %[[G:.*]], %[[T:.*]] = ddp.all_gather
// DEPTH0-NEXT: ddp.wait %[[T]]
// DEPTH0-NEXT: ddp.bucket_unpack %[[G]]
// DEPTH0-NEXT: ddp.compute "norm"
// DEPTH0-COUNT-9: ddp.bucket_unpack
// DEPTH0-NOT: ddp.bucket_unpack

// Two runs ahead: the first two at the start, run 2's after run 0's wait.
// DEPTH2-LABEL: func.func @step
// DEPTH2-NEXT: ddp.get_param_shard params [@l0.w]
// DEPTH2-NEXT: ddp.all_gather
// DEPTH2-NEXT: ddp.get_param_shard params [@l1.w]
// DEPTH2-NEXT: ddp.all_gather
// DEPTH2: ddp.compute "embedding"
// DEPTH2-NEXT: ddp.wait
// DEPTH2-NEXT: ddp.bucket_unpack
// DEPTH2-NEXT: ddp.get_param_shard params [@l2.w]
// DEPTH2-NEXT: ddp.all_gather
// DEPTH2-NEXT: ddp.compute "norm"

// fsdp-unit-prefetch=2,0,1: run 0 (layer 0) at the start; run 1 (layer 1,
// depth 0) right before its wait, and run 2 (layer 2, one ahead) after
// it; run 3 (layer 1's backward) before its wait, and runs 4 and 5 (layer
// 0, two ahead of run 5 and no earlier than run 3) after it.
// UNIT-LABEL: func.func @step
// UNIT-NEXT: ddp.get_param_shard params [@l0.w] {{.*}} {ddp.fsdp_unit = 0 : i64}
// UNIT-NEXT: ddp.all_gather
// UNIT: ddp.compute "embedding"
// UNIT-NEXT: ddp.wait
// UNIT-NEXT: ddp.bucket_unpack
// UNIT-NEXT: ddp.compute "norm"
// UNIT-NEXT: ddp.gemm fwd {{.*}} layer 0
// UNIT-NEXT: ddp.get_param_shard params [@l1.w] {{.*}} {ddp.fsdp_unit = 1 : i64}
// UNIT-NEXT: %[[G1:.*]], %[[T1:.*]] = ddp.all_gather
// UNIT-NEXT: ddp.wait %[[T1]]
// UNIT-NEXT: ddp.bucket_unpack %[[G1]]
// UNIT-NEXT: ddp.get_param_shard params [@l2.w] {{.*}} {ddp.fsdp_unit = 2 : i64}
// UNIT-NEXT: ddp.all_gather
// UNIT-NEXT: ddp.gemm fwd {{.*}} layer 1
// UNIT-NEXT: ddp.wait
// UNIT-NEXT: ddp.bucket_unpack
// UNIT-NEXT: ddp.gemm fwd {{.*}} layer 2
// UNIT-NEXT: ddp.gemm dgrad {{.*}} layer 2
// UNIT-NEXT: ddp.get_param_shard params [@l1.w]
// UNIT-NEXT: %[[G3:.*]], %[[T3:.*]] = ddp.all_gather
// UNIT-NEXT: ddp.wait %[[T3]]
// UNIT-NEXT: ddp.bucket_unpack %[[G3]]
// UNIT-NEXT: ddp.get_param_shard params [@l0.w]
// UNIT-NEXT: ddp.all_gather
// UNIT-NEXT: ddp.get_param_shard params [@l0.w]
// UNIT-NEXT: ddp.all_gather
// UNIT-NEXT: ddp.gemm dgrad {{.*}} layer 1
// UNIT-COUNT-6: ddp.bucket_unpack
// UNIT-NOT: ddp.bucket_unpack

// Without resharding after the forward, layers 0 and 1 keep their forward's
// gather for their backward: six runs.
// KEEP-LABEL: func.func @step
// KEEP: %[[W0:.*]] = ddp.bucket_unpack {{.*}} -> tensor<4x4xf32>
// KEEP: ddp.gemm fwd %{{.*}}, %[[W0]] layer 0
// KEEP: %[[W1:.*]] = ddp.bucket_unpack
// KEEP: ddp.gemm fwd %{{.*}}, %[[W1]] layer 1
// KEEP: ddp.bucket_unpack
// KEEP: ddp.gemm dgrad %{{.*}}, %[[W1]] layer 1
// KEEP-NEXT: ddp.gemm dgrad %{{.*}}, %[[W0]] layer 0
// KEEP-NEXT: ddp.compute "norm_grad"(%{{.*}}, %[[W0]])
// KEEP-COUNT-3: ddp.bucket_unpack
// KEEP-NOT: ddp.bucket_unpack
// KEEP: return

// Only the last two units in forward order (layers 1 and 2) keep their
// forward's gather: layer 1's backward reads it, layer 0's gathers again;
// eight runs.
// KEEP2-LABEL: func.func @step
// KEEP2: %[[W0:.*]] = ddp.bucket_unpack {{.*}} -> tensor<4x4xf32>
// KEEP2: ddp.gemm fwd %{{.*}}, %[[W0]] layer 0
// KEEP2: %[[W1:.*]] = ddp.bucket_unpack
// KEEP2: ddp.gemm fwd %{{.*}}, %[[W1]] layer 1
// KEEP2: ddp.bucket_unpack
// KEEP2: ddp.gemm dgrad %{{.*}}, %[[W1]] layer 1
// KEEP2: %[[W0B:.*]] = ddp.bucket_unpack
// KEEP2: ddp.gemm dgrad %{{.*}}, %[[W0B]] layer 0
// KEEP2-COUNT-4: ddp.bucket_unpack
// KEEP2-NOT: ddp.bucket_unpack
// KEEP2: return

ddp.mesh @world(dp = 2)
ddp.param @emb : tensor<8x4xf32>
ddp.param @l0.w layer 0 : tensor<4x4xf32>
ddp.param @l1.w layer 1 : tensor<4x4xf32>
ddp.param @l2.w layer 2 : tensor<4x4xf32>

func.func @step(%x0: tensor<2x4xf32>, %x1: tensor<2x4xf32>) {
  %s0 = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g0, %t0 = ddp.all_gather %s0 over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  %se = ddp.get_param_shard params [@emb] offsets [0] over @world[dp] : tensor<16xf32>
  %ge, %te = ddp.all_gather %se over @world[dp] async : tensor<16xf32> -> tensor<32xf32>
  ddp.wait %te
  ddp.set_params %ge params [@emb] offsets [0] : tensor<32xf32>
  %e = ddp.get_param @emb : tensor<8x4xf32>
  %h = ddp.compute "embedding"(%x0, %e) flops 0.0 bytes 64.0 : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  ddp.wait %t0
  ddp.set_params %g0 params [@l0.w] offsets [0] : tensor<16xf32>
  %s1 = ddp.get_param_shard params [@l1.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g1, %t1 = ddp.all_gather %s1 over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  %w0 = ddp.get_param @l0.w : tensor<4x4xf32>
  %n = ddp.compute "norm"(%h, %w0) flops 8.0 bytes 64.0 layer 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %a0 = ddp.gemm fwd %n, %w0 layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  ddp.wait %t1
  ddp.set_params %g1 params [@l1.w] offsets [0] : tensor<16xf32>
  %s2 = ddp.get_param_shard params [@l2.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g2, %t2 = ddp.all_gather %s2 over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  %w1 = ddp.get_param @l1.w : tensor<4x4xf32>
  %a1 = ddp.gemm fwd %a0, %w1 layer 1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  ddp.wait %t2
  ddp.set_params %g2 params [@l2.w] offsets [0] : tensor<16xf32>
  %w2 = ddp.get_param @l2.w : tensor<4x4xf32>
  %a2 = ddp.gemm fwd %a1, %w2 layer 2 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %d2 = ddp.gemm dgrad %a2, %w2 layer 2 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %d1 = ddp.gemm dgrad %d2, %w1 layer 1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %d0 = ddp.gemm dgrad %d1, %w0 layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %dn = ddp.compute "norm_grad"(%d0, %w0) flops 8.0 bytes 64.0 layer 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %h1 = ddp.compute "embedding"(%x1, %e) flops 0.0 bytes 64.0 : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %n1 = ddp.compute "norm"(%h1, %w0) flops 8.0 bytes 64.0 layer 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %b0 = ddp.gemm fwd %n1, %w0 layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %b1 = ddp.gemm fwd %b0, %w1 layer 1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %b2 = ddp.gemm fwd %b1, %w2 layer 2 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %e2 = ddp.gemm dgrad %b2, %w2 layer 2 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %e1 = ddp.gemm dgrad %e2, %w1 layer 1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %e0 = ddp.gemm dgrad %e1, %w0 layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %en = ddp.compute "norm_grad"(%e0, %w0) flops 8.0 bytes 64.0 layer 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %u = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  ddp.set_param_shard %u params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  return
}

// -----

// Only the gathers ddp-overlap-param-gather makes: a synchronous one is an
// error.

ddp.mesh @world(dp = 2)
ddp.param @l0.w layer 0 : tensor<4x4xf32>

func.func @sync(%x: tensor<2x4xf32>) {
  %s = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g = ddp.all_gather %s over @world[dp] : tensor<8xf32> -> tensor<16xf32>
  // expected-error @+1 {{cannot shard parameters [@l0.w]: they are not gathered as ddp-overlap-param-gather gathers them; run it first (use-distributed-optimizer=true overlap-param-gather=true)}}
  ddp.set_params %g params [@l0.w] offsets [0] : tensor<16xf32>
  %w = ddp.get_param @l0.w : tensor<4x4xf32>
  %a = ddp.gemm fwd %x, %w layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return
}

// UNTOUCHED-LABEL: func.func @sync
// UNTOUCHED: ddp.set_params
// UNTOUCHED: ddp.get_param @l0.w

// -----

// The gathers ddp-overlap-param-gather makes are at the top level of the
// step; one nested in a region is not one of them.

ddp.mesh @world(dp = 2)
ddp.param @l0.w layer 0 : tensor<4x4xf32>

func.func @nested(%x: tensor<2x4xf32>) {
  %s = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g, %t = ddp.all_gather %s over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  // (Two regions: control flow, as in ddp-overlap-param-gather.mlir; with
  // one the unknown op could be a symbol table hiding the parameters.)
  "test.region"() ({
    ddp.wait %t
    // expected-error @+1 {{cannot shard parameters [@l0.w]: the gather must be at the top level of the step}}
    ddp.set_params %g params [@l0.w] offsets [0] : tensor<16xf32>
    "test.terminator"() : () -> ()
  }, {
    "test.terminator"() : () -> ()
  }) : () -> ()
  %w = ddp.get_param @l0.w : tensor<4x4xf32>
  %a = ddp.gemm fwd %x, %w layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// A gather whose shard is read by another op is not that shape.

ddp.mesh @world(dp = 2)
ddp.param @l0.w layer 0 : tensor<4x4xf32>

func.func @shared(%x: tensor<2x4xf32>) {
  %s = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g, %t = ddp.all_gather %s over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  ddp.wait %t
  // expected-error @+1 {{cannot shard parameters [@l0.w]: the gather is not one shard read}}
  ddp.set_params %g params [@l0.w] offsets [0] : tensor<16xf32>
  %w = ddp.get_param @l0.w : tensor<4x4xf32>
  %a = ddp.gemm fwd %x, %w layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  ddp.set_param_shard %s params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  return
}

// -----

// A parameter written by two gathers.

ddp.mesh @world(dp = 2)
ddp.param @l0.w layer 0 : tensor<4x4xf32>

func.func @two(%x: tensor<2x4xf32>) {
  %s = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g, %t = ddp.all_gather %s over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  ddp.wait %t
  ddp.set_params %g params [@l0.w] offsets [0] : tensor<16xf32>
  %s2 = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g2, %t2 = ddp.all_gather %s2 over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  ddp.wait %t2
  // expected-error @+1 {{cannot shard parameters: @l0.w is written by two gathers}}
  ddp.set_params %g2 params [@l0.w] offsets [0] : tensor<16xf32>
  %w = ddp.get_param @l0.w : tensor<4x4xf32>
  %a = ddp.gemm fwd %x, %w layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// A parameter named twice in one gather.

ddp.mesh @world(dp = 2)
ddp.param @l0.w layer 0 : tensor<4x4xf32>

func.func @twice(%x: tensor<2x4xf32>) {
  %s = ddp.get_param_shard params [@l0.w, @l0.w] offsets [0, 16] over @world[dp] : tensor<16xf32>
  %g, %t = ddp.all_gather %s over @world[dp] async : tensor<16xf32> -> tensor<32xf32>
  ddp.wait %t
  // expected-error @+1 {{cannot shard parameters: @l0.w is named twice in one gather}}
  ddp.set_params %g params [@l0.w, @l0.w] offsets [0, 16] : tensor<32xf32>
  %w = ddp.get_param @l0.w : tensor<4x4xf32>
  %a = ddp.gemm fwd %x, %w layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// A read after the unit's update is written would gather the update, where
// the step reads the value it had.

ddp.mesh @world(dp = 2)
ddp.param @l0.w layer 0 : tensor<4x4xf32>

func.func @late(%x: tensor<2x4xf32>) {
  %s = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  %g, %t = ddp.all_gather %s over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  ddp.wait %t
  ddp.set_params %g params [@l0.w] offsets [0] : tensor<16xf32>
  %w = ddp.get_param @l0.w : tensor<4x4xf32>
  %a = ddp.gemm fwd %x, %w layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %u = ddp.get_param_shard params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  ddp.set_param_shard %u params [@l0.w] offsets [0] over @world[dp] : tensor<8xf32>
  // expected-error @+1 {{cannot shard parameters: this reads @l0.w after its update is written (ddp.set_param_shard); its gather there would read the update}}
  %b = ddp.gemm fwd %a, %w layer 0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return
}
