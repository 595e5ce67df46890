// RUN: ddp-opt %s -split-input-file --ddp-print-bucket-layout -o /dev/null -verify-diagnostics | FileCheck %s
// The report is the same after the buckets are materialised.
// RUN: ddp-opt %s -split-input-file --ddp-bucketize --ddp-print-bucket-layout -o /dev/null -verify-diagnostics | FileCheck %s
// Each split rewrites the file; the last one to succeed reports nothing.
// RUN: ddp-opt %s -split-input-file --ddp-print-bucket-layout="output=%t.json" -o /dev/null -verify-diagnostics
// RUN: FileCheck %s --check-prefix=FILE < %t.json
// FILE: "buckets": []
// With the distributed optimizer, each rank's shard of every bucket; a
// bucket that does not split evenly is an error.
// RUN: not ddp-opt %s -split-input-file --ddp-print-bucket-layout="use-distributed-optimizer=true" -o /dev/null 2> %t.err | FileCheck %s --check-prefix=SHARDS
// RUN: FileCheck %s --check-prefix=UNEVEN < %t.err
// A layout ddp-bucketize would refuse is refused by the report too, with
// the shards or without, with the same error.
// RUN: FileCheck %s --check-prefix=REFUSED < %t.err

// format=table: the same layout to read, a row per bucket and the totals;
// with the distributed optimizer the shard each rank owns.
// RUN: ddp-import --preset=tiny --quiet | ddp-opt --ddp-assign-buckets="use-distributed-optimizer=true" --ddp-print-bucket-layout="format=table use-distributed-optimizer=true" -o /dev/null | FileCheck %s --check-prefix=TABLE --match-full-lines
// TABLE:      bucket  group  dtype params     elements       padded       bytes   shard/rank  parameters (first .. last)
// TABLE-NEXT:      0  dp     f32       27        51584        51584  201.50 KiB        25792  decoder.final_layernorm.bias .. embedding.position_embeddings.weight
// TABLE-NEXT:      1  dp     f32        1        32768        32768  128.00 KiB        16384  embedding.word_embeddings.weight
// TABLE-NEXT: total: 2 buckets, 28 parameters, 84352 elements, 84352 padded (329.50 KiB)
// RUN: not ddp-opt %s -split-input-file --ddp-print-bucket-layout="format=xml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-FORMAT
// BAD-FORMAT: error: ddp-print-bucket-layout: format 'xml' is neither json nor table

