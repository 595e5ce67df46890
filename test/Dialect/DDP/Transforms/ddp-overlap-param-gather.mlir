// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-param-gather -verify-diagnostics | FileCheck %s
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-param-gather=align-param-gather=true -verify-diagnostics | FileCheck %s --check-prefix=ALIGN
// Running it again changes nothing.
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-param-gather --ddp-overlap-param-gather -verify-diagnostics | FileCheck %s
// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-param-gather=align-param-gather=true --ddp-overlap-param-gather=align-param-gather=true -verify-diagnostics | FileCheck %s --check-prefix=ALIGN
// A failing run changes nothing, not even the gathers that were valid.
// RUN: not ddp-opt %s -split-input-file --allow-unregistered-dialect --ddp-overlap-param-gather --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=UNTOUCHED

// With model chunks, one chain of gathers per chunk, as Megatron keeps a
// buffer per chunk (docs/Pipeline.md#parameter-gathers-per-model-chunk):
// tiny with 6 layers on 2 ranks of 3 chunks and 4 microbatches, so rank 1
// holds layers 1, 3 and 5 (chunks 0, 1, 2; chunk 2 also the output layer's
// final norm and the tied word embedding), forward order F0.0 F1.0 F0.1
// F1.1 F0.2 ... (groups of 2). Each chunk's first gather is issued at its
// first use, where Megatron's forward pre-hook finds it not dispatched;
// the next of the chunk after its wait.
// RUN: ddp-import --preset=tiny --set num_layers=6 --set pipeline_model_parallel_size=2 --set virtual_pipeline_model_parallel_size=3 --set num_microbatches=4 --set data_parallel_size=2 --set tensor_model_parallel_size=1 -o %t.chunks.mlir
// RUN: ddp-opt %t.chunks.mlir --ddp-schedule='use-distributed-optimizer=true overlap-param-gather=true' --ddp-extract-pipeline-stage=rank=1 | FileCheck %s --check-prefix=CHUNKS
// CHUNKS: ddp.get_param_shard params [@decoder.layers.1.
// CHUNKS-NEXT: ddp.all_gather
// CHUNKS-NEXT: ddp.recv {{.*}}"F0.0"
// CHUNKS: ddp.wait {{.*}}"F0.1"
// CHUNKS: ddp.get_param_shard params [@decoder.layers.3.
// CHUNKS-NEXT: %[[W:.*]], %[[T:.*]] = ddp.all_gather
// CHUNKS-NEXT: ddp.wait %[[T]]
// CHUNKS-NEXT: ddp.set_params %[[W]]
// CHUNKS-NEXT: ddp.get_param @decoder.layers.3.{{.*}}"F0.1"
// CHUNKS: ddp.wait {{.*}}"F0.2"
// CHUNKS: ddp.get_param_shard params [@decoder.final_layernorm.bias, {{.*}}@decoder.layers.5.
// CHUNKS-NEXT: %[[W5:.*]], %[[T5:.*]] = ddp.all_gather
// CHUNKS-NEXT: ddp.wait %[[T5]]
// CHUNKS-NEXT: ddp.set_params %[[W5]]
// CHUNKS-NEXT: ddp.get_param_shard params [@embedding.word_embeddings.weight]
// CHUNKS-NEXT: ddp.all_gather
// CHUNKS-NEXT: ddp.get_param @decoder.layers.5.{{.*}}"F0.2"
// align-param-gather: Megatron's interleaved schedule issues chunks 0 and 1
// before its first task, and chunk c > 1 before the computation of the
// rank's k-th forward, where k + the rank is the forward of microbatch 0
// through chunk c - 1 (schedules.py L1218-1221, L1341-1353): here index 2,
// so rank 1 issues chunk 2 before F1.0 and rank 0 before F0.1.
// RUN: ddp-opt %t.chunks.mlir --ddp-schedule='use-distributed-optimizer=true overlap-param-gather=true align-param-gather=true' --ddp-extract-pipeline-stage=rank=1 | FileCheck %s --check-prefix=CHUNKS-ALIGN
// CHUNKS-ALIGN: ddp.get_param_shard params [@decoder.layers.1.
// CHUNKS-ALIGN-NEXT: ddp.all_gather
// CHUNKS-ALIGN-NEXT: ddp.get_param_shard params [@decoder.layers.3.
// CHUNKS-ALIGN-NEXT: ddp.all_gather
// CHUNKS-ALIGN-NEXT: ddp.recv {{.*}}"F0.0"
// CHUNKS-ALIGN: ddp.wait {{.*}}"F1.0"
// CHUNKS-ALIGN: ddp.get_param_shard params [@decoder.final_layernorm.bias, {{.*}}@decoder.layers.5.
// CHUNKS-ALIGN-NEXT: ddp.all_gather
// CHUNKS-ALIGN-NEXT: ddp.get_param_shard params [@embedding.word_embeddings.weight]
// CHUNKS-ALIGN-NEXT: ddp.all_gather
// CHUNKS-ALIGN-NEXT: ddp.compute "layernorm"{{.*}}"F1.0"
// CHUNKS-ALIGN-NOT: ddp.get_param_shard
// CHUNKS-ALIGN: return
// RUN: ddp-opt %t.chunks.mlir --ddp-schedule='use-distributed-optimizer=true overlap-param-gather=true align-param-gather=true' --ddp-extract-pipeline-stage=rank=0 | FileCheck %s --check-prefix=CHUNKS-ALIGN0
// CHUNKS-ALIGN0: ddp.wait {{.*}}"F0.1"
// CHUNKS-ALIGN0: ddp.get_param_shard params [@decoder.layers.4.
// CHUNKS-ALIGN0-NEXT: ddp.all_gather
// CHUNKS-ALIGN0: ddp.get_param @decoder.layers.2.{{.*}}"F0.1"

