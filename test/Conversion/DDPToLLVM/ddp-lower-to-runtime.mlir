// RUN: ddp-opt %s -split-input-file --ddp-lower-to-runtime | FileCheck %s -DABI=%ddprt_abi_version
// RUN: ddp-opt %s -split-input-file --ddp-lower-to-runtime="abi-version=7 param-prefix=scheduled:" | FileCheck %s --check-prefix=OPTIONS
// RUN: ddp-opt %s -split-input-file --ddp-lower-to-runtime="reuse-buffers=false" | FileCheck %s --check-prefix=NOREUSE

// The program interface: init passes the ABI version of ddprt.h and the mesh;
// setup creates the groups, allocates the arenas, points each buffer at its
// byte offset in its arena and registers the parameters, in loops over
// constant tables, and fills the inputs; teardown frees the arenas. No two
// of this step's buffers are apart in time (the input lives through the step,
// the GEMM's result is never read, the all-reduce is in place), so each is
// an arena of its own.

// CHECK-DAG: llvm.mlir.global internal @__ddp_buffers() {{.*}} : !llvm.array<3 x ptr>
// CHECK-DAG: llvm.mlir.global internal @__ddp_groups() {{.*}} : !llvm.array<1 x i32>
// CHECK-DAG: llvm.mlir.global internal constant @[[MESH:.*]]("dp=2,tp=2\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[DP:.*]]("dp\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[W:.*]]("w\00")
// CHECK-DAG: %[[WADDR:.*]] = llvm.mlir.addressof @[[W]]
// CHECK-DAG: llvm.insertvalue %[[WADDR]], %{{.*}}[0] : !llvm.array<1 x ptr>
// CHECK-DAG: llvm.mlir.global internal constant @__ddp_param_dtypes(dense<3> : tensor<1xi32>)
// CHECK-DAG: llvm.mlir.global internal constant @__ddp_param_numels(dense<8> : tensor<1xi64>)
// CHECK-DAG: llvm.mlir.global internal @__ddp_arenas() {{.*}} : !llvm.array<3 x ptr>
// CHECK-DAG: llvm.mlir.global internal constant @__ddp_arena_numels(dense<[12, 6, 8]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @__ddp_buffer_arenas(dense<[0, 1, 2]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @__ddp_buffer_byte_offsets(dense<0> : tensor<3xi64>)

// Each runtime function is declared once, with the type of its C prototype
// (the step calls ddprt_gemm twice).
// CHECK: llvm.func @ddprt_gemm(!llvm.ptr, i32, i32, i32, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NOT: llvm.func @ddprt_gemm(

// CHECK-LABEL: llvm.func @ddp_program_init
// CHECK-SAME: (%[[BACKEND:.*]]: i32, %[[FLAGS:.*]]: i32, %[[TIMEOUT:.*]]: i32, %[[TRACE:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr) -> i32
// CHECK-DAG: %[[MESHPTR:.*]] = llvm.mlir.addressof @[[MESH]]
// CHECK-DAG: %[[ABIVALUE:.*]] = llvm.mlir.constant([[ABI]] : i32)
// CHECK: %[[STATUS:.*]] = llvm.call @ddprt_init(%[[ABIVALUE]], %[[MESHPTR]], %[[BACKEND]], %[[FLAGS]], %[[TIMEOUT]], %[[TRACE]], %[[OUT]])
// CHECK: llvm.return %[[STATUS]]

// Globals print before the functions: the parameter's name is checked before
// the label, where only this module's globals are.
// OPTIONS: llvm.mlir.global internal constant @{{.*}}("scheduled:w\00")
// OPTIONS-LABEL: llvm.func @ddp_program_init
// OPTIONS: llvm.mlir.constant(7 : i32)
// OPTIONS: llvm.call @ddprt_init

// CHECK-LABEL: llvm.func @ddp_program_setup
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[SEED:.*]]: i64) -> i32
// CHECK-DAG: %[[GOLDEN:.*]] = llvm.mlir.constant(-7046029254386353131 : i64) : i64
// CHECK: %[[GROUPS:.*]] = llvm.mlir.addressof @__ddp_groups
// CHECK: %[[GROUP0:.*]] = llvm.getelementptr %[[GROUPS]][0, 0]
// CHECK: llvm.call @ddprt_group_create(%[[CTX]], %{{.*}}, %[[GROUP0]])
// CHECK: llvm.cond_br %{{.*}}, ^{{.*}}, ^[[FAIL:bb[0-9]+]](
// CHECK: %[[ARENAS:.*]] = llvm.mlir.addressof @__ddp_arenas
// CHECK: %[[ARENASLOT:.*]] = llvm.getelementptr %[[ARENAS]][0, %{{.*}}]
// CHECK: llvm.call @ddprt_alloc(%[[CTX]], %{{.*}}, %{{.*}}, %[[ARENASLOT]])
// CHECK-NOT: llvm.call @ddprt_alloc(
// CHECK: %[[ARENAOF:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: %[[ARENASLOT2:.*]] = llvm.getelementptr %{{.*}}[0, %[[ARENAOF]]]
// CHECK: %[[ARENA:.*]] = llvm.load %[[ARENASLOT2]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[BUFFEROFFSET:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: %[[BUFFERDATA:.*]] = llvm.getelementptr %[[ARENA]][%[[BUFFEROFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.store %[[BUFFERDATA]], %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: ^[[HEADER:bb[0-9]+]](%[[I:.*]]: i64):
// CHECK: %[[NAMES:.*]] = llvm.mlir.addressof @__ddp_param_names
// CHECK: %[[NAMESLOT:.*]] = llvm.getelementptr %[[NAMES]][0, %[[I]]]
// CHECK: %[[NAME:.*]] = llvm.load %[[NAMESLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[OWN:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @ddprt_param_register_in(%[[CTX]], %[[NAME]], %{{.*}}, %{{.*}}, %[[SEED]], %[[OWN]], %{{.*}})
// CHECK: llvm.call @ddprt_param_data(
// CHECK: %[[NEXT:.*]] = llvm.add %[[I]], %{{.*}} : i64
// CHECK: llvm.br ^[[HEADER]](%[[NEXT]] : i64)
// CHECK-NOT: llvm.call @ddprt_alloc(
// Each input has a seed of its own: the step's seed xor (k + 1) times the
// 64-bit golden ratio for argument k.
// (-7046029254386353131 is 0x9E3779B97F4A7C15 as an i64.)
// CHECK: %[[SEED0:.*]] = llvm.xor %[[SEED]], %[[GOLDEN]] : i64
// CHECK: llvm.call @ddprt_fill_input(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[SEED0]])
// CHECK: ^[[FAIL]](%[[FAILED:.*]]: i32):
// CHECK-NEXT: llvm.return %[[FAILED]]

// A synchronous all-reduce passes a null handle, and reduces the gradient in
// place (its result is the wgrad's buffer); the parameter's own storage
// feeds the GEMM (no update comes before its last use).
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK: %[[PDATA:.*]] = llvm.mlir.addressof @__ddp_param_data
// CHECK: %[[WSLOT:.*]] = llvm.getelementptr %[[PDATA]][0, 0]
// CHECK: %[[WDATA:.*]] = llvm.load %[[WSLOT]]
// CHECK: llvm.call @ddprt_gemm(%[[CTX]], {{.*}}, %[[WDATA]], %{{.*}}, %{{.*}})
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @ddprt_all_reduce(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[GRAD:[0-9]+]], %[[GRAD]], %[[NULL]])
// CHECK-NOT: llvm.call @ddprt_copy
// CHECK: llvm.call @ddprt_sgd(
// CHECK-NOT: llvm.call

