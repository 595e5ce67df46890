// RUN: ddp-opt %s -split-input-file --ddp-schedule-compute="wgrad-schedule=delayed" -verify-diagnostics | FileCheck %s --check-prefix=DELAYED
// RUN: ddp-opt %s -split-input-file --ddp-schedule-compute="wgrad-schedule=auto" -verify-diagnostics | FileCheck %s --check-prefix=AUTO
// in-place (the default) changes nothing and records nothing.
// RUN: ddp-opt %s -split-input-file | FileCheck %s --check-prefix=INPLACE
// RUN: ddp-opt %s -split-input-file --ddp-schedule-compute | FileCheck %s --check-prefix=INPLACE
// The cap (docs/ComputeScheduling.md, "Memory"): @capped holds
// 400 MiB of live tensors in its own order and 512 MiB delayed.
// RUN: ddp-opt %s -split-input-file --ddp-schedule-compute="wgrad-schedule=delayed memory-cap-gib=0.5" | FileCheck %s --check-prefix=DELAYED
// RUN: ddp-opt %s -split-input-file --ddp-schedule-compute="wgrad-schedule=delayed memory-cap-gib=0.45" | FileCheck %s --check-prefix=CAPPED
// RUN: not ddp-opt %s -split-input-file --ddp-schedule-compute="wgrad-schedule=delayed memory-cap-gib=0.3" 2>&1 | FileCheck %s --check-prefix=UNDER
// RUN: not ddp-opt %s -split-input-file --ddp-schedule-compute="memory-cap-gib=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not ddp-opt %s -split-input-file --ddp-schedule-compute="wgrad-schedule=later" 2>&1 | FileCheck %s --check-prefix=VALUE

// UNDER: error: memory-cap-gib: the step holds 400.00 MiB of live tensors in its own order, more than the cap of 307.20 MiB; raise the cap (or recompute activations) to let ddp-schedule-compute move anything
// NEGATIVE: error: ddp-schedule-compute: memory-cap-gib must be a number of GiB from 0 (no cap) to 8e9, got -1
// VALUE: wgrad-schedule=later is not one of its values (in-place, delayed, auto)

