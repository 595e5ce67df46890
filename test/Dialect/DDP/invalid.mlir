// RUN: ddp-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'ddp.mesh' op needs at least one axis}}
ddp.mesh @world()

// -----

// expected-error @+1 {{'ddp.mesh' op has 1 axis names but 2 sizes}}
"ddp.mesh"() <{sym_name = "world", axis_names = ["dp"], shape = array<i64: 2, 2>}> : () -> ()

// -----

// expected-error @+1 {{'ddp.mesh' op axis name 'd p' is not an identifier}}
ddp.mesh @world("d p" = 2)

// -----

// expected-error @+1 {{'ddp.mesh' op has axis 'dp' twice}}
ddp.mesh @world(dp = 2, dp = 4)

// -----

// expected-error @+1 {{'ddp.mesh' op axis 'tp' has size 0; sizes must be at least 1}}
ddp.mesh @world(dp = 2, tp = 0)

// -----

// Group sizes are products of axis sizes: the product must fit in int64.
// expected-error @+1 {{'ddp.mesh' op axis sizes 9223372036854775807x2 multiply to more ranks than fit in int64}}
ddp.mesh @world(dp = 9223372036854775807, tp = 2)
func.func @f(%g: tensor<4xf32>) {
  %r = ddp.all_reduce sum %g over @world[dp, tp] : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'ddp.mesh' op expects parent op 'builtin.module'}}
  ddp.mesh @world(dp = 2)
  return
}

// -----

// expected-error @+1 {{'ddp.param' op has negative layer -1}}
ddp.param @w layer -1 : tensor<4x4xf32>

// -----

// expected-error @+1 {{'ddp.param' op tp_dim 2 is not a dimension of 'tensor<4x4xf32>'}}
ddp.param @w tp_dim 2 : tensor<4x4xf32>

// -----

// expected-error @+1 {{'ddp.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor}}
ddp.param @w : tensor<?x4xf32>

// -----

// expected-error @+1 {{'ddp.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor}}
ddp.param @w : tensor<4xi32>

// -----

// Byte sizes of tensors must fit in int64: 2^63 - 1 elements of 4 bytes.
// expected-error @+1 {{'ddp.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of less than 2^63 bytes}}
ddp.param @w : tensor<9223372036854775807xf32>

// -----

// 2^62 elements of 4 bytes: 2^64 bytes, which wraps to 0 in int64.
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op result #0 must be statically shaped 1-D tensor of less than 2^63 bytes}}
  %b = ddp.bucket_pack %g offsets [0] : tensor<4xf32> -> tensor<4611686018427387904xf32>
  return
}

// -----

// Each dimension fits, the product does not.
func.func @f(%g: tensor<4294967296x4294967296xf16>) {
  // expected-error @+1 {{'ddp.scale' op operand #0 must be statically shaped tensor of less than 2^63 bytes}}
  %s = ddp.scale %g by 2.0 : tensor<4294967296x4294967296xf16>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f() {
  // expected-error @+1 {{'ddp.get_param' op refers to @world, which is not a ddp.param}}
  %w = ddp.get_param @world : tensor<4xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f() {
  // expected-error @+1 {{'ddp.get_param' op result type 'tensor<4xbf16>' differs from @w's type 'tensor<4xf32>'}}
  %w = ddp.get_param @w : tensor<4xbf16>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xbf16>) {
  // expected-error @+1 {{'ddp.gemm' op operands and result must share one element type, got 'f32', 'bf16' -> 'f32'}}
  %c = ddp.gemm fwd %a, %b : tensor<4x8xf32>, tensor<8x2xbf16> -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{'ddp.gemm' op contraction sizes differ: lhs has K = 4, rhs has K = 8}}
  %c = ddp.gemm wgrad %a transposed, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{'ddp.gemm' op result shape 4x8 is not M x N = 4x2}}
  %c = ddp.gemm dgrad %a, %b transposed : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{'ddp.gemm' op has negative layer -3}}
  %c = ddp.gemm fwd %a, %b layer -3 : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8x2xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{'ddp.gemm' op operand #0 must be statically shaped 2-D tensor}}
  %c = ddp.gemm fwd %a, %b : tensor<4x8x2xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.compute' op needs a non-empty kind}}
  %c = ddp.compute ""(%a) flops 1.0 bytes 1.0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.compute' op flops must be finite and non-negative, got -1}}
  %c = ddp.compute "softmax"(%a) flops -1.0 bytes 1.0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.compute' op bytes must be finite and non-negative, got inf}}
  %c = ddp.compute "softmax"(%a) flops 1.0 bytes 0x7FF0000000000000 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// The routing kernels' operands must have the shapes the runtime reads.

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.compute' op has params but no routing kernel to take them}}
  %c = ddp.compute "softmax"(%a) params [1] flops 1.0 bytes 1.0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%logits: tensor<16x4xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select: takes 2 params (topk, capacity), got 1}}
  %r:3 = ddp.compute "moe_route"(%logits) routing select params [2] flops 0.0 bytes 1.0 : (tensor<16x4xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
  return
}

