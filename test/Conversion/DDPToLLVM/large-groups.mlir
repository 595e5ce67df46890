// RUN: ddp-opt %s --ddp-lower-to-runtime="validate-storage=true" | FileCheck %s

// An in-place reduce-scatter over 2^40 ranks: the storage validation checks
// the rank view of its result at the first and last rank of the group (the
// offset grows linearly with the rank), not at each of 2^40 ranks, which
// did not finish.

ddp.mesh @world(dp = 1099511627776)

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: llvm.call @ddprt_reduce_scatter
func.func @step(%x: tensor<1099511627776xf32>) -> tensor<1xf32> {
  %c = ddp.compute "scale" (%x) flops 1.0 bytes 1.0 : (tensor<1099511627776xf32>) -> tensor<1099511627776xf32>
  %r = ddp.reduce_scatter sum %c over @world[dp] : tensor<1099511627776xf32> -> tensor<1xf32>
  return %r : tensor<1xf32>
}