// CHECK-LABEL: llvm.func @ddp_program_teardown
// CHECK: llvm.call @ddprt_free(
// CHECK: llvm.store %{{.*}}, %{{.*}} : !llvm.ptr, !llvm.ptr

ddp.mesh @world(dp = 2, tp = 2)
ddp.param @w : tensor<4x2xf32>

func.func @step(%x: tensor<3x4xf32>) {
  %w = ddp.get_param @w : tensor<4x2xf32>
  %y = ddp.gemm fwd %x, %w : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %dw = ddp.gemm wgrad %x transposed, %y : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %g = ddp.grad_ready @w, %dw : tensor<4x2xf32>
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<4x2xf32>
  ddp.sgd @w, %r lr 0.5 : tensor<4x2xf32>
  return
}

// -----

// Gradient as bucket view: both wgrads write straight into their slices of
// the bucket (byte offsets 0 and 16), packing copies nothing, the
// asynchronous all-reduce is in place (its result is the bucket, as
// Megatron-LM reduces a bucket's gradients) with a handle slot that the
// wait reads, and the optimizer reads views of the reduced bucket.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: %[[HANDLE:.*]] = llvm.alloca %{{.*}} x i64
// CHECK: %[[BUCKETSLOT:.*]] = llvm.getelementptr %{{.*}}[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<4 x ptr>
// CHECK: %[[BUCKET:.*]] = llvm.load %[[BUCKETSLOT]]
// CHECK: %[[SLICE0:.*]] = llvm.getelementptr %[[BUCKET]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_gemm({{.*}}, %[[SLICE0]], %{{.*}})
// CHECK: llvm.call @ddprt_gemm({{.*}}, %[[BUCKET]], %{{.*}})
// CHECK-NOT: llvm.call @ddprt_copy
// CHECK: llvm.call @ddprt_all_reduce({{.*}}, %[[BUCKET]], %[[BUCKET]], %[[HANDLE]])
// CHECK: %[[H:.*]] = llvm.load %[[HANDLE]] : !llvm.ptr -> i64
// CHECK: llvm.call @ddprt_wait(%{{.*}}, %[[H]])
// CHECK: %[[VIEW0:.*]] = llvm.getelementptr %[[BUCKET]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_sgd(%{{.*}}, %{{.*}}, %{{.*}}, %[[VIEW0]], %{{.*}})
// CHECK: llvm.call @ddprt_sgd(%{{.*}}, %{{.*}}, %{{.*}}, %[[BUCKET]], %{{.*}})

ddp.mesh @world(dp = 2)
ddp.param @w0 : tensor<4x2xf32>
ddp.param @w1 : tensor<2x2xf32>

func.func @step(%x: tensor<3x4xf32>, %dy: tensor<3x2xf32>) {
  %w0 = ddp.get_param @w0 : tensor<4x2xf32>
  %y = ddp.gemm fwd %x, %w0 : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %dw0 = ddp.gemm wgrad %x transposed, %dy : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %g0 = ddp.grad_ready @w0, %dw0 : tensor<4x2xf32>
  %dw1 = ddp.gemm wgrad %y transposed, %dy : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  %g1 = ddp.grad_ready @w1, %dw1 : tensor<2x2xf32>
  %b = ddp.bucket_pack %g1, %g0 offsets [0, 4] : tensor<2x2xf32>, tensor<4x2xf32> -> tensor<16xf32>
  %r, %t = ddp.all_reduce avg %b over @world[dp] async : tensor<16xf32>
  ddp.wait %t
  %r1, %r0 = ddp.bucket_unpack %r offsets [0, 4] : tensor<16xf32> -> tensor<2x2xf32>, tensor<4x2xf32>
  ddp.sgd @w0, %r0 lr 0.5 : tensor<4x2xf32>
  ddp.sgd @w1, %r1 lr 0.5 : tensor<2x2xf32>
  return
}

// -----

// A gradient that is not computed in the step (here a step input) cannot be
// produced in its bucket: it is copied into its slice at the pack.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[BYTES:.*]] = llvm.mlir.constant(16 : i64)
// CHECK-DAG: %[[INPUTSLOT:.*]] = llvm.getelementptr %{{.*}}[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x ptr>
// CHECK-DAG: %[[INPUT:.*]] = llvm.load %[[INPUTSLOT]]
// CHECK-DAG: %[[BUCKETSLOT:.*]] = llvm.getelementptr %{{.*}}[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<2 x ptr>
// CHECK-DAG: %[[BUCKET:.*]] = llvm.load %[[BUCKETSLOT]]
// CHECK-DAG: %[[SLICE:.*]] = llvm.getelementptr %[[BUCKET]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_copy(%{{.*}}, %[[SLICE]], %[[INPUT]], %[[BYTES]])
// CHECK: llvm.call @ddprt_all_reduce

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>

func.func @step(%g: tensor<4xf32>) {
  %gr = ddp.grad_ready @w, %g : tensor<4xf32>
  %b = ddp.bucket_pack %gr offsets [2] : tensor<4xf32> -> tensor<8xf32>
  %r = ddp.all_reduce sum %b over @world[dp] : tensor<8xf32>
  %v = ddp.bucket_unpack %r offsets [2] : tensor<8xf32> -> tensor<4xf32>
  ddp.sgd @w, %v lr 1.0 : tensor<4xf32>
  return
}

// -----

// A parameter read after its own update must be read before it: ddp.get_param
// copies it into a buffer. The other parameter is only read before its
// update and is used in place.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: %[[PDATA:.*]] = llvm.mlir.addressof @__ddp_param_data
// CHECK: %[[ASLOT:.*]] = llvm.getelementptr %[[PDATA]][0, 0]
// CHECK: %[[A:.*]] = llvm.load %[[ASLOT]]
// CHECK: %[[COPY:.*]] = llvm.load
// CHECK: llvm.call @ddprt_copy(%{{.*}}, %[[COPY]], %[[A]], %{{.*}})
// CHECK-NOT: llvm.call @ddprt_copy
// CHECK: llvm.call @ddprt_sgd
// CHECK: llvm.call @ddprt_gemm({{.*}}, %[[COPY]], %{{.*}}, %{{.*}}, %{{.*}})

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<2x2xf32>
ddp.param @b : tensor<2x2xf32>

func.func @step(%x: tensor<2x2xf32>) {
  %a = ddp.get_param @a : tensor<2x2xf32>
  %b = ddp.get_param @b : tensor<2x2xf32>
  %r = ddp.all_reduce avg %x over @world[dp] : tensor<2x2xf32>
  ddp.sgd @a, %r lr 1.0 : tensor<2x2xf32>
  %y = ddp.gemm fwd %a, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  ddp.sgd @b, %y lr 1.0 : tensor<2x2xf32>
  return
}

// -----

// A ddp.get_param after its parameter's update reads the updated value in
// place: only the updates after it matter.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: llvm.call @ddprt_sgd(
// CHECK-NOT: llvm.call @ddprt_copy
// CHECK: llvm.call @ddprt_gemm(

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<2x2xf32>

