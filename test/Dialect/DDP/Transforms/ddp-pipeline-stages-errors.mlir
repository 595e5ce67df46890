// RUN: ddp-opt %s -split-input-file --allow-unregistered-dialect -ddp-pipeline-stages -verify-diagnostics

ddp.mesh @world(pp = 2, dp = 1)
func.func @task_without_stage(%x: tensor<4xf32>) {
  // expected-error @+1 {{has a 'ddp.task' but no 'ddp.pipeline_stage'}}
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %b = ddp.compute "g"(%a) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(pp = 2, dp = 1)
func.func @stage_outside_the_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.pipeline_stage' is 2, but the mesh's pp axis has 2 ranks (0 to 1)}}
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 2, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(dp = 2)
// expected-error @+1 {{its ops name pipeline ranks, but no mesh has a pp axis to run them on}}
func.func @no_pp_axis(%x: tensor<4xf32>) {
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(pp = 2, dp = 1)
func.func @nowhere(%x: tensor<4xf32>) {
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{has no 'ddp.pipeline_stage' and none of its operands is computed on a pipeline rank}}
  %b = ddp.compute "g"(%x) flops 1.0 bytes 1.0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// A backward tagged as a forward of a later microbatch runs before the
// forward it needs on rank 1 (which runs F0 B0 F1 B1).
ddp.mesh @world(pp = 2, dp = 1)
func.func @mistagged(%x0: tensor<4xf32>, %x1: tensor<4xf32>) {
  %a0 = ddp.compute "f"(%x0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-note @+1 {{the operand's producer}}
  %a1 = ddp.compute "f"(%x1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F1.0"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{pipeline rank 1 runs this op (in B0.0) before the op that computes its operand (in F1.0) in the 1f1b schedule}}
  %b = ddp.compute "b"(%a1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %b1 = ddp.compute "b"(%a0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B1.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Two model chunks need the interleaved schedule.
ddp.mesh @world(pp = 2, dp = 1)
// expected-error @+1 {{cannot run the interleaved schedule on @few (2 ranks, 2 model chunks each, 1 microbatches): the interleaved schedule needs at least as many microbatches as pipeline stages, but num_microbatches is 1 and pipeline_model_parallel_size 2}}
func.func @few(%x: tensor<4xf32>) {
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.1"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}


// -----

ddp.mesh @world(pp = 2, dp = 1)
func.func @huge_microbatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.task' F999999999999999999.0 names microbatch 999999999999999999 or model chunk 0, more than the 2 ops of the step could hold}}
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F999999999999999999.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

ddp.mesh @world(pp = 2, dp = 1)
func.func @with_region(%x: tensor<4xf32>) {
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{an op with regions cannot be split into pipeline stages}}
  "test.region"(%a) ({
    "test.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> ()
  return
}

// -----

ddp.mesh @world(pp = 2, dp = 1)
// expected-error @+1 {{cannot name pipeline rank 0's program @taken_stage0: the module already has a symbol of that name}}
func.func @taken(%x: tensor<4xf32>) {
  %a = ddp.compute "f"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}
// expected-note @+1 {{the symbol}}
func.func private @taken_stage0()

// -----

// Megatron's calls carry a forward's output to the next rank and a
// backward's to the previous one; rank 1's backward cannot read rank 2's
// forward value.
ddp.mesh @world(pp = 3, dp = 1)
func.func @across(%x: tensor<4xf32>) {
  %a = ddp.compute "embed"(%x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %b = ddp.compute "layer"(%a) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{pipeline rank 2 computes this value in F0.0 for B0.0 on rank 1, but Megatron's stage-to-stage calls carry only a forward's output to the next rank and a backward's to the previous one; let the value cross that way, or place it by ddp's own rule (overlap-p2p-comm on the 1f1b or gpipe schedule)}}
  %c = ddp.compute "logits"(%b) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 2, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %o = ddp.compute "output_grad"(%c) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 2, ddp.task = "B0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-note @+1 {{its use}}
  %d = ddp.compute "layer_grad"(%c, %o) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = ddp.compute "embedding_grad"(%d) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "B0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rank 1's F0.0 reads what rank 0 computes in F1.0: Megatron's calls send
// it after F1.0, and rank 1 receives it after its F0.0 (a microbatch
// tagged wrong).
ddp.mesh @world(pp = 2, dp = 1)
func.func @wrong_microbatch(%x0: tensor<4xf32>, %x1: tensor<4xf32>) {
  %a0 = ddp.compute "f0"(%x0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %a1 = ddp.compute "f0"(%x1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F1.0"} : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{pipeline rank 1 uses this value before the 1f1b schedule receives it}}
  %y0 = ddp.compute "f1"(%a1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %y1 = ddp.compute "f1"(%a0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F1.0"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}