// -----

func.func @f(%logits: tensor<16x4xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select: topk 5 is over the 4 experts}}
  %r:3 = ddp.compute "moe_route"(%logits) routing select params [5, 8] flops 0.0 bytes 1.0 : (tensor<16x4xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<80xf32>)
  return
}

// -----

func.func @f(%logits: tensor<16x4xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select: topk 33 is over 32, the most the runtime's kernels take}}
  %r:3 = ddp.compute "moe_route"(%logits) routing select params [33, 8] flops 0.0 bytes 1.0 : (tensor<16x4xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<80xf32>)
  return
}

// -----

func.func @f(%logits: tensor<16x4xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select: token slots must be tensor<32xf32>, got 'tensor<32xbf16>'}}
  %r:3 = ddp.compute "moe_route"(%logits) routing select params [2, 8] flops 0.0 bytes 1.0 : (tensor<16x4xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xbf16>)
  return
}

// -----

func.func @f(%x: tensor<16x8xbf16>, %rows: tensor<32xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing gather: the result must have 32 rows and 256 elements of its input's type, got 'tensor<32x8xf32>'}}
  %p = ddp.compute "moe_permute"(%x, %rows) routing gather flops 0.0 bytes 1.0 : (tensor<16x8xbf16>, tensor<32xf32>) -> tensor<32x8xf32>
  return
}

// -----

func.func @f(%x: tensor<32x8xf32>, %slots: tensor<32xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing combine: token slots must be tensor<48xf32>, got 'tensor<32xf32>'}}
  %p = ddp.compute "moe_unpermute"(%x, %slots) routing combine params [3] flops 0.0 bytes 1.0 : (tensor<32x8xf32>, tensor<32xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%x: tensor<24x8xf32>, %p: tensor<24xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing sort_chunks: input #0 must have ranks x 2 experts x capacity = 16 rows, got 'tensor<24x8xf32>'}}
  %s:4 = ddp.compute "moe_sort_chunks"(%x, %p) routing sort_chunks params [2, 4] flops 0.0 bytes 1.0 : (tensor<24x8xf32>, tensor<24xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%g: tensor<32xf32>, %logits: tensor<16x4xbf16>, %slots: tensor<32xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select_grad: the logits' gradient must be 'tensor<16x4xbf16>', got 'tensor<16x4xf32>'}}
  %r = ddp.compute "moe_route_grad"(%g, %logits, %slots) routing select_grad params [2] flops 0.0 bytes 1.0 : (tensor<32xf32>, tensor<16x4xbf16>, tensor<32xf32>) -> tensor<16x4xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xbf16>, %rows: tensor<32xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing gather: takes 2 inputs and 1 results, got 1 and 1}}
  %p = ddp.compute "moe_permute"(%x) routing gather flops 0.0 bytes 1.0 : (tensor<16x8xbf16>) -> tensor<32x8xbf16>
  return
}

// -----

func.func @f(%x: tensor<32x8xf32>, %slots: tensor<32xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing combine: params must be positive, got 0}}
  %p = ddp.compute "moe_unpermute"(%x, %slots) routing combine params [0] flops 0.0 bytes 1.0 : (tensor<32x8xf32>, tensor<32xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%logits: tensor<64xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select: logits must be tokens x experts, got 'tensor<64xf32>'}}
  %r:3 = ddp.compute "moe_route"(%logits) routing select params [2, 8] flops 0.0 bytes 1.0 : (tensor<64xf32>) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing sort_chunks: takes 2 positive params (ranks, capacity)}}
  %s:2 = ddp.compute "moe_sort_chunks"(%x) routing sort_chunks params [2] flops 0.0 bytes 1.0 : (tensor<16x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
  return
}