// One chunk per rank (1F1B): align-param-gather is off, as Megatron's
// arguments make it, and the gathers chain (tiny with 4 layers on 2 ranks:
// rank 0 holds the embedding and layers 0 and 1).
// RUN: ddp-import --preset=tiny --set num_layers=4 --set pipeline_model_parallel_size=2 --set num_microbatches=2 --set data_parallel_size=2 --set tensor_model_parallel_size=1 -o %t.onechunk.mlir
// RUN: ddp-opt %t.onechunk.mlir --ddp-schedule='use-distributed-optimizer=true overlap-param-gather=true align-param-gather=true' --ddp-extract-pipeline-stage=rank=0 -o %t.onechunk.aligned.mlir
// RUN: ddp-opt %t.onechunk.mlir --ddp-schedule='use-distributed-optimizer=true overlap-param-gather=true' --ddp-extract-pipeline-stage=rank=0 -o %t.onechunk.chained.mlir
// RUN: diff %t.onechunk.aligned.mlir %t.onechunk.chained.mlir
// RUN: FileCheck %s --check-prefix=ONE-CHUNK < %t.onechunk.chained.mlir
// ONE-CHUNK: ddp.get_param_shard
// ONE-CHUNK-NEXT: %{{.*}}, %[[T:.*]] = ddp.all_gather
// ONE-CHUNK-NOT: ddp.get_param_shard
// ONE-CHUNK: ddp.wait %[[T]]
// ONE-CHUNK-NEXT: ddp.set_params
// ONE-CHUNK-NEXT: ddp.get_param_shard

