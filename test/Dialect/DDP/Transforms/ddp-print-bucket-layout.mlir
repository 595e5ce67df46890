// RUN: ddp-opt %s -split-input-file --ddp-print-bucket-layout -o /dev/null -verify-diagnostics | FileCheck %s
// The report is the same after the buckets are materialised.
// RUN: ddp-opt %s -split-input-file --ddp-bucketize --ddp-print-bucket-layout -o /dev/null -verify-diagnostics | FileCheck %s
// Each split rewrites the file; the last one to succeed reports nothing.
// RUN: ddp-opt %s -split-input-file --ddp-print-bucket-layout="output=%t.json" -o /dev/null -verify-diagnostics
// RUN: FileCheck %s --check-prefix=FILE < %t.json
// FILE: "buckets": []

// A layout written by hand: buckets in issue order, each gradient at its
// offset, the second bucket padded.
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
