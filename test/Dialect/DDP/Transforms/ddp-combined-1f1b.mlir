// RUN: ddp-opt %s -split-input-file -verify-diagnostics --ddp-combined-1f1b | FileCheck %s
// Running it again changes nothing.
// RUN: ddp-opt %s -split-input-file -verify-diagnostics --ddp-combined-1f1b --ddp-combined-1f1b | FileCheck %s
// With the option off (as ddp-schedule's default), nothing moves.
// RUN: ddp-opt %s -split-input-file --ddp-combined-1f1b=overlap-moe-expert-parallel-comm=false | FileCheck %s --check-prefix=OFF

// delay_wgrad_compute (Megatron's backward_dw), on the importer's tiny-moe
// step (2 layers): the backward's expert wgrads run after its dispatch
// all-to-alls are issued, before the forward's mlp; layer 1's attn wgrads
// after the next pair's backward combine is issued (before that pair's
// forward attn, of layer 1); layer 0's after the
// layers, before the forward's post-process. Without it each wgrad stays
// in its node, before the dispatch.
// RUN: ddp-import --preset=tiny-moe --set moe_token_dispatcher_type=alltoall --set params_dtype=bf16 | ddp-opt --ddp-combined-1f1b=delay-wgrad-compute=true | FileCheck %s --check-prefix=DELAY
// DELAY:      ddp.all_to_all_v {{.*}}"B0.L1.dispatch"
// DELAY-NEXT: ddp.all_to_all_v {{.*}}"B0.L1.dispatch"
// DELAY-NEXT: ddp.gemm wgrad {{.*}}"B0.L1.mlp"
// DELAY-NEXT: ddp.gemm wgrad {{.*}}"B0.L1.mlp"
// DELAY-NEXT: ddp.gemm wgrad {{.*}}"B0.L1.mlp"
// DELAY-NEXT: ddp.gemm wgrad {{.*}}"B0.L1.mlp"
// DELAY-NEXT: {{.*}}"F1.L0.mlp"
// The router's wgrad (its 4 x 64 weight) stays: TopKRouter's weight is a
// plain parameter, not a TE module with backward_dw.
// DELAY:      ddp.gemm wgrad {{.*}}"B0.L1.attn"} : {{.*}} -> tensor<4x64xbf16>
// DELAY:      ddp.all_to_all_v {{.*}}"B0.L0.combine"
// DELAY-NEXT: ddp.gemm wgrad {{.*}}"B0.L1.attn"
// DELAY-NEXT: ddp.gemm wgrad {{.*}}"B0.L1.attn"
// DELAY-NEXT: {{.*}}"F1.L1.attn"
// DELAY:      ddp.gemm wgrad {{.*}}"B0.L0.attn"} : {{.*}} -> tensor<4x64xbf16>
// DELAY-NOT:  "F1.post_process"
// DELAY:      ddp.gemm wgrad {{.*}}"B0.L0.attn"
// DELAY-NEXT: ddp.gemm wgrad {{.*}}"B0.L0.attn"
// DELAY-NEXT: {{.*}}"F1.post_process"
// RUN: ddp-import --preset=tiny-moe --set moe_token_dispatcher_type=alltoall --set params_dtype=bf16 | ddp-opt --ddp-combined-1f1b | FileCheck %s --check-prefix=NODELAY
// NODELAY:     ddp.gemm wgrad {{.*}}"B0.L1.mlp"
// NODELAY:     ddp.all_to_all_v {{.*}}"B0.L1.dispatch"
// NODELAY-NOT: ddp.gemm wgrad {{.*}}"B0.L1.mlp"
// NODELAY:     ddp.all_to_all_v {{.*}}"B0.L0.combine"
// Megatron requires the combined 1F1B for it.
// RUN: not ddp-opt %s -split-input-file --ddp-combined-1f1b="overlap-moe-expert-parallel-comm=false delay-wgrad-compute=true" 2>&1 | FileCheck %s --check-prefix=DELAY-ALONE
// DELAY-ALONE: error: delay-wgrad-compute delays weight gradients within Megatron's combined 1F1B; set overlap-moe-expert-parallel-comm=true too, as Megatron requires