// Layer 1's wgrad, in place, runs before the all-reduce of its dgrad is
// issued, and nothing runs beside that all-reduce. Held back, it runs
// while the all-reduce is in flight, before the wait. Layer 0's wgrad runs
// after the wait either way: the clock has passed the all-reduce's end.
// DELAYED-LABEL: func.func @fill
// DELAYED-SAME: attributes {ddp.compute_predicted_step_us = {{.*}} : f64}
// DELAYED-NEXT: %[[X1:.*]] = ddp.compute "layernorm"
// DELAYED-NEXT: %[[DX1:.*]] = ddp.gemm dgrad %arg0, %arg2 layer 1
// DELAYED-NEXT: %[[R:.*]], %[[T:.*]] = ddp.all_reduce sum %[[DX1]] over @world[tp] async
// DELAYED-NEXT: %[[DW1:.*]] = ddp.gemm wgrad %arg0 transposed, %[[X1]] layer 1 {ddp.delayed_wgrad}
// DELAYED-NEXT: ddp.wait %[[T]]
// DELAYED-NEXT: ddp.gemm dgrad %[[R]], %arg3 layer 0 :
// DELAYED-NEXT: ddp.gemm wgrad %[[R]] transposed, %arg1 layer 0 :
// AUTO-LABEL: func.func @fill
// AUTO-SAME: attributes {ddp.compute_predicted_step_us
// AUTO: ddp.all_reduce
// AUTO-NEXT: ddp.gemm wgrad {{.*}} layer 1 {ddp.delayed_wgrad}
// AUTO-NEXT: ddp.wait
// INPLACE-LABEL: func.func @fill
// INPLACE-NOT: ddp.compute_predicted_step_us
// INPLACE: ddp.gemm wgrad {{.*}} layer 1 :
// INPLACE-NEXT: ddp.all_reduce
// INPLACE-NOT: ddp.delayed_wgrad
// CAPPED-LABEL: func.func @fill
// CAPPED: ddp.all_reduce
// CAPPED-NEXT: ddp.gemm wgrad {{.*}} layer 1 {ddp.delayed_wgrad}
ddp.mesh @world(tp = 8)
func.func @fill(%dy: tensor<4096x4096xbf16>, %in: tensor<4096x4096xbf16>, %w1: tensor<4096x4096xbf16>, %w0: tensor<4096x4096xbf16>) -> (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) {
  %x1 = ddp.compute "layernorm"(%in) flops 1.0e6 bytes 2.7e8 layer 1 : (tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %dx1 = ddp.gemm dgrad %dy, %w1 layer 1 : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  %dw1 = ddp.gemm wgrad %dy transposed, %x1 layer 1 : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  %r, %t = ddp.all_reduce sum %dx1 over @world[tp] async : tensor<4096x4096xbf16>
  ddp.wait %t
  %dx0 = ddp.gemm dgrad %r, %w0 layer 0 : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  %dw0 = ddp.gemm wgrad %r transposed, %in layer 0 : tensor<4096x4096xbf16>, tensor<4096x4096xbf16> -> tensor<4096x4096xbf16>
  return %dx0, %dw1, %dw0 : tensor<4096x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096x4096xbf16>
}

// -----

// Nothing asynchronous: no wait to fill. The rule still holds each wgrad
// back as far as it may: layer 2's, and the accumulation that reads it, run
// before the first op of layer 0 (two layers on); layer 1's and layer 0's
// at the end, where layer 0's is where it was (no later op passed it, so it
// is not marked). auto finds no wait a delay fills and leaves the order.
// DELAYED-LABEL: func.func @horizon
// DELAYED-NEXT: %[[D2:.*]] = ddp.gemm dgrad %arg0, %arg2 layer 2
// DELAYED-NEXT: %[[D1:.*]] = ddp.gemm dgrad %[[D2]], %arg2 layer 1
// DELAYED-NEXT: %[[G2:.*]] = ddp.gemm wgrad %arg0 transposed, %arg1 layer 2 {ddp.delayed_wgrad}
// DELAYED-NEXT: ddp.accumulate %[[G2]], %arg1
// DELAYED-NEXT: ddp.gemm dgrad %[[D1]], %arg2 layer 0
// DELAYED-NEXT: ddp.gemm wgrad %[[D2]] transposed, %arg1 layer 1 {ddp.delayed_wgrad}
// DELAYED-NEXT: ddp.gemm wgrad %[[D1]] transposed, %arg1 layer 0 :
// DELAYED-NEXT: return
// AUTO-LABEL: func.func @horizon
// AUTO-SAME: attributes {ddp.compute_predicted_step_us
// AUTO-NEXT: ddp.gemm dgrad {{.*}} layer 2
// AUTO-NEXT: ddp.gemm wgrad {{.*}} layer 2 :
// AUTO-NEXT: ddp.accumulate
// AUTO-NEXT: ddp.gemm dgrad {{.*}} layer 1
// AUTO-NEXT: ddp.gemm wgrad {{.*}} layer 1 :
// AUTO-NEXT: ddp.gemm dgrad {{.*}} layer 0
// AUTO-NEXT: ddp.gemm wgrad {{.*}} layer 0 :
// AUTO-NEXT: return
ddp.mesh @world(tp = 8)
func.func @horizon(%dy: tensor<1024x1024xbf16>, %x: tensor<1024x1024xbf16>, %w: tensor<1024x1024xbf16>) -> (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) {
  %d2 = ddp.gemm dgrad %dy, %w layer 2 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %g2 = ddp.gemm wgrad %dy transposed, %x layer 2 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %a2 = ddp.accumulate %g2, %x : tensor<1024x1024xbf16>
  %d1 = ddp.gemm dgrad %d2, %w layer 1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %g1 = ddp.gemm wgrad %d2 transposed, %x layer 1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %d0 = ddp.gemm dgrad %d1, %w layer 0 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %g0 = ddp.gemm wgrad %d1 transposed, %x layer 0 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  return %d0, %a2, %g1, %g0 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>
}

// -----

// Held back, layer 1's wgrad keeps its 128 MiB input live through layer 0's
// backward (512 MiB at once against 400 in place); under a cap of 0.45 GiB
// nothing moves. Layer 0's fills the same wait but nothing passed it.
// DELAYED-LABEL: func.func @capped
// DELAYED: ddp.all_reduce sum {{.*}} async
// DELAYED-NEXT: ddp.gemm wgrad {{.*}} layer 1 {ddp.delayed_wgrad}
// DELAYED-NEXT: ddp.gemm wgrad {{.*}} layer 0 :
// DELAYED-NEXT: ddp.wait
// CAPPED-LABEL: func.func @capped
// CAPPED-NEXT: ddp.compute "layernorm"
// CAPPED-NEXT: ddp.gemm dgrad
// CAPPED-NEXT: ddp.gemm wgrad {{.*}} layer 1 :
// CAPPED-NEXT: ddp.all_reduce
// CAPPED-NEXT: ddp.gemm dgrad
// CAPPED-NEXT: ddp.all_reduce sum {{.*}} async
// CAPPED-NEXT: ddp.gemm wgrad {{.*}} layer 0 :
// CAPPED-NEXT: ddp.wait
ddp.mesh @world(tp = 8)
func.func @capped(%dy: tensor<8192x1024xbf16>, %in: tensor<8192x8192xbf16>, %w1: tensor<1024x8192xbf16>, %w0: tensor<8192x8192xbf16>) -> (tensor<8192x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192x8192xbf16>) {
  %x1 = ddp.compute "layernorm"(%in) flops 1.0e6 bytes 2.7e8 layer 1 : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %dx1 = ddp.gemm dgrad %dy, %w1 layer 1 : tensor<8192x1024xbf16>, tensor<1024x8192xbf16> -> tensor<8192x8192xbf16>
  %dw1 = ddp.gemm wgrad %dy transposed, %x1 layer 1 : tensor<8192x1024xbf16>, tensor<8192x8192xbf16> -> tensor<1024x8192xbf16>
  %r = ddp.all_reduce sum %dx1 over @world[tp] : tensor<8192x8192xbf16>
  %dx0 = ddp.gemm dgrad %r, %w0 layer 0 : tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>
  %r0, %t0 = ddp.all_reduce sum %dx0 over @world[tp] async : tensor<8192x8192xbf16>
  %dw0 = ddp.gemm wgrad %r transposed, %in layer 0 : tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xbf16>
  ddp.wait %t0
  return %r0, %dw1, %dw0 : tensor<8192x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192x8192xbf16>
}

// -----

// A collective over pipeline ranks (here the embedding group's) is paired
// with the other programs' calls in its place: a wgrad it reads runs before
// it. A zero-bubble pipeline's W pass (ddp.task W...) stays where
// ddp-pipeline-stages put it.
// DELAYED-LABEL: func.func @across_programs
// DELAYED-NEXT: ddp.gemm dgrad
// DELAYED-NEXT: %[[G:.*]] = ddp.gemm wgrad {{.*}} layer 1 :
// DELAYED-NEXT: ddp.all_reduce sum %[[G]] over @world[pp]
// DELAYED-NEXT: ddp.gemm dgrad
// DELAYED-NEXT: ddp.gemm wgrad {{.*}} layer 1 {ddp.task = "W0.0"}
// DELAYED-NEXT: return
ddp.mesh @world(pp = 2, tp = 2)
func.func @across_programs(%dy: tensor<1024x1024xbf16>, %x: tensor<1024x1024xbf16>, %w: tensor<1024x1024xbf16>) -> (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) {
  %d1 = ddp.gemm dgrad %dy, %w layer 1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %g1 = ddp.gemm wgrad %dy transposed, %x layer 1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %s = ddp.all_reduce sum %g1 over @world[pp] : tensor<1024x1024xbf16>
  %d0 = ddp.gemm dgrad %d1, %w layer 1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %g0 = ddp.gemm wgrad %d1 transposed, %x layer 1 {ddp.task = "W0.0"} : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  return %s, %g0 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16>
}

// -----

// A wait on a join of a held reduction and others holds with it, and so do
// the readers of every result it covers, including one whose collective
// was not held (%r0): none is read before the wait.
// DELAYED-LABEL: func.func @join_covers
// DELAYED-NEXT: %[[D1:.*]] = ddp.gemm dgrad
// DELAYED-NEXT: %[[R0:.*]], %[[T0:.*]] = ddp.all_reduce sum %[[D1]] over @world[tp] async
// DELAYED-NEXT: %[[G2:.*]] = ddp.gemm wgrad {{.*}} layer 2 {ddp.delayed_wgrad}
// DELAYED-NEXT: %[[R2:.*]], %[[T2:.*]] = ddp.all_reduce sum %[[G2]] over @world[dp] async
// DELAYED-NEXT: %[[G1:.*]] = ddp.gemm wgrad {{.*}} layer 1 :
// DELAYED-NEXT: %[[R1:.*]], %[[T1:.*]] = ddp.all_reduce sum %[[G1]] over @world[dp] async
// DELAYED-NEXT: %[[J:.*]] = ddp.join %[[T2]], %[[T1]], %[[T0]]
// DELAYED-NEXT: ddp.wait %[[J]]
// DELAYED-NEXT: ddp.scale %[[R2]]
// DELAYED-NEXT: ddp.scale %[[R0]]
// DELAYED-NEXT: return
ddp.mesh @world(dp = 2, tp = 2)
func.func @join_covers(%dy: tensor<1024x1024xbf16>, %x: tensor<1024x1024xbf16>, %w: tensor<1024x1024xbf16>) -> (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) {
  %g2 = ddp.gemm wgrad %dy transposed, %x layer 2 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %r2, %t2 = ddp.all_reduce sum %g2 over @world[dp] async : tensor<1024x1024xbf16>
  %d1 = ddp.gemm dgrad %dy, %w layer 1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %r0, %t0 = ddp.all_reduce sum %d1 over @world[tp] async : tensor<1024x1024xbf16>
  %g1 = ddp.gemm wgrad %dy transposed, %x layer 1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16> -> tensor<1024x1024xbf16>
  %r1, %t1 = ddp.all_reduce sum %g1 over @world[dp] async : tensor<1024x1024xbf16>
  %j = ddp.join %t2, %t1, %t0
  ddp.wait %j
  %u = ddp.scale %r2 by 5.000000e-01 : tensor<1024x1024xbf16>
  %v = ddp.scale %r0 by 5.000000e-01 : tensor<1024x1024xbf16>
  return %u, %r1, %v : tensor<1024x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024x1024xbf16>
}