func.func @step(%x: tensor<2x2xf32>) {
  ddp.sgd @a, %x lr 1.0 : tensor<2x2xf32>
  %a = ddp.get_param @a : tensor<2x2xf32>
  %y = ddp.gemm fwd %a, %x : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  return
}

// -----

// An asynchronous collective reads its input until its wait: a parameter it
// reads must be copied when the wait comes after the parameter's update.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: llvm.call @ddprt_copy(
// CHECK: llvm.call @ddprt_all_gather(
// CHECK: llvm.call @ddprt_sgd(
// CHECK: llvm.call @ddprt_wait(

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>

func.func @step(%x: tensor<4xf32>) {
  %w = ddp.get_param @w : tensor<4xf32>
  %all, %t = ddp.all_gather %w over @world[dp] async : tensor<4xf32> -> tensor<8xf32>
  ddp.sgd @w, %x lr 1.0 : tensor<4xf32>
  ddp.wait %t
  return
}

// -----

// A broadcast passes its root (an i64 group rank), the dtype (bf16 is 2),
// the element count, its input and its result buffer, and a handle slot
// when asynchronous.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[ROOT:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-DAG: %[[BF16:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-DAG: %[[NUMEL:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK: llvm.call @ddprt_broadcast(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[ROOT]], %[[BF16]], %[[NUMEL]], %{{[0-9]+}}, %{{[0-9]+}}, %[[NULL:[0-9]+]])
// CHECK: llvm.call @ddprt_broadcast(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[ROOT]], %[[BF16]], %[[NUMEL]], %{{[0-9]+}}, %{{[0-9]+}}, %[[SLOT:[0-9]+]])
// CHECK: llvm.load %[[SLOT]]
// CHECK: llvm.call @ddprt_wait(

ddp.mesh @world(dp = 3)

func.func @step(%x: tensor<3x4xbf16>) {
  %b = ddp.broadcast %x root 2 over @world[dp] : tensor<3x4xbf16>
  %c, %t = ddp.broadcast %b root 2 over @world[dp] async : tensor<3x4xbf16>
  ddp.wait %t
  return
}

// -----

// An all-to-all passes the dtype (bf16 is 2), the whole tensor's element
// count (6 x 4, one block of 2 x 4 per rank), its input and its result
// buffer, and a handle slot when asynchronous.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[BF16:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-DAG: %[[NUMEL:.*]] = llvm.mlir.constant(24 : i64) : i64
// CHECK: llvm.call @ddprt_all_to_all(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[BF16]], %[[NUMEL]], %{{[0-9]+}}, %{{[0-9]+}}, %[[NULL:[0-9]+]])
// CHECK: llvm.call @ddprt_all_to_all(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[BF16]], %[[NUMEL]], %{{[0-9]+}}, %{{[0-9]+}}, %[[SLOT:[0-9]+]])
// CHECK: llvm.load %[[SLOT]]
// CHECK: llvm.call @ddprt_wait(

ddp.mesh @world(ep = 3)

func.func @step(%x: tensor<6x4xbf16>) {
  %a = ddp.all_to_all %x over @world[ep] : tensor<6x4xbf16>
  %b, %t = ddp.all_to_all %a over @world[ep] async : tensor<6x4xbf16>
  ddp.wait %t
  return
}

// -----

// A counted all-to-all passes its sub-blocks (6 counts over 3 ranks: 2) and
// a row's elements (4) before the dtype and count, then the input, the
// send and receive counts, and the result.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[SUB:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-DAG: %[[ROW:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-DAG: %[[BF16:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-DAG: %[[NUMEL:.*]] = llvm.mlir.constant(48 : i64) : i64
// CHECK: llvm.call @ddprt_all_to_all_v(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[SUB]], %[[ROW]], %[[BF16]], %[[NUMEL]], %[[X:[0-9]+]], %[[S:[0-9]+]], %[[R:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}})
// CHECK: llvm.call @ddprt_all_to_all_v(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[SUB]], %[[ROW]], %[[BF16]], %[[NUMEL]], %{{[0-9]+}}, %[[R]], %[[S]], %{{[0-9]+}}, %[[SLOT:[0-9]+]])
// CHECK: llvm.load %[[SLOT]]
// CHECK: llvm.call @ddprt_wait(

ddp.mesh @world(ep = 3)

func.func @step(%x: tensor<12x4xbf16>, %send: tensor<6xf32>, %recv: tensor<6xf32>) {
  %a = ddp.all_to_all_v %x counts %send, %recv over @world[ep] : tensor<12x4xbf16>, tensor<6xf32>
  %b, %t = ddp.all_to_all_v %a counts %recv, %send over @world[ep] async : tensor<12x4xbf16>, tensor<6xf32>
  ddp.wait %t
  return
}

// -----

// Every collective's arguments come from its op (one lowering for all,
// docs/Extending.md): the reduction (avg is 1) or peer offset, the dtype
// (f16 is 1), NCCL's count per rank (a reduce-scatter's scattered result:
// 2 x 4 = 8 of its 24 input elements; an all-gather's input), the tensors
// it reads, then the one it writes (a send none, a receive no input).

// CHECK-LABEL: llvm.func @ddp_program_step
// Avg and f16 are both 1: one constant.
// CHECK-DAG: %[[AVG:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG: %[[EIGHT:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-DAG: %[[PLUS1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-DAG: %[[MINUS1:.*]] = llvm.mlir.constant(-1 : i64) : i64
// CHECK-DAG: %[[TWENTYFOUR:.*]] = llvm.mlir.constant(24 : i64) : i64
// CHECK: llvm.call @ddprt_reduce_scatter(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[AVG]], %[[AVG]], %[[EIGHT]], %[[IN:[a-z0-9]+]], %[[SCATTERED:[0-9]+]], %{{[0-9]+}})
// CHECK: llvm.call @ddprt_all_gather(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[AVG]], %[[EIGHT]], %[[SCATTERED]], %{{[0-9]+}}, %{{[0-9]+}})
// CHECK: llvm.call @ddprt_send(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[PLUS1]], %[[AVG]], %[[TWENTYFOUR]], %[[IN]], %{{[0-9]+}})
// CHECK: llvm.call @ddprt_recv(%{{[a-z0-9]+}}, %{{[0-9]+}}, %[[MINUS1]], %[[AVG]], %[[TWENTYFOUR]], %{{[0-9]+}}, %{{[0-9]+}})

ddp.mesh @world(dp = 3)

func.func @step(%x: tensor<6x4xf16>) {
  %s = ddp.reduce_scatter avg %x over @world[dp] : tensor<6x4xf16> -> tensor<2x4xf16>
  %g = ddp.all_gather %s over @world[dp] : tensor<2x4xf16> -> tensor<6x4xf16>
  %t0 = ddp.send %x to 1 over @world[dp] async : tensor<6x4xf16>
  %r, %t1 = ddp.recv from -1 over @world[dp] async : tensor<6x4xf16>
  %all = ddp.join %t0, %t1
  ddp.wait %all
  return
}

// -----

