// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=2" -verify-diagnostics | FileCheck %s
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=2 tp-comm-overlap-ag=false tp-comm-overlap-rs=false tp-comm-bulk-dgrad=false tp-comm-bulk-wgrad=false" -verify-diagnostics | FileCheck %s --check-prefix=OFF
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=2 tp-comm-overlap-rs-dgrad=true" -verify-diagnostics | FileCheck %s --check-prefix=DGRAD
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=2 tp-comm-overlap-disable-qkv=true tp-comm-overlap-disable-fc1=true" -verify-diagnostics | FileCheck %s --check-prefix=DISABLED
// Off, the pass changes nothing and checks nothing.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-overlap=false" | FileCheck %s --check-prefix=OFF
// A failing run changes nothing, not even the decisions that were valid.
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=2" --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=UNTOUCHED
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=zero" 2>&1 | FileCheck %s --check-prefix=BADSPLITS
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=0" 2>&1 | FileCheck %s --check-prefix=BADSPLITS
// A count no rows divide into (here one whose product with the group size
// wraps in int64) leaves every GEMM whole.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-tp-comm="tp-comm-num-splits=9223372036854775807" -verify-diagnostics | FileCheck %s --check-prefix=HUGE

// BADSPLITS: for the --tp-comm-num-splits option: must be 'auto' or a positive number, got '{{zero|0}}'

// The forward of a row-parallel layer with sequence parallelism: a GEMM
// whose result a reduce-scatter over tp (4 ranks) reduces. Split in 2, each
// chunk's lhs holds, of each of the 4 blocks of 8 rows, 4 rows (interleave
// 4), and each chunk's reduce-scatter is issued right after its GEMM; both
// are waited where the reduce-scatter was, and their results stacked.
// CHECK-LABEL: func.func @fprop_reduce_scatter
// CHECK-SAME: (%[[X:.*]]: tensor<32x16xf32>)
// CHECK-NEXT: %[[W:.*]] = ddp.get_param @proj : tensor<8x16xf32>
// CHECK-NEXT: %[[X0:.*]] = ddp.chunk %[[X]][0 of 2] interleave 4 : tensor<32x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[Y0:.*]] = ddp.gemm fwd %[[X0]], %[[W]] transposed layer 3 : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[S0:.*]], %[[T0:.*]] = ddp.reduce_scatter sum %[[Y0]] over @world[tp] async : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[X1:.*]] = ddp.chunk %[[X]][1 of 2] interleave 4 : tensor<32x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[Y1:.*]] = ddp.gemm fwd %[[X1]], %[[W]] transposed layer 3 : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[S1:.*]], %[[T1:.*]] = ddp.reduce_scatter sum %[[Y1]] over @world[tp] async : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: %[[S:.*]] = ddp.concat %[[S0]], %[[S1]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: return %[[S]]
// HUGE-LABEL: func.func @fprop_reduce_scatter
// HUGE-NEXT: ddp.get_param
// HUGE-NEXT: ddp.gemm fwd {{.*}} {ddp.tp_comm_splits = 1 : i64}
// HUGE-NEXT: ddp.reduce_scatter sum
// HUGE-NEXT: return
// OFF-LABEL: func.func @fprop_reduce_scatter
// OFF-NEXT: ddp.get_param
// OFF-NEXT: ddp.gemm fwd
// OFF-NEXT: ddp.reduce_scatter sum %{{.*}} over @world[tp] :
// OFF-NOT: ddp.tp_comm
// OFF: return
module {
  ddp.mesh @world(dp = 2, tp = 4)
  ddp.param @proj : tensor<8x16xf32>
  func.func @fprop_reduce_scatter(%x: tensor<32x16xf32>) -> tensor<8x8xf32> {
    %w = ddp.get_param @proj : tensor<8x16xf32>
    %y = ddp.gemm fwd %x, %w transposed layer 3 : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
    %s = ddp.reduce_scatter sum %y over @world[tp] : tensor<32x8xf32> -> tensor<8x8xf32>
    return %s : tensor<8x8xf32>
  }
}

// -----

