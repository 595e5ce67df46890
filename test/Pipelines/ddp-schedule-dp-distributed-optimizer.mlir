// dp= lays the buckets out for another data-parallel size than the mesh's;
// with use-distributed-optimizer they are padded for that size, and
// ddp-distribute-optimizer then shards them over the mesh's group. When the
// padding does not split into the group's shards, ddp-assign-buckets says
// so, naming dp= and both sizes, before anything changes.

// RUN: not ddp-opt %s --ddp-schedule="use-distributed-optimizer=true dp=4" 2>&1 | FileCheck %s --check-prefix=DP4
// DP4: error: with dp=4 and use-distributed-optimizer the buckets of this group are padded to multiples of 128 elements for its 4 ranks, which do not split into the 3 shards the step's mesh gives it

// A dp= whose padding the group divides shards (lcm(6, 128) = 384 elements).
// RUN: ddp-opt %s --ddp-schedule="use-distributed-optimizer=true dp=6" | FileCheck %s --check-prefix=DP6
// DP6: ddp.reduce_scatter sum %{{.*}} over @world[dp] {{.*}}: tensor<384xf32> -> tensor<128xf32>

// With 2 instances the buckets are sharded over one instance: 128 of the 256
// ranks of Inputs/dp256-step.mlir, which 384 elements (lcm(384, 128)) split
// into; with one instance they do not split into 256 shards.
// RUN: ddp-opt %S/Inputs/dp256-step.mlir --ddp-schedule="use-distributed-optimizer=true num-distributed-optimizer-instances=2 dp=384" | FileCheck %s --check-prefix=INSTANCES
// INSTANCES: ddp.reduce_scatter sum %{{.*}} over @world[dp_shard] {{.*}}: tensor<384xf32> -> tensor<3xf32>
// RUN: not ddp-opt %S/Inputs/dp256-step.mlir --ddp-schedule="use-distributed-optimizer=true dp=384" 2>&1 | FileCheck %s --check-prefix=ONE-INSTANCE
// ONE-INSTANCE: error: with dp=384 and use-distributed-optimizer the buckets of this group are padded to multiples of 384 elements for its 384 ranks, which do not split into the 256 shards the step's mesh gives it

// Without dp= the buckets are padded for the mesh's 3 ranks (lcm(3, 128)).
// RUN: ddp-opt %s --ddp-schedule="use-distributed-optimizer=true" | FileCheck %s --check-prefix=MESH
// MESH: ddp.reduce_scatter sum %{{.*}} over @world[dp] {{.*}}: tensor<384xf32> -> tensor<128xf32>

ddp.mesh @world(dp = 3)
ddp.param @fc1.weight layer 0 : tensor<16x8xf32>
ddp.param @fc1.bias layer 0 : tensor<8xf32>
func.func @step(%x: tensor<32x16xf32>, %dh: tensor<32x8xf32>) {
  %w1 = ddp.get_param @fc1.weight : tensor<16x8xf32>
  %h = ddp.gemm fwd %x, %w1 layer 0 : tensor<32x16xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %db1 = ddp.compute "bias_grad"(%dh) flops 256.0 bytes 1024.0 layer 0 : (tensor<32x8xf32>) -> tensor<8xf32>
  %g1 = ddp.grad_ready @fc1.bias, %db1 : tensor<8xf32>
  %dw1 = ddp.gemm wgrad %x transposed, %dh layer 0 : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %g0 = ddp.grad_ready @fc1.weight, %dw1 : tensor<16x8xf32>
  %r1 = ddp.all_reduce avg %g1 over @world[dp] : tensor<8xf32>
  %r0 = ddp.all_reduce avg %g0 over @world[dp] : tensor<16x8xf32>
  ddp.sgd @fc1.bias, %r1 lr 0.1 : tensor<8xf32>
  ddp.sgd @fc1.weight, %r0 lr 0.1 : tensor<16x8xf32>
  return
}
