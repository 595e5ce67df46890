// Ops of an unknown dialect with two regions stand for control flow (with a
// single region they could be symbol tables, hiding the mesh).
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-verify-collective-order -verify-diagnostics | FileCheck %s

// Tokens waited (directly or through a join) before their results are
// read, collectives at the top level: the IR passes unchanged.
// CHECK-LABEL: func.func @scheduled
// CHECK: ddp.join
// CHECK: ddp.wait
ddp.mesh @world(dp = 2, tp = 2)
func.func @scheduled(%g: tensor<8xf32>, %h: tensor<8xf32>) -> tensor<8xf32> {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  %s, %u = ddp.all_reduce sum %h over @world[tp] async : tensor<8xf32>
  %x = ddp.all_gather %g over @world[dp] : tensor<8xf32> -> tensor<16xf32>
  %j = ddp.join %t, %u
  ddp.wait %j
  %y = ddp.compute "add"(%r, %s) flops 8.0 bytes 96.0 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// An all-reduce issued after a reduce-scatter (`async after`) reads its
// result unwaited; the one wait covers both.
// CHECK-LABEL: func.func @chained
// CHECK: async after
func.func @chained(%g: tensor<8xf32>) -> tensor<4xf32> {
  %r, %t = ddp.reduce_scatter sum %g over @world[dp] async : tensor<8xf32> -> tensor<4xf32>
  %a, %u = ddp.all_reduce sum %r over @world[tp] async after %t : tensor<4xf32>
  ddp.wait %u
  %y = ddp.compute "add"(%a, %r) flops 4.0 bytes 48.0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// A function that issues collectives, called unconditionally.
// CHECK-LABEL: func.func @caller
func.func private @reduce(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @caller(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = func.call @reduce(%g) : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

ddp.mesh @world(dp = 2)
func.func @read_before_wait(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-note @+1 {{the asynchronous op}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  // expected-error @+1 {{uses the result of 'ddp.all_reduce' before its token is waited}}
  %y = ddp.compute "read"(%r) flops 8.0 bytes 64.0 : (tensor<8xf32>) -> tensor<8xf32>
  // expected-note @+1 {{the wait}}
  ddp.wait %t
  return %y : tensor<8xf32>
}

// -----

ddp.mesh @world(dp = 2)
func.func @read_before_joined_wait(%g: tensor<8xf32>, %h: tensor<8xf32>) -> tensor<8xf32> {
  // expected-note @+1 {{the asynchronous op}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  %s, %u = ddp.all_reduce sum %h over @world[dp] async : tensor<8xf32>
  %j = ddp.join %t, %u
  // expected-error @+1 {{uses the result of 'ddp.all_reduce' before its token is waited}}
  ddp.sgd @w, %r lr 0.1 : tensor<8xf32>
  // expected-note @+1 {{the wait}}
  ddp.wait %j
  return %s : tensor<8xf32>
}
ddp.param @w : tensor<8xf32>

// -----

ddp.mesh @world(dp = 2, tp = 2)
func.func @read_before_chained_wait(%g: tensor<8xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{the asynchronous op}}
  %r, %t = ddp.reduce_scatter sum %g over @world[dp] async : tensor<8xf32> -> tensor<4xf32>
  %a, %u = ddp.all_reduce sum %r over @world[tp] async after %t : tensor<4xf32>
  // expected-error @+1 {{uses the result of 'ddp.reduce_scatter' before its token is waited}}
  %y = ddp.compute "read"(%r) flops 4.0 bytes 32.0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-note @+1 {{the wait}}
  ddp.wait %u
  return %a : tensor<4xf32>
}


// -----

ddp.mesh @world(dp = 2)
func.func @read_in_region_before_wait(%g: tensor<8xf32>) {
  // expected-note @+1 {{the asynchronous op}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  "test.region"() ({
    // expected-error @+1 {{uses the result of 'ddp.all_reduce' before its token is waited}}
    %y = ddp.compute "read"(%r) flops 8.0 bytes 64.0 : (tensor<8xf32>) -> tensor<8xf32>
    "test.yield"() : () -> ()
  }, {
    "test.yield"() : () -> ()
  }) : () -> ()
  // expected-note @+1 {{the wait}}
  ddp.wait %t
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @wait_in_other_block(%g: tensor<8xf32>) {
  // expected-error @+2 {{this collective is in function @wait_in_other_block, which branches between blocks}}
  // expected-error @+1 {{its token is waited in another block}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  "test.br"()[^next] : () -> ()
^next:
  // expected-note @+1 {{the wait}}
  ddp.wait %t
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @rank_dependent(%g: tensor<8xf32>, %rank_is_zero: i1) {
  // expected-note @+1 {{the enclosing op}}
  "test.if"(%rank_is_zero) ({
    // expected-error @+1 {{this collective is issued inside 'test.if', so whether it runs may depend on the rank; every rank of a group must issue the group's collectives in the same order}}
    %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
    "test.yield"() : () -> ()
  }, {
    "test.yield"() : () -> ()
  }) : (i1) -> ()
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @branches(%g: tensor<8xf32>) {
  "test.br"()[^next] : () -> ()
^next:
  // expected-error @+1 {{this collective is in function @branches, which branches between blocks, so whether it runs may depend on the rank}}
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func private @reduce(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func private @indirect(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = func.call @reduce(%g) : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @conditional_call(%g: tensor<8xf32>, %c: i1) {
  // expected-note @+1 {{the enclosing op}}
  "test.if"(%c) ({
    // expected-error @+1 {{this call of a function that issues collectives is issued inside 'test.if', so whether it runs may depend on the rank}}
    %r = func.call @indirect(%g) : (tensor<8xf32>) -> tensor<8xf32>
    "test.yield"() : () -> ()
  }, {
    "test.yield"() : () -> ()
  }) : (i1) -> ()
  return
}

// -----

// A ring exchange in 2 steps over tp (an all-gather split as Transformer
// Engine's split_overlap_ag): at step i each rank multiplies the chunk it
// holds while it sends that chunk to the next rank and receives the next
// chunk from the previous one. The IR passes unchanged.
// CHECK-LABEL: func.func @ring_2_steps
// CHECK: %[[S0:.*]] = ddp.send %[[X:.*]] to 1 over @world[tp] async : tensor<4x8xbf16>
// CHECK-NEXT: %[[C1:.*]], %[[R0:.*]] = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
// CHECK-NEXT: ddp.compute "gemm"(%[[X]], %{{.*}})
// CHECK-NEXT: %[[J0:.*]] = ddp.join %[[S0]], %[[R0]]
// CHECK-NEXT: ddp.wait %[[J0]]
// CHECK-NEXT: ddp.compute "gemm"(%[[C1]], %{{.*}})
ddp.mesh @world(dp = 2, tp = 2)
func.func @ring_2_steps(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %s0 = ddp.send %x to 1 over @world[tp] async : tensor<4x8xbf16>
  %c1, %r0 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  %y0 = ddp.compute "gemm"(%x, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %j0 = ddp.join %s0, %r0
  ddp.wait %j0
  %y1 = ddp.compute "gemm"(%c1, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %y0, %y1 : tensor<4x8xbf16>, tensor<4x8xbf16>
}

// In a group of 2 the next rank is also the previous one: a send to 1 pairs
// with a receive from 1. A synchronous receive may close the batch that its
// asynchronous send opened.
// CHECK-LABEL: func.func @pair_of_two
// CHECK: ddp.send %{{.*}} to 1 over @world[tp] async
// CHECK-NEXT: ddp.recv from 1 over @world[tp] : tensor<32xbf16>
func.func @pair_of_two(%x: tensor<4x8xbf16>) -> tensor<32xbf16> {
  %s = ddp.send %x to 1 over @world[tp] async : tensor<4x8xbf16>
  %c = ddp.recv from 1 over @world[tp] : tensor<32xbf16>
  ddp.wait %s
  return %c : tensor<32xbf16>
}

// -----

// 3 steps: the chunk received at step i is sent on at step i + 1. The
// receive is posted before the send, and compute ops may come between them.
// CHECK-LABEL: func.func @ring_3_steps
// CHECK: %[[C1:.*]], %[[R0:.*]] = ddp.recv from -1 over @world[tp] async
// CHECK-NEXT: ddp.compute "gemm"
// CHECK-NEXT: %[[S0:.*]] = ddp.send %{{.*}} to 1 over @world[tp] async
// CHECK: ddp.wait
// CHECK: %[[C2:.*]], %[[R1:.*]] = ddp.recv from -1 over @world[tp] async
// CHECK-NEXT: %[[S1:.*]] = ddp.send %[[C1]] to 1 over @world[tp] async
// CHECK: ddp.wait
ddp.mesh @world(dp = 2, tp = 3)
func.func @ring_3_steps(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %c1, %r0 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  %y0 = ddp.compute "gemm"(%x, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %s0 = ddp.send %x to 1 over @world[tp] async : tensor<4x8xbf16>
  %j0 = ddp.join %s0, %r0
  ddp.wait %j0
  %c2, %r1 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  %s1 = ddp.send %c1 to 1 over @world[tp] async : tensor<4x8xbf16>
  %y1 = ddp.compute "gemm"(%c1, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %j1 = ddp.join %s1, %r1
  ddp.wait %j1
  %y2 = ddp.compute "gemm"(%c2, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %y0, %y1, %y2 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>
}

// -----

// A group of 2^63 - 1 ranks: a send to the next rank pairs with a receive
// from the previous one (the pairing computed 1 + 2^63 - 1: issue 25).
// CHECK-LABEL: func.func @ring_of_int64_max
// CHECK: ddp.send %{{.*}} to 1 over @world[tp] async
// CHECK-NEXT: ddp.recv from -1 over @world[tp] async
ddp.mesh @world(tp = 9223372036854775807)
func.func @ring_of_int64_max(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  %c, %r = ddp.recv from -1 over @world[tp] async : tensor<8xf32>
  %j = ddp.join %s, %r
  ddp.wait %j
  return %c : tensor<8xf32>
}

// -----

// 4 steps over tp, with a ring over dp in the other direction issued in the
// same batch (in a group of 4 a receive from -3 is a receive from 1), and an
// asynchronous all-reduce that is waited after the ring.
// CHECK-LABEL: func.func @ring_4_steps
// CHECK-COUNT-3: ddp.send %{{.*}} to 1 over @world[tp] async
// CHECK: ddp.wait
func.func @ring_4_steps(%x: tensor<4x8xbf16>, %g: tensor<8xf32>, %w: tensor<8x8xbf16>) -> tensor<4x8xbf16> {
  %a, %ta = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  %s0 = ddp.send %x to 1 over @world[tp] async : tensor<4x8xbf16>
  %c1, %r0 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  %d0 = ddp.send %g to -1 over @world[dp] async : tensor<8xf32>
  %e1, %q0 = ddp.recv from -3 over @world[dp] async : tensor<8xf32>
  %y0 = ddp.compute "gemm"(%x, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %j0 = ddp.join %s0, %r0, %d0, %q0
  ddp.wait %j0
  %s1 = ddp.send %c1 to 1 over @world[tp] async : tensor<4x8xbf16>
  %c2, %r1 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  %y1 = ddp.compute "gemm"(%c1, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %j1 = ddp.join %s1, %r1
  ddp.wait %j1
  %s2 = ddp.send %c2 to 1 over @world[tp] async : tensor<4x8xbf16>
  %c3, %r2 = ddp.recv from -1 over @world[tp] async : tensor<4x8xbf16>
  %y2 = ddp.compute "gemm"(%c2, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %j2 = ddp.join %s2, %r2, %ta
  ddp.wait %j2
  %y3 = ddp.compute "gemm"(%c3, %w) flops 512.0 bytes 192.0 : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %y3 : tensor<4x8xbf16>
}
ddp.mesh @world(dp = 4, tp = 4)

// -----

ddp.mesh @world(tp = 4)
func.func @send_without_recv(%x: tensor<8xf32>) {
  // expected-error @+1 {{this 'ddp.send' to 1 over @world[tp] has no 'ddp.recv' to pair with: from each rank to the rank 1 places further in this group of 4, the function sends 1 time(s) and receives 0 time(s); the i-th send pairs with the i-th receive over the same group from the opposite offset}}
  ddp.send %x to 1 over @world[tp] : tensor<8xf32>
  return
}

// -----

// In a group of 4, a receive from 1 gets what the rank 1 place further
// sends to offset -1 (or 3), not what this rank sends to offset 1.
ddp.mesh @world(tp = 4)
func.func @same_offset(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{this 'ddp.send' to 1 over @world[tp] has no 'ddp.recv' to pair with}}
  // expected-note @+1 {{the 'ddp.send' to 1 over @world[tp] has no partner either}}
  %s = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  // expected-error @+2 {{this 'ddp.recv' from 1 over @world[tp] has no 'ddp.send' to pair with: from each rank to the rank 3 places further in this group of 4, the function sends 0 time(s) and receives 1 time(s)}}
  // expected-note @+1 {{the 'ddp.recv' from 1 over @world[tp] has no partner either}}
  %c, %r = ddp.recv from 1 over @world[tp] async : tensor<8xf32>
  %j = ddp.join %s, %r
  ddp.wait %j
  return %c : tensor<8xf32>
}

// -----

// The second pair is over another group of the same size.
ddp.mesh @world(dp = 2, tp = 2)
func.func @other_group(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s0 = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  %c0, %r0 = ddp.recv from -1 over @world[tp] async : tensor<8xf32>
  // expected-error @+2 {{this 'ddp.send' to 1 over @world[tp] has no 'ddp.recv' to pair with: from each rank to the rank 1 places further in this group of 2, the function sends 2 time(s) and receives 1 time(s)}}
  // expected-note @+1 {{the 'ddp.send' to 1 over @world[tp] has no partner either}}
  %s1 = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  // expected-error @+2 {{this 'ddp.recv' from -1 over @world[dp] has no 'ddp.send' to pair with}}
  // expected-note @+1 {{the 'ddp.recv' from -1 over @world[dp] has no partner either}}
  %c1, %r1 = ddp.recv from -1 over @world[dp] async : tensor<8xf32>
  %j = ddp.join %s0, %r0, %s1, %r1
  ddp.wait %j
  return %c0, %c1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Reshaping is fine (the runtime moves elements), other sizes are not.
ddp.mesh @world(tp = 2)
func.func @wrong_size(%x: tensor<4x8xbf16>) -> tensor<16xbf16> {
  // expected-error @+1 {{this 'ddp.send' to 1 over @world[tp] sends 32 x bf16 but the 'ddp.recv' from -1 over @world[tp] it pairs with receives 16 x bf16}}
  %s = ddp.send %x to 1 over @world[tp] async : tensor<4x8xbf16>
  // expected-note @+1 {{the receive it pairs with}}
  %c, %r = ddp.recv from -1 over @world[tp] async : tensor<16xbf16>
  %j = ddp.join %s, %r
  ddp.wait %j
  return %c : tensor<16xbf16>
}

// -----

ddp.mesh @world(tp = 2)
func.func @wrong_dtype(%x: tensor<8xbf16>) -> tensor<8xf16> {
  // expected-error @+1 {{this 'ddp.send' to 1 over @world[tp] sends 8 x bf16 but the 'ddp.recv' from -1 over @world[tp] it pairs with receives 8 x f16}}
  %s = ddp.send %x to 1 over @world[tp] async : tensor<8xbf16>
  // expected-note @+1 {{the receive it pairs with}}
  %c, %r = ddp.recv from -1 over @world[tp] async : tensor<8xf16>
  %j = ddp.join %s, %r
  ddp.wait %j
  return %c : tensor<8xf16>
}

// -----

// The i-th send pairs with the i-th receive: swapping two receives of
// different sizes breaks both pairs.
ddp.mesh @world(tp = 4)
func.func @swapped(%x: tensor<8xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  // expected-error @+1 {{this 'ddp.send' to 1 over @world[tp] sends 8 x f32 but the 'ddp.recv' from -1 over @world[tp] it pairs with receives 4 x f32}}
  %s0 = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  // expected-error @+1 {{this 'ddp.send' to 1 over @world[tp] sends 4 x f32 but the 'ddp.recv' from 3 over @world[tp] it pairs with receives 8 x f32}}
  %s1 = ddp.send %y to 1 over @world[tp] async : tensor<4xf32>
  // expected-note @+1 {{the receive it pairs with}}
  %c0, %r0 = ddp.recv from -1 over @world[tp] async : tensor<4xf32>
  // expected-note @+1 {{the receive it pairs with}}
  %c1, %r1 = ddp.recv from 3 over @world[tp] async : tensor<8xf32>
  %j = ddp.join %s0, %s1, %r0, %r1
  ddp.wait %j
  return %c0, %c1 : tensor<4xf32>, tensor<8xf32>
}

// -----

// Every rank blocks in its send until the next rank receives, which it
// does only after its own send.
ddp.mesh @world(tp = 4)
func.func @blocking_send_first(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{this synchronous 'ddp.send' to 1 over @world[tp] blocks until its peer issues the 'ddp.recv' from -1 over @world[tp] it pairs with, which every rank issues only after it: every rank of the ring waits for the next; make it asynchronous}}
  ddp.send %x to 1 over @world[tp] : tensor<8xf32>
  // expected-note @+1 {{the op it pairs with}}
  %c = ddp.recv from -1 over @world[tp] : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

ddp.mesh @world(tp = 2)
func.func @blocking_recv_first(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{this synchronous 'ddp.recv' from -1 over @world[tp] blocks until its peer issues the 'ddp.send' to 1 over @world[tp] it pairs with}}
  %c = ddp.recv from -1 over @world[tp] : tensor<8xf32>
  // expected-note @+1 {{the op it pairs with}}
  %s = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  ddp.wait %s
  return %c : tensor<8xf32>
}

// -----

// Waiting for the receive before sending: every rank waits for the
// previous one to send.
ddp.mesh @world(tp = 4)
func.func @wait_before_send(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-note @+1 {{the op it pairs with}}
  %c, %r = ddp.recv from -1 over @world[tp] async : tensor<8xf32>
  // expected-note @+1 {{the op between them}}
  ddp.wait %r
  // expected-error @+1 {{this 'ddp.send' to 1 over @world[tp] is not issued together with the 'ddp.recv' from -1 over @world[tp] it pairs with: 'ddp.wait' between them waits or communicates, so a rank can block there, or on NCCL in the first op, before its peer issues the second; only sends, receives and ops that neither wait nor communicate may come between the two}}
  %s = ddp.send %c to 1 over @world[tp] async : tensor<8xf32>
  ddp.wait %s
  return %c : tensor<8xf32>
}

// -----

// An asynchronous all-reduce between the two halves of a pair runs on the
// communication stream between them: NCCL deadlocks there.
ddp.mesh @world(dp = 2, tp = 2)
func.func @collective_between(%x: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // expected-note @+1 {{the op it pairs with}}
  %s = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  // expected-note @+1 {{the op between them}}
  %a, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<8xf32>
  // expected-error @+1 {{this 'ddp.recv' from -1 over @world[tp] is not issued together with the 'ddp.send' to 1 over @world[tp] it pairs with: 'ddp.all_reduce' between them}}
  %c, %r = ddp.recv from -1 over @world[tp] async : tensor<8xf32>
  %j = ddp.join %s, %t, %r
  ddp.wait %j
  return %a, %c : tensor<8xf32>, tensor<8xf32>
}

// -----

ddp.mesh @world(dp = 2, tp = 2)
func.func private @reduce(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @call_between(%x: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // expected-note @+1 {{the op it pairs with}}
  %s = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
  // expected-note @+1 {{the op between them}}
  %a = func.call @reduce(%g) : (tensor<8xf32>) -> tensor<8xf32>
  // expected-error @+1 {{this 'ddp.recv' from -1 over @world[tp] is not issued together with the 'ddp.send' to 1 over @world[tp] it pairs with: 'func.call' between them}}
  %c, %r = ddp.recv from -1 over @world[tp] async : tensor<8xf32>
  %j = ddp.join %s, %r
  ddp.wait %j
  return %a, %c : tensor<8xf32>, tensor<8xf32>
}

// -----

// A send that only some ranks issue: reported as any conditional
// collective; its receive is not reported besides.
ddp.mesh @world(tp = 2)
func.func @conditional_send(%x: tensor<8xf32>, %c: i1) -> tensor<8xf32> {
  // expected-note @+1 {{the enclosing op}}
  "test.if"(%c) ({
    // expected-error @+1 {{this collective is issued inside 'test.if', so whether it runs may depend on the rank}}
    ddp.send %x to 1 over @world[tp] : tensor<8xf32>
    "test.yield"() : () -> ()
  }, {
    "test.yield"() : () -> ()
  }) : (i1) -> ()
  %v, %r = ddp.recv from -1 over @world[tp] async : tensor<8xf32>
  ddp.wait %r
  return %v : tensor<8xf32>
}