// Without sequence parallelism the reduction is an all-reduce: contiguous
// row chunks. A GEMM whose rows do not split evenly is left whole with its
// decision recorded; so is one that the reduction does not directly follow
// (the GEMM moves next to it, where the decision was priced).
// CHECK-LABEL: func.func @fprop_all_reduce
// CHECK: %[[X0:.*]] = ddp.chunk %{{.*}}[0 of 2] : tensor<8x16xbf16> -> tensor<4x16xbf16>
// CHECK-NEXT: %[[Y0:.*]] = ddp.gemm fwd %[[X0]]
// CHECK-NEXT: %[[A0:.*]], %[[T0:.*]] = ddp.all_reduce sum %[[Y0]] over @world[tp] async : tensor<4x8xbf16>
// CHECK-NEXT: %[[X1:.*]] = ddp.chunk %{{.*}}[1 of 2] : tensor<8x16xbf16> -> tensor<4x16xbf16>
// CHECK: ddp.wait %[[T0]]
// CHECK-NEXT: ddp.wait
// CHECK-NEXT: %[[A:.*]] = ddp.concat %[[A0]], %{{.*}} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<8x8xbf16>
// CHECK-NEXT: ddp.get_param @proj : tensor<8x16xbf16>
// CHECK-NEXT: %[[ODD:.*]] = ddp.gemm fwd %{{.*}}, %{{.*}} transposed {ddp.tp_comm_splits = 1 : i64} : tensor<3x16xbf16>
// CHECK-NEXT: ddp.all_reduce sum %[[ODD]] over @world[tp] :
module {
  ddp.mesh @world(dp = 2, tp = 4)
  ddp.param @proj : tensor<8x16xbf16>
  func.func @fprop_all_reduce(%x: tensor<8x16xbf16>, %odd: tensor<3x16xbf16>) -> (tensor<8x8xbf16>, tensor<3x8xbf16>) {
    %w = ddp.get_param @proj : tensor<8x16xbf16>
    %y = ddp.gemm fwd %x, %w transposed : tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<8x8xbf16>
    %a = ddp.all_reduce sum %y over @world[tp] : tensor<8x8xbf16>
    %y2 = ddp.gemm fwd %odd, %w transposed : tensor<3x16xbf16>, tensor<8x16xbf16> -> tensor<3x8xbf16>
    %w2 = ddp.get_param @proj : tensor<8x16xbf16>
    %a2 = ddp.all_reduce sum %y2 over @world[tp] : tensor<3x8xbf16>
    return %a, %a2 : tensor<8x8xbf16>, tensor<3x8xbf16>
  }
}

// -----

// The backward of a column-parallel layer (fc1) with sequence parallelism:
// the all-gather of its input, which only the wgrad GEMM reads, runs beside
// the dgrad GEMM (bulk dgrad), and the reduce-scatter of the dgrad result
// beside the wgrad GEMM (bulk wgrad); each is waited right before its first
// reader. With tp-comm-overlap-rs-dgrad the dgrad GEMM is pipelined with
// its reduce-scatter instead. Megatron's tp_comm_overlap_disable_fc1 leaves
// the layer alone.
// CHECK-LABEL: func.func @fc1_backward
// CHECK-NEXT: %[[IN:.*]], %[[TIN:.*]] = ddp.all_gather %{{.*}} over @world[tp] async {ddp.tp_comm_bulk} : tensor<8x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: %[[W:.*]] = ddp.get_param @linear_fc1.weight
// CHECK-NEXT: %[[DX:.*]] = ddp.gemm dgrad
// CHECK-NEXT: %[[RS:.*]], %[[TRS:.*]] = ddp.reduce_scatter sum %[[DX]] over @world[tp] async {ddp.tp_comm_bulk} : tensor<32x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: ddp.wait %[[TIN]]
// CHECK-NEXT: %[[DW:.*]] = ddp.gemm wgrad %{{.*}} transposed, %[[IN]]
// CHECK-NEXT: ddp.wait %[[TRS]]
// CHECK-NEXT: "test.layernorm_grad"(%[[RS]])
// DGRAD-LABEL: func.func @fc1_backward
// DGRAD-NEXT: ddp.all_gather %{{.*}} async {ddp.tp_comm_bulk}
// DGRAD-NEXT: ddp.get_param
// DGRAD-NEXT: ddp.chunk %{{.*}}[0 of 2] interleave 4 : tensor<32x64xf32> -> tensor<16x64xf32>
// DGRAD-NEXT: ddp.gemm dgrad
// DGRAD-NEXT: ddp.reduce_scatter sum %{{.*}} async : tensor<16x16xf32> -> tensor<4x16xf32>
// DISABLED-LABEL: func.func @fc1_backward
// DISABLED-NOT: async
// DISABLED: return
module {
  ddp.mesh @world(dp = 2, tp = 4)
  ddp.param @linear_fc1.weight : tensor<64x16xf32>
  func.func @fc1_backward(%shard: tensor<8x16xf32>, %dy: tensor<32x64xf32>) -> (tensor<64x16xf32>, tensor<8x16xf32>) {
    %in = ddp.all_gather %shard over @world[tp] : tensor<8x16xf32> -> tensor<32x16xf32>
    %w = ddp.get_param @linear_fc1.weight : tensor<64x16xf32>
    %dx = ddp.gemm dgrad %dy, %w : tensor<32x64xf32>, tensor<64x16xf32> -> tensor<32x16xf32>
    %rs = ddp.reduce_scatter sum %dx over @world[tp] : tensor<32x16xf32> -> tensor<8x16xf32>
    %dw = ddp.gemm wgrad %dy transposed, %in : tensor<32x64xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
    %g = "test.layernorm_grad"(%rs) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %dw, %g : tensor<64x16xf32>, tensor<8x16xf32>
  }
}

