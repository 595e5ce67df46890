// num-distributed-optimizer-instances=3 on dp = 6: three instances of two
// ranks. grad-reduce-in-fp32 with Adam on bf16 parameters: the f32 shard is
// all-reduced across the instances before it is cast back, as the bucket's
// one reduction was, and the gathered bucket is bf16.
// RUN: ddp-opt %s --ddp-distribute-optimizer=num-distributed-optimizer-instances=3 | FileCheck %s

// CHECK-LABEL: ddp.mesh @world(dp_replicate = 3, dp_shard = 2)
// CHECK-LABEL: func.func @fp32_bucket_adam
// CHECK:      %[[R:.*]] = ddp.reduce_scatter sum %{{.*}} over @world[dp_shard] {ddp.bucket = 0 : i64} : tensor<384xf32> -> tensor<192xf32>
// CHECK-NEXT: %[[A:.*]] = ddp.all_reduce sum %[[R]] over @world[dp_replicate] {ddp.bucket = 0 : i64} : tensor<192xf32>
// CHECK-NEXT: %[[C:.*]] = ddp.cast %[[A]] {ddp.bucket = 0 : i64} : tensor<192xf32> to tensor<192xbf16>
// CHECK-NEXT: %[[N:.*]] = ddp.shard_adam %[[C]] params [@w, @v] offsets [0, 128] over @world[dp_shard] lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<192xbf16> -> tensor<192xbf16>
// CHECK-NEXT: %[[G:.*]] = ddp.all_gather %[[N]] over @world[dp_shard] : tensor<192xbf16> -> tensor<384xbf16>
// CHECK-NEXT: ddp.set_params %[[G]] params [@w, @v] offsets [0, 128] : tensor<384xbf16>
// CHECK-NEXT: return
ddp.mesh @world(dp = 6)
ddp.param @v : tensor<16x16xbf16>
ddp.param @w : tensor<100xbf16>
func.func @fp32_bucket_adam(%gw: tensor<100xbf16>, %gv: tensor<16x16xbf16>) {
  %w = ddp.grad_ready @w, %gw : tensor<100xbf16>
  %v = ddp.grad_ready @v, %gv : tensor<16x16xbf16>
  %cw = ddp.cast %w {ddp.bucket = 0 : i64} : tensor<100xbf16> to tensor<100xf32>
  %cv = ddp.cast %v {ddp.bucket = 0 : i64} : tensor<16x16xbf16> to tensor<16x16xf32>
  %p = ddp.bucket_pack %cw, %cv offsets [0, 128] {ddp.bucket = 0 : i64} : tensor<100xf32>, tensor<16x16xf32> -> tensor<384xf32>
  %r = ddp.all_reduce sum %p over @world[dp] {ddp.bucket = 0 : i64} : tensor<384xf32>
  %u:2 = ddp.bucket_unpack %r offsets [0, 128] {ddp.bucket = 0 : i64} : tensor<384xf32> -> tensor<100xf32>, tensor<16x16xf32>
  %bw = ddp.cast %u#0 {ddp.bucket = 0 : i64} : tensor<100xf32> to tensor<100xbf16>
  %bv = ddp.cast %u#1 {ddp.bucket = 0 : i64} : tensor<16x16xf32> to tensor<16x16xbf16>
  ddp.adam @w, %bw lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<100xbf16>
  ddp.adam @v, %bv lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<16x16xbf16>
  return
}