// Three gathers as ddp-distribute-optimizer leaves them, after the
// optimizer in bucket order (backward order: @d's bucket first). The
// forward reads @a, @b, @c, @d: the bucket of @b and @a is gathered first.
// Each gather is issued at the start of the step or right after the
// previous gather's wait (chained), waited right before the first op that
// names its parameters, and its parameters written there; the end of the
// step writes the rank's updated shard into the parameters.
// CHECK-LABEL: func.func @chained
// CHECK-NEXT: %[[S2:.*]] = ddp.get_param_shard params [@b, @a] offsets [0, 8] over @world[dp] : tensor<8xf32>
// CHECK-NEXT: %[[W2:.*]], %[[T2:.*]] = ddp.all_gather %[[S2]] over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT: "test.forward_start"()
// CHECK-NEXT: ddp.wait %[[T2]]
// CHECK-NEXT: ddp.set_params %[[W2]] params [@b, @a] offsets [0, 8] : tensor<16xf32>
// CHECK-NEXT: %[[S1:.*]] = ddp.get_param_shard params [@c] offsets [0] over @world[dp] : tensor<2xf32>
// CHECK-NEXT: %[[W1:.*]], %[[T1:.*]] = ddp.all_gather %[[S1]] over @world[dp] async : tensor<2xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[A:.*]] = ddp.get_param @a : tensor<8xf32>
// CHECK-NEXT: "test.layer"(%[[A]])
// CHECK-NEXT: %[[B:.*]] = ddp.get_param @b : tensor<8xf32>
// CHECK-NEXT: "test.layer"(%[[B]])
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: ddp.set_params %[[W1]] params [@c] offsets [0] : tensor<4xf32>
// CHECK-NEXT: %[[S0:.*]] = ddp.get_param_shard params [@d] offsets [0] over @world[dp] : tensor<4xf32>
// CHECK-NEXT: %[[W0:.*]], %[[T0:.*]] = ddp.all_gather %[[S0]] over @world[dp] async : tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[C:.*]] = ddp.get_param @c : tensor<4xf32>
// CHECK-NEXT: "test.layer"(%[[C]])
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: ddp.set_params %[[W0]] params [@d] offsets [0] : tensor<8xf32>
// CHECK-NEXT: %[[D:.*]] = ddp.get_param @d : tensor<8xf32>
// CHECK-NEXT: "test.layer"(%[[D]])
// CHECK-NEXT: %[[P0:.*]] = ddp.shard_sgd %{{.*}} params [@d] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: ddp.set_param_shard %[[P0]] params [@d] offsets [0] over @world[dp] : tensor<4xf32>
// CHECK-NEXT: %[[P1:.*]] = ddp.shard_sgd %{{.*}} params [@c] offsets [0] over @world[dp] lr 0.1 : tensor<2xf32> -> tensor<2xf32>
// CHECK-NEXT: ddp.set_param_shard %[[P1]] params [@c] offsets [0] over @world[dp] : tensor<2xf32>
// CHECK-NEXT: %[[P2:.*]] = ddp.shard_sgd %{{.*}} params [@b, @a] offsets [0, 8] over @world[dp] lr 0.1 : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT: ddp.set_param_shard %[[P2]] params [@b, @a] offsets [0, 8] over @world[dp] : tensor<8xf32>
// CHECK-NEXT: return

// align-param-gather: every gather is issued at the start, in forward order;
// the waits stay where they were.
// ALIGN-LABEL: func.func @chained
// ALIGN-NEXT: %[[S2:.*]] = ddp.get_param_shard params [@b, @a] offsets [0, 8] over @world[dp] : tensor<8xf32>
// ALIGN-NEXT: %[[W2:.*]], %[[T2:.*]] = ddp.all_gather %[[S2]] over @world[dp] async : tensor<8xf32> -> tensor<16xf32>
// ALIGN-NEXT: %[[S1:.*]] = ddp.get_param_shard params [@c] offsets [0] over @world[dp] : tensor<2xf32>
// ALIGN-NEXT: %[[W1:.*]], %[[T1:.*]] = ddp.all_gather %[[S1]] over @world[dp] async : tensor<2xf32> -> tensor<4xf32>
// ALIGN-NEXT: %[[S0:.*]] = ddp.get_param_shard params [@d] offsets [0] over @world[dp] : tensor<4xf32>
// ALIGN-NEXT: %[[W0:.*]], %[[T0:.*]] = ddp.all_gather %[[S0]] over @world[dp] async : tensor<4xf32> -> tensor<8xf32>
// ALIGN-NEXT: "test.forward_start"()
// ALIGN-NEXT: ddp.wait %[[T2]]
// ALIGN-NEXT: ddp.set_params %[[W2]] params [@b, @a] offsets [0, 8] : tensor<16xf32>
// ALIGN-NEXT: ddp.get_param @a
// ALIGN-NEXT: "test.layer"
// ALIGN-NEXT: ddp.get_param @b
// ALIGN-NEXT: "test.layer"
// ALIGN-NEXT: ddp.wait %[[T1]]
// ALIGN-NEXT: ddp.set_params %[[W1]] params [@c] offsets [0] : tensor<4xf32>
// ALIGN-NEXT: ddp.get_param @c
// ALIGN-NEXT: "test.layer"
// ALIGN-NEXT: ddp.wait %[[T0]]
// ALIGN-NEXT: ddp.set_params %[[W0]] params [@d] offsets [0] : tensor<8xf32>
// ALIGN-NEXT: ddp.get_param @d
// ALIGN-NOT: ddp.all_gather
// ALIGN: return
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
ddp.param @c : tensor<4xf32>
ddp.param @d : tensor<8xf32>
func.func @chained(%g0: tensor<4xf32>, %g1: tensor<2xf32>, %g2: tensor<8xf32>) {
  "test.forward_start"() : () -> ()
  %a = ddp.get_param @a : tensor<8xf32>
  "test.layer"(%a) : (tensor<8xf32>) -> ()
  %b = ddp.get_param @b : tensor<8xf32>
  "test.layer"(%b) : (tensor<8xf32>) -> ()
  %c = ddp.get_param @c : tensor<4xf32>
  "test.layer"(%c) : (tensor<4xf32>) -> ()
  %d = ddp.get_param @d : tensor<8xf32>
  "test.layer"(%d) : (tensor<8xf32>) -> ()
  %p0 = ddp.shard_sgd %g0 params [@d] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w0 = ddp.all_gather %p0 over @world[dp] : tensor<4xf32> -> tensor<8xf32>
  ddp.set_params %w0 params [@d] offsets [0] : tensor<8xf32>
  %p1 = ddp.shard_sgd %g1 params [@c] offsets [0] over @world[dp] lr 0.1 : tensor<2xf32> -> tensor<2xf32>
  %w1 = ddp.all_gather %p1 over @world[dp] : tensor<2xf32> -> tensor<4xf32>
  ddp.set_params %w1 params [@c] offsets [0] : tensor<4xf32>
  %p2 = ddp.shard_sgd %g2 params [@b, @a] offsets [0, 8] over @world[dp] lr 0.1 : tensor<8xf32> -> tensor<8xf32>
  %w2 = ddp.all_gather %p2 over @world[dp] : tensor<8xf32> -> tensor<16xf32>
  ddp.set_params %w2 params [@b, @a] offsets [0, 8] : tensor<16xf32>
  return
}