// -----

func.func @f(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing unsort_chunks: needs a whole number of per-expert tensors per result}}
  %r = ddp.compute "moe_unsort_chunks"() routing unsort_chunks params [1, 4] flops 0.0 bytes 1.0 : () -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<0x8xf32>, %rows: tensor<32xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing gather: takes no empty tensor, got 'tensor<0x8xf32>'}}
  %p = ddp.compute "moe_permute"(%x, %rows) routing gather flops 0.0 bytes 1.0 : (tensor<0x8xf32>, tensor<32xf32>) -> tensor<32x8xf32>
  return
}

// -----

func.func @f(%g: tensor<32xf32>, %logits: tensor<16x2xf32>, %slots: tensor<48xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select_grad: topk 3 is over the 2 experts}}
  %r = ddp.compute "moe_route_grad"(%g, %logits, %slots) routing select_grad params [3] flops 0.0 bytes 1.0 : (tensor<32xf32>, tensor<16x2xf32>, tensor<48xf32>) -> tensor<16x2xf32>
  return
}

// -----

func.func @f(%logits: tensor<16x4xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing select: experts x capacity must be from 1 to 2^24 - 1 (maps are f32 row indices), got 16777216}}
  %r:3 = ddp.compute "moe_route"(%logits) routing select params [2, 4194304] flops 0.0 bytes 1.0 : (tensor<16x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<32xf32>)
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.compute' op needs at least one result}}
  ddp.compute "softmax"(%a) flops 1.0 bytes 1.0 : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.compute' op has negative layer -1}}
  %c = ddp.compute "softmax"(%a) flops 1.0 bytes 1.0 layer -1 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'ddp.accumulate' op requires the same type for all operands and results}}
  %c = "ddp.accumulate"(%a, %b) : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.scale' op needs a finite factor}}
  %c = ddp.scale %a by 0x7FF8000000000000 : tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.cast' op may only change the element type, not the shape}}
  %c = ddp.cast %a : tensor<4xf32> to tensor<2x2xbf16>
  return
}

// -----

ddp.param @w : tensor<4x4xf32>
func.func @f(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{'ddp.grad_ready' op refers to @v, which is not a ddp.param}}
  %r = ddp.grad_ready @v, %g : tensor<4x4xf32>
  return
}

// -----

ddp.param @w : tensor<4x4xf32>
func.func @f(%g: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.grad_ready' op gradient has shape 16 but @w has shape 4x4}}
  %r = ddp.grad_ready @w, %g : tensor<16xf32>
  return
}

// -----