// Compute ops pass their operands as ddprt_tensor arrays on the stack, one
// array per kind for the whole step; joins pass an array of handles;
// reductions are DDPRT_REDUCTION_SUM (0) and _MAX (2).

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[NUMEL:.*]] = llvm.mlir.constant(6 : i64)
// CHECK-DAG: %[[TWO:.*]] = llvm.mlir.constant(2 : i32)
// CHECK-DAG: %[[NOUT:.*]] = llvm.mlir.constant(1 : i32)
// CHECK-DAG: %[[SUM:.*]] = llvm.mlir.constant(0 : i32)
// The cost model's price of the kernel goes along, for the CUDA stand-in.
// CHECK-DAG: %[[FLOPS:.*]] = llvm.mlir.constant(6.000000e+00 : f64)
// CHECK-DAG: %[[BYTES:.*]] = llvm.mlir.constant(2.400000e+01 : f64)
// CHECK-DAG: %[[RESULTS:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, i64, i32, i32)>
// CHECK-DAG: %[[INPUTS:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, i64, i32, i32)>
// CHECK: %[[FIELD:.*]] = llvm.getelementptr %[[INPUTS]][1, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, i64, i32, i32)>
// CHECK: llvm.store %[[NUMEL]], %[[FIELD]]
// CHECK: %[[KIND:.*]] = llvm.mlir.addressof @__ddp_str_{{[0-9]+}} : !llvm.ptr
// CHECK: llvm.call @ddprt_compute(%{{.*}}, %[[KIND]], %[[FLOPS]], %[[BYTES]], %[[INPUTS]], %[[TWO]], %[[RESULTS]], %[[NOUT]])
// CHECK: llvm.call @ddprt_cast(
// CHECK: llvm.call @ddprt_accumulate(
// CHECK: llvm.call @ddprt_reduce_scatter(%{{.*}}, %{{.*}}, %[[SUM]],
// CHECK: llvm.call @ddprt_all_reduce(%{{.*}}, %{{.*}}, %[[TWO]],
// CHECK: %[[E1:.*]] = llvm.getelementptr %[[HANDLES:.*]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.store %{{.*}}, %[[E1]] : i64, !llvm.ptr
// CHECK: llvm.call @ddprt_join(%{{.*}}, %[[HANDLES]], %{{.*}}, %[[JOINED:[0-9]+]])
// CHECK: %[[J:.*]] = llvm.load %[[JOINED]]
// CHECK: llvm.call @ddprt_wait(%{{.*}}, %[[J]])
// CHECK: llvm.call @ddprt_adam(

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<2x3xbf16>

func.func @step(%x: tensor<2x3xbf16>, %y: tensor<3x2xbf16>) {
  %z = ddp.compute "silu"(%x, %y) flops 6.0 bytes 24.0 : (tensor<2x3xbf16>, tensor<3x2xbf16>) -> tensor<2x3xbf16>
  %f = ddp.cast %z : tensor<2x3xbf16> to tensor<2x3xf32>
  %acc = ddp.accumulate %f, %f : tensor<2x3xf32>
  %s, %t0 = ddp.reduce_scatter sum %acc over @world[dp] async : tensor<2x3xf32> -> tensor<1x3xf32>
  %r, %t1 = ddp.all_reduce max %acc over @world[dp] async : tensor<2x3xf32>
  %t = ddp.join %t0, %t1
  ddp.wait %t
  ddp.adam @w, %r lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<2x3xf32>
  return
}

// -----

// An all-reduce issued after a reduce-scatter (`async after`, the shard of a
// distributed-optimizer bucket all-reduced across instances): the
// communication is ordered after the reduce-scatter's handle
// (ddprt_comm_wait), the all-reduce reads its result with no wait between,
// and the reduce-scatter's handle joins the all-reduce's, which the one
// wait takes.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[TWO:.*]] = llvm.mlir.constant(2 : i32)
// CHECK-DAG: %[[PAIR:.*]] = llvm.mlir.constant(2 : i64)
// CHECK-DAG: %[[HANDLES:.*]] = llvm.alloca %[[PAIR]] x i64 : (i64) -> !llvm.ptr
// CHECK: llvm.call @ddprt_reduce_scatter(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SHARD:.*]], %[[RS:[0-9]+]])
// CHECK-NOT: ddprt_wait
// CHECK: %[[H0:.*]] = llvm.load %[[RS]] : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @ddprt_comm_wait(%{{.*}}, %[[H0]])
// CHECK: llvm.call @ddprt_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SHARD]], %{{.*}}, %[[AR:[0-9]+]])
// CHECK: %[[H1:.*]] = llvm.load %[[AR]] : !llvm.ptr -> i64
// CHECK: %[[E0:.*]] = llvm.getelementptr %[[HANDLES]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.store %[[H0]], %[[E0]] : i64, !llvm.ptr
// CHECK: %[[E1:.*]] = llvm.getelementptr %[[HANDLES]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.store %[[H1]], %[[E1]] : i64, !llvm.ptr
// CHECK: llvm.call @ddprt_join(%{{.*}}, %[[HANDLES]], %[[TWO]], %[[AR]])
// CHECK-NOT: ddprt_wait
// CHECK: llvm.call @ddprt_gemm(
// CHECK: %[[J:.*]] = llvm.load %[[AR]] : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @ddprt_wait(%{{.*}}, %[[J]])
// CHECK-NOT: ddprt_wait
// CHECK: llvm.call @ddprt_shard_sgd(

ddp.mesh @world(dp_replicate = 2, dp_shard = 2)
ddp.param @w : tensor<8xf32>

func.func @step(%g: tensor<8xf32>, %x: tensor<4x4xf32>) {
  %s, %t0 = ddp.reduce_scatter sum %g over @world[dp_shard] async : tensor<8xf32> -> tensor<4xf32>
  %r, %t1 = ddp.all_reduce sum %s over @world[dp_replicate] async after %t0 : tensor<4xf32>
  %y = ddp.gemm fwd %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  ddp.wait %t1
  %n = ddp.shard_sgd %r params [@w] offsets [0] over @world[dp_shard] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Issued after two tokens, one of them a join: ddprt_comm_wait on each, and
// a join of the three handles (the stack array holds the longest list).

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[THREE:.*]] = llvm.mlir.constant(3 : i32)
// CHECK-DAG: %[[SLOTS:.*]] = llvm.mlir.constant(3 : i64)
// CHECK-DAG: %[[HANDLES:.*]] = llvm.alloca %[[SLOTS]] x i64 : (i64) -> !llvm.ptr
// CHECK: llvm.call @ddprt_join(%{{.*}}, %[[HANDLES]], %{{.*}}, %[[J:[0-9]+]])
// CHECK: llvm.call @ddprt_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[X:[0-9]+]])
// CHECK: %[[HJ:.*]] = llvm.load %[[J]] : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @ddprt_comm_wait(%{{.*}}, %[[HJ]])
// CHECK: %[[HX:.*]] = llvm.load %[[X]] : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @ddprt_comm_wait(%{{.*}}, %[[HX]])
// CHECK: llvm.call @ddprt_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[R:[0-9]+]])
// CHECK: llvm.call @ddprt_join(%{{.*}}, %[[HANDLES]], %[[THREE]], %[[R]])
// CHECK: %[[HR:.*]] = llvm.load %[[R]] : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @ddprt_wait(%{{.*}}, %[[HR]])

ddp.mesh @world(dp = 2)

func.func @step(%g: tensor<8xf32>, %h: tensor<8xf32>) {
  %s0, %t0 = ddp.reduce_scatter sum %g over @world[dp] async : tensor<8xf32> -> tensor<4xf32>
  %s1, %t1 = ddp.reduce_scatter sum %h over @world[dp] async : tensor<8xf32> -> tensor<4xf32>
  %j = ddp.join %t0, %t1
  %x, %t2 = ddp.all_reduce sum %h over @world[dp] async : tensor<8xf32>
  %r, %t3 = ddp.all_reduce sum %s0 over @world[dp] async after %j, %t2 : tensor<4xf32>
  ddp.wait %t3
  return
}

