// The order check across pipeline stage programs (PipelineOrderCheck.cpp),
// which --ddp-verify-collective-order runs beside the per-function check
// (ddp-verify-collective-order.mlir).
// RUN: ddp-opt %s -split-input-file --ddp-verify-collective-order -verify-diagnostics | FileCheck %s

// Pipeline stage programs are run together. Both ranks first block on a
// receive from the other: neither ever sends.
ddp.mesh @world(pp = 2)
// expected-error @below {{the pipeline stage programs can hang: no rank can move while}}
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-note @below {{rank 0 waits in rank 0's 'ddp.recv' from 1, which pairs with rank 1's 'ddp.send' to 1, not yet issued}}
  %r = ddp.recv from 1 over @world[pp] : tensor<4xf32>
  ddp.send %x to 1 over @world[pp] : tensor<4xf32>
  return
}
func.func @step_stage1(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 1} {
  // expected-note @below {{rank 1 waits in rank 1's 'ddp.recv' from -1, which pairs with rank 0's 'ddp.send' to 1, not yet issued}}
  %r = ddp.recv from -1 over @world[pp] : tensor<4xf32>
  ddp.send %x to 1 over @world[pp] : tensor<4xf32>
  return
}

// -----

// The same exchange with the sends first and asynchronous cannot hang.
ddp.mesh @world(pp = 2)
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  %t = ddp.send %x to 1 over @world[pp] async : tensor<4xf32>
  %r = ddp.recv from 1 over @world[pp] : tensor<4xf32>
  ddp.wait %t
  return
}
func.func @step_stage1(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 1} {
  %t = ddp.send %x to 1 over @world[pp] async : tensor<4xf32>
  %r = ddp.recv from -1 over @world[pp] : tensor<4xf32>
  ddp.wait %t
  return
}

// -----

// Nothing is buffered: rank 0 waits for its send to rank 1 to be received,
// but rank 1 first receives from rank 2, which first receives from rank 0
// what rank 0 sends only after its wait. (With eager buffering, as MPI
// gives small messages, this would run; NCCL would hang.)
ddp.mesh @world(pp = 3)
// expected-error @below {{the pipeline stage programs can hang}}
func.func @step_stage0(%a: tensor<4xf32>, %d: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-note @below {{rank 0 waits in rank 0's 'ddp.send' to 1, which pairs with rank 1's 'ddp.recv' from -1, not yet issued}}
  %t0 = ddp.send %a to 1 over @world[pp] async : tensor<4xf32>
  ddp.wait %t0
  %t1 = ddp.send %d to -1 over @world[pp] async : tensor<4xf32>
  ddp.wait %t1
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  // expected-note @below {{rank 1 waits in rank 1's 'ddp.recv' from 1, which pairs with rank 2's 'ddp.send' to -1, not yet issued}}
  %c = ddp.recv from 1 over @world[pp] : tensor<4xf32>
  %a = ddp.recv from -1 over @world[pp] : tensor<4xf32>
  return
}
func.func @step_stage2(%c: tensor<4xf32>) attributes {ddp.pipeline_stage = 2} {
  // expected-note @below {{rank 2 waits in rank 2's 'ddp.recv' from 1, which pairs with rank 0's 'ddp.send' to -1, not yet issued}}
  %d = ddp.recv from 1 over @world[pp] : tensor<4xf32>
  %t = ddp.send %c to -1 over @world[pp] async : tensor<4xf32>
  ddp.wait %t
  return
}

// -----

ddp.mesh @world(pp = 2)
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-note @below {{the send}}
  %t = ddp.send %x to 1 over @world[pp] async : tensor<4xf32>
  ddp.wait %t
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  // expected-error @below {{this receive pairs with rank 0's 'ddp.send' to 1, which sends 'tensor<4xf32>', not 'tensor<4xbf16>'; the i-th send between two ranks meets the i-th receive}}
  %r = ddp.recv from -1 over @world[pp] : tensor<4xbf16>
  return
}

// -----

