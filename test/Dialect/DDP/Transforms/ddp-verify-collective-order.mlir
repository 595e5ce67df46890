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
