// RUN: ddp-opt %s -split-input-file -ddp-pipeline-stages | FileCheck %s
// RUN: ddp-opt %s -split-input-file -ddp-pipeline-stages -ddp-verify-collective-order -o /dev/null
// RUN: ddp-opt %s -split-input-file -ddp-pipeline-stages="overlap-p2p-comm=true" | FileCheck %s --check-prefix=EARLY
// RUN: ddp-opt %s -split-input-file -ddp-pipeline-stages="overlap-p2p-comm=true" -ddp-verify-collective-order -o /dev/null
// RUN: ddp-opt %s -split-input-file -ddp-pipeline-stages="pipeline-schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: ddp-opt %s -split-input-file -ddp-pipeline-stages="overlap-p2p-comm=true deallocate-pipeline-outputs=true" | FileCheck %s --check-prefix=FREED
// RUN: ddp-opt %s -split-input-file -ddp-pipeline-stages="overlap-p2p-comm=true deallocate-pipeline-outputs=true" -ddp-verify-collective-order -o /dev/null
// RUN: not ddp-opt %s -split-input-file -ddp-pipeline-stages="pipeline-schedule=zigzag" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not ddp-opt %s -split-input-file -ddp-pipeline-stages="microbatch-group-size=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// A hand-written step without W tasks (and no import record) for zb-h1:
// RUN: not ddp-opt %s -split-input-file -ddp-pipeline-stages="pipeline-schedule=zb-h1" 2>&1 | FileCheck %s --check-prefix=NO-W
// NO-W: error: the zb-h1 schedule runs each backward's weight gradients as a pass of their own (W<m>.<c>), but @step has none; import the model with pipeline_schedule "zb-h1", or use pipeline-schedule=1f1b

// RUN: not ddp-opt %s -split-input-file -ddp-pipeline-stages="overlap-p2p-comm-warmup-flush=true" 2>&1 | FileCheck %s --check-prefix=FLUSH
// RUN: not ddp-opt %s -split-input-file -ddp-pipeline-stages="overlap-p2p-comm=true overlap-p2p-comm-warmup-flush=true" 2>&1 | FileCheck %s --check-prefix=FLUSH1F1B

// BAD: error: unknown pipeline schedule 'zigzag'; expected 1f1b, interleaved, gpipe or zb-h1
// An error at a step function does not print the function (ddp-opt turns
// MLIR's --mlir-print-op-on-diagnostic off unless asked).
// BAD-NOT: see current operation
// RUN: not ddp-opt %s -split-input-file -ddp-pipeline-stages="pipeline-schedule=zigzag" --mlir-print-op-on-diagnostic 2>&1 | FileCheck %s --check-prefix=BAD-IR
// BAD-IR: note: see current operation
// FLUSH: error: overlap-p2p-comm-warmup-flush overlaps the warmup and flush as overlap-p2p-comm does the steady phase; set overlap-p2p-comm=true too, or drop the warmup flush
// FLUSH1F1B: error: overlap-p2p-comm-warmup-flush is a mode of the interleaved schedule; the 1f1b schedule has no such phase to overlap; drop it or use pipeline-schedule=interleaved
// NEGATIVE: error: microbatch-group-size must not be negative, got -1

// Two ranks, two microbatches, one layer each. 1F1B: rank 0 runs F0 F1 B0
// B1 (one warmup forward), rank 1 F0 B0 F1 B1. Activations go to +1,
// gradients come back from +1; each rank keeps its own get_param, sums its
// gradient over the microbatches in order, and updates its own parameter.

ddp.mesh @world(pp = 2, dp = 1)
ddp.param @w0 layer 0 : tensor<4xf32>
ddp.param @w1 layer 1 : tensor<4xf32>

