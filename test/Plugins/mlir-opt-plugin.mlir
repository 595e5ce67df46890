// Debian's mlir-opt-22 with ddp's dialect and pass plugins (tools/ddp-plugins)
// schedules, simulates and lowers a step byte for byte as ddp-opt does, and
// the plugins use the libMLIR.so mlir-opt loaded instead of bringing a second
// MLIR with its own registries (docs/Embedding.md).
// REQUIRES: mlir-opt-plugins

// RUN: ddp-import --preset=tiny > %t.step.mlir

// The pipeline by name (a pass a plugin registers is known to
// --pass-pipeline; MlirOptMain makes its --<pass> flags before plugins load).
// RUN: ddp-opt %t.step.mlir --ddp-schedule="policy=megatron bucket-size=40000 use-distributed-optimizer overlap-param-gather" > %t.ddp-opt.mlir
// RUN: %mlir_opt_with_ddp_plugins %t.step.mlir --pass-pipeline="builtin.module(ddp-schedule{policy=megatron bucket-size=40000 use-distributed-optimizer overlap-param-gather})" > %t.mlir-opt.mlir
// RUN: diff %t.ddp-opt.mlir %t.mlir-opt.mlir
// RUN: FileCheck %s < %t.mlir-opt.mlir

// The auto policy (cost model and simulator) and ddp-simulate.
// RUN: ddp-opt %t.step.mlir --ddp-schedule="policy=auto hw=a100-sxm-ib200 dp=64" --ddp-simulate > %t.auto.ddp-opt.mlir
// RUN: %mlir_opt_with_ddp_plugins %t.step.mlir --pass-pipeline="builtin.module(ddp-schedule{policy=auto hw=a100-sxm-ib200 dp=64},ddp-simulate)" > %t.auto.mlir-opt.mlir
// RUN: diff %t.auto.ddp-opt.mlir %t.auto.mlir-opt.mlir
// RUN: FileCheck %s --check-prefix=AUTO < %t.auto.mlir-opt.mlir

// The lowering to the runtime's calls (ddp's conversion pass, MLIR's LLVM
// dialect from libMLIR.so).
// RUN: ddp-opt %t.ddp-opt.mlir --ddp-lower-to-runtime > %t.lowered.ddp-opt.mlir
// RUN: %mlir_opt_with_ddp_plugins %t.ddp-opt.mlir --pass-pipeline="builtin.module(ddp-lower-to-runtime)" > %t.lowered.mlir-opt.mlir
// RUN: diff %t.lowered.ddp-opt.mlir %t.lowered.mlir-opt.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.lowered.mlir-opt.mlir

// Stock -convert-to-llvm finds ddp's patterns through the dialect plugin's
// ConvertToLLVMPatternInterface: the same lines, the globals left last.
// RUN: ddp-opt %t.ddp-opt.mlir --convert-to-llvm | sort > %t.converted.ddp-opt.mlir
// RUN: %mlir_opt_with_ddp_plugins %t.ddp-opt.mlir --convert-to-llvm | sort > %t.converted.mlir-opt.mlir
// RUN: sort %t.lowered.ddp-opt.mlir | diff - %t.converted.mlir-opt.mlir
// RUN: diff %t.converted.ddp-opt.mlir %t.converted.mlir-opt.mlir

// A bad option is reported as ddp-opt reports it, not a crash.
// RUN: not %mlir_opt_with_ddp_plugins %t.step.mlir --pass-pipeline="builtin.module(ddp-schedule{policy=nonsense})" 2>&1 | FileCheck %s --check-prefix=BAD

// MLIR itself is not linked into them: it is the libMLIR.so mlir-opt loaded.
// RUN: llvm-nm --defined-only --extern-only -C %ddp_obj_root/lib/libDDPShared.so %ddp_obj_root/lib/libDDPDialectPlugin.so %ddp_obj_root/lib/libDDPPassPlugin.so | FileCheck %s --check-prefix=SYMBOLS --implicit-check-not='mlir::MLIRContext::MLIRContext(' --implicit-check-not='mlir::registerPass('

// Megatron's distributed optimizer: parameters gathered asynchronously in the
// forward, gradients reduce-scattered per bucket, the optimizer on shards.
// CHECK-LABEL: func.func @step
// CHECK-SAME:  ddp.bucket_policy = #ddp.bucket_policy<name = megatron>
// CHECK:       %[[SHARD:.*]] = ddp.get_param_shard params [@embedding.word_embeddings.weight]
// CHECK-NEXT:  %{{.*}}, %[[GATHERED:.*]] = ddp.all_gather %[[SHARD]] over @world[dp] async
// CHECK-NEXT:  ddp.wait %[[GATHERED]]
// CHECK:       %[[PACK:.*]] = ddp.bucket_pack {{.*}} {ddp.bucket = 0 : i64}
// CHECK-NEXT:  %[[SCALED:.*]] = ddp.scale %[[PACK]] by 0.5
// CHECK-NEXT:  %[[REDUCED:.*]], %[[TOKEN:.*]] = ddp.reduce_scatter sum %[[SCALED]] over @world[dp] async {ddp.bucket = 0 : i64}
// CHECK:       ddp.wait %[[TOKEN]] {ddp.bucket = 0 : i64}
// CHECK-NEXT:  ddp.shard_adam %[[REDUCED]]

// AUTO-LABEL: func.func @step
// AUTO-SAME:  ddp.bucket_policy = #ddp.bucket_policy<name = auto
// AUTO:       ddp.all_reduce {{.*}} async

// LOWERED-DAG: llvm.func @ddprt_reduce_scatter(
// LOWERED-DAG: llvm.func @ddprt_all_gather(
// LOWERED-DAG: llvm.func @ddprt_shard_adam(
// LOWERED-NOT: ddp.

// SYMBOLS: T ddp::DDPDialect::DDPDialect(mlir::MLIRContext*)
// SYMBOLS: T ddp::registerDDPSchedulePipeline()
// SYMBOLS: W mlirGetDialectPluginInfo
// SYMBOLS: W mlirGetPassPluginInfo

// BAD: ddp-schedule: policy=nonsense is not a bucketing policy (megatron, pytorch, size, auto, unit)
// BAD: error: failed to add `ddp-schedule` with options `policy=nonsense`
