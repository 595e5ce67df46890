+// Running it again changes nothing.

// Each bucket is issued right after its last grad_ready, overlapping the
// GEMMs that follow; it is waited right before the first use of its result.
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<16xf32>
ddp.param @b : tensor<16xbf16>
ddp.param @c : tensor<32xf32>
ddp.param @d : tensor<32xf32>
func.func @two_buckets(%dy: tensor<8x8xf32>, %w: tensor<8x8xf32>, %ga: tensor<16xf32>, %gb: tensor<16xbf16>, %gc: tensor<32xf32>, %gd: tensor<32xf32>) {
  %d = ddp.grad_ready @d, %gd : tensor<32xf32>
  %x = ddp.gemm dgrad %dy, %w transposed : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %c = ddp.grad_ready @c, %gc : tensor<32xf32>
  %y = ddp.gemm dgrad %x, %w transposed : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %b = ddp.grad_ready @b, %gb : tensor<16xbf16>
  %a = ddp.grad_ready @a, %ga : tensor<16xf32>
  %p0 = ddp.bucket_pack %d, %c offsets [0, 32] {ddp.bucket = 0 : i64} : tensor<32xf32>, tensor<32xf32> -> tensor<64xf32>
  %s0 = ddp.scale %p0 by 0.5 {ddp.bucket = 0 : i64} : tensor<64xf32>
  %r0 = ddp.all_reduce sum %s0 over @world[dp] {ddp.bucket = 0 : i64} : tensor<64xf32>
  %u0:2 = ddp.bucket_unpack %r0 offsets [0, 32] {ddp.bucket = 0 : i64} : tensor<64xf32> -> tensor<32xf32>, tensor<32xf32>
  %cb = ddp.cast %b {ddp.bucket = 1 : i64} : tensor<16xbf16> to tensor<16xf32>
  %p1 = ddp.bucket_pack %cb, %a offsets [0, 16] {ddp.bucket = 1 : i64} : tensor<16xf32>, tensor<16xf32> -> tensor<32xf32>
  ddp.check_finite %p1 bucket 1 params [@b, @a] offsets [0, 16] {ddp.bucket = 1 : i64} : tensor<32xf32>
  %r1 = ddp.all_reduce avg %p1 over @world[dp] {ddp.bucket = 1 : i64} : tensor<32xf32>
  %u1:2 = ddp.bucket_unpack %r1 offsets [0, 16] {ddp.bucket = 1 : i64} : tensor<32xf32> -> tensor<16xf32>, tensor<16xf32>
  %bb = ddp.cast %u1#0 {ddp.bucket = 1 : i64} : tensor<16xf32> to tensor<16xbf16>
  %loss = ddp.compute "loss"(%y) flops 64.0 bytes 256.0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  ddp.sgd @d, %u0#0 lr 0.1 : tensor<32xf32>
  ddp.sgd @c, %u0#1 lr 0.1 : tensor<32xf32>
  ddp.sgd @a, %u1#1 lr 0.1 : tensor<16xf32>
  ddp.sgd @b, %bb lr 0.1 : tensor<16xbf16>
  return
}