func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op refers to @world, which is not a ddp.mesh}}
  %r = ddp.all_reduce sum %g over @world[dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op needs at least one mesh axis for its group}}
  %r = ddp.all_reduce sum %g over @world[] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op uses axis 'tp', which mesh @world does not have}}
  %r = ddp.all_reduce sum %g over @world[tp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op names axis 'dp' twice}}
  %r = ddp.all_reduce sum %g over @world[dp, dp] : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op returns a token that is never waited}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op returns a token that is used 2 times; it must be waited exactly once}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  ddp.wait %t
  ddp.wait %t
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) -> !ddp.token {
  // expected-error @+1 {{'ddp.all_reduce' op returns a token consumed by 'func.return'; only ddp.wait, ddp.join and an asynchronous op issued after it may consume a token}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  return %t : !ddp.token
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  // expected-error @+1 {{'ddp.all_reduce' op is issued after 1 token(s) but is synchronous; only an 'async' collective can be issued after other asynchronous ops}}
  %s = "ddp.all_reduce"(%r, %t) <{reduction = #ddp<reduction sum>, mesh = @world, axes = ["dp"]}> : (tensor<4xf32>, !ddp.token) -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op returns a token that is used 2 times; it must be waited exactly once}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  %s, %u = ddp.all_reduce sum %r over @world[dp] async after %t : tensor<4xf32>
  ddp.wait %t
  ddp.wait %u
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  // expected-error @+1 {{'ddp.recv' op cannot be issued after other asynchronous ops: a send and its receive must be issued together, which holding one back can deadlock; wait for the ops first}}
  %v, %u = ddp.recv from -1 over @world[dp] async after %t : tensor<4xf32>
  ddp.wait %u
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  // expected-error @+1 {{'ddp.send' op cannot be issued after other asynchronous ops}}
  %u = ddp.send %g to 1 over @world[dp] async after %t : tensor<4xf32>
  ddp.wait %u
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>, %t: !ddp.token) {
  // expected-error @+1 {{'ddp.all_reduce' op is issued after a block argument; tokens must come from an asynchronous op or a ddp.join}}
  %r, %u = ddp.all_reduce sum %g over @world[dp] async after %t : tensor<4xf32>
  ddp.wait %u
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{use of value '%g' expects different type than prior uses: '!ddp.token' vs 'tensor<4xf32>'}}
  %r, %t = ddp.all_reduce sum %g over @world[dp] async after %g : tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.all_reduce' op failed to verify that all of {input, result} have same type}}
  %r = "ddp.all_reduce"(%g) <{reduction = #ddp<reduction sum>, mesh = @world, axes = ["dp"]}> : (tensor<4xf32>) -> tensor<4xbf16>
  return
}

// -----

ddp.mesh @world(dp = 4)
func.func @f(%g: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.reduce_scatter' op over a group of 4 ranks needs dimension 0 of 16 = 4 x 8}}
  %r = ddp.reduce_scatter sum %g over @world[dp] : tensor<16xf32> -> tensor<8xf32>
  return
}

// -----

// 2^61 x 8 ranks overflows int64 although each tensor fits.
ddp.mesh @world(dp = 8)
func.func @f(%g: tensor<16xf16>) {
  // expected-error @+1 {{'ddp.reduce_scatter' op over a group of 8 ranks needs dimension 0 of 16 = 8 x 2305843009213693952}}
  %r = ddp.reduce_scatter sum %g over @world[dp] : tensor<16xf16> -> tensor<2305843009213693952xf16>
  return
}

// -----

ddp.mesh @world(dp = 4)
func.func @f(%g: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.reduce_scatter' op changes the element type from 'f32' to 'bf16'}}
  %r = ddp.reduce_scatter sum %g over @world[dp] : tensor<16xf32> -> tensor<4xbf16>
  return
}

// -----

ddp.mesh @world(dp = 4)
func.func @f(%g: tensor<16x2xf32>) {
  // expected-error @+1 {{'ddp.reduce_scatter' op needs input and result of the same non-zero rank}}
  %r = ddp.reduce_scatter sum %g over @world[dp] : tensor<16x2xf32> -> tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 4)
func.func @f(%g: tensor<16x2xf32>) {
  // expected-error @+1 {{'ddp.reduce_scatter' op may only change dimension 0}}
  %r = ddp.reduce_scatter sum %g over @world[dp] : tensor<16x2xf32> -> tensor<4x4xf32>
  return
}

// -----

ddp.mesh @world(dp = 4, tp = 2)
func.func @f(%g: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.all_gather' op over a group of 8 ranks needs dimension 0 of 64 = 8 x 16}}
  %r = ddp.all_gather %g over @world[dp, tp] : tensor<16xf32> -> tensor<64xf32>
  return
}

// -----

ddp.mesh @world(dp = 1, tp = 2)
func.func @f(%g: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.send' op needs a group of at least 2 ranks}}
  ddp.send %g to 1 over @world[dp] : tensor<16xf32>
  return
}

// -----

ddp.mesh @world(dp = 1, tp = 2)
func.func @f() {
  // expected-error @+1 {{'ddp.recv' op offset -2 addresses the rank itself in a group of 2}}
  %r = ddp.recv from -2 over @world[tp] : tensor<16xf32>
  return
}

// -----

ddp.mesh @world(dp = 3, ep = 4)
func.func @f(%x: tensor<6x8xf32>) {
  // expected-error @+1 {{'ddp.all_to_all' op over a group of 4 ranks needs dimension 0 to be a multiple of 4 (one equal block per rank), got 6}}
  %a = ddp.all_to_all %x over @world[ep] : tensor<6x8xf32>
  return
}

// -----

ddp.mesh @world(ep = 2)
func.func @f(%x: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.all_to_all' op failed to verify that all of {input, result} have same type}}
  %a = "ddp.all_to_all"(%x) <{mesh = @world, axes = ["ep"]}> : (tensor<16xf32>) -> tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 3, ep = 4)
func.func @f(%x: tensor<16x8xf32>, %c: tensor<6xf32>) {
  // expected-error @+1 {{'ddp.all_to_all_v' op over a group of 4 ranks needs counts of 4 x sub-blocks f32 row counts, e.g. tensor<4xf32>, got 'tensor<6xf32>'}}
  %a = ddp.all_to_all_v %x counts %c, %c over @world[ep] : tensor<16x8xf32>, tensor<6xf32>
  return
}

// -----

ddp.mesh @world(ep = 2)
func.func @f(%x: tensor<16x8xf32>, %c: tensor<4xbf16>) {
  // expected-error @+1 {{'ddp.all_to_all_v' op over a group of 2 ranks needs counts of 2 x sub-blocks f32 row counts, e.g. tensor<2xf32>, got 'tensor<4xbf16>'}}
  %a = ddp.all_to_all_v %x counts %c, %c over @world[ep] : tensor<16x8xf32>, tensor<4xbf16>
  return
}

// -----

ddp.mesh @world(ep = 3)
func.func @f(%x: tensor<12x8xf32>, %c: tensor<9xf32>) {
  // expected-error @+1 {{'ddp.all_to_all_v' op needs dimension 0 to cut into 9 equal sub-blocks (3 ranks x 3), got 12}}
  %a = ddp.all_to_all_v %x counts %c, %c over @world[ep] : tensor<12x8xf32>, tensor<9xf32>
  return
}

// -----

ddp.mesh @world(ep = 2)
func.func @f(%x: tensor<16x8xf32>, %c: tensor<4xf32>, %d: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.all_to_all_v' op failed to verify that all of {sendCounts, recvCounts} have same type}}
  %a = "ddp.all_to_all_v"(%x, %c, %d) <{mesh = @world, axes = ["ep"]}> : (tensor<16x8xf32>, tensor<4xf32>, tensor<2xf32>) -> tensor<16x8xf32>
  return
}

// -----

ddp.mesh @world(ep = 2)
func.func @f(%x: tensor<4x0xf32>, %c: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.all_to_all_v' op moves rows of at least one element, got 'tensor<4x0xf32>'}}
  %a = ddp.all_to_all_v %x counts %c, %c over @world[ep] : tensor<4x0xf32>, tensor<2xf32>
  return
}

// -----

ddp.mesh @world(ep = 2)
func.func @f(%x: tensor<33554432xf32>, %c: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.all_to_all_v' op needs sub-blocks of fewer than 2^24 rows (its counts are f32), got 16777216}}
  %a = ddp.all_to_all_v %x counts %c, %c over @world[ep] : tensor<33554432xf32>, tensor<2xf32>
  return
}

// -----

func.func @f(%rows: tensor<30xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing count: the slot rows must be experts x capacity 4, got 'tensor<30xf32>'}}
  %c = ddp.compute "moe_count"(%rows) routing count params [4] flops 0.0 bytes 1.0 : (tensor<30xf32>) -> tensor<7xf32>
  return
}

