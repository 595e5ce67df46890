// RUN: ddp-opt %s -split-input-file --ddp-split-batch="batch-split=2" | FileCheck %s
// A count the rows do not allow leaves every span whole.
// RUN: ddp-opt %s -split-input-file --ddp-split-batch="batch-split=3" | FileCheck %s --check-prefix=WHOLE
// The default (1) changes nothing and records nothing.
// RUN: ddp-opt %s -split-input-file --ddp-split-batch | FileCheck %s --check-prefix=OFF
// auto records the count it priced fastest.
// RUN: ddp-opt %s -split-input-file --ddp-split-batch="batch-split=auto" | FileCheck %s --check-prefix=AUTO
// RUN: not ddp-opt %s -split-input-file --ddp-split-batch="batch-split=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: for the --batch-split option: must be 'auto' or a positive number, got '0'
// AUTO: ddp.batch_split = {{[124]}} : i64

// Without sequence parallelism: the projection and its all-reduce, then the
// residual add, in 2 row slices. Slice 0's all-reduce runs beside slice 1's
// GEMM; each slice waits for its own right before reading it. The attention
// (which mixes rows) and the return read the slices stacked back. A slice
// of a kernel does half its flops and moves half its rows' bytes, and reads
// the 32-byte bias whole: (512 - 32) / 2 + 32 = 272 bytes.
// CHECK-LABEL: func.func @allreduce
// CHECK-SAME: attributes {ddp.batch_split = 2 : i64}
// CHECK-NEXT: %[[W:.*]] = ddp.get_param @proj
// CHECK-NEXT: %[[B:.*]] = ddp.get_param @bias
// CHECK-NEXT: %[[A0:.*]] = ddp.chunk %arg0[0 of 2] : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[P0:.*]] = ddp.gemm fwd %[[A0]], %[[W]] transposed layer 0 : tensor<4x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[R0:.*]], %[[T0:.*]] = ddp.all_reduce sum %[[P0]] over @world[tp] async : tensor<4x8xf32>
// CHECK-NEXT: %[[A1:.*]] = ddp.chunk %arg0[1 of 2]
// CHECK-NEXT: %[[P1:.*]] = ddp.gemm fwd %[[A1]], %[[W]] transposed layer 0
// CHECK-NEXT: %[[R1:.*]], %[[T1:.*]] = ddp.all_reduce sum %[[P1]] over @world[tp] async
// CHECK-NEXT: %[[X0:.*]] = ddp.chunk %arg1[0 of 2] : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: %[[H0:.*]] = ddp.compute "bias_dropout_add"(%[[R0]], %[[B]], %[[X0]]) flops 64.0 bytes 272.0 layer 0
// CHECK-NEXT: %[[X1:.*]] = ddp.chunk %arg1[1 of 2]
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: %[[H1:.*]] = ddp.compute "bias_dropout_add"(%[[R1]], %[[B]], %[[X1]])
// CHECK-NEXT: %[[P:.*]] = ddp.concat %[[P0]], %[[P1]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[H:.*]] = ddp.concat %[[H0]], %[[H1]] :
// CHECK-NEXT: %[[O:.*]] = ddp.compute "attention"(%[[H]])
// CHECK-NEXT: return %[[O]], %[[P]]
// WHOLE-LABEL: func.func @allreduce
// WHOLE-SAME: attributes {ddp.batch_split = 1 : i64}
// WHOLE-NOT: ddp.chunk
// WHOLE: ddp.all_reduce sum %{{.*}} over @world[tp] :
// OFF-LABEL: func.func @allreduce
// OFF-NOT: ddp.batch_split
// OFF-NOT: ddp.chunk
ddp.mesh @world(tp = 2)
ddp.param @proj layer 0 tp_dim 1 : tensor<8x4xf32>
ddp.param @bias layer 0 : tensor<8xf32>
func.func @allreduce(%a: tensor<8x4xf32>, %x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %w = ddp.get_param @proj : tensor<8x4xf32>
  %p = ddp.gemm fwd %a, %w transposed layer 0 : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
  %r = ddp.all_reduce sum %p over @world[tp] : tensor<8x8xf32>
  %b = ddp.get_param @bias : tensor<8xf32>
  %h = ddp.compute "bias_dropout_add"(%r, %b, %x) flops 128.0 bytes 512.0 layer 0 : (tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %o = ddp.compute "attention"(%h) flops 1.0 bytes 1.0 layer 1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %o, %p : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// With sequence parallelism: the MLP between its all-gather and its
// reduce-scatter. A slice of the residual stream is a contiguous range of
// the rank's 4 rows; a slice of the gathered tensor holds that range of
// both ranks' rows, so what a reader after the span sees is stacked back
// interleaved over the 2 ranks.
// CHECK-LABEL: func.func @sequence_parallel
// CHECK-NEXT: %[[L0:.*]] = ddp.chunk %arg0[0 of 2] : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[G0:.*]], %[[T0:.*]] = ddp.all_gather %[[L0]] over @world[tp] async : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[L1:.*]] = ddp.chunk %arg0[1 of 2]
// CHECK-NEXT: %[[G1:.*]], %[[T1:.*]] = ddp.all_gather %[[L1]] over @world[tp] async
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: %[[F0:.*]] = ddp.gemm fwd %[[G0]], %arg2 transposed layer 0 : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[A0:.*]] = ddp.compute "gelu"(%[[F0]], %arg3)
// CHECK-NEXT: %[[Y0:.*]] = ddp.gemm fwd %[[A0]], %arg4 transposed
// CHECK-NEXT: %[[S0:.*]], %[[U0:.*]] = ddp.reduce_scatter sum %[[Y0]] over @world[tp] async : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: %[[F1:.*]] = ddp.gemm fwd %[[G1]], %arg2 transposed
// CHECK-NEXT: %[[A1:.*]] = ddp.compute "gelu"(%[[F1]], %arg3)
// CHECK-NEXT: %[[Y1:.*]] = ddp.gemm fwd %[[A1]], %arg4 transposed
// CHECK-NEXT: %[[S1:.*]], %[[U1:.*]] = ddp.reduce_scatter sum %[[Y1]] over @world[tp] async
// CHECK-NEXT: %[[X0:.*]] = ddp.chunk %arg1[0 of 2]
// CHECK-NEXT: ddp.wait %[[U0]]
// CHECK-NEXT: %[[H0:.*]] = ddp.compute "bias_dropout_add"(%[[S0]], %arg5, %[[X0]])
// CHECK-NEXT: %[[X1:.*]] = ddp.chunk %arg1[1 of 2]
// CHECK-NEXT: ddp.wait %[[U1]]
// CHECK-NEXT: %[[H1:.*]] = ddp.compute "bias_dropout_add"(%[[S1]], %arg5, %[[X1]])
// CHECK-NEXT: %[[A:.*]] = ddp.concat %[[A0]], %[[A1]] interleave 2 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[H:.*]] = ddp.concat %[[H0]], %[[H1]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[O:.*]] = ddp.compute "attention"(%[[H]])
// CHECK-NEXT: return %[[O]], %[[A]]
ddp.mesh @world(tp = 2)
func.func @sequence_parallel(%ln: tensor<4x8xf32>, %x: tensor<4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8x16xf32>) {
  %g = ddp.all_gather %ln over @world[tp] : tensor<4x8xf32> -> tensor<8x8xf32>
  %f = ddp.gemm fwd %g, %w1 transposed layer 0 : tensor<8x8xf32>, tensor<16x8xf32> -> tensor<8x16xf32>
  %a = ddp.compute "gelu"(%f, %b1) flops 128.0 bytes 512.0 layer 0 : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %y = ddp.gemm fwd %a, %w2 transposed layer 0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
  %s = ddp.reduce_scatter sum %y over @world[tp] : tensor<8x8xf32> -> tensor<4x8xf32>
  %h = ddp.compute "bias_dropout_add"(%s, %b2, %x) flops 64.0 bytes 256.0 layer 0 : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %o = ddp.compute "attention"(%h) flops 1.0 bytes 1.0 layer 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o, %a : tensor<4x8xf32>, tensor<8x16xf32>
}

// -----

// A kernel whose rows are wider than its result's (a gated activation: the
// runtime's stand-in reads operand element i for result element i, so its
// rows would not slice alike) ends the span: the projection and its
// all-reduce are split, the rest runs whole on what they stacked back.
// CHECK-LABEL: func.func @cut
// CHECK: ddp.all_reduce sum %{{.*}} over @world[tp] async : tensor<4x16xf32>
// CHECK: ddp.all_reduce sum %{{.*}} over @world[tp] async : tensor<4x16xf32>
// CHECK: %[[R:.*]] = ddp.concat {{.*}} -> tensor<8x16xf32>
// CHECK-NEXT: ddp.compute "swiglu"(%[[R]]) {{.*}} : (tensor<8x16xf32>) -> tensor<8x8xf32>
ddp.mesh @world(tp = 2)
func.func @cut(%a: tensor<8x4xf32>, %w: tensor<16x4xf32>) -> tensor<8x8xf32> {
  %p = ddp.gemm fwd %a, %w transposed layer 0 : tensor<8x4xf32>, tensor<16x4xf32> -> tensor<8x16xf32>
  %r = ddp.all_reduce sum %p over @world[tp] : tensor<8x16xf32>
  %s = ddp.compute "swiglu"(%r) flops 1.0 bytes 1.0 layer 0 : (tensor<8x16xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

// What is and is not split:
// - a GEMM whose rhs the span makes (an attention written as GEMMs: its
//   keys would be sliced with the rows) ends the span before it;
// - a backward-like run, a gradient's add and the all-gather of the next
//   dgrad's input, is split: the slices' all-gathers overlap each other's
//   adds (the add reads a chunk of %arg2 in each slice);
// - a GEMM with a split count the user pinned for ddp-overlap-tp-comm is
//   left as it is, and its all-reduce alone is no span.
// CHECK-LABEL: func.func @not_split
// CHECK: ddp.all_reduce sum %{{.*}} over @world[tp] async : tensor<4x8xf32>
// CHECK: ddp.all_reduce sum %{{.*}} over @world[tp] async : tensor<4x8xf32>
// CHECK: %[[K:.*]] = ddp.concat
// CHECK-NEXT: ddp.gemm fwd %arg0, %[[K]] transposed : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[G0:.*]] = ddp.chunk %arg2[0 of 2]
// CHECK-NEXT: %[[D0:.*]] = ddp.compute "add"(%[[G0]], %[[G0]])
// CHECK-NEXT: ddp.all_gather %[[D0]] over @world[tp] async : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: ddp.concat {{.*}} interleave 2 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: ddp.gemm fwd %arg0, %arg1 transposed {ddp.tp_comm_splits = 2 : i64}
// CHECK-NEXT: ddp.all_reduce sum %{{.*}} over @world[tp] : tensor<8x8xf32>
ddp.mesh @world(tp = 2)
func.func @not_split(%x: tensor<8x8xf32>, %wk: tensor<8x8xf32>, %g: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<16x8xf32>, tensor<8x8xf32>) {
  %k = ddp.gemm fwd %x, %wk transposed : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %kr = ddp.all_reduce sum %k over @world[tp] : tensor<8x8xf32>
  %s = ddp.gemm fwd %x, %kr transposed : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %d = ddp.compute "add"(%g, %g) flops 64.0 bytes 512.0 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = ddp.all_gather %d over @world[tp] : tensor<8x8xf32> -> tensor<16x8xf32>
  %p = ddp.gemm fwd %x, %wk transposed {ddp.tp_comm_splits = 2 : i64} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %r = ddp.all_reduce sum %p over @world[tp] : tensor<8x8xf32>
  return %s, %a, %r : tensor<8x8xf32>, tensor<16x8xf32>, tensor<8x8xf32>
}