// Two microbatches through one MoE layer, one op per node, in program order
// (each microbatch's forward, then its backward), as the importer builds it.
// Megatron's combined 1F1B runs microbatch 0's forward alone, then
// microbatch 1's forward beside microbatch 0's backward, then microbatch 1's
// backward alone; within a layer: the backward's combine, the forward's attn
// and dispatch (which Megatron's communication stream starts as soon as the
// attn ends), the backward's mlp and dispatch, the forward's mlp and
// combine, the backward's attn, then the forward combine's compute after
// its all-to-all (which Megatron runs on its communication stream beside
// that attn). The get_param goes right before its first reader; the
// untagged op "follows" goes with the tagged op before it; the accumulate
// after the last tagged op stays last.
// CHECK-LABEL: func.func @two_microbatches
// CHECK-NEXT:  ddp.compute "embedding"(%arg0)
// CHECK-NEXT:  ddp.compute "attn"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"F0.L0.dispatch"
// CHECK-NEXT:  ddp.compute "experts"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"F0.L0.combine"
// CHECK-NEXT:  ddp.compute "unpermute"
// CHECK-NEXT:  ddp.compute "loss"
// CHECK-NEXT:  ddp.compute "embedding"(%arg1)
// CHECK-NEXT:  ddp.compute "loss_grad"{{.*}}"B0.post_process"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"B0.L0.combine"
// CHECK-NEXT:  ddp.compute "attn"{{.*}}"F1.L0.attn"
// CHECK-NEXT:  ddp.compute "follows"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"F1.L0.dispatch"
// CHECK-NEXT:  ddp.get_param @w
// CHECK-NEXT:  ddp.compute "experts_grad"{{.*}}"B0.L0.mlp"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"B0.L0.dispatch"
// CHECK-NEXT:  ddp.compute "experts"{{.*}}"F1.L0.mlp"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"F1.L0.combine"
// CHECK-NEXT:  ddp.compute "attn_grad"{{.*}}"B0.L0.attn"
// CHECK-NEXT:  ddp.compute "unpermute"{{.*}}"F1.L0.combine"
// CHECK-NEXT:  ddp.compute "loss"{{.*}}"F1.post_process"
// CHECK-NEXT:  ddp.compute "embedding_grad"{{.*}}"B0.pre_process"
// CHECK-NEXT:  ddp.compute "loss_grad"{{.*}}"B1.post_process"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"B1.L0.combine"
// CHECK-NEXT:  ddp.compute "experts_grad"{{.*}}"B1.L0.mlp"
// CHECK-NEXT:  ddp.all_to_all {{.*}}"B1.L0.dispatch"
// CHECK-NEXT:  ddp.compute "attn_grad"{{.*}}"B1.L0.attn"
// CHECK-NEXT:  ddp.compute "embedding_grad"{{.*}}"B1.pre_process"
// CHECK-NEXT:  ddp.accumulate
// CHECK-NEXT:  return
// OFF-LABEL: func.func @two_microbatches
// OFF-NEXT:  ddp.compute "embedding"(%arg0)
// OFF:       ddp.compute "embedding_grad"{{.*}}"B0.pre_process"
// OFF-NEXT:  ddp.compute "embedding"(%arg1)

