// RUN: ddp-opt %s -split-input-file -verify-diagnostics

// The passes' decisions (DDPDialect.td): where each may sit and its value.
// Every one of them in its place is accepted.
ddp.mesh @world(dp = 2, tp = 2)
ddp.param @w : tensor<4x4xf32>
func.func @accepted(%g: tensor<4x4xf32>, %x: tensor<8x4xf32>) -> tensor<4x4xf32> attributes {ddp.tp_comm_predicted_step_us = 1.250000e+02 : f64} {
  %r = ddp.grad_ready @w, %g {ddp.bucket = 0 : i64, ddp.bucket_offset = 16 : i64} : tensor<4x4xf32>
  %s = ddp.scale %r by 5.000000e-01 {ddp.bucket = 0 : i64} : tensor<4x4xf32>
  %w = ddp.get_param @w : tensor<4x4xf32>
  %y = ddp.gemm fwd %x, %w {ddp.tp_comm_splits = 1 : i64} : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %a, %t = ddp.all_reduce sum %y over @world[tp] async {ddp.tp_comm_bulk} : tensor<8x4xf32>
  ddp.wait %t
  return %s : tensor<4x4xf32>
}

// -----

// expected-error @+1 {{'ddp.bucket' is only for ops of the ddp dialect}}
func.func @bucket_on_a_function() attributes {ddp.bucket = 0 : i64} {
  return
}

// -----

func.func @negative_bucket(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.bucket' must be a non-negative i64, got -1 : i64}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.bucket = -1 : i64} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @narrow_bucket(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.bucket' must be a non-negative i64, got 0 : i32}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.bucket = 0 : i32} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @offset_off_a_gradient(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.bucket_offset' is only for a ddp.grad_ready}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.bucket = 0 : i64, ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

ddp.param @a : tensor<4xf32>
func.func @negative_offset(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket_offset' must be a non-negative i64, got -4 : i64}}
  %a = ddp.grad_ready @a, %g {ddp.bucket = 0 : i64, ddp.bucket_offset = -4 : i64} : tensor<4xf32>
  return
}

// -----

ddp.param @a : tensor<4xf32>
func.func @no_offset(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket' on a ddp.grad_ready needs 'ddp.bucket_offset'}}
  %a = ddp.grad_ready @a, %g {ddp.bucket = 0 : i64} : tensor<4xf32>
  return
}

// -----

ddp.param @a : tensor<4xf32>
func.func @no_bucket(%g: tensor<4xf32>) {
  // expected-error @+1 {{'ddp.bucket_offset' on a ddp.grad_ready needs 'ddp.bucket'}}
  %a = ddp.grad_ready @a, %g {ddp.bucket_offset = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @splits_off_a_gemm(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.tp_comm_splits' is only for a ddp.gemm}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.tp_comm_splits = 2 : i64} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @no_splits(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'ddp.tp_comm_splits' must be a positive i64, got 0 : i64}}
  %y = ddp.gemm fwd %x, %w {ddp.tp_comm_splits = 0} : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @splits_not_a_count(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'ddp.tp_comm_splits' must be a positive i64, got "four"}}
  %y = ddp.gemm fwd %x, %w {ddp.tp_comm_splits = "four"} : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

ddp.mesh @world(tp = 2)
func.func @synchronous_bulk(%y: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'ddp.tp_comm_bulk' is only for an asynchronous collective}}
  %a = ddp.all_reduce sum %y over @world[tp] {ddp.tp_comm_bulk} : tensor<8x4xf32>
  return %a : tensor<8x4xf32>
}

// -----

ddp.mesh @world(tp = 2)
func.func @bulk_not_unit(%y: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'ddp.tp_comm_bulk' must be a unit attribute, got true}}
  %a, %t = ddp.all_reduce sum %y over @world[tp] async {ddp.tp_comm_bulk = true} : tensor<8x4xf32>
  ddp.wait %t
  return %a : tensor<8x4xf32>
}

// -----