// -----

// The forward of a column-parallel layer (qkv) with sequence parallelism:
// the all-gather of its input, which only the GEMM reads, becomes 2
// asynchronous all-gathers of row chunks of the rank's 8 rows, issued where
// it was, so that gathered chunk i holds chunk i of every rank's rows. Each
// chunk's GEMM waits for its own gather only, and the products are stacked
// back interleaved over the 4 ranks. A data-parallel all-reduce is not the
// pass's business.
// CHECK-LABEL: func.func @fprop_all_gather
// CHECK-SAME: (%[[SHARD:.*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[C0:.*]] = ddp.chunk %[[SHARD]][0 of 2] : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[G0:.*]], %[[T0:.*]] = ddp.all_gather %[[C0]] over @world[tp] async : tensor<4x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[C1:.*]] = ddp.chunk %[[SHARD]][1 of 2] : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[G1:.*]], %[[T1:.*]] = ddp.all_gather %[[C1]] over @world[tp] async : tensor<4x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[W:.*]] = ddp.get_param @linear_qkv.weight
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: %[[Y0:.*]] = ddp.gemm fwd %[[G0]], %[[W]] transposed : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: %[[Y1:.*]] = ddp.gemm fwd %[[G1]], %[[W]] transposed : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[Y:.*]] = ddp.concat %[[Y0]], %[[Y1]] interleave 4 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
// CHECK-NEXT: ddp.all_reduce sum %[[Y]] over @world[dp] :
// OFF-LABEL: func.func @fprop_all_gather
// OFF-NEXT: ddp.all_gather %{{.*}} over @world[tp] :
// OFF-NOT: ddp.chunk
// OFF: return
// DISABLED-LABEL: func.func @fprop_all_gather
// DISABLED-NEXT: ddp.all_gather %{{.*}} over @world[tp] :
// DISABLED-NOT: ddp.chunk
// DISABLED: return
module {
  ddp.mesh @world(dp = 2, tp = 4)
  ddp.param @linear_qkv.weight : tensor<8x16xf32>
  func.func @fprop_all_gather(%shard: tensor<8x16xf32>) -> tensor<32x8xf32> {
    %x = ddp.all_gather %shard over @world[tp] : tensor<8x16xf32> -> tensor<32x16xf32>
    %w = ddp.get_param @linear_qkv.weight : tensor<8x16xf32>
    %y = ddp.gemm fwd %x, %w transposed : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
    %a = ddp.all_reduce sum %y over @world[dp] : tensor<32x8xf32>
    return %a : tensor<32x8xf32>
  }
}