// A layout written by hand: buckets in issue order, each gradient at its
// offset, the second bucket padded.
// With shards: bucket 0 of 9088 over the 8 ranks of [dp], 1136 each; rank 7
// holds the last 1073 elements of the weight and the 63 of padding.
// SHARDS:       "padded_numel": 9088,
// SHARDS-NEXT:  "shard_numel": 1136,
// SHARDS-NEXT:  "shards": [
// SHARDS-NEXT:    {
// SHARDS-NEXT:      "rank": 0,
// SHARDS-NEXT:      "begin": 0,
// SHARDS-NEXT:      "end": 1136,
// SHARDS-NEXT:      "params": [
// SHARDS-NEXT:        {
// SHARDS-NEXT:          "name": "layers.9.weight",
// SHARDS-NEXT:          "begin": 0,
// SHARDS-NEXT:          "end": 1136
// SHARDS-NEXT:        }
// SHARDS-NEXT:      ]
// SHARDS-NEXT:    },
// SHARDS:           "rank": 7,
// SHARDS-NEXT:      "begin": 7952,
// SHARDS-NEXT:      "end": 9088,
// SHARDS-NEXT:      "params": [
// SHARDS-NEXT:        {
// SHARDS-NEXT:          "name": "layers.9.weight",
// SHARDS-NEXT:          "begin": 7952,
// SHARDS-NEXT:          "end": 9025
// SHARDS-NEXT:        }
// SHARDS-NEXT:      ]
// SHARDS-NEXT:    }
// SHARDS-NEXT:  ]
// SHARDS-NEXT: },
// Bucket 1 over [dp, cp], 8 ranks of 1152: rank 0 holds the bias and the
// weight's first 1024 elements (from bucket offset 128).
// SHARDS:       "padded_numel": 9216,
// SHARDS-NEXT:  "shard_numel": 1152,
// SHARDS-NEXT:  "shards": [
// SHARDS-NEXT:    {
// SHARDS-NEXT:      "rank": 0,
// SHARDS-NEXT:      "begin": 0,
// SHARDS-NEXT:      "end": 1152,
// SHARDS-NEXT:      "params": [
// SHARDS-NEXT:        {
// SHARDS-NEXT:          "name": "layers.8.bias",
// SHARDS-NEXT:          "begin": 0,
// SHARDS-NEXT:          "end": 95
// SHARDS-NEXT:        },
// SHARDS-NEXT:        {
// SHARDS-NEXT:          "name": "layers.8.weight",
// SHARDS-NEXT:          "begin": 0,
// SHARDS-NEXT:          "end": 1024
// SHARDS-NEXT:        }
// SHARDS-NEXT:      ]
// SHARDS-NEXT:    },
// CHECK:      {
// CHECK-NEXT:   "buckets": [
// CHECK-NEXT:     {
// CHECK-NEXT:       "index": 0,
// CHECK-NEXT:       "dtype": "bf16",
// CHECK-NEXT:       "group": "dp",
// CHECK-NEXT:       "params": [
// CHECK-NEXT:         {
// CHECK-NEXT:           "name": "layers.9.weight",
// CHECK-NEXT:           "offset": 0,
// CHECK-NEXT:           "numel": 9025
// CHECK-NEXT:         }
// CHECK-NEXT:       ],
// CHECK-NEXT:       "numel": 9025,
// CHECK-NEXT:       "padded_numel": 9088
// CHECK-NEXT:     },
// CHECK-NEXT:     {
// CHECK-NEXT:       "index": 1,
// CHECK-NEXT:       "dtype": "f32",
// CHECK-NEXT:       "group": "dp,cp",
// CHECK-NEXT:       "params": [
// CHECK-NEXT:         {
// CHECK-NEXT:           "name": "layers.8.bias",
// CHECK-NEXT:           "offset": 0,
// CHECK-NEXT:           "numel": 95
// CHECK-NEXT:         },
// CHECK-NEXT:         {
// CHECK-NEXT:           "name": "layers.8.weight",
// CHECK-NEXT:           "offset": 128,
// CHECK-NEXT:           "numel": 9025
// CHECK-NEXT:         }
// CHECK-NEXT:       ],
// CHECK-NEXT:       "numel": 9153,
// CHECK-NEXT:       "padded_numel": 9216
// CHECK-NEXT:     }
// CHECK-NEXT:   ]
// CHECK-NEXT: }
ddp.mesh @world(dp = 8, cp = 1)
ddp.param @layers.8.weight : tensor<95x95xbf16>
ddp.param @layers.8.bias : tensor<95xbf16>
ddp.param @layers.9.weight : tensor<95x95xbf16>
func.func @step(%g9: tensor<95x95xbf16>, %b8: tensor<95xbf16>, %g8: tensor<95x95xbf16>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = bf16, mesh = @world, axes = ["dp"], numel = 9025, padded_numel = 9088, average_in_collective = true, check_finite = false>,
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp", "cp"], numel = 9153, padded_numel = 9216, average_in_collective = false, check_finite = true>]} {
  %w9 = ddp.grad_ready @layers.9.weight, %g9 {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<95x95xbf16>
  %w8b = ddp.grad_ready @layers.8.bias, %b8 {ddp.bucket = 1 : i64, ddp.bucket_offset = 0 : i64} : tensor<95xbf16>
  %w8 = ddp.grad_ready @layers.8.weight, %g8 {ddp.bucket = 1 : i64, ddp.bucket_offset = 128 : i64} : tensor<95x95xbf16>
  %r9 = ddp.all_reduce avg %w9 over @world[dp] : tensor<95x95xbf16>
  %r8b = ddp.all_reduce avg %w8b over @world[dp, cp] : tensor<95xbf16>
  %r8 = ddp.all_reduce avg %w8 over @world[dp, cp] : tensor<95x95xbf16>
  ddp.sgd @layers.9.weight, %r9 lr 0.1 : tensor<95x95xbf16>
  ddp.sgd @layers.8.bias, %r8b lr 0.1 : tensor<95xbf16>
  ddp.sgd @layers.8.weight, %r8 lr 0.1 : tensor<95x95xbf16>
  return
}

// -----

// Megatron's padding over 4 ranks, shards of 32: rank 0 holds the bias and
// padding, rank 1 only padding (no parameter: it keeps no optimizer state
// for this bucket), ranks 2 and 3 a half of the weight each.
// CHECK-LABEL:  "name": "p.bias",
// CHECK-NOT:    "shards"
// CHECK:        "padded_numel": 128
// CHECK-NEXT:   }
// SHARDS-LABEL:  "name": "p.bias",
// SHARDS:        "padded_numel": 128,
// SHARDS-NEXT:   "shard_numel": 32,
// SHARDS-NEXT:   "shards": [
// SHARDS-NEXT:     {
// SHARDS-NEXT:       "rank": 0,
// SHARDS-NEXT:       "begin": 0,
// SHARDS-NEXT:       "end": 32,
// SHARDS-NEXT:       "params": [
// SHARDS-NEXT:         {
// SHARDS-NEXT:           "name": "p.bias",
// SHARDS-NEXT:           "begin": 0,
// SHARDS-NEXT:           "end": 6
// SHARDS-NEXT:         }
// SHARDS-NEXT:       ]
// SHARDS-NEXT:     },
// SHARDS-NEXT:     {
// SHARDS-NEXT:       "rank": 1,
// SHARDS-NEXT:       "begin": 32,
// SHARDS-NEXT:       "end": 64,
// SHARDS-NEXT:       "params": []
// SHARDS-NEXT:     },
// SHARDS-NEXT:     {
// SHARDS-NEXT:       "rank": 2,
// SHARDS-NEXT:       "begin": 64,
// SHARDS-NEXT:       "end": 96,
// SHARDS-NEXT:       "params": [
// SHARDS-NEXT:         {
// SHARDS-NEXT:           "name": "p.weight",
// SHARDS-NEXT:           "begin": 0,
// SHARDS-NEXT:           "end": 32
// SHARDS-NEXT:         }
// SHARDS-NEXT:       ]
// SHARDS-NEXT:     },
// SHARDS-NEXT:     {
// SHARDS-NEXT:       "rank": 3,
// SHARDS-NEXT:       "begin": 96,
// SHARDS-NEXT:       "end": 128,
// SHARDS-NEXT:       "params": [
// SHARDS-NEXT:         {
// SHARDS-NEXT:           "name": "p.weight",
// SHARDS-NEXT:           "begin": 32,
// SHARDS-NEXT:           "end": 64
// SHARDS-NEXT:         }
// SHARDS-NEXT:       ]
// SHARDS-NEXT:     }
// SHARDS-NEXT:   ]
// SHARDS-NEXT: }
ddp.mesh @world(dp = 4)
ddp.param @p.weight : tensor<8x8xf32>
ddp.param @p.bias : tensor<6xf32>
func.func @step(%w: tensor<8x8xf32>, %b: tensor<6xf32>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 128, padded_numel = 128, average_in_collective = false, check_finite = false>]} {
  %gb = ddp.grad_ready @p.bias, %b {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<6xf32>
  %gw = ddp.grad_ready @p.weight, %w {ddp.bucket = 0 : i64, ddp.bucket_offset = 64 : i64} : tensor<8x8xf32>
  %rb = ddp.all_reduce avg %gb over @world[dp] : tensor<6xf32>
  %rw = ddp.all_reduce avg %gw over @world[dp] : tensor<8x8xf32>
  ddp.sgd @p.bias, %rb lr 0.1 : tensor<6xf32>
  ddp.sgd @p.weight, %rw lr 0.1 : tensor<8x8xf32>
  return
}

// -----

// 8 elements do not split over 3 ranks: only the shard report refuses it.
// UNEVEN: [[@LINE+5]]:1: error: bucket 0 of 8 elements does not split over its 3 ranks; lay it out with use-distributed-optimizer
// CHECK-LABEL:  "name": "q",
// CHECK:        "padded_numel": 8
ddp.mesh @world(dp = 3)
ddp.param @q : tensor<8xf32>
func.func @step(%q: tensor<8xf32>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 8, padded_numel = 8, average_in_collective = false, check_finite = false>]} {
  %g = ddp.grad_ready @q, %q {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<8xf32>
  %r = ddp.all_reduce avg %g over @world[dp] : tensor<8xf32>
  ddp.sgd @q, %r lr 0.1 : tensor<8xf32>
  return
}

// -----

// Nothing assigned: an empty report.
// CHECK:      {
// CHECK-NEXT:   "buckets": []
// CHECK-NEXT: }
func.func @nothing() {
  return
}

// -----

func.func @one() attributes {ddp.buckets = []} {
  return
}
// expected-error @+1 {{the layout report covers one step, but this is the second function with 'ddp.buckets'}}
func.func @two() attributes {ddp.buckets = []} {
  return
}

// -----

// A gradient past the end of its bucket.
// REFUSED: [[@LINE+9]]:9: error: bucket 0: the gradient of @b ends at element 100008, past the 16 elements of the bucket
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
func.func @step(%ga: tensor<8xf32>, %gb: tensor<8xf32>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 16, padded_numel = 16, average_in_collective = false, check_finite = false>]} {
  %ra = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<8xf32>
  // expected-error @+1 {{bucket 0: the gradient of @b ends at element 100008, past the 16 elements of the bucket}}
  %rb = ddp.grad_ready @b, %gb {ddp.bucket = 0 : i64, ddp.bucket_offset = 100000 : i64} : tensor<8xf32>
  %xa = ddp.all_reduce avg %ra over @world[dp] : tensor<8xf32>
  %xb = ddp.all_reduce avg %rb over @world[dp] : tensor<8xf32>
  ddp.sgd @a, %xa lr 0.5 : tensor<8xf32>
  ddp.sgd @b, %xb lr 0.5 : tensor<8xf32>
  return
}