ddp.mesh @world(ep = 2)
ddp.param @w : tensor<4xbf16>
func.func @two_microbatches(%x0: tensor<4xf32>, %x1: tensor<4xf32>) {
  %e0 = ddp.compute "embedding"(%x0) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.pre_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %a0 = ddp.compute "attn"(%e0) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  %d0 = ddp.all_to_all %a0 over @world[ep] {ddp.schedule_node = "F0.L0.dispatch"} : tensor<4xf32>
  %m0 = ddp.compute "experts"(%d0) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.L0.mlp"} : (tensor<4xf32>) -> tensor<4xf32>
  %c0 = ddp.all_to_all %m0 over @world[ep] {ddp.schedule_node = "F0.L0.combine"} : tensor<4xf32>
  %u0 = ddp.compute "unpermute"(%c0) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.L0.combine"} : (tensor<4xf32>) -> tensor<4xf32>
  %l0 = ddp.compute "loss"(%u0) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.post_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %gl0 = ddp.compute "loss_grad"(%l0) flops 1.0 bytes 1.0 {ddp.schedule_node = "B0.post_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %gc0 = ddp.all_to_all %gl0 over @world[ep] {ddp.schedule_node = "B0.L0.combine"} : tensor<4xf32>
  %w = ddp.get_param @w {ddp.schedule_node = "B0.L0.mlp"} : tensor<4xbf16>
  %gm0 = ddp.compute "experts_grad"(%gc0, %w) flops 1.0 bytes 1.0 {ddp.schedule_node = "B0.L0.mlp"} : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  %gd0 = ddp.all_to_all %gm0 over @world[ep] {ddp.schedule_node = "B0.L0.dispatch"} : tensor<4xf32>
  %ga0 = ddp.compute "attn_grad"(%gd0) flops 1.0 bytes 1.0 {ddp.schedule_node = "B0.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  %ge0 = ddp.compute "embedding_grad"(%ga0) flops 1.0 bytes 1.0 {ddp.schedule_node = "B0.pre_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %e1 = ddp.compute "embedding"(%x1) flops 1.0 bytes 1.0 {ddp.schedule_node = "F1.pre_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %a1 = ddp.compute "attn"(%e1) flops 1.0 bytes 1.0 {ddp.schedule_node = "F1.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  %f1 = ddp.compute "follows"(%a1) flops 1.0 bytes 1.0 : (tensor<4xf32>) -> tensor<4xf32>
  %d1 = ddp.all_to_all %f1 over @world[ep] {ddp.schedule_node = "F1.L0.dispatch"} : tensor<4xf32>
  %m1 = ddp.compute "experts"(%d1) flops 1.0 bytes 1.0 {ddp.schedule_node = "F1.L0.mlp"} : (tensor<4xf32>) -> tensor<4xf32>
  %c1 = ddp.all_to_all %m1 over @world[ep] {ddp.schedule_node = "F1.L0.combine"} : tensor<4xf32>
  %u1 = ddp.compute "unpermute"(%c1) flops 1.0 bytes 1.0 {ddp.schedule_node = "F1.L0.combine"} : (tensor<4xf32>) -> tensor<4xf32>
  %l1 = ddp.compute "loss"(%u1) flops 1.0 bytes 1.0 {ddp.schedule_node = "F1.post_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %gl1 = ddp.compute "loss_grad"(%l1) flops 1.0 bytes 1.0 {ddp.schedule_node = "B1.post_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %gc1 = ddp.all_to_all %gl1 over @world[ep] {ddp.schedule_node = "B1.L0.combine"} : tensor<4xf32>
  %gm1 = ddp.compute "experts_grad"(%gc1, %w) flops 1.0 bytes 1.0 {ddp.schedule_node = "B1.L0.mlp"} : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  %gd1 = ddp.all_to_all %gm1 over @world[ep] {ddp.schedule_node = "B1.L0.dispatch"} : tensor<4xf32>
  %ga1 = ddp.compute "attn_grad"(%gd1) flops 1.0 bytes 1.0 {ddp.schedule_node = "B1.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  %ge1 = ddp.compute "embedding_grad"(%ga1) flops 1.0 bytes 1.0 {ddp.schedule_node = "B1.pre_process"} : (tensor<4xf32>) -> tensor<4xf32>
  %sum = ddp.accumulate %ge0, %ge1 : tensor<4xf32>
  return
}

// -----

// A tag that contradicts the dataflow: the forward's attn reads the
// previous microbatch's backward, which the combined order runs later. The
// step is left as it was.
ddp.mesh @world(ep = 2)
func.func @against_the_dataflow(%x0: tensor<4xf32>) {
  %a0 = ddp.compute "attn"(%x0) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  %g0 = ddp.compute "attn_grad"(%a0) flops 1.0 bytes 1.0 {ddp.schedule_node = "B0.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{ddp-combined-1f1b: this op (node F1.L0.attn) reads a value of an op (node B0.L0.attn) that Megatron's combined 1F1B runs after it; the step's ddp.schedule_node tags do not follow its dataflow}}
  %a1 = ddp.compute "attn"(%g0) flops 1.0 bytes 1.0 {ddp.schedule_node = "F1.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  %g1 = ddp.compute "attn_grad"(%a1) flops 1.0 bytes 1.0 {ddp.schedule_node = "B1.L0.attn"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// An f32 parameter: Megatron asserts a bf16 or fp16 model.
ddp.mesh @world(ep = 2)
ddp.param @w : tensor<4xf32>
// expected-error @+1 {{overlap-moe-expert-parallel-comm runs on a bf16 or fp16 model, as Megatron asserts, but parameter @w is f32; turn the option off, or import with params_dtype bf16}}
func.func @f32_param(%x: tensor<4xf32>) {
  %a = ddp.all_to_all %x over @world[ep] {ddp.schedule_node = "F0.L0.dispatch"} : tensor<4xf32>
  return
}

// -----

// Tagged, but on one expert-parallel rank: Megatron asserts
// expert_model_parallel_size > 1 (the importer refuses it; a hand-written
// or edited step reaches the pass).
ddp.mesh @world(ep = 1, dp = 2)
// expected-error @+1 {{overlap-moe-expert-parallel-comm overlaps the experts' all-to-alls, and no mesh has an expert-parallel axis of more than one rank (Megatron asserts expert_model_parallel_size > 1); turn the option off, or import with expert_model_parallel_size > 1}}
func.func @one_expert_rank(%x: tensor<4xf32>) {
  %a = ddp.all_to_all %x over @world[ep] {ddp.schedule_node = "F0.L0.dispatch"} : tensor<4xf32>
  return
}

// -----

// No op says its node: the overlap was asked for a step the importer did
// not tag (a dense model, the all-gather dispatcher, pipeline stages).
ddp.mesh @world(ep = 2)
// expected-error @+1 {{overlap-moe-expert-parallel-comm needs the step's ops to carry ddp.schedule_node, as ddp-import sets them on an MoE step with the all-to-all dispatcher and no pipeline stages; this step has none}}
func.func @untagged(%x: tensor<4xf32>) {
  %a = ddp.all_to_all %x over @world[ep] : tensor<4xf32>
  return
}

// -----

// Already asynchronous: a reader moved ahead of its wait would read the
// value before it arrives, so the pass runs first.
ddp.mesh @world(ep = 2)
func.func @already_async(%x: tensor<4xf32>) {
  %a, %t = ddp.all_to_all %x over @world[ep] async {ddp.schedule_node = "F0.L0.dispatch"} : tensor<4xf32>
  // expected-error @+1 {{ddp-combined-1f1b orders a step before its collectives are made asynchronous (ddp-schedule runs it first); this step already waits for one}}
  ddp.wait %t
  return
}

// -----

// A parameter read may not move across an update: the get_param would go
// right before its first reader, after the sgd of its node.
ddp.mesh @world(ep = 2)
ddp.param @w : tensor<4xbf16>
func.func @read_after_update(%x: tensor<4xbf16>) {
  // expected-error @+1 {{ddp-combined-1f1b: Megatron's combined 1F1B would move this op across an update of the parameters; the step's ddp.schedule_node tags must leave the optimizer after every node}}
  %w = ddp.get_param @w {ddp.schedule_node = "F0.L0.attn"} : tensor<4xbf16>
  %a = ddp.compute "attn"(%x) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.L0.attn"} : (tensor<4xbf16>) -> tensor<4xbf16>
  ddp.sgd @w, %a lr 0.01 {ddp.schedule_node = "F0.L0.attn"} : tensor<4xbf16>
  %r = ddp.compute "read"(%w) flops 1.0 bytes 1.0 {ddp.schedule_node = "F0.L0.dispatch"} : (tensor<4xbf16>) -> tensor<4xbf16>
  return
}