func.func @step(%x0: tensor<4xf32>, %x1: tensor<4xf32>) -> (tensor<1xf32>, tensor<1xf32>) {
  %w0 = ddp.get_param @w0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : tensor<4xf32>
  %a0 = ddp.compute "f0"(%x0, %w0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %w1 = ddp.get_param @w1 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : tensor<4xf32>
  %y0 = ddp.compute "f1"(%a0, %w1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l0 = ddp.compute "loss"(%y0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<1xf32>
  %b0:2 = ddp.compute "b1"(%y0, %a0, %w1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B0.0"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %g0 = ddp.compute "b0"(%b0#0, %x0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "B0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a1 = ddp.compute "f0"(%x1, %w0) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F1.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y1 = ddp.compute "f1"(%a1, %w1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F1.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l1 = ddp.compute "loss"(%y1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F1.0"} : (tensor<4xf32>) -> tensor<1xf32>
  %b1:2 = ddp.compute "b1"(%y1, %a1, %w1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B1.0"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %s1 = ddp.accumulate %b0#1, %b1#1 {ddp.pipeline_stage = 1, ddp.task = "B1.0"} : tensor<4xf32>
  %r1 = ddp.grad_ready @w1, %s1 {ddp.pipeline_stage = 1, ddp.task = "B1.0"} : tensor<4xf32>
  %g1 = ddp.compute "b0"(%b1#0, %x1) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "B1.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s0 = ddp.accumulate %g0, %g1 {ddp.pipeline_stage = 0, ddp.task = "B1.0"} : tensor<4xf32>
  %r0 = ddp.grad_ready @w0, %s0 {ddp.pipeline_stage = 0, ddp.task = "B1.0"} : tensor<4xf32>
  ddp.sgd @w1, %r1 lr 1.000000e-01 : tensor<4xf32>
  ddp.sgd @w0, %r0 lr 1.000000e-01 : tensor<4xf32>
  return %l0, %l1 : tensor<1xf32>, tensor<1xf32>
}

// Megatron's calls (the default): every call blocks. Rank 0 sends F0's
// output (send_forward) and waits; after F1, send_forward_recv_backward
// sends F1's output and receives B0's gradient in one batch, both waited.
// CHECK-NOT: func.func @step(
// CHECK-LABEL: func.func @step_stage0(
// CHECK-SAME:      %[[X0:.*]]: tensor<4xf32>, %[[X1:.*]]: tensor<4xf32>)
// CHECK-SAME:      attributes {ddp.keeps_pipeline_outputs, ddp.pipeline_stage = 0 : i64}
// CHECK:         %[[W0:.*]] = ddp.get_param @w0 {ddp.task = "F0.0"}
// CHECK-NEXT:    %[[A0:.*]] = ddp.compute "f0"(%[[X0]], %[[W0]]) {{.*}}{ddp.task = "F0.0"}
// CHECK-NEXT:    %[[T0:.*]] = ddp.send %[[A0]] to 1 over @world[pp] async {ddp.task = "F0.0"}
// CHECK-NEXT:    ddp.wait %[[T0]]
// CHECK-NEXT:    %[[A1:.*]] = ddp.compute "f0"(%[[X1]], %[[W0]]) {{.*}}{ddp.task = "F1.0"}
// CHECK-NEXT:    %[[T1:.*]] = ddp.send %[[A1]] to 1 over @world[pp] async {ddp.task = "F1.0"}
// CHECK-NEXT:    %[[D0:.*]], %[[R0:.*]] = ddp.recv from 1 over @world[pp] async {ddp.task = "B0.0"}
// CHECK-NEXT:    ddp.wait %[[T1]]
// CHECK-NEXT:    ddp.wait %[[R0]]
// CHECK-NEXT:    %[[G0:.*]] = ddp.compute "b0"(%[[D0]], %[[X0]])
// CHECK-NEXT:    %[[D1:.*]], %[[R1:.*]] = ddp.recv from 1 over @world[pp] async {ddp.task = "B1.0"}
// CHECK-NEXT:    ddp.wait %[[R1]]
// CHECK-NEXT:    %[[G1:.*]] = ddp.compute "b0"(%[[D1]], %[[X1]])
// CHECK-NEXT:    %[[S0:.*]] = ddp.accumulate %[[G0]], %[[G1]] {ddp.task = "B1.0"}
// CHECK-NEXT:    %[[RD:.*]] = ddp.grad_ready @w0, %[[S0]]
// CHECK-NEXT:    ddp.sgd @w0, %[[RD]]
// CHECK-NEXT:    return{{$}}

// Rank 1: send_backward_recv_forward after B0 sends its gradient and
// receives F1's input in one batch.
// CHECK-LABEL: func.func @step_stage1(
// CHECK-SAME:      -> (tensor<1xf32>, tensor<1xf32>) attributes {ddp.keeps_pipeline_outputs, ddp.pipeline_stage = 1 : i64}
// CHECK:         %[[IN0:.*]], %[[Q0:.*]] = ddp.recv from -1 over @world[pp] async {ddp.task = "F0.0"}
// CHECK-NEXT:    ddp.wait %[[Q0]]
// CHECK:         %[[B0:.*]]:2 = ddp.compute "b1"({{.*}}) {{.*}}{ddp.task = "B0.0"}
// CHECK-NEXT:    %[[U0:.*]] = ddp.send %[[B0]]#0 to -1 over @world[pp] async {ddp.task = "B0.0"}
// CHECK-NEXT:    %[[IN1:.*]], %[[Q1:.*]] = ddp.recv from -1 over @world[pp] async {ddp.task = "F1.0"}
// CHECK-NEXT:    ddp.wait %[[U0]]
// CHECK-NEXT:    ddp.wait %[[Q1]]
// CHECK-NEXT:    ddp.compute "f1"(%[[IN1]],
// CHECK:         ddp.compute "b1"
// CHECK:         ddp.grad_ready @w1
// CHECK-NEXT:    %[[U1:.*]] = ddp.send {{.*}} to -1 over @world[pp] async {ddp.task = "B1.0"}
// CHECK-NEXT:    ddp.wait %[[U1]]
// CHECK-NEXT:    ddp.sgd @w1
// CHECK-NEXT:    return

// EARLY-NOT: func.func @step(
// EARLY-LABEL: func.func @step_stage0(
// EARLY-SAME:      %[[X0:.*]]: tensor<4xf32>, %[[X1:.*]]: tensor<4xf32>)
// EARLY-SAME:      attributes {ddp.keeps_pipeline_outputs, ddp.pipeline_stage = 0 : i64}
// EARLY:         %[[W0:.*]] = ddp.get_param @w0 {ddp.task = "F0.0"}
// EARLY:         %[[A0:.*]] = ddp.compute "f0"(%[[X0]], %[[W0]]) {{.*}}{ddp.task = "F0.0"}
// EARLY:         %[[T0:.*]] = ddp.send %[[A0]] to 1 over @world[pp] async {ddp.task = "F0.0"}
// EARLY:         %[[A1:.*]] = ddp.compute "f0"(%[[X1]], %[[W0]]) {{.*}}{ddp.task = "F1.0"}
// EARLY:         %[[T1:.*]] = ddp.send %[[A1]] to 1 over @world[pp] async {ddp.task = "F1.0"}
// EARLY:         %[[D0:.*]], %[[R0:.*]] = ddp.recv from 1 over @world[pp] async {ddp.task = "B0.0"}
// EARLY-NEXT:    ddp.wait %[[R0]] {ddp.task = "B0.0"}
// EARLY-NEXT:    %[[G0:.*]] = ddp.compute "b0"(%[[D0]], %[[X0]])
// EARLY:         %[[D1:.*]], %[[R1:.*]] = ddp.recv from 1 over @world[pp] async {ddp.task = "B1.0"}
// EARLY-NEXT:    ddp.wait %[[R1]]
// EARLY-NEXT:    %[[G1:.*]] = ddp.compute "b0"(%[[D1]], %[[X1]])
// EARLY:         %[[S0:.*]] = ddp.accumulate %[[G0]], %[[G1]] {ddp.task = "B1.0"}
// EARLY:         %[[RD:.*]] = ddp.grad_ready @w0, %[[S0]]
// EARLY:         ddp.sgd @w0, %[[RD]]
// EARLY-NOT:     ddp.sgd
// EARLY:         ddp.wait %[[T0]]
// EARLY:         ddp.wait %[[T1]]
// EARLY:         return{{$}}

// With overlap-p2p-comm (ddp's own rule on 1f1b): each value is sent once
// computed and waited at the end; rank 1 posts the receive of F1's input
// early, with B0, and waits for it right before F1.
// EARLY-LABEL: func.func @step_stage1(
// EARLY-SAME:      -> (tensor<1xf32>, tensor<1xf32>) attributes {ddp.keeps_pipeline_outputs, ddp.pipeline_stage = 1 : i64}
// EARLY:         %[[IN0:.*]], %[[Q0:.*]] = ddp.recv from -1 over @world[pp] async {ddp.task = "F0.0"}
// EARLY-NEXT:    ddp.wait %[[Q0]]
// EARLY-NEXT:    %[[W1:.*]] = ddp.get_param @w1 {ddp.task = "F0.0"}
// EARLY:         %[[Y0:.*]] = ddp.compute "f1"(%[[IN0]], %[[W1]])
// EARLY:         %[[L0:.*]] = ddp.compute "loss"(%[[Y0]])
// EARLY:         %[[IN1:.*]], %[[Q1:.*]] = ddp.recv from -1 over @world[pp] async {ddp.task = "B0.0"}
// EARLY:         %[[B0:.*]]:2 = ddp.compute "b1"(%[[Y0]], %[[IN0]], %[[W1]]) {{.*}}{ddp.task = "B0.0"}
// EARLY:         %[[U0:.*]] = ddp.send %[[B0]]#0 to -1 over @world[pp] async {ddp.task = "B0.0"}
// EARLY-NEXT:    ddp.wait %[[Q1]] {ddp.task = "F1.0"}
// EARLY-NEXT:    ddp.compute "f1"(%[[IN1]], %[[W1]])
// EARLY:         ddp.compute "b1"
// EARLY:         ddp.send {{.*}} to -1 over @world[pp] async {ddp.task = "B1.0"}
// EARLY:         ddp.accumulate
// EARLY:         ddp.grad_ready @w1
// EARLY:         ddp.sgd @w1
// EARLY:         ddp.wait %[[U0]]
// EARLY:         ddp.wait
// EARLY:         return %[[L0]], %{{.*}} : tensor<1xf32>, tensor<1xf32>

// deallocate-pipeline-outputs under ddp's rule: a forward's output is
// freed before the next forward, so its send is waited there; the last
// one after the rank's tasks. The programs no longer keep their outputs.
// FREED-LABEL: func.func @step_stage0(
// FREED-SAME:      attributes {ddp.pipeline_stage = 0 : i64}
// FREED:         %[[T0:.*]] = ddp.send {{.*}} to 1 over @world[pp] async {ddp.task = "F0.0"}
// FREED-NEXT:    ddp.wait %[[T0]] {ddp.task = "F1.0"}
// FREED-NEXT:    ddp.compute "f0"{{.*}}"F1.0"
// FREED-NEXT:    %[[T1:.*]] = ddp.send {{.*}} to 1 over @world[pp] async {ddp.task = "F1.0"}
// FREED:         ddp.grad_ready @w0
// FREED-NEXT:    ddp.wait %[[T1]]{{$}}
// FREED-NEXT:    ddp.sgd @w0
// FREED-LABEL: func.func @step_stage1(
// FREED-SAME:      attributes {ddp.pipeline_stage = 1 : i64}

// GPipe: rank 1 runs both forwards before either backward.
// GPIPE-LABEL: func.func @step_stage1(
// GPIPE:         ddp.compute "f1"{{.*}}"F0.0"
// GPIPE:         ddp.compute "f1"{{.*}}"F1.0"
// GPIPE:         ddp.compute "b1"{{.*}}"B0.0"
// GPIPE:         ddp.compute "b1"{{.*}}"B1.0"

// -----

// The tied embedding: the first and the last rank each sum their own
// contributions; the sum of the two sums and the update run on both, each
// receiving the other's partial sum once past its pipeline.

ddp.mesh @world(pp = 3, dp = 1)
ddp.param @emb shared_embedding : tensor<4xf32>

// CHECK-LABEL: func.func @tied_stage0(
// CHECK:         %[[E:.*]] = ddp.compute "embedding_grad"
// CHECK-NEXT:    %[[TE:.*]] = ddp.send %[[E]] to -1 over @world[pp] async :
// CHECK-NEXT:    %[[O:.*]], %[[TO:.*]] = ddp.recv from -1 over @world[pp] async :
// CHECK-NEXT:    ddp.wait %[[TO]]
// CHECK-NEXT:    %[[S:.*]] = ddp.accumulate %[[E]], %[[O]] :
// CHECK-NEXT:    ddp.grad_ready @emb, %[[S]]
// CHECK-NEXT:    ddp.sgd @emb
// CHECK-LABEL: func.func @tied_stage1(
// CHECK-NOT:     ddp.sgd
// CHECK:         return
// CHECK-LABEL: func.func @tied_stage2(
// CHECK:         %[[O2:.*]] = ddp.compute "output_grad"
// CHECK-NEXT:    %[[P2:.*]] = ddp.send %[[O2]] to -1 over @world[pp] async {ddp.task = "B0.0"}
// CHECK-NEXT:    ddp.wait %[[P2]]
// CHECK-NEXT:    ddp.send %[[O2]] to 1 over @world[pp] async :
// CHECK-NEXT:    %[[E2:.*]], %[[TE2:.*]] = ddp.recv from 1 over @world[pp] async :
// CHECK-NEXT:    ddp.wait %[[TE2]]
// CHECK-NEXT:    %[[S2:.*]] = ddp.accumulate %[[E2]], %[[O2]] :
// CHECK-NEXT:    ddp.grad_ready @emb, %[[S2]]
// CHECK-NEXT:    ddp.sgd @emb
func.func @tied(%x: tensor<4xf32>) {
  %w = ddp.get_param @emb {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : tensor<4xf32>
  %a = ddp.compute "embed"(%x, %w) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "F0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = ddp.compute "layer"(%a) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "F0.0"} : (tensor<4xf32>) -> tensor<4xf32>
  %c = ddp.compute "logits"(%b, %w) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 2, ddp.task = "F0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %o = ddp.compute "output_grad"(%c, %b) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 2, ddp.task = "B0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = ddp.compute "layer_grad"(%o, %a) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 1, ddp.task = "B0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = ddp.compute "embedding_grad"(%d, %x) flops 1.0 bytes 1.0 {ddp.pipeline_stage = 0, ddp.task = "B0.0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = ddp.accumulate %e, %o : tensor<4xf32>
  %r = ddp.grad_ready @emb, %s : tensor<4xf32>
  ddp.sgd @emb, %r lr 1.000000e-01 : tensor<4xf32>
  return
}

// -----

// A module without pipeline ranks is left as it is.
// CHECK-LABEL: func.func @plain(
// CHECK-NEXT:    return
ddp.mesh @world(dp = 2)
func.func @plain() {
  return
}