// -----

func.func @f(%rows: tensor<32xf32>) {
  // expected-error @+1 {{'ddp.compute' op routing count: the counts must be tensor<8xf32>, got 'tensor<4xf32>'}}
  %c = ddp.compute "moe_count"(%rows) routing count params [4] flops 0.0 bytes 1.0 : (tensor<32xf32>) -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 3, tp = 2)
func.func @f(%x: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.broadcast' op root 3 is not a rank of its group of 3; group ranks are 0 to 2}}
  %b = ddp.broadcast %x root 3 over @world[dp] : tensor<16xf32>
  return
}

// -----

ddp.mesh @world(dp = 3)
func.func @f(%x: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.broadcast' op attribute 'root' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %b = ddp.broadcast %x root -1 over @world[dp] : tensor<16xf32>
  return
}

// -----

ddp.mesh @world(dp = 3)
func.func @f(%x: tensor<16xf32>) {
  // expected-error @+1 {{'ddp.broadcast' op failed to verify that all of {input, result} have same type}}
  %b = "ddp.broadcast"(%x) <{mesh = @world, axes = ["dp"], root = 0 : i64}> : (tensor<16xf32>) -> tensor<16xbf16>
  return
}

// -----

func.func @f(%t: !ddp.token) {
  // expected-error @+1 {{'ddp.wait' op waits on a block argument; tokens must come from an asynchronous op or a ddp.join}}
  ddp.wait %t
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'ddp.join' op needs at least one token}}
  %j = ddp.join
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%g: tensor<4xf32>) {
  %r, %t = ddp.all_reduce sum %g over @world[dp] async : tensor<4xf32>
  // expected-error @+1 {{'ddp.join' op returns a token that is never waited}}
  %j = ddp.join %t
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'ddp.bucket_pack' op needs at least one gradient}}
  %b = "ddp.bucket_pack"() <{offsets = array<i64>}> : () -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op has 2 gradients but 1 offsets; it needs one offset per gradient}}
  %c = ddp.bucket_pack %a, %b offsets [0] : tensor<4xf32>, tensor<2x2xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<2x2xbf16>) {
  // expected-error @+1 {{'ddp.bucket_pack' op gradient #1 has element type 'bf16' but the bucket has 'f32'}}
  %c = ddp.bucket_pack %a, %b offsets [0, 4] : tensor<4xf32>, tensor<2x2xbf16> -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op gradient #0 has negative offset -4}}
  %c = ddp.bucket_pack %a offsets [-4] : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op gradient #0 at offset 9223372036854775807 with 4 elements ends past the 8 elements of the bucket}}
  %c = ddp.bucket_pack %a offsets [9223372036854775807] : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op gradient #1 ends at element 9, past the 8 elements of the bucket}}
  %c = ddp.bucket_pack %a, %b offsets [0, 5] : tensor<4xf32>, tensor<2x2xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{'ddp.bucket_pack' op gradient #0 (elements [2, 6)) overlaps gradient #1 (elements [0, 4))}}
  %c = ddp.bucket_pack %a, %b offsets [2, 0] : tensor<4xf32>, tensor<2x2xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.bucket_unpack' op gradient #1 (elements [3, 7)) overlaps gradient #0 (elements [0, 4))}}
  %x, %y = ddp.bucket_unpack %b offsets [0, 3] : tensor<8xf32> -> tensor<4xf32>, tensor<2x2xf32>
  return
}

// -----

func.func @f(%b: tensor<2x4xf32>) {
  // expected-error @+1 {{'ddp.bucket_unpack' op operand #0 must be statically shaped 1-D tensor}}
  %x = ddp.bucket_unpack %b offsets [0] : tensor<2x4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.sgd' op needs a positive finite learning rate, got 0}}
  ddp.sgd @w, %g lr 0.0 : tensor<4xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{'ddp.sgd' op gradient has shape 2x2 but @w has shape 4}}
  ddp.sgd @w, %g lr 0.1 : tensor<2x2xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.adam' op beta2 must be in [0, 1), got 1}}
  ddp.adam @w, %g lr 1.0e-3 betas(0.9, 1.0) eps 1.0e-8 : tensor<4xf32>
  return
}