ddp.mesh @world(pp = 2)
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-error @below {{rank 0's 'ddp.send' to 1 has no partner: rank 0 sends 1 time(s) to rank 1, which receives 0 time(s) from it}}
  %t = ddp.send %x to 1 over @world[pp] async : tensor<4xf32>
  ddp.wait %t
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}

// -----

ddp.mesh @world(pp = 3)
// expected-error @below {{the mesh has 3 pipeline ranks, but no program for rank 2; every rank needs one (ddp-pipeline-stages makes them)}}
func.func @step_stage0() attributes {ddp.pipeline_stage = 0} {
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}

// -----

ddp.mesh @world(pp = 2)
// expected-note @below {{the first}}
func.func @step_stage0() attributes {ddp.pipeline_stage = 0} {
  return
}
// expected-error @below {{a second program for pipeline rank 0}}
func.func @again() attributes {ddp.pipeline_stage = 0} {
  return
}

// -----

ddp.mesh @world(pp = 2, dp = 2)
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-error @below {{a pipeline stage program may only send and receive over [pp]; other collectives over the pipeline ranks are not modelled}}
  %r = ddp.all_reduce sum %x over @world[pp] : tensor<4xf32>
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}

// -----

ddp.mesh @world(pp = 2, dp = 2)
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-error @below {{a send or receive between pipeline ranks is over [pp] alone}}
  %t = ddp.send %x to 1 over @world[pp, dp] async : tensor<4xf32>
  ddp.wait %t
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}

// -----

// expected-error @below {{pipeline stage programs need a mesh with a pp axis}}
func.func @step_stage0() attributes {ddp.pipeline_stage = 0} {
  return
}

// -----

ddp.mesh @world(pp = 2)
// expected-error @below {{pipeline rank 0's program has no body}}
func.func private @step_stage0() attributes {ddp.pipeline_stage = 0}

// -----

// The check follows no calls: a callee's sends would go unpaired, and a
// collective in it would end a batch unseen.
ddp.mesh @world(pp = 2)
func.func private @exchange(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = ddp.send %x to 1 over @world[pp] async : tensor<4xf32>
  %r = ddp.recv from 1 over @world[pp] : tensor<4xf32>
  ddp.wait %t
  return %r : tensor<4xf32>
}
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-error @below {{the pipeline order check follows no calls, and this one's callee communicates; put its ops into the stage program}}
  %r = func.call @exchange(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}

// -----

// A call to a function that only computes is fine.
ddp.mesh @world(pp = 2)
func.func private @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ddp.compute "double"(%x) flops 1.0 bytes 1.0 : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @step_stage0
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  %y = func.call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
  ddp.send %y to 1 over @world[pp] : tensor<4xf32>
  return
}
func.func @step_stage1() -> tensor<4xf32> attributes {ddp.pipeline_stage = 1} {
  %r = ddp.recv from -1 over @world[pp] : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A collective over another mesh spans ranks the stages do not describe:
// only stage 0's ranks would join this all-reduce over all four.
ddp.mesh @world(pp = 2, dp = 2)
ddp.mesh @flat(w = 4)
func.func @step_stage0(%x: tensor<4xf32>) attributes {ddp.pipeline_stage = 0} {
  // expected-error @below {{a pipeline stage program communicates over the mesh @world alone, whose pp axis gives the stages' ranks; this op is over @flat}}
  %r = ddp.all_reduce sum %x over @flat[w] : tensor<4xf32>
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}

// -----

// Two meshes with a pp axis: which one numbers the stages is not known.
ddp.mesh @world(pp = 2)
// expected-error @below {{a second mesh with a pp axis (@world has one); pipeline stage programs run on one}}
ddp.mesh @other(pp = 2)
func.func @step_stage0() attributes {ddp.pipeline_stage = 0} {
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}

// -----

// A send and its receive may differ in shape: the runtime moves elements.
ddp.mesh @world(pp = 2)
// CHECK-LABEL: func.func @step_stage0
func.func @step_stage0(%x: tensor<4x8xf32>) attributes {ddp.pipeline_stage = 0} {
  %t = ddp.send %x to 1 over @world[pp] async : tensor<4x8xf32>
  ddp.wait %t
  return
}
func.func @step_stage1() -> tensor<32xf32> attributes {ddp.pipeline_stage = 1} {
  %r = ddp.recv from -1 over @world[pp] : tensor<32xf32>
  return %r : tensor<32xf32>
}