// -----

// A NaN/Inf check names the bucket and where each parameter's gradient lies
// in it, so that the runtime's message (which gives the first bad element)
// says whose gradient is not finite.

// CHECK-DAG: llvm.mlir.global internal constant @[[BUCKETNAME:.*]]("bucket 3\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[EXTENTS:.*]]("b [0, 6), a [8, 12)\00")
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: %[[NAME:.*]] = llvm.mlir.addressof @[[BUCKETNAME]]
// CHECK: %[[PARAMS:.*]] = llvm.mlir.addressof @[[EXTENTS]]
// CHECK: llvm.call @ddprt_check_finite(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NAME]], %[[PARAMS]])
// CHECK: llvm.call @ddprt_all_reduce(

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<2x2xf32>
ddp.param @b : tensor<6xf32>

func.func @step(%ga: tensor<2x2xf32>, %gb: tensor<6xf32>) {
  %pack = ddp.bucket_pack %gb, %ga offsets [0, 8] : tensor<6xf32>, tensor<2x2xf32> -> tensor<12xf32>
  ddp.check_finite %pack bucket 3 params [@b, @a] offsets [0, 8] : tensor<12xf32>
  %r = ddp.all_reduce avg %pack over @world[dp] : tensor<12xf32>
  %rb, %ra = ddp.bucket_unpack %r offsets [0, 8] : tensor<12xf32> -> tensor<6xf32>, tensor<2x2xf32>
  ddp.sgd @a, %ra lr 1.0 : tensor<2x2xf32>
  ddp.sgd @b, %rb lr 1.0 : tensor<6xf32>
  return
}

// -----

// What the step returns (the importer returns the losses) is computed into
// its buffer; the step returns success.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[OK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.call @ddprt_compute(
// CHECK: ^bb1:
// CHECK-NEXT: llvm.return %[[OK]] : i32

ddp.mesh @world(dp = 1)

func.func @step(%x: tensor<4xf32>) -> tensor<1xf32> {
  %loss = ddp.compute "loss"(%x) flops 4.0 bytes 20.0 : (tensor<4xf32>) -> tensor<1xf32>
  return %loss : tensor<1xf32>
}

// -----

// grad-reduce-in-fp32: the cast of a bf16 gradient to f32 and the
// accumulation over microbatches write straight into the f32 bucket.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: %[[BUCKETSLOT:.*]] = llvm.getelementptr %{{.*}}[0, 3] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<5 x ptr>
// CHECK: %[[BUCKET:.*]] = llvm.load %[[BUCKETSLOT]]
// CHECK: llvm.call @ddprt_accumulate(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BUCKET]])
// CHECK: %[[SLICE:.*]] = llvm.getelementptr %[[BUCKET]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_cast(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SLICE]], %{{.*}})
// CHECK-NOT: llvm.call @ddprt_copy
// CHECK: llvm.call @ddprt_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BUCKET]],

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<2x2xbf16>

func.func @step(%a0: tensor<4xf32>, %a1: tensor<4xf32>, %b: tensor<2x2xbf16>) {
  %acc = ddp.accumulate %a0, %a1 : tensor<4xf32>
  %ga = ddp.grad_ready @a, %acc : tensor<4xf32>
  %gb = ddp.grad_ready @b, %b : tensor<2x2xbf16>
  %cb = ddp.cast %gb : tensor<2x2xbf16> to tensor<2x2xf32>
  %pack = ddp.bucket_pack %ga, %cb offsets [0, 4] : tensor<4xf32>, tensor<2x2xf32> -> tensor<8xf32>
  %r = ddp.all_reduce avg %pack over @world[dp] : tensor<8xf32>
  %ra, %rb = ddp.bucket_unpack %r offsets [0, 4] : tensor<8xf32> -> tensor<4xf32>, tensor<2x2xf32>
  %rb16 = ddp.cast %rb : tensor<2x2xf32> to tensor<2x2xbf16>
  ddp.sgd @a, %ra lr 1.0 : tensor<4xf32>
  ddp.sgd @b, %rb16 lr 1.0 : tensor<2x2xbf16>
  return
}

// -----

// Composition: besides ddp ops a step may hold scalar arith and calls of
// declared functions (here host hooks). The pass lowers them in the same
// conversion with the upstream func and arith patterns, in place among the
// runtime calls.

// CHECK: llvm.func @host_clock() -> i64
// CHECK: llvm.func @host_marker(i64)
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: %[[T0:.*]] = llvm.call @host_clock() : () -> i64
// CHECK: llvm.call @ddprt_all_reduce(
// CHECK: %[[T1:.*]] = llvm.call @host_clock() : () -> i64
// CHECK: %[[ELAPSED:.*]] = llvm.sub %[[T1]], %[[T0]] : i64
// CHECK: llvm.call @host_marker(%[[ELAPSED]]) : (i64) -> ()
// CHECK: llvm.call @ddprt_sgd(
// CHECK-NOT: func.
// CHECK-NOT: arith.

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>

func.func private @host_clock() -> i64
func.func private @host_marker(i64)

func.func @step(%x: tensor<4xf32>) {
  %t0 = func.call @host_clock() : () -> i64
  %r = ddp.all_reduce avg %x over @world[dp] : tensor<4xf32>
  %t1 = func.call @host_clock() : () -> i64
  %elapsed = arith.subi %t1, %t0 : i64
  func.call @host_marker(%elapsed) : (i64) -> ()
  ddp.sgd @w, %r lr 1.0 : tensor<4xf32>
  return
}

// -----

// The distributed optimizer: the shard optimizer calls the runtime once per
// parameter of the bucket, with the group, the parameter's offset in the
// bucket and the shard's size. The parameters are stored in the gathered
// bucket (buffer #1: @a at byte 0, @b at byte 16, 8 bf16 elements on), so
// the setup registers them at those slices of it and set_params copies
// nothing.