// -----

// A value is printed with every digit it needs, not rounded to a valid one.
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.adam' op beta1 must be in [0, 1), got 1.0000001}}
  ddp.adam @w, %g lr 1.0e-3 betas(1.0000001, 0.999) eps 1.0e-8 : tensor<4xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.adam' op eps must be positive and finite, got 0}}
  ddp.adam @w, %g lr 1.0e-3 betas(0.9, 0.999) eps 0.0 : tensor<4xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.adam' op needs a positive finite learning rate, got -0.001}}
  ddp.adam @w, %g lr -1.0e-3 betas(0.9, 0.999) eps 1.0e-8 : tensor<4xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.adam' op gradient has shape 2 but @w has shape 4}}
  ddp.adam @w, %g lr 1.0e-3 betas(0.9, 0.999) eps 1.0e-8 : tensor<2xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op needs at least one parameter}}
  ddp.check_finite %b bucket 0 params [] offsets [] : tensor<8xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op has 1 parameters but 2 offsets; it needs one offset per parameter}}
  ddp.check_finite %b bucket 0 params [@w] offsets [0, 4] : tensor<8xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op has negative bucket index -1}}
  ddp.check_finite %b bucket -1 params [@w] offsets [0] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op refers to @world, which is not a ddp.param}}
  ddp.check_finite %b bucket 0 params [@world] offsets [0] : tensor<8xf32>
  return
}