// -----

// The backward of a row-parallel layer (fc2) with sequence parallelism: the
// gathered output gradient is read by the dgrad GEMM and, after it, by the
// wgrad GEMM. The dgrad GEMM is pipelined with the chunked all-gathers, and
// the wgrad reads the gathered chunks stacked back (a copy the lowering
// makes and the simulator prices).
// CHECK-LABEL: func.func @fc2_backward
// CHECK-NEXT: %[[C0:.*]] = ddp.chunk %{{.*}}[0 of 2] : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[G0:.*]], %[[T0:.*]] = ddp.all_gather %[[C0]] over @world[tp] async
// CHECK-NEXT: ddp.chunk
// CHECK-NEXT: %[[G1:.*]], %[[T1:.*]] = ddp.all_gather
// CHECK-NEXT: ddp.get_param
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: %[[D0:.*]] = ddp.gemm dgrad %[[G0]]
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: %[[D1:.*]] = ddp.gemm dgrad %[[G1]]
// CHECK-NEXT: %[[DX:.*]] = ddp.concat %[[D0]], %[[D1]] interleave 4 : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT: %[[DY:.*]] = ddp.concat %[[G0]], %[[G1]] interleave 4 : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: ddp.gemm wgrad %[[DY]] transposed, %{{.*}} :
// An all-gather read before its GEMM stays whole.
// CHECK-LABEL: func.func @read_before
// CHECK-NEXT: ddp.all_gather %{{.*}} over @world[tp] :
// CHECK-NOT: ddp.chunk
// CHECK: return
module {
  ddp.mesh @world(tp = 4)
  ddp.param @linear_fc2.weight : tensor<16x64xf32>
  ddp.param @linear_qkv.weight : tensor<8x16xf32>
  func.func @fc2_backward(%dy_shard: tensor<8x16xf32>, %x: tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<16x64xf32>) {
    %dy = ddp.all_gather %dy_shard over @world[tp] : tensor<8x16xf32> -> tensor<32x16xf32>
    %w = ddp.get_param @linear_fc2.weight : tensor<16x64xf32>
    %dx = ddp.gemm dgrad %dy, %w : tensor<32x16xf32>, tensor<16x64xf32> -> tensor<32x64xf32>
    %dw = ddp.gemm wgrad %dy transposed, %x : tensor<32x16xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
    return %dx, %dw : tensor<32x64xf32>, tensor<16x64xf32>
  }
  func.func @read_before(%shard: tensor<8x16xf32>) -> (tensor<32x8xf32>, tensor<32x16xf32>) {
    %x = ddp.all_gather %shard over @world[tp] : tensor<8x16xf32> -> tensor<32x16xf32>
    %z = "test.other_reader"(%x) : (tensor<32x16xf32>) -> tensor<32x16xf32>
    %w = ddp.get_param @linear_qkv.weight : tensor<8x16xf32>
    %y = ddp.gemm fwd %x, %w transposed : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
    return %y, %z : tensor<32x8xf32>, tensor<32x16xf32>
  }
}

// -----

// A user's split count is taken as it is.
// CHECK-LABEL: func.func @user_set
// CHECK-COUNT-4: ddp.chunk %{{.*}} of 4] interleave 2
// CHECK-NOT: ddp.chunk
module {
  ddp.mesh @world(tp = 2)
  ddp.param @proj : tensor<8x16xf32>
  func.func @user_set(%x: tensor<32x16xf32>) -> tensor<16x8xf32> {
    %w = ddp.get_param @proj : tensor<8x16xf32>
    %y = ddp.gemm fwd %x, %w transposed {ddp.tp_comm_splits = 4} : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
    %s = ddp.reduce_scatter sum %y over @world[tp] : tensor<32x8xf32> -> tensor<16x8xf32>
    return %s : tensor<16x8xf32>
  }
}

// -----

