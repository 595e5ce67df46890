// RUN: ddp-opt %s -split-input-file --ddp-overlap-moe-comm | FileCheck %s
// Running it again changes nothing.
// RUN: ddp-opt %s -split-input-file --ddp-overlap-moe-comm --ddp-overlap-moe-comm | FileCheck %s
// With the option off (as ddp-schedule's default), nothing changes.
// RUN: ddp-opt %s -split-input-file --ddp-overlap-moe-comm=moe-shared-expert-overlap=false | FileCheck %s --check-prefix=OFF

// The dispatch as the importer lays it out with shared experts: the tokens'
// all-to-all, the shared expert's fc1, the probabilities' all-to-all, then
// the gather that reads the tokens. Each all-to-all is waited right before
// its first reader, so fc1 and the probabilities' exchange run beside the
// tokens'; the shared expert's fc2 runs beside the combine's.
// CHECK-LABEL: func.func @dispatch
// CHECK:      %[[T:.*]], %[[TT:.*]] = ddp.all_to_all %{{.*}} over @world[ep] async : tensor<8x16xbf16>
// CHECK-NEXT: %[[H:.*]] = ddp.gemm fwd
// CHECK-NEXT: %[[A:.*]] = ddp.compute "swiglu"(%[[H]])
// CHECK-NEXT: %[[P:.*]], %[[PT:.*]] = ddp.all_to_all %{{.*}} over @world[ep] async : tensor<8xf32>
// CHECK-NEXT: ddp.wait %[[TT]]
// CHECK-NEXT: ddp.all_gather %[[T]] over @world[tp]
// CHECK-NEXT: ddp.wait %[[PT]]
// CHECK-NEXT: ddp.all_gather %[[P]] over @world[tp]
// CHECK:      %[[C:.*]], %[[CT:.*]] = ddp.all_to_all %{{.*}} over @world[ep] async : tensor<8x16xbf16>
// CHECK-NEXT: %[[S:.*]] = ddp.gemm fwd %[[A]]
// CHECK-NEXT: ddp.wait %[[CT]]
// CHECK-NEXT: ddp.compute "moe_unpermute"(%[[C]])
// OFF-LABEL: func.func @dispatch
// OFF-NOT:   async
// OFF-NOT:   ddp.wait

ddp.mesh @world(ep = 2, tp = 2)
func.func @dispatch(%x: tensor<8x16xbf16>, %p: tensor<8xf32>, %y: tensor<8x16xbf16>,
                    %w1: tensor<32x16xbf16>, %w2: tensor<16x16xbf16>) {
  %t = ddp.all_to_all %x over @world[ep] : tensor<8x16xbf16>
  %h = ddp.gemm fwd %y, %w1 transposed : tensor<8x16xbf16>, tensor<32x16xbf16> -> tensor<8x32xbf16>
  %a = ddp.compute "swiglu"(%h) flops 1.0 bytes 1.0 : (tensor<8x32xbf16>) -> tensor<8x16xbf16>
  %q = ddp.all_to_all %p over @world[ep] : tensor<8xf32>
  %tg = ddp.all_gather %t over @world[tp] : tensor<8x16xbf16> -> tensor<16x16xbf16>
  %qg = ddp.all_gather %q over @world[tp] : tensor<8xf32> -> tensor<16xf32>
  %e = ddp.compute "experts"(%tg, %qg) flops 1.0 bytes 1.0 : (tensor<16x16xbf16>, tensor<16xf32>) -> tensor<8x16xbf16>
  %c = ddp.all_to_all %e over @world[ep] : tensor<8x16xbf16>
  %s = ddp.gemm fwd %a, %w2 transposed : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
  %u = ddp.compute "moe_unpermute"(%c) flops 1.0 bytes 1.0 : (tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %o = ddp.compute "add"(%u, %s) flops 1.0 bytes 1.0 : (tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  return
}

// -----

// Read by the very next op, or not at all: nothing would run beside it, so
// the all-to-all stays synchronous.
// CHECK-LABEL: func.func @nothing_between
// CHECK:      %[[T:.*]] = ddp.all_to_all %{{.*}} over @world[ep] : tensor<4xf32>
// CHECK-NEXT: ddp.compute "read"(%[[T]])
// CHECK-NEXT: ddp.all_to_all %{{.*}} over @world[ep] : tensor<4xf32>
// CHECK-NOT:  ddp.wait

ddp.mesh @world(ep = 2)
func.func @nothing_between(%x: tensor<4xf32>) {
  %t = ddp.all_to_all %x over @world[ep] : tensor<4xf32>
  %r = ddp.compute "read"(%t) flops 1.0 bytes 1.0 : (tensor<4xf32>) -> tensor<4xf32>
  %unused = ddp.all_to_all %r over @world[ep] : tensor<4xf32>
  return
}