// -----

ddp.param @w : tensor<4xbf16>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op parameter @w has negative offset -1}}
  ddp.check_finite %b bucket 0 params [@w] offsets [-1] : tensor<8xf32>
  return
}

// -----

ddp.param @w : tensor<4xbf16>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op parameter @w at offset 9223372036854775807 with 4 elements ends past the 8 elements of the bucket}}
  ddp.check_finite %b bucket 0 params [@w] offsets [9223372036854775807] : tensor<8xf32>
  return
}

// -----

ddp.param @w : tensor<4xbf16>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op parameter @w ends at element 9, past the 8 elements of the bucket}}
  ddp.check_finite %b bucket 0 params [@w] offsets [5] : tensor<8xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
ddp.param @v : tensor<2x2xf32>
func.func @f(%b: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op parameter @v (elements [2, 6)) overlaps parameter @w (elements [0, 4))}}
  ddp.check_finite %b bucket 0 params [@w, @v] offsets [0, 2] : tensor<8xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
func.func @f(%b: tensor<2x4xf32>) {
  // expected-error @+1 {{'ddp.check_finite' op operand #0 must be statically shaped 1-D tensor}}
  ddp.check_finite %b bucket 0 params [@w] offsets [0] : tensor<2x4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.shard_sgd' op has 1 parameters but 2 offsets; it needs one offset per parameter}}
  %p = ddp.shard_sgd %g params [@w] offsets [0, 4] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.shard_sgd' op needs at least one parameter}}
  %p = ddp.shard_sgd %g params [] offsets [] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.shard_sgd' op has a gradient shard of 4 elements but a parameter shard of 2}}
  %p = ddp.shard_sgd %g params [@w] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.shard_sgd' op needs a positive finite learning rate, got -1}}
  %p = ddp.shard_sgd %g params [@w] offsets [0] over @world[dp] lr -1.0 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.shard_adam' op beta2 must be in [0, 1), got 1}}
  %p = ddp.shard_adam %g params [@w] offsets [0] over @world[dp] lr 0.1 betas(0.9, 1.0) eps 1.0e-08 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.shard_sgd' op uses axis 'tp', which mesh @world does not have}}
  %p = ddp.shard_sgd %g params [@w] offsets [0] over @world[tp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// The bucket is the shard times the group: 2 x 2 elements here, too small
// for a parameter at offset 2.
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%g: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.shard_sgd' op parameter @w ends at element 6, past the 4 elements of the bucket}}
  %p = ddp.shard_sgd %g params [@w] offsets [2] over @world[dp] lr 0.1 : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xbf16>
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.shard_sgd' op parameter @w has element type 'bf16' but the parameter values have 'f32'}}
  %p = ddp.shard_sgd %g params [@w] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

ddp.param @w : tensor<4xf32>
ddp.param @v : tensor<4xf32>
func.func @f(%values: tensor<6xf32>) {
  // expected-error @+1 {{'ddp.set_params' op parameter @v (elements [2, 6)) overlaps parameter @w (elements [0, 4))}}
  ddp.set_params %values params [@w, @v] offsets [0, 2] : tensor<6xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
func.func @f(%values: tensor<8xf32>) {
  // expected-error @+1 {{'ddp.set_params' op refers to @world, which is not a ddp.param}}
  ddp.set_params %values params [@world] offsets [0] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f() {
  // expected-error @+1 {{'ddp.get_param_shard' op has 1 parameters but 2 offsets; it needs one offset per parameter}}
  %s = ddp.get_param_shard params [@w] offsets [0, 4] over @world[dp] : tensor<2xf32>
  return
}

// -----

// The bucket is the shard times the group: 2 x 2 elements, too small for a
// parameter at offset 2.
ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f() {
  // expected-error @+1 {{'ddp.get_param_shard' op parameter @w ends at element 6, past the 4 elements of the bucket}}
  %s = ddp.get_param_shard params [@w] offsets [2] over @world[dp] : tensor<2xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xbf16>
func.func @f() {
  // expected-error @+1 {{'ddp.get_param_shard' op parameter @w has element type 'bf16' but the parameter values have 'f32'}}
  %s = ddp.get_param_shard params [@w] offsets [0] over @world[dp] : tensor<2xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%shard: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.set_param_shard' op needs at least one parameter}}
  ddp.set_param_shard %shard params [] offsets [] over @world[dp] : tensor<2xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%shard: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.set_param_shard' op uses axis 'tp', which mesh @world does not have}}
  ddp.set_param_shard %shard params [@w] offsets [0] over @world[tp] : tensor<2xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @w : tensor<4xf32>
func.func @f(%shard: tensor<2xf32>) {
  // expected-error @+1 {{'ddp.set_param_shard' op parameter @w ends at element 6, past the 4 elements of the bucket}}
  ddp.set_param_shard %shard params [@w] offsets [2] over @world[dp] : tensor<2xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op needs a chunk count of at least 1, got 0}}
  %c = ddp.chunk %x[0 of 0] : tensor<16x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op takes chunk 2 of 2; it must be in [0, 2)}}
  %c = ddp.chunk %x[2 of 2] : tensor<16x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op needs an interleave of at least 1, got 0}}
  %c = ddp.chunk %x[0 of 2] interleave 0 : tensor<16x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op changes the element type from 'f32' to 'bf16'}}
  %c = ddp.chunk %x[0 of 2] : tensor<16x8xf32> -> tensor<8x8xbf16>
  return
}

