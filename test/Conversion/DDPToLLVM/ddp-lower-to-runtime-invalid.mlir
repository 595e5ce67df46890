// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-lower-to-runtime -verify-diagnostics

// Every module the runtime cannot run gets an error at the offending op, and
// the IR is left as it was.

// expected-error @below {{cannot lower a module without a ddp.mesh: the runtime needs the mesh to start}}
module {
  ddp.param @v : tensor<4xf32>
  func.func @step(%x: tensor<4xf32>) {
    ddp.sgd @v, %x lr 1.0 : tensor<4xf32>
    return
  }
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @below {{cannot lower a module with a second mesh; the runtime runs one mesh, here @world}}
ddp.mesh @other(dp = 2)

func.func @step() {
  return
}

// -----

// expected-error @below {{cannot lower a module without a step: it has no function with a body}}
module {
  ddp.mesh @world(dp = 2)
  func.func private @declaration(tensor<4xf32>)
}

// -----

ddp.mesh @world(dp = 2)

func.func @step() {
  return
}

// expected-error @below {{cannot lower a module with more than one function; the step is @step}}
func.func @helper() {
  return
}

// -----

ddp.mesh @world(dp = 2)

// expected-error @below {{cannot lower step @step: it has 2 blocks; the runtime runs straight-line steps only}}
func.func @step() {
  return
^unreachable:
  return
}

// -----

ddp.mesh @world(dp = 2)

// expected-error @below {{cannot lower step @step: argument #1 has type 'i32'; step inputs must be statically shaped tensors of f16, bf16, f32 or f64}}
func.func @step(%x: tensor<4xf32>, %n: i32) {
  return
}

// -----

ddp.mesh @world(dp = 2)

func.func @step(%x: tensor<4xf32>) {
  // expected-error @below {{'test.unknown' cannot be lowered to the runtime: only ddp ops may use the step's tensors and tokens}}
  %y = "test.unknown"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)

func.func @step() {
  // expected-error @below {{'test.region' cannot be lowered to the runtime: it has regions; the runtime runs straight-line steps only}}
  "test.region"() ({
    "test.terminator"() : () -> ()
  }) : () -> ()
  return
}

// -----

// An op of another dialect that touches no tensor is left to the
// conversion's patterns; one that none lowers fails the conversion at its
// location (ddp-lower-to-runtime-rollback.mlir: and leaves the IR as it was).

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>

func.func @step(%x: tensor<4xf32>) {
  %r = ddp.all_reduce avg %x over @world[dp] : tensor<4xf32>
  ddp.sgd @w, %r lr 1.0 : tensor<4xf32>
  // expected-error @below {{failed to legalize operation 'test.scalar'}}
  %n = "test.scalar"() : () -> i32
  return
}

// -----

ddp.mesh @world(dp = 2)

// expected-error @below {{cannot lower a module that declares @ddprt_gemm: the lowering defines it}}
func.func private @ddprt_gemm(i32) -> i32

func.func @step() {
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @below {{'test.metadata' cannot be lowered to the runtime; a module holds a mesh, parameters and a step}}
"test.metadata"() : () -> ()

func.func @step() {
  return
}

// -----

// Buffers that each fit, and add up to more bytes than int64 counts: two
// gradients of 2^61 bytes and their all-reduced results (the sum overflowed
// in the lowering's statistics: issue 25).
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<576460752303423488xf32>
ddp.param @b : tensor<576460752303423488xf32>
// expected-error @below {{the step's buffers (activations, gradients and buckets) add up to more than 2^63 - 1 bytes; no rank could allocate them}}
func.func @step(%ga: tensor<576460752303423488xf32>, %gb: tensor<576460752303423488xf32>) {
  %a = ddp.grad_ready @a, %ga : tensor<576460752303423488xf32>
  %b = ddp.grad_ready @b, %gb : tensor<576460752303423488xf32>
  %ra = ddp.all_reduce avg %a over @world[dp] : tensor<576460752303423488xf32>
  %rb = ddp.all_reduce avg %b over @world[dp] : tensor<576460752303423488xf32>
  ddp.sgd @a, %ra lr 0.5 : tensor<576460752303423488xf32>
  ddp.sgd @b, %rb lr 0.5 : tensor<576460752303423488xf32>
  return
}

// -----

// A step input the dialect does not bound: 2^61 f32 elements take 2^63
// bytes.
ddp.mesh @world(dp = 2)
// expected-error @below {{cannot lower step @step: argument #0 of type 'tensor<2305843009213693952xf32>' takes 2^63 bytes or more; no rank can hold it}}
func.func @step(%x: tensor<2305843009213693952xf32>) -> tensor<2305843009213693952xf32> {
  return %x : tensor<2305843009213693952xf32>
}

// -----

// Stage programs of a pipeline: the runtime runs one step on every rank.
ddp.mesh @world(pp = 2)
// expected-error @below {{cannot lower pipeline stage programs yet: the runtime runs one step function on every rank}}
func.func @step_stage0() attributes {ddp.pipeline_stage = 0} {
  return
}
func.func @step_stage1() attributes {ddp.pipeline_stage = 1} {
  return
}