// -----

// A numel that is not where the last gradient ends.
// REFUSED: [[@LINE+5]]:1: error: bucket 0: 'numel' is 12 but its last gradient ends at element 16
ddp.mesh @world(dp = 2)
ddp.param @a : tensor<8xf32>
ddp.param @b : tensor<8xf32>
// expected-error @+1 {{bucket 0: 'numel' is 12 but its last gradient ends at element 16}}
func.func @step(%ga: tensor<8xf32>, %gb: tensor<8xf32>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["dp"], numel = 12, padded_numel = 16, average_in_collective = false, check_finite = false>]} {
  %ra = ddp.grad_ready @a, %ga {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<8xf32>
  %rb = ddp.grad_ready @b, %gb {ddp.bucket = 0 : i64, ddp.bucket_offset = 8 : i64} : tensor<8xf32>
  %xa = ddp.all_reduce avg %ra over @world[dp] : tensor<8xf32>
  %xb = ddp.all_reduce avg %rb over @world[dp] : tensor<8xf32>
  ddp.sgd @a, %xa lr 0.5 : tensor<8xf32>
  ddp.sgd @b, %xb lr 0.5 : tensor<8xf32>
  return
}

// -----

// A bucket over an axis its mesh lacks.
// REFUSED: [[@LINE+4]]:1: error: bucket 0: mesh @world has no axes tp
ddp.mesh @world(dp = 2)
ddp.param @r : tensor<8xf32>
// expected-error @+1 {{bucket 0: mesh @world has no axes tp}}
func.func @step(%r: tensor<8xf32>) attributes {
    ddp.buckets = [
      #ddp.bucket<dtype = f32, mesh = @world, axes = ["tp"], numel = 8, padded_numel = 8, average_in_collective = false, check_finite = false>]} {
  %g = ddp.grad_ready @r, %r {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<8xf32>
  %a = ddp.all_reduce avg %g over @world[dp] : tensor<8xf32>
  ddp.sgd @r, %a lr 0.1 : tensor<8xf32>
  return
}

// A pipeline under policy=megatron: only the first rank's first model chunk
// is bucketed; every other (rank, chunk) is one bucket per buffer, and no
// bucket mixes chunks (Megatron's DistributedDataParallel per chunk).
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 --set num_layers=4 --set virtual_pipeline_model_parallel_size=2 --set num_microbatches=4 | ddp-opt -ddp-schedule="policy=megatron bucket-size=5000" -ddp-extract-pipeline-stage=rank=0 -ddp-print-bucket-layout -o /dev/null | FileCheck %s --check-prefix=PP-RANK0
// RUN: ddp-import --preset=tiny --set pipeline_model_parallel_size=2 --set num_layers=4 --set virtual_pipeline_model_parallel_size=2 --set num_microbatches=4 | ddp-opt -ddp-schedule="policy=megatron bucket-size=5000" -ddp-extract-pipeline-stage=rank=1 -ddp-print-bucket-layout -o /dev/null | FileCheck %s --check-prefix=PP-RANK1
// PP-RANK0: "index": 0
// PP-RANK0: "name": "decoder.layers.2.
// PP-RANK0-NOT: "name": "decoder.layers.0.
// PP-RANK0: "index": 1
// PP-RANK0-NOT: "name": "decoder.layers.2.
// PP-RANK0: "index": 4
// PP-RANK1: "index": 0
// PP-RANK1: "name": "decoder.layers.1.
// PP-RANK1-NOT: "name": "decoder.layers.3.
// PP-RANK1: "index": 1
// PP-RANK1: "name": "decoder.layers.3.
// The tied embedding's copy on the last rank is the output layer's, of
// its last chunk.
// PP-RANK1: "name": "embedding.word_embeddings.weight"
// PP-RANK1-NOT: "index": 2