// -----

// A bucket of bf16 parameters updated by Adam whose parameters nothing reads
// before the optimizer: the gather completes right before the shard
// optimizer, which reads the rank's own shard of them. The two gathers of
// one bucket (parameters of two element types) keep their order.
// CHECK-LABEL: func.func @unread_adam
// CHECK-NEXT: %[[S0:.*]] = ddp.get_param_shard params [@e] offsets [0] over @world[dp] : tensor<4xbf16>
// CHECK-NEXT: %[[W0:.*]], %[[T0:.*]] = ddp.all_gather %[[S0]] over @world[dp] async : tensor<4xbf16> -> tensor<8xbf16>
// CHECK-NEXT: "test.forward"()
// CHECK-NEXT: ddp.wait %[[T0]]
// CHECK-NEXT: ddp.set_params %[[W0]] params [@e] offsets [0] : tensor<8xbf16>
// CHECK-NEXT: %[[S1:.*]] = ddp.get_param_shard params [@f] offsets [4] over @world[dp] : tensor<4xf32>
// CHECK-NEXT: %[[W1:.*]], %[[T1:.*]] = ddp.all_gather %[[S1]] over @world[dp] async : tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[P0:.*]] = ddp.shard_adam %{{.*}} params [@e] offsets [0]
// CHECK-NEXT: ddp.set_param_shard %[[P0]] params [@e] offsets [0] over @world[dp] : tensor<4xbf16>
// CHECK-NEXT: ddp.wait %[[T1]]
// CHECK-NEXT: ddp.set_params %[[W1]] params [@f] offsets [4] : tensor<8xf32>
// CHECK-NEXT: %[[P1:.*]] = ddp.shard_adam %{{.*}} params [@f] offsets [4]
// CHECK-NEXT: ddp.set_param_shard %[[P1]] params [@f] offsets [4] over @world[dp] : tensor<4xf32>
// CHECK-NEXT: return
ddp.mesh @world(dp = 2)
ddp.param @e : tensor<2x2xbf16>
ddp.param @f : tensor<4xf32>
func.func @unread_adam(%g: tensor<4xbf16>, %h: tensor<4xf32>) {
  "test.forward"() : () -> ()
  %p0 = ddp.shard_adam %g params [@e] offsets [0] over @world[dp] lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<4xbf16> -> tensor<4xbf16>
  %w0 = ddp.all_gather %p0 over @world[dp] : tensor<4xbf16> -> tensor<8xbf16>
  ddp.set_params %w0 params [@e] offsets [0] : tensor<8xbf16>
  %p1 = ddp.shard_adam %h params [@f] offsets [4] over @world[dp] lr 0.001 betas(0.9, 0.999) eps 1.0e-08 : tensor<4xf32> -> tensor<4xf32>
  %w1 = ddp.all_gather %p1 over @world[dp] : tensor<4xf32> -> tensor<8xf32>
  ddp.set_params %w1 params [@f] offsets [4] : tensor<8xf32>
  return
}