// CHECK: llvm.mlir.global internal constant @__ddp_arena_numels(dense<[16, 16, 8, 8]>
// CHECK: llvm.mlir.global internal constant @__ddp_param_buffers(dense<1> : tensor<2xi64>)
// CHECK: llvm.mlir.global internal constant @__ddp_param_byte_offsets(dense<[0, 16]> : tensor<2xi64>)
// CHECK-LABEL: llvm.func @ddp_program_setup
// CHECK: llvm.call @ddprt_alloc(
// CHECK: llvm.store
// CHECK: ^[[HEADER:bb[0-9]+]](%[[I:.*]]: i64):
// CHECK: %[[BUFFERS:.*]] = llvm.mlir.addressof @__ddp_param_buffers
// CHECK: %[[BUFFERSLOT:.*]] = llvm.getelementptr %[[BUFFERS]][0, %[[I]]]
// CHECK: %[[BUFFER:.*]] = llvm.load %[[BUFFERSLOT]] : !llvm.ptr -> i64
// CHECK: %[[OWN:.*]] = llvm.icmp "slt" %[[BUFFER]], %{{.*}} : i64
// CHECK: %[[INDEX:.*]] = llvm.select %[[OWN]], %{{.*}}, %[[BUFFER]] : i1, i64
// CHECK: %[[DATA:.*]] = llvm.mlir.addressof @__ddp_buffers
// CHECK: %[[DATASLOT:.*]] = llvm.getelementptr %[[DATA]][0, %[[INDEX]]]
// CHECK: %[[BASE:.*]] = llvm.load %[[DATASLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[OFFSETS:.*]] = llvm.mlir.addressof @__ddp_param_byte_offsets
// CHECK: %[[OFFSETSLOT:.*]] = llvm.getelementptr %[[OFFSETS]][0, %[[I]]]
// CHECK: %[[OFFSET:.*]] = llvm.load %[[OFFSETSLOT]] : !llvm.ptr -> i64
// CHECK: %[[SLICE:.*]] = llvm.getelementptr %[[BASE]][%[[OFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[STORAGE:.*]] = llvm.select %[[OWN]], %[[NULL]], %[[SLICE]] : i1, !llvm.ptr
// CHECK: llvm.call @ddprt_param_register_in(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[STORAGE]], %{{.*}})
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: llvm.call @ddprt_reduce_scatter(%{{[a-z0-9]+}}, %[[GROUP:[0-9]+]],
// CHECK: llvm.call @ddprt_shard_adam(%{{[a-z0-9]+}}, %[[GROUP]], %{{[0-9]+}}, %[[OFFSET0:[0-9]+]], %{{[0-9]+}}, %[[GRAD:[0-9]+]], %[[SHARD:[0-9]+]], %[[RESULT:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (!llvm.ptr, i32, i32, i64, i32, !llvm.ptr, i64, !llvm.ptr, f64, f64, f64, f64) -> i32
// CHECK: llvm.call @ddprt_shard_adam(%{{[a-z0-9]+}}, %[[GROUP]], %{{[0-9]+}}, %[[OFFSET1:[0-9]+]], %{{[0-9]+}}, %[[GRAD]], %[[SHARD]], %[[RESULT]],
// CHECK: llvm.call @ddprt_all_gather(%{{[a-z0-9]+}}, %[[GROUP]], %{{[0-9]+}}, %{{[0-9]+}}, %[[RESULT]], %{{[0-9]+}}, %{{[0-9]+}})
// CHECK-NOT: llvm.call @ddprt_copy
// CHECK: llvm.return

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xbf16>
ddp.param @b : tensor<2x2xbf16>

func.func @step(%bucket: tensor<16xf32>) {
  %g = ddp.reduce_scatter avg %bucket over @world[dp] : tensor<16xf32> -> tensor<8xf32>
  %c = ddp.cast %g : tensor<8xf32> to tensor<8xbf16>
  %p = ddp.shard_adam %c params [@a, @b] offsets [0, 8] over @world[dp] lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<8xbf16> -> tensor<8xbf16>
  %w = ddp.all_gather %p over @world[dp] : tensor<8xbf16> -> tensor<16xbf16>
  ddp.set_params %w params [@a, @b] offsets [0, 8] : tensor<16xbf16>
  return
}

// -----

// The distributed optimizer in place. The reduce-scatter's input (the scaled
// bucket) is not read after it, so its result is this rank's shard of that
// buffer, at byte (group rank x 16); the shard optimizer's result, read by
// the all-gather only, is this rank's shard of the gathered buffer. Neither
// gets a buffer: three in all (the input, the scaled bucket, the gathered
// bucket). The group rank is asked for once, at the start of the step.

// CHECK-LABEL: llvm.mlir.global internal @__ddp_buffers() {{.*}} : !llvm.array<3 x ptr>
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[STRIDE:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK: llvm.call @ddprt_group_info(%{{[a-z0-9]+}}, %[[GROUP:[0-9]+]], %[[RANK_SLOT:[0-9]+]], %{{[0-9]+}})
// CHECK: %[[RANK32:.*]] = llvm.load %[[RANK_SLOT]] : !llvm.ptr -> i32
// CHECK: %[[RANK:.*]] = llvm.sext %[[RANK32]] : i32 to i64
// CHECK-NOT: llvm.call @ddprt_group_info
// CHECK: llvm.call @ddprt_scale(%{{[a-z0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[BUCKET:[0-9]+]])
// CHECK: %[[GRAD_OFFSET:.*]] = llvm.mul %[[RANK]], %[[STRIDE]] : i64
// CHECK: %[[GRAD_SHARD:.*]] = llvm.getelementptr %[[BUCKET]][%[[GRAD_OFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_reduce_scatter(%{{[a-z0-9]+}}, %[[GROUP]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[BUCKET]], %[[GRAD_SHARD]], %{{[0-9]+}})
// CHECK: %[[GATHERED:.*]] = llvm.load %{{[0-9]+}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[PARAM_OFFSET:.*]] = llvm.mul %[[RANK]], %[[STRIDE]] : i64
// CHECK: %[[PARAM_SHARD:.*]] = llvm.getelementptr %[[GATHERED]][%[[PARAM_OFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_shard_sgd(%{{[a-z0-9]+}}, %[[GROUP]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[GRAD_SHARD]], %{{[0-9]+}}, %[[PARAM_SHARD]],
// CHECK: llvm.call @ddprt_shard_sgd(
// CHECK: llvm.call @ddprt_all_gather(%{{[a-z0-9]+}}, %[[GROUP]], %{{[0-9]+}}, %{{[0-9]+}}, %[[PARAM_SHARD]], %[[GATHERED]], %{{[0-9]+}})

ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<2x4xf32>

func.func @step(%x: tensor<16xf32>) {
  %bucket = ddp.scale %x by 2.5e-01 : tensor<16xf32>
  %g, %t = ddp.reduce_scatter sum %bucket over @world[dp] async : tensor<16xf32> -> tensor<4xf32>
  ddp.wait %t
  %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<16xf32>
  ddp.set_params %w params [@a, @b] offsets [0, 8] : tensor<16xf32>
  return
}

// -----

// Not in place: the reduce-scatter's input is read after it (by the scale),
// and the shard optimizer's result by an op other than the all-gather; both
// results get buffers of their own, and the step asks for no group rank.

// CHECK-LABEL: llvm.mlir.global internal @__ddp_buffers() {{.*}} : !llvm.array<6 x ptr>
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-NOT: llvm.call @ddprt_group_info
// CHECK-NOT: llvm.mul
// CHECK: llvm.return

ddp.mesh @world(dp = 4)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<2x4xf32>

func.func @step(%x: tensor<16xf32>) {
  %bucket = ddp.scale %x by 2.5e-01 : tensor<16xf32>
  %g = ddp.reduce_scatter sum %bucket over @world[dp] : tensor<16xf32> -> tensor<4xf32>
  %later = ddp.scale %bucket by 2.0 : tensor<16xf32>
  %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<16xf32>
  ddp.set_param_shard %p params [@a, @b] offsets [0, 8] over @world[dp] : tensor<4xf32>
  return
}

// -----

// overlap-param-gather: get_param_shard and set_param_shard call the runtime
// once per parameter of the bucket, with the group, the parameter's offset,
// the shard's size (8 elements) and the shard; the gathered bucket is waited
// before the parameter's first read. The parameters are stored in the
// gathered bucket, whose rank shard both shards are (the runtime sees that
// and copies nothing), and set_params copies nothing.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[EIGHT:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-DAG: %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[SHARD:.*]] = llvm.getelementptr %[[GATHERED:[0-9]+]][%{{[0-9]+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_get_param_shard(%{{[a-z0-9]+}}, %[[GROUP:[0-9]+]], %[[A:[0-9]+]], %[[ZERO]], %[[EIGHT]], %[[SHARD]]) : (!llvm.ptr, i32, i32, i64, i64, !llvm.ptr) -> i32
// CHECK: llvm.call @ddprt_get_param_shard(%{{[a-z0-9]+}}, %[[GROUP]], %[[B:[0-9]+]], %[[EIGHT]], %[[EIGHT]], %[[SHARD]])
// CHECK: llvm.call @ddprt_all_gather(%{{[a-z0-9]+}}, %[[GROUP]], %{{[0-9]+}}, %[[EIGHT]], %[[SHARD]], %[[GATHERED]],
// CHECK: llvm.call @ddprt_wait
// CHECK-NOT: llvm.call @ddprt_copy
// CHECK: %[[RESULT:.*]] = llvm.getelementptr %[[GATHERED]][%{{[0-9]+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_shard_sgd(%{{[a-z0-9]+}}, %[[GROUP]], %[[A]], %[[ZERO]], %{{[0-9]+}}, %{{[0-9]+}}, %[[EIGHT]], %[[RESULT]],
// CHECK: llvm.call @ddprt_shard_sgd
// CHECK: llvm.call @ddprt_set_param_shard(%{{[a-z0-9]+}}, %[[GROUP]], %[[A]], %[[ZERO]], %[[EIGHT]], %[[RESULT]]) : (!llvm.ptr, i32, i32, i64, i64, !llvm.ptr) -> i32
// CHECK: llvm.call @ddprt_set_param_shard(%{{[a-z0-9]+}}, %[[GROUP]], %[[B]], %[[EIGHT]], %[[EIGHT]], %[[RESULT]])
// CHECK-NOT: llvm.call @ddprt_set_param_shard
// CHECK: llvm.return

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<2x2xf32>

func.func @step(%g: tensor<8xf32>) {
  %s = ddp.get_param_shard params [@a, @b] offsets [0, 8] over @world[dp] : tensor<8xf32>
  %w, %t = ddp.all_gather %s over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  ddp.wait %t
  ddp.set_params %w params [@a, @b] offsets [0, 8] : tensor<16xf32>
  %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<8xf32> -> tensor<8xf32>
  ddp.set_param_shard %p params [@a, @b] offsets [0, 8] over @world[dp] : tensor<8xf32>
  return
}

// -----

// FSDP (rule 10): @a and @b are named only by their shards of one bucket
// (ddp.get_param_shard, the shard optimizer, ddp.set_param_shard), so the
// setup registers them with that layout and the runtime keeps this rank's
// elements only; @c is also read whole (ddp.get_param) and stays whole.
// The setup's loop branches on the layout table: group index -1 is whole.

// CHECK-DAG: llvm.mlir.global internal constant @__ddp_param_shard_groups(dense<[0, 0, -1]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @__ddp_param_shard_offsets(dense<[0, 8, 0]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @__ddp_param_shard_numels(dense<[8, 8, 0]> : tensor<3xi64>)
// CHECK-LABEL: llvm.func @ddp_program_setup
// CHECK: %[[SGROUPS:.*]] = llvm.mlir.addressof @__ddp_param_shard_groups
// CHECK: %[[SGROUPSLOT:.*]] = llvm.getelementptr %[[SGROUPS]][0, %[[I:.*]]]
// CHECK: %[[SGROUP:.*]] = llvm.load %[[SGROUPSLOT]] : !llvm.ptr -> i64
// CHECK: %[[SHARDED:.*]] = llvm.icmp "sge" %[[SGROUP]], %{{.*}} : i64
// CHECK: llvm.cond_br %[[SHARDED]], ^[[SHARD:bb[0-9]+]], ^[[WHOLE:bb[0-9]+]]
// CHECK: ^[[SHARD]]:
// CHECK: %[[GROUPS:.*]] = llvm.mlir.addressof @__ddp_groups
// CHECK: %[[GROUPSLOT:.*]] = llvm.getelementptr %[[GROUPS]][0, %[[SGROUP]]]
// CHECK: %[[GROUP:.*]] = llvm.load %[[GROUPSLOT]] : !llvm.ptr -> i32
// CHECK: llvm.call @ddprt_param_register_shard(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[GROUP]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: llvm.call @ddprt_param_data
// CHECK: ^[[WHOLE]]:
// CHECK: llvm.call @ddprt_param_register_in(
// CHECK: llvm.call @ddprt_param_data(
// CHECK-LABEL: llvm.func @ddp_program_teardown

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<2x2xf32>
ddp.param @c : tensor<4xf32>

func.func @step(%g: tensor<8xf32>, %h: tensor<2xf32>) -> tensor<4xf32> {
  %s = ddp.get_param_shard params [@a, @b] offsets [0, 8] over @world[dp] : tensor<8xf32>
  %w, %t = ddp.all_gather %s over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
  ddp.wait %t
  %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 8] over @world[dp] lr 0.1 : tensor<8xf32> -> tensor<8xf32>
  ddp.set_param_shard %p params [@a, @b] offsets [0, 8] over @world[dp] : tensor<8xf32>
  %cs = ddp.get_param_shard params [@c] offsets [0] over @world[dp] : tensor<2xf32>
  %c = ddp.get_param @c : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// Row chunks (ddp-overlap-tp-comm). An interleaved chunk is a view of one row
// range per block, which the GEMM reading it multiplies block by block:
// chunk 1 of 2 of 2 blocks of 8 rows (64 bytes each) is rows 4-7 (byte 256)
// and rows 12-15 (512 bytes further), whose products are rows 0-3 and 4-7
// of the result (128 bytes further).
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: %[[LHS0:.*]] = llvm.getelementptr %[[X:.*]][256] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_gemm({{.*}}, %[[LHS0]], %[[W:[0-9]+]], %[[Y:[0-9]+]], %{{[0-9]+}})
// CHECK: %[[LHS1:.*]] = llvm.getelementptr %[[LHS0]][512] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[Y1:.*]] = llvm.getelementptr %[[Y]][128] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.call @ddprt_gemm({{.*}}, %[[LHS1]], %[[W]], %[[Y1]], %{{[0-9]+}})
// CHECK-NOT: @ddprt_gemm
// An interleaved ddp.concat of operands no GEMM produced in place copies
// each operand's blocks (2 rows, 64 bytes) to their places: %a's to bytes 0
// and 128, %b's to 64 and 192.
// CHECK: llvm.call @ddprt_copy(%{{[a-z0-9]+}}, %[[Z:[0-9]+]], %[[A:[0-9]+]], %[[BLOCK:[0-9]+]])
// CHECK: %[[Z1:.*]] = llvm.getelementptr %[[Z]][128]
// CHECK: %[[A1:.*]] = llvm.getelementptr %[[A]][64]
// CHECK: llvm.call @ddprt_copy(%{{[a-z0-9]+}}, %[[Z1]], %[[A1]], %[[BLOCK]])
// CHECK: %[[Z2:.*]] = llvm.getelementptr %[[Z]][64]
// CHECK: llvm.call @ddprt_copy(%{{[a-z0-9]+}}, %[[Z2]], %[[B:[0-9]+]], %[[BLOCK]])
// CHECK: %[[Z3:.*]] = llvm.getelementptr %[[Z]][192]
// CHECK: %[[B1:.*]] = llvm.getelementptr %[[B]][64]
// CHECK: llvm.call @ddprt_copy(%{{[a-z0-9]+}}, %[[Z3]], %[[B1]], %[[BLOCK]])
// CHECK: llvm.return

ddp.mesh @world(tp = 2)
ddp.param @w : tensor<8x16xf32>

func.func @step(%x: tensor<16x16xf32>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %w = ddp.get_param @w : tensor<8x16xf32>
  %c1 = ddp.chunk %x[1 of 2] interleave 2 : tensor<16x16xf32> -> tensor<8x16xf32>
  %y = ddp.gemm fwd %c1, %w transposed : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
  %z = ddp.concat %a, %b interleave 2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  return %y, %z : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// The GEMM chunks of a pipelined all-gather are produced in place in their
// interleaved ddp.concat, block by block, with no copy: %y0's blocks of 4
// rows (128 bytes; 256 bytes of a 16-column lhs) at bytes 0, 256, 512, 768
// of the result, %y1's at 128, 384, 640, 896.
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: llvm.call @ddprt_gemm({{.*}}, %[[G0:[0-9]+]], %[[W:[0-9]+]], %[[Y:[0-9]+]], %{{[0-9]+}})
// CHECK-COUNT-3: llvm.call @ddprt_gemm({{.*}}, %{{[0-9]+}}, %[[W]], %{{[0-9]+}}, %{{[0-9]+}})
// CHECK: %[[Y1:.*]] = llvm.getelementptr %[[Y]][128]
// CHECK: llvm.call @ddprt_gemm({{.*}}, %{{[0-9]+}}, %[[W]], %[[Y1]], %{{[0-9]+}})
// CHECK: %[[Y1B3:.*]] = llvm.getelementptr %[[Y1]][768]
// CHECK-NOT: @ddprt_copy
// CHECK: llvm.return

ddp.mesh @world(tp = 4)
ddp.param @w : tensor<8x16xf32>

func.func @step(%g0: tensor<16x16xf32>, %g1: tensor<16x16xf32>) -> tensor<32x8xf32> {
  %w = ddp.get_param @w : tensor<8x16xf32>
  %y0 = ddp.gemm fwd %g0, %w transposed : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
  %y1 = ddp.gemm fwd %g1, %w transposed : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<16x8xf32>
  %y = ddp.concat %y0, %y1 interleave 4 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}

// -----

// A GEMM with a transposed lhs cannot write an interleaved block of rows in
// one call: it runs whole and the concat copies its blocks.
// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK: llvm.call @ddprt_gemm(
// CHECK-NOT: llvm.call @ddprt_gemm(
// CHECK-COUNT-4: llvm.call @ddprt_copy(
// CHECK: llvm.return

ddp.mesh @world(tp = 2)

func.func @step(%x: tensor<8x4xf32>, %dy: tensor<8x3xf32>, %b: tensor<4x3xf32>) -> tensor<8x3xf32> {
  %p = ddp.gemm wgrad %x transposed, %dy : tensor<8x4xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %z = ddp.concat %p, %b interleave 2 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  return %z : tensor<8x3xf32>
}

// -----

// A routing kernel calls ddprt_route with its DDPRT_ROUTE_* (COMBINE = 3)
// and its params in a stack array of i64.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[COMBINE:.*]] = llvm.mlir.constant(3 : i32)
// CHECK-DAG: %[[TOPK:.*]] = llvm.mlir.constant(2 : i64)
// CHECK-DAG: %[[NPARAMS:.*]] = llvm.mlir.constant(1 : i32)
// CHECK-DAG: %[[PARAMS:.*]] = llvm.alloca %{{.*}} x i64
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[PARAMS]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.store %[[TOPK]], %[[P0]] : i64, !llvm.ptr
// CHECK: llvm.call @ddprt_route(%{{.*}}, %[[COMBINE]], %{{.*}}, %[[PARAMS]], %[[NPARAMS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})

ddp.mesh @world(dp = 1)

func.func @step(%rows: tensor<6x4xf32>, %slots: tensor<4xf32>) {
  %c = ddp.compute "moe_unpermute"(%rows, %slots) routing combine params [2] flops 0.0 bytes 1.0 : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// The count kernel is DDPRT_ROUTE_COUNT = 6, with its capacity.

// CHECK-LABEL: llvm.func @ddp_program_step
// CHECK-DAG: %[[COUNT:.*]] = llvm.mlir.constant(6 : i32)
// CHECK-DAG: %[[CAPACITY:.*]] = llvm.mlir.constant(3 : i64)
// CHECK: llvm.store %[[CAPACITY]], %{{.*}} : i64, !llvm.ptr
// CHECK: llvm.call @ddprt_route(%{{.*}}, %[[COUNT]], %{{.*}})

ddp.mesh @world(dp = 1)

func.func @step(%rows: tensor<12xf32>) {
  %c = ddp.compute "moe_count"(%rows) routing count params [3] flops 0.0 bytes 1.0 : (tensor<12xf32>) -> tensor<4xf32>
  return
}

// -----

// Buffers whose values are never live at the same time share one arena
// (docs/Lowering.md, Storage, rule 9). Positions: get_param 0, y0 1, g0 2,
// y1 3, g1 4, acc 5, all_reduce 6 (in place), sgd 7. y0 lives [1, 2], g0
// [2, 5], y1 [3, 4], g1 [4, 5], acc [5, 7]: y1 takes y0's bytes at 0, g1
// cannot take y1's (both live at 4) and grows the arena to 768 bytes, acc
// takes y1's. The inputs, filled once by the setup, keep arenas of their own;
// so does the bucket whose padding (elements 64 to 79) must stay zero.
// Without reuse every buffer is an arena.

// CHECK: llvm.mlir.global internal constant @__ddp_arena_numels(dense<[192, 64, 64, 80]> : tensor<4xi64>)
// CHECK: llvm.mlir.global internal constant @__ddp_buffer_arenas(dense<[1, 2, 3, 0, 0, 0, 0, 0]> : tensor<8xi64>)
// CHECK: llvm.mlir.global internal constant @__ddp_buffer_byte_offsets(dense<[0, 0, 0, 0, 256, 0, 512, 0]> : tensor<8xi64>)
// NOREUSE: llvm.mlir.global internal constant @__ddp_arena_numels(dense<[64, 64, 80, 64, 64, 64, 64, 64]> : tensor<8xi64>)

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<8x8xf32>
ddp.param @v : tensor<8x8xf32>

func.func @step(%x0: tensor<8x8xf32>, %x1: tensor<8x8xf32>) {
  %w = ddp.get_param @w : tensor<8x8xf32>
  %y0 = ddp.gemm fwd %x0, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %g0 = ddp.gemm wgrad %x0 transposed, %y0 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %y1 = ddp.gemm fwd %x1, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %g1 = ddp.gemm wgrad %x1 transposed, %y1 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %acc = ddp.accumulate %g0, %g1 : tensor<8x8xf32>
  %r = ddp.all_reduce avg %acc over @world[dp] : tensor<8x8xf32>
  ddp.sgd @w, %r lr 1.0 : tensor<8x8xf32>
  %b = ddp.bucket_pack %x0 offsets [0] : tensor<8x8xf32> -> tensor<80xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<80xf32>
  %gv = ddp.bucket_unpack %rb offsets [0] : tensor<80xf32> -> tensor<8x8xf32>
  ddp.sgd @v, %gv lr 1.0 : tensor<8x8xf32>
  return
}