// Invalid decisions are errors, and the IR stays as it was.
// UNTOUCHED: func.func @invalid_splits
// UNTOUCHED: %{{.*}} = ddp.gemm fwd %{{.*}} transposed :
// UNTOUCHED-NEXT: ddp.reduce_scatter sum %{{.*}} over @world[tp] :
module {
  ddp.mesh @world(tp = 2)
  ddp.param @proj : tensor<8x16xf32>
  func.func @invalid_splits(%x: tensor<32x16xf32>, %z: tensor<6x16xf32>) -> (tensor<16x8xf32>, tensor<3x8xf32>) {
    %w = ddp.get_param @proj : tensor<8x16xf32>
    // A valid one, which a failing run must not rewrite either.
    %y = ddp.gemm fwd %x, %w transposed : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
    %s = ddp.reduce_scatter sum %y over @world[tp] : tensor<32x8xf32> -> tensor<16x8xf32>
    // expected-error @+1 {{cannot be split into 2 chunks: its 6 rows must divide into 2 x 2 (chunks x the reduce-scatter's ranks) equal parts}}
    %y2 = ddp.gemm fwd %z, %w transposed {ddp.tp_comm_splits = 2} : tensor<6x16xf32>, tensor<8x16xf32> -> tensor<6x8xf32>
    %s2 = ddp.reduce_scatter sum %y2 over @world[tp] : tensor<6x8xf32> -> tensor<3x8xf32>
    return %s, %s2 : tensor<16x8xf32>, tensor<3x8xf32>
  }
}

// -----

// 2^63 - 1 chunks x 2 ranks wraps to -2 in int64, which divides the rows.
module {
  ddp.mesh @world(tp = 2)
  ddp.param @proj : tensor<8x16xf32>
  func.func @huge_splits(%x: tensor<32x16xf32>) -> tensor<16x8xf32> {
    %w = ddp.get_param @proj : tensor<8x16xf32>
    // expected-error @+1 {{cannot be split into 9223372036854775807 chunks: its 32 rows must divide into 9223372036854775807 x 2 (chunks x the reduce-scatter's ranks) equal parts}}
    %y = ddp.gemm fwd %x, %w transposed {ddp.tp_comm_splits = 9223372036854775807} : tensor<32x16xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
    %s = ddp.reduce_scatter sum %y over @world[tp] : tensor<32x8xf32> -> tensor<16x8xf32>
    return %s : tensor<16x8xf32>
  }
}

// -----

module {
  ddp.mesh @world(tp = 2)
  ddp.param @proj : tensor<8x16xf32>
  func.func @not_splittable(%x: tensor<16x32xf32>, %dy: tensor<16x8xf32>) -> tensor<32x8xf32> {
    // expected-error @+1 {{has ddp.tp_comm_splits = 2 but cannot be split: only a GEMM whose lhs is not transposed and whose result only a synchronous tensor-parallel reduce-scatter or all-reduce reads, or whose lhs a synchronous tensor-parallel all-gather gathers for it and for readers after it, can}}
    %dw = ddp.gemm wgrad %x transposed, %dy {ddp.tp_comm_splits = 2} : tensor<16x32xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
    %s = ddp.all_reduce sum %dw over @world[tp] : tensor<32x8xf32>
    return %s : tensor<32x8xf32>
  }
}

// -----

// Sends and receives over tp are not bulk candidates and stay as they are;
// a synchronous send has no result (the pass read past it: issue 25).
// CHECK-LABEL: func.func @point_to_point
// CHECK-NEXT: ddp.send %{{.*}} to 1 over @world[tp] : tensor<8xf32>
// CHECK-NEXT: %[[R:.*]] = ddp.recv from 1 over @world[tp] : tensor<8xf32>
// CHECK-NEXT: %[[S:.*]] = ddp.send %{{.*}} to 1 over @world[tp] async : tensor<8xf32>
// CHECK-NEXT: ddp.wait %[[S]]
// CHECK-NEXT: return %[[R]]
module {
  ddp.mesh @world(tp = 2)
  func.func @point_to_point(%x: tensor<8xf32>) -> tensor<8xf32> {
    ddp.send %x to 1 over @world[tp] : tensor<8xf32>
    %r = ddp.recv from 1 over @world[tp] : tensor<8xf32>
    %t = ddp.send %x to 1 over @world[tp] async : tensor<8xf32>
    ddp.wait %t
    return %r : tensor<8xf32>
  }
}