// -----

func.func @f(%x: tensor<12x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op splits 12 rows into 4 x 2 chunks; the rows must divide evenly}}
  %c = ddp.chunk %x[0 of 2] interleave 4 : tensor<12x8xf32> -> tensor<6x8xf32>
  return
}

// -----

// 2^62 x 4 wraps to 0 in int64: the check must not divide by it.
func.func @f(%x: tensor<32x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op splits 32 rows into 4 x 4611686018427387904 chunks; the rows must divide evenly}}
  %c = ddp.chunk %x[0 of 4611686018427387904] interleave 4 : tensor<32x8xf32> -> tensor<0x8xf32>
  return
}

// -----

// 2^63 - 1 x 2 wraps to -2, which divides the rows.
func.func @f(%x: tensor<32x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op splits 32 rows into 2 x 9223372036854775807 chunks; the rows must divide evenly}}
  %c = ddp.chunk %x[0 of 9223372036854775807] interleave 2 : tensor<32x8xf32> -> tensor<0x8xf32>
  return
}

// -----

func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{'ddp.chunk' op result must have shape 8x8, got 4x8}}
  %c = ddp.chunk %x[0 of 2] : tensor<16x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<8x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{'ddp.concat' op operand #1 of type 'tensor<8x4xf32>' does not stack into the result 'tensor<16x8xf32>': every dimension but the first and the element type must match}}
  %y = ddp.concat %a, %b : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%a: tensor<8x8xf32>) {
  // expected-error @+1 {{'ddp.concat' op stacks 16 rows into a result of 24}}
  %y = ddp.concat %a, %a : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<24x8xf32>
  return
}

// -----

// Three operands of 2^62 - 1 rows (the most an f16 tensor holds) stack more
// rows than int64 counts.
func.func @f(%a: tensor<4611686018427387903xf16>) {
  // expected-error @+1 {{'ddp.concat' op stacks more rows than fit in int64}}
  %y = ddp.concat %a, %a, %a : tensor<4611686018427387903xf16>, tensor<4611686018427387903xf16>, tensor<4611686018427387903xf16> -> tensor<4611686018427387903xf16>
  return
}

// -----

func.func @f(%a: tensor<8x8xf32>) {
  // expected-error @+1 {{'ddp.concat' op needs an interleave of at least 1, got 0}}
  %y = ddp.concat %a, %a interleave 0 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%a: tensor<6x8xf32>) {
  // expected-error @+1 {{'ddp.concat' op operand #0 has 6 rows, which do not split into 4 interleaved blocks}}
  %y = ddp.concat %a, %a interleave 4 : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<12x8xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'ddp.concat' op needs at least one operand}}
  %y = "ddp.concat"() <{interleave = 1 : i64}> : () -> tensor<16x8xf32>
  return
}