// -----

// A step without parameter writes is left alone.
// CHECK-LABEL: func.func @nothing_to_gather
// CHECK-NEXT: ddp.get_param @a
// CHECK-NEXT: return
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @nothing_to_gather() {
  %a = ddp.get_param @a : tensor<8xf32>
  return
}

// -----

// Without the distributed optimizer there is no gather to overlap.
// UNTOUCHED-LABEL: func.func @full_optimizer
// UNTOUCHED-NEXT: ddp.sgd @a
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @full_optimizer(%g: tensor<8xf32>) {
  // expected-error @+1 {{overlap-param-gather needs the distributed optimizer, but @a is updated by ddp.sgd; use use-distributed-optimizer=true}}
  ddp.sgd @a, %g lr 0.1 : tensor<8xf32>
  return
}

// -----

// The valid gather of @b is not moved either.
// UNTOUCHED-LABEL: func.func @not_gathered
// UNTOUCHED-NEXT: %[[P:.*]] = ddp.shard_sgd
// UNTOUCHED-NEXT: %[[W:.*]] = ddp.all_gather %[[P]] over @world[dp] : tensor<4xf32> -> tensor<8xf32>
// UNTOUCHED-NEXT: ddp.set_params %[[W]] params [@b]
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @not_gathered(%v: tensor<8xf32>, %g: tensor<4xf32>) {
  %p = ddp.shard_sgd %g params [@b] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<8xf32>
  ddp.set_params %w params [@b] offsets [0] : tensor<8xf32>
  // expected-error @+1 {{cannot overlap the gather of parameters [@a]: the values are not a ddp.all_gather}}
  ddp.set_params %v params [@a] offsets [0] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @not_a_shard_update(%s: tensor<4xf32>) {
  %w = ddp.all_gather %s over @world[dp] : tensor<4xf32> -> tensor<8xf32>
  // expected-error @+1 {{cannot overlap the gather of parameters [@a]: the gathered shard is not a shard optimizer's result}}
  ddp.set_params %w params [@a] offsets [0] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @already_async(%g: tensor<4xf32>) {
  %p = ddp.shard_sgd %g params [@a] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w, %t = ddp.all_gather %p over @world[dp] async : tensor<4xf32> -> tensor<8xf32>
  ddp.wait %t
  // expected-error @+1 {{cannot overlap the gather of parameters [@a]: the ddp.all_gather is already asynchronous}}
  ddp.set_params %w params [@a] offsets [0] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @gathered_values_read_twice(%g: tensor<4xf32>) {
  %p = ddp.shard_sgd %g params [@a] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<8xf32>
  // expected-error @+1 {{cannot overlap the gather of parameters [@a]: the gathered values are read by more than this write}}
  ddp.set_params %w params [@a] offsets [0] : tensor<8xf32>
  "test.use"(%w) : (tensor<8xf32>) -> ()
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<4xf32>
ddp.param @b : tensor<4xf32>
func.func @other_params(%g: tensor<4xf32>) {
  %p = ddp.shard_sgd %g params [@a, @b] offsets [0, 4] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<8xf32>
  // expected-error @+1 {{cannot overlap the gather of parameters [@a]: the shard optimizer updates parameters [@a, @b] at offsets array<i64: 0, 4>}}
  ddp.set_params %w params [@a] offsets [0] : tensor<8xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
func.func @nested(%g: tensor<4xf32>, %c: i1) {
  %p = ddp.shard_sgd %g params [@a] offsets [0] over @world[dp] lr 0.1 : tensor<4xf32> -> tensor<4xf32>
  %w = ddp.all_gather %p over @world[dp] : tensor<4xf32> -> tensor<8xf32>
  // (An unknown op with two regions stands for control flow; with one it
  // could be a symbol table hiding the parameters.)
  "test.region"() ({
    // expected-error @+1 {{cannot overlap the gather of parameters [@a]: the write must be at the top level of the step}}
    ddp.set_params %w params [@a] offsets [0] : tensor<8xf32>
    "test.terminator"() : () -> ()
  }, {
    "test.terminator"() : () -> ()
  }) : () -> ()
  return
}