func.func @prediction_off_a_step(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.tp_comm_predicted_step_us' is only for a function}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.tp_comm_predicted_step_us = 1.0 : f64} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// expected-error @+1 {{'ddp.tp_comm_predicted_step_us' must be a non-negative f64, got 1.000000e+00 : f32}}
func.func @prediction_in_f32() attributes {ddp.tp_comm_predicted_step_us = 1.0 : f32} {
  return
}

// -----

// expected-error @+1 {{'ddp.tp_comm_predicted_step_us' must be a non-negative f64, got -1.000000e+00 : f64}}
func.func @negative_prediction() attributes {ddp.tp_comm_predicted_step_us = -1.0 : f64} {
  return
}

// -----

func.func @stage_on_another_dialect(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.pipeline_stage' is only for a function or an op of the ddp dialect}}
  return {ddp.pipeline_stage = 0} %g : tensor<4xf32>
}

// -----

// expected-error @+1 {{'ddp.pipeline_stage' must be a non-negative i64, got -1 : i64}}
func.func @negative_stage() attributes {ddp.pipeline_stage = -1} {
  return
}

// -----

func.func @task_not_in_the_schedule_form(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.task' must be a string F<microbatch>.<chunk>, B<microbatch>.<chunk> or W<microbatch>.<chunk>, got "F1"}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.task = "F1"} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// expected-error @+1 {{'ddp.task' is only for ops of the ddp dialect}}
func.func @task_on_a_function() attributes {ddp.task = "F0.0"} {
  return
}

// -----

func.func @task_as_integer(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.task' must be a string}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.task = 3} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @schedule_node_without_layer(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.schedule_node' must be a string F<microbatch>.pre_process, F<microbatch>.L<layer>.attn (.dispatch, .mlp, .combine) or F<microbatch>.post_process, or the same with B, got "F0.mlp"}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.schedule_node = "F0.mlp"} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// expected-error @+1 {{'ddp.schedule_node' is only for ops of the ddp dialect}}
func.func @schedule_node_on_a_function() attributes {ddp.schedule_node = "F0.pre_process"} {
  return
}

// -----

// expected-error @+1 {{'ddp.program_groups' must be an array of non-empty strings, got ["dp", ""]}}
module attributes {ddp.program_groups = ["dp", ""]} {
}

// -----

func.func @groups_on_a_function() attributes {ddp.program_groups = ["dp"]} {
  // expected-error @-1 {{'ddp.program_groups' is only for a module}}
  return
}

// -----

// expected-error @+1 {{'ddp.activation_bytes' must be a dictionary of exactly 'layer', 'embedding' and 'output', each a non-negative i64 (bytes), and with recomputation 'per_layer', an array<i64> of non-negative bytes, got {layer = 4 : i64}}}
module attributes {ddp.activation_bytes = {layer = 4 : i64}} {
}

// -----

// expected-error @+1 {{'ddp.activation_bytes' must be a dictionary of exactly 'layer', 'embedding' and 'output', each a non-negative i64 (bytes), and with recomputation 'per_layer', an array<i64> of non-negative bytes, got {embedding = 0 : i64, layer = -1 : i64, output = 0 : i64}}}
module attributes {ddp.activation_bytes = {embedding = 0 : i64, layer = -1 : i64, output = 0 : i64}} {
}

// -----

func.func @activations_on_a_function() attributes {ddp.activation_bytes = {embedding = 0 : i64, layer = 1 : i64, output = 0 : i64}} {
  // expected-error @-1 {{'ddp.activation_bytes' is only for a module}}
  return
}

// -----

// expected-error @+1 {{'ddp.activation_bytes' must be a dictionary of exactly 'layer', 'embedding' and 'output', each a non-negative i64 (bytes), and with recomputation 'per_layer', an array<i64> of non-negative bytes, got {embedding = 0 : i64, layer = 4 : i64, output = 0 : i64, per_layer = array<i64: 4, -2>}}}
module attributes {ddp.activation_bytes = {embedding = 0 : i64, layer = 4 : i64, output = 0 : i64, per_layer = array<i64: 4, -2>}} {
}

// -----

func.func @routed_on_a_scale(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.routed' is only for a ddp.gemm, a ddp.compute or a collective}}
  %s = ddp.scale %g by 5.000000e-01 {ddp.routed = 0.0 : f64} : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @routed_cap_of_one() -> tensor<4xf32> {
  // expected-error @+1 {{'ddp.routed' must be an f64, 0 (no cap) or a cap above 1, got 1.000000e+00 : f64}}
  %a = ddp.compute "k"() flops 1.0 bytes 0.0 {ddp.routed = 1.0 : f64} : () -> tensor<4xf32>
  return %a : tensor<4xf32>
}
