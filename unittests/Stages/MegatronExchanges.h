//===- MegatronExchanges.h - Megatron-Core's p2p calls ----------*- C++ -*-===//
//
// What Megatron-Core's schedules.py issues on each pipeline rank between its
// forwards and backwards (NVIDIA/Megatron-LM d98e8a64), printed by
// bench/sim/megatron_p2p_events.py, which runs Megatron's own
// forward_backward_pipelining_{with,without}_interleaving and
// P2PCommunicator with torch stubbed out. The script's --all matrix (278
// shapes of p <= 4, v <= 3, every flag setting) agreed with
// describeStageExchanges entry by entry, and so did --all --deallocate
// (deallocate_pipeline_outputs); these are the cases the tests keep. One
// string per rank, events separated by spaces: a task, a call
// C(parts;wait|async) with sn/sp naming the task whose output is sent and
// rp/rn the task that consumes what is received, or a wait W(part).
//
//===----------------------------------------------------------------------===//

#ifndef DDP_UNITTESTS_STAGES_MEGATRONEXCHANGES_H
#define DDP_UNITTESTS_STAGES_MEGATRONEXCHANGES_H

#include "ddp/Stages/PipelineSchedule.h"

#include <cstdint>
#include <vector>

namespace ddp::megatron {

struct MegatronExchange {
  const char *name;
  PipelineScheduleKind kind;
  int64_t stages, virtualStages, microbatches, groupSize;
  bool batch, overlap, warmupFlush;
  std::vector<const char *> ranks;
  /// deallocate_pipeline_outputs (the script's --deallocate).
  bool deallocate = false;
};

inline const std::vector<MegatronExchange> &getMegatronExchanges() {
  static const std::vector<MegatronExchange> exchanges = {
      {"1f1b_p2_m1_batch", PipelineScheduleKind::OneFOneB, 2, 1, 1, 0, true, false, false,
       {
           "F0.0 C(sn=F0.0;wait) C(rn=B0.0;wait) B0.0",
           "C(rp=F0.0;wait) F0.0 B0.0 C(sp=B0.0;wait)",
       }},
      {"1f1b_p3_m5_batch", PipelineScheduleKind::OneFOneB, 3, 1, 5, 0, true, false, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) F2.0 "
           "C(sn=F2.0,rn=B0.0;wait) B0.0 F3.0 C(sn=F3.0,rn=B1.0;wait) B1.0 "
           "F4.0 C(sn=F4.0,rn=B2.0;wait) B2.0 C(rn=B3.0;wait) B3.0 "
           "C(rn=B4.0;wait) B4.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0;wait) C(rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rn=B0.0;wait) B0.0 C(sp=B0.0,rp=F2.0;wait) F2.0 "
           "C(sn=F2.0,rn=B1.0;wait) B1.0 C(sp=B1.0,rp=F3.0;wait) F3.0 "
           "C(sn=F3.0,rn=B2.0;wait) B2.0 C(sp=B2.0,rp=F4.0;wait) F4.0 "
           "C(sn=F4.0,rn=B3.0;wait) B3.0 C(sp=B3.0;wait) C(rn=B4.0;wait) B4.0 "
           "C(sp=B4.0;wait)",
           "C(rp=F0.0;wait) F0.0 B0.0 C(sp=B0.0,rp=F1.0;wait) F1.0 B1.0 "
           "C(sp=B1.0,rp=F2.0;wait) F2.0 B2.0 C(sp=B2.0,rp=F3.0;wait) F3.0 "
           "B3.0 C(sp=B3.0,rp=F4.0;wait) F4.0 B4.0 C(sp=B4.0;wait)",
       }},
      {"1f1b_p4_m2", PipelineScheduleKind::OneFOneB, 4, 1, 2, 0, false, false, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) C(rn=B0.0;wait) B0.0 "
           "C(rn=B1.0;wait) B1.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0;wait) C(rp=F1.0;wait) F1.0 "
           "C(sn=F1.0;wait) C(rn=B0.0;wait) B0.0 C(sp=B0.0;wait) "
           "C(rn=B1.0;wait) B1.0 C(sp=B1.0;wait)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0;wait) C(rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rn=B0.0;wait) B0.0 C(sp=B0.0;wait) C(rn=B1.0;wait) B1.0 "
           "C(sp=B1.0;wait)",
           "C(rp=F0.0;wait) F0.0 B0.0 C(sp=B0.0,rp=F1.0;wait) F1.0 B1.0 "
           "C(sp=B1.0;wait)",
       }},
      {"il_p2_v2_m4_batch", PipelineScheduleKind::Interleaved, 2, 2, 4, 0, true, false, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0,rp=F0.1;wait) F0.1 "
           "C(sn=F0.1,rp=F1.1;wait) F1.1 C(sn=F1.1,rn=B0.1;wait) F2.0 B0.1 "
           "C(sn=F2.0,sp=B0.1,rn=B1.1;wait) F3.0 B1.1 "
           "C(sn=F3.0,sp=B1.1,rp=F2.1,rn=B0.0;wait) F2.1 B0.0 "
           "C(sn=F2.1,rp=F3.1,rn=B1.0;wait) F3.1 B1.0 C(sn=F3.1,rn=B2.1;wait) "
           "B2.1 C(sp=B2.1,rn=B3.1;wait) B3.1 C(sp=B3.1,rn=B2.0;wait) B2.0 "
           "C(rn=B3.0;wait) B3.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F0.1;wait) F0.1 B0.1 C(sp=B0.1,rp=F1.1;wait) F1.1 "
           "B1.1 C(sp=B1.1,rp=F2.0,rn=B0.0;wait) F2.0 B0.0 "
           "C(sn=F2.0,sp=B0.0,rp=F3.0,rn=B1.0;wait) F3.0 B1.0 "
           "C(sn=F3.0,sp=B1.0,rp=F2.1;wait) F2.1 B2.1 C(sp=B2.1,rp=F3.1;wait) "
           "F3.1 B3.1 C(sp=B3.1,rn=B2.0;wait) B2.0 C(sp=B2.0,rn=B3.0;wait) "
           "B3.0 C(sp=B3.0;wait)",
       }},
      {"il_p2_v2_m4_overlap", PipelineScheduleKind::Interleaved, 2, 2, 4, 0, false, true, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0,rp=F0.1;wait) F0.1 "
           "C(sn=F0.1,rp=F1.1;wait) F1.1 C(sn=F1.1;wait) C(rn=B0.1;async) F2.0 "
           "C(sn=F2.0;async) W(rn=B0.1) B0.1 C(sp=B0.1,rn=B1.1;async) F3.0 "
           "C(sn=F3.0,rp=F2.1;async) W(sn=F2.0) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B0.0;async) W(sp=B0.1) W(rp=F2.1) F2.1 "
           "C(sn=F2.1,rp=F3.1;async) W(sn=F3.0) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B1.1) W(rp=F3.1) F3.1 C(sn=F3.1;async) "
           "W(sn=F2.1) W(rn=B1.0) B1.0 C(rn=B2.1;async) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B3.1;wait) B3.1 C(sp=B3.1,rn=B2.0;wait) B2.0 "
           "C(rn=B3.0;wait) B3.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F0.1;wait) F0.1 C(rp=F1.1;async) B0.1 "
           "C(sp=B0.1;async) W(rp=F1.1) F1.1 C(rp=F2.0;async) B1.1 "
           "C(sp=B1.1,rn=B0.0;async) W(sp=B0.1) W(rp=F2.0) F2.0 "
           "C(sn=F2.0,rp=F3.0;async) W(rn=B0.0) B0.0 C(sp=B0.0,rn=B1.0;async) "
           "W(sp=B1.1) W(rp=F3.0) F3.0 C(sn=F3.0,rp=F2.1;async) W(sn=F2.0) "
           "W(rn=B1.0) B1.0 C(sp=B1.0;async) W(sp=B0.0) W(rp=F2.1) F2.1 "
           "C(rp=F3.1;async) W(sn=F3.0) B2.1 C(sp=B2.1;async) W(sp=B1.0) "
           "W(rp=F3.1) F3.1 B3.1 C(sp=B3.1,rn=B2.0;async) W(sp=B2.1) "
           "W(rn=B2.0) B2.0 C(sp=B2.0,rn=B3.0;wait) B3.0 C(sp=B3.0;wait) "
           "W(sp=B3.1)",
       }},
      {"il_p2_v2_m4_overlap_flush", PipelineScheduleKind::Interleaved, 2, 2, 4, 0, false, true, true,
       {
           "F0.0 C(sn=F0.0;async) F1.0 C(sn=F1.0,rp=F0.1;async) W(sn=F0.0) "
           "W(rp=F0.1) F0.1 C(sn=F0.1,rp=F1.1;async) W(sn=F1.0) W(rp=F1.1) "
           "F1.1 C(sn=F1.1;async) W(sn=F0.1) C(rn=B0.1;async) F2.0 "
           "C(sn=F2.0;async) W(sn=F1.1) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) F3.0 C(sn=F3.0,rp=F2.1;async) W(sn=F2.0) "
           "W(rn=B1.1) B1.1 C(sp=B1.1,rn=B0.0;async) W(sp=B0.1) W(rp=F2.1) "
           "F2.1 C(sn=F2.1,rp=F3.1;async) W(sn=F3.0) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B1.1) W(rp=F3.1) F3.1 C(sn=F3.1;async) "
           "W(sn=F2.1) W(rn=B1.0) B1.0 C(rn=B2.1;async) W(rn=B2.1) "
           "C(rn=B3.1;async) B2.1 C(sp=B2.1;async) W(rn=B3.1) C(rn=B2.0;async) "
           "B3.1 C(sp=B3.1;async) W(sp=B2.1) W(rn=B2.0) C(rn=B3.0;async) B2.0 "
           "W(sp=B3.1) W(rn=B3.0) B3.0",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(rp=F1.0) "
           "C(rp=F0.1;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) W(rp=F0.1) F0.1 "
           "C(rp=F1.1;async) W(sn=F1.0) B0.1 C(sp=B0.1;async) W(rp=F1.1) F1.1 "
           "C(rp=F2.0;async) B1.1 C(sp=B1.1,rn=B0.0;async) W(sp=B0.1) "
           "W(rp=F2.0) F2.0 C(sn=F2.0,rp=F3.0;async) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B1.1) W(rp=F3.0) F3.0 "
           "C(sn=F3.0,rp=F2.1;async) W(sn=F2.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0;async) W(sp=B0.0) W(rp=F2.1) F2.1 C(rp=F3.1;async) "
           "W(sn=F3.0) B2.1 C(sp=B2.1;async) W(sp=B1.0) W(rp=F3.1) F3.1 B3.1 "
           "C(sp=B3.1,rn=B2.0;async) W(sp=B2.1) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.0;async) W(sp=B3.1) W(rn=B3.0) B3.0 "
           "C(sp=B3.0;async) W(sp=B2.0) W(sp=B3.0)",
       }},
      {"il_p3_v2_m6_batch", PipelineScheduleKind::Interleaved, 3, 2, 6, 0, true, false, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) F2.0 "
           "C(sn=F2.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1;wait) F2.1 C(sn=F2.1;wait) F3.0 "
           "C(sn=F3.0,rn=B0.1;wait) F4.0 B0.1 C(sn=F4.0,sp=B0.1,rn=B1.1;wait) "
           "F5.0 B1.1 C(sn=F5.0,sp=B1.1,rp=F3.1,rn=B2.1;wait) F3.1 B2.1 "
           "C(sn=F3.1,sp=B2.1,rp=F4.1,rn=B0.0;wait) F4.1 B0.0 "
           "C(sn=F4.1,rp=F5.1,rn=B1.0;wait) F5.1 B1.0 C(sn=F5.1,rn=B2.0;wait) "
           "B2.0 C(rn=B3.1;wait) B3.1 C(sp=B3.1,rn=B4.1;wait) B4.1 "
           "C(sp=B4.1,rn=B5.1;wait) B5.1 C(sp=B5.1,rn=B3.0;wait) B3.0 "
           "C(rn=B4.0;wait) B4.0 C(rn=B5.0;wait) B5.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 "
           "C(sn=F0.1,rp=F1.1;wait) F1.1 C(sn=F1.1,rp=F2.1,rn=B0.1;wait) F2.1 "
           "B0.1 C(sn=F2.1,sp=B0.1,rp=F3.0,rn=B1.1;wait) F3.0 B1.1 "
           "C(sn=F3.0,sp=B1.1,rp=F4.0,rn=B2.1;wait) F4.0 B2.1 "
           "C(sn=F4.0,sp=B2.1,rp=F5.0,rn=B0.0;wait) F5.0 B0.0 "
           "C(sn=F5.0,sp=B0.0,rp=F3.1,rn=B1.0;wait) F3.1 B1.0 "
           "C(sn=F3.1,sp=B1.0,rp=F4.1,rn=B2.0;wait) F4.1 B2.0 "
           "C(sn=F4.1,sp=B2.0,rp=F5.1,rn=B3.1;wait) F5.1 B3.1 "
           "C(sn=F5.1,sp=B3.1,rn=B4.1;wait) B4.1 C(sp=B4.1,rn=B5.1;wait) B5.1 "
           "C(sp=B5.1,rn=B3.0;wait) B3.0 C(sp=B3.0,rn=B4.0;wait) B4.0 "
           "C(sp=B4.0,rn=B5.0;wait) B5.0 C(sp=B5.0;wait)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 B0.1 "
           "C(sp=B0.1,rp=F1.1;wait) F1.1 B1.1 C(sp=B1.1,rp=F2.1;wait) F2.1 "
           "B2.1 C(sp=B2.1,rp=F3.0,rn=B0.0;wait) F3.0 B0.0 "
           "C(sn=F3.0,sp=B0.0,rp=F4.0,rn=B1.0;wait) F4.0 B1.0 "
           "C(sn=F4.0,sp=B1.0,rp=F5.0,rn=B2.0;wait) F5.0 B2.0 "
           "C(sn=F5.0,sp=B2.0,rp=F3.1;wait) F3.1 B3.1 C(sp=B3.1,rp=F4.1;wait) "
           "F4.1 B4.1 C(sp=B4.1,rp=F5.1;wait) F5.1 B5.1 "
           "C(sp=B5.1,rn=B3.0;wait) B3.0 C(sp=B3.0,rn=B4.0;wait) B4.0 "
           "C(sp=B4.0,rn=B5.0;wait) B5.0 C(sp=B5.0;wait)",
       }},
      {"il_p3_v2_m6_overlap", PipelineScheduleKind::Interleaved, 3, 2, 6, 0, false, true, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) F2.0 "
           "C(sn=F2.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1;wait) F2.1 C(sn=F2.1;wait) F3.0 C(sn=F3.0;wait) "
           "C(rn=B0.1;async) F4.0 C(sn=F4.0;async) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) F5.0 C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) "
           "W(rn=B1.1) B1.1 C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F3.1) "
           "F3.1 C(sn=F3.1,rp=F4.1;async) W(sn=F5.0) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F3.1) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B2.1) W(rp=F5.1) F5.1 C(sn=F5.1;async) "
           "W(sn=F4.1) W(rn=B1.0) B1.0 C(rn=B2.0;async) W(rn=B2.0) B2.0 "
           "C(rn=B3.1;wait) B3.1 C(sp=B3.1,rn=B4.1;wait) B4.1 "
           "C(sp=B4.1,rn=B5.1;wait) B5.1 C(sp=B5.1,rn=B3.0;wait) B3.0 "
           "C(rn=B4.0;wait) B4.0 C(rn=B5.0;wait) B5.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 "
           "C(sn=F0.1,rp=F1.1;wait) F1.1 C(sn=F1.1,rp=F2.1;wait) "
           "C(rn=B0.1;async) F2.1 C(sn=F2.1,rp=F3.0;async) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) W(rp=F3.0) F3.0 C(sn=F3.0,rp=F4.0;async) "
           "W(sn=F2.1) W(rn=B1.1) B1.1 C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) "
           "W(rp=F4.0) F4.0 C(sn=F4.0,rp=F5.0;async) W(sn=F3.0) W(rn=B2.1) "
           "B2.1 C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F5.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F3.1) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.1;async) W(sp=B1.0) W(rp=F5.1) F5.1 "
           "C(sn=F5.1;async) W(sn=F4.1) W(rn=B3.1) B3.1 "
           "C(sp=B3.1,rn=B4.1;async) W(sp=B2.0) W(rn=B4.1) B4.1 "
           "C(sp=B4.1,rn=B5.1;wait) B5.1 C(sp=B5.1,rn=B3.0;wait) B3.0 "
           "C(sp=B3.0,rn=B4.0;wait) B4.0 C(sp=B4.0,rn=B5.0;wait) B5.0 "
           "C(sp=B5.0;wait) W(sp=B3.1)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 "
           "C(rp=F1.1;async) B0.1 C(sp=B0.1;async) W(rp=F1.1) F1.1 "
           "C(rp=F2.1;async) B1.1 C(sp=B1.1;async) W(sp=B0.1) W(rp=F2.1) F2.1 "
           "C(rp=F3.0;async) B2.1 C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) "
           "W(rp=F3.0) F3.0 C(sn=F3.0,rp=F4.0;async) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F5.0;async) W(sn=F3.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) W(rn=B2.0) B2.0 "
           "C(sp=B2.0;async) W(sp=B1.0) W(rp=F3.1) F3.1 C(rp=F4.1;async) "
           "W(sn=F5.0) B3.1 C(sp=B3.1;async) W(sp=B2.0) W(rp=F4.1) F4.1 "
           "C(rp=F5.1;async) B4.1 C(sp=B4.1;async) W(sp=B3.1) W(rp=F5.1) F5.1 "
           "B5.1 C(sp=B5.1,rn=B3.0;async) W(sp=B4.1) W(rn=B3.0) B3.0 "
           "C(sp=B3.0,rn=B4.0;wait) B4.0 C(sp=B4.0,rn=B5.0;wait) B5.0 "
           "C(sp=B5.0;wait) W(sp=B5.1)",
       }},
      {"il_p3_v2_m6_overlap_flush", PipelineScheduleKind::Interleaved, 3, 2, 6, 0, false, true, true,
       {
           "F0.0 C(sn=F0.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) F2.0 "
           "C(sn=F2.0,rp=F0.1;async) W(sn=F1.0) W(rp=F0.1) F0.1 "
           "C(sn=F0.1,rp=F1.1;async) W(sn=F2.0) W(rp=F1.1) F1.1 "
           "C(sn=F1.1,rp=F2.1;async) W(sn=F0.1) W(rp=F2.1) F2.1 "
           "C(sn=F2.1;async) W(sn=F1.1) F3.0 C(sn=F3.0;async) W(sn=F2.1) "
           "C(rn=B0.1;async) F4.0 C(sn=F4.0;async) W(sn=F3.0) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) F5.0 C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) "
           "W(rn=B1.1) B1.1 C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F3.1) "
           "F3.1 C(sn=F3.1,rp=F4.1;async) W(sn=F5.0) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F3.1) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B2.1) W(rp=F5.1) F5.1 C(sn=F5.1;async) "
           "W(sn=F4.1) W(rn=B1.0) B1.0 C(rn=B2.0;async) W(rn=B2.0) "
           "C(rn=B3.1;async) B2.0 W(rn=B3.1) C(rn=B4.1;async) B3.1 "
           "C(sp=B3.1;async) W(rn=B4.1) C(rn=B5.1;async) B4.1 C(sp=B4.1;async) "
           "W(sp=B3.1) W(rn=B5.1) C(rn=B3.0;async) B5.1 C(sp=B5.1;async) "
           "W(sp=B4.1) W(rn=B3.0) C(rn=B4.0;async) B3.0 W(sp=B5.1) W(rn=B4.0) "
           "C(rn=B5.0;async) B4.0 W(rn=B5.0) B5.0",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(rp=F1.0) "
           "C(rp=F2.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) W(rp=F2.0) "
           "C(rp=F0.1;async) F2.0 C(sn=F2.0;async) W(sn=F1.0) W(rp=F0.1) "
           "C(rp=F1.1;async) F0.1 C(sn=F0.1;async) W(sn=F2.0) W(rp=F1.1) "
           "C(rp=F2.1;async) F1.1 C(sn=F1.1;async) W(sn=F0.1) C(rn=B0.1;async) "
           "W(rp=F2.1) F2.1 C(sn=F2.1,rp=F3.0;async) W(sn=F1.1) W(rn=B0.1) "
           "B0.1 C(sp=B0.1,rn=B1.1;async) W(rp=F3.0) F3.0 "
           "C(sn=F3.0,rp=F4.0;async) W(sn=F2.1) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F5.0;async) W(sn=F3.0) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F5.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F3.1) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.1;async) W(sp=B1.0) W(rp=F5.1) F5.1 "
           "C(sn=F5.1;async) W(sn=F4.1) W(rn=B3.1) B3.1 "
           "C(sp=B3.1,rn=B4.1;async) W(sp=B2.0) W(rn=B4.1) C(rn=B5.1;async) "
           "B4.1 C(sp=B4.1;async) W(sp=B3.1) W(rn=B5.1) C(rn=B3.0;async) B5.1 "
           "C(sp=B5.1;async) W(sp=B4.1) W(rn=B3.0) C(rn=B4.0;async) B3.0 "
           "C(sp=B3.0;async) W(sp=B5.1) W(rn=B4.0) C(rn=B5.0;async) B4.0 "
           "C(sp=B4.0;async) W(sp=B3.0) W(rn=B5.0) B5.0 C(sp=B5.0;async) "
           "W(sp=B4.0) W(sp=B5.0)",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(rp=F1.0) "
           "C(rp=F2.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) W(rp=F2.0) "
           "C(rp=F0.1;async) F2.0 C(sn=F2.0;async) W(sn=F1.0) W(rp=F0.1) F0.1 "
           "C(rp=F1.1;async) W(sn=F2.0) B0.1 C(sp=B0.1;async) W(rp=F1.1) F1.1 "
           "C(rp=F2.1;async) B1.1 C(sp=B1.1;async) W(sp=B0.1) W(rp=F2.1) F2.1 "
           "C(rp=F3.0;async) B2.1 C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) "
           "W(rp=F3.0) F3.0 C(sn=F3.0,rp=F4.0;async) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F5.0;async) W(sn=F3.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) W(rn=B2.0) B2.0 "
           "C(sp=B2.0;async) W(sp=B1.0) W(rp=F3.1) F3.1 C(rp=F4.1;async) "
           "W(sn=F5.0) B3.1 C(sp=B3.1;async) W(sp=B2.0) W(rp=F4.1) F4.1 "
           "C(rp=F5.1;async) B4.1 C(sp=B4.1;async) W(sp=B3.1) W(rp=F5.1) F5.1 "
           "B5.1 C(sp=B5.1,rn=B3.0;async) W(sp=B4.1) W(rn=B3.0) B3.0 "
           "C(sp=B3.0,rn=B4.0;async) W(sp=B5.1) W(rn=B4.0) B4.0 "
           "C(sp=B4.0,rn=B5.0;async) W(sp=B3.0) W(rn=B5.0) B5.0 "
           "C(sp=B5.0;async) W(sp=B4.0) W(sp=B5.0)",
       }},
      {"il_p3_v3_m6_overlap", PipelineScheduleKind::Interleaved, 3, 3, 6, 0, false, true, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) F2.0 "
           "C(sn=F2.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1;wait) F2.1 C(sn=F2.1,rp=F0.2;wait) F0.2 "
           "C(sn=F0.2,rp=F1.2;wait) F1.2 C(sn=F1.2,rp=F2.2;wait) F2.2 "
           "C(sn=F2.2;wait) F3.0 C(sn=F3.0;wait) C(rn=B0.2;async) F4.0 "
           "C(sn=F4.0;async) W(rn=B0.2) B0.2 C(sp=B0.2,rn=B1.2;async) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) W(rn=B1.2) B1.2 "
           "C(sp=B1.2,rn=B2.2;async) W(sp=B0.2) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F5.0) W(rn=B2.2) B2.2 "
           "C(sp=B2.2,rn=B0.1;async) W(sp=B1.2) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F3.1) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) W(sp=B2.2) W(rp=F5.1) F5.1 "
           "C(sn=F5.1,rp=F3.2;async) W(sn=F4.1) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F3.2) F3.2 "
           "C(sn=F3.2,rp=F4.2;async) W(sn=F5.1) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F4.2) F4.2 "
           "C(sn=F4.2,rp=F5.2;async) W(sn=F3.2) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B2.1) W(rp=F5.2) F5.2 C(sn=F5.2;async) "
           "W(sn=F4.2) W(rn=B1.0) B1.0 C(rn=B2.0;async) W(rn=B2.0) B2.0 "
           "C(rn=B3.2;wait) B3.2 C(sp=B3.2,rn=B4.2;wait) B4.2 "
           "C(sp=B4.2,rn=B5.2;wait) B5.2 C(sp=B5.2,rn=B3.1;wait) B3.1 "
           "C(sp=B3.1,rn=B4.1;wait) B4.1 C(sp=B4.1,rn=B5.1;wait) B5.1 "
           "C(sp=B5.1,rn=B3.0;wait) B3.0 C(rn=B4.0;wait) B4.0 C(rn=B5.0;wait) "
           "B5.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 "
           "C(sn=F0.1,rp=F1.1;wait) F1.1 C(sn=F1.1,rp=F2.1;wait) F2.1 "
           "C(sn=F2.1,rp=F0.2;wait) F0.2 C(sn=F0.2,rp=F1.2;wait) F1.2 "
           "C(sn=F1.2,rp=F2.2;wait) C(rn=B0.2;async) F2.2 "
           "C(sn=F2.2,rp=F3.0;async) W(rn=B0.2) B0.2 C(sp=B0.2,rn=B1.2;async) "
           "W(rp=F3.0) F3.0 C(sn=F3.0,rp=F4.0;async) W(sn=F2.2) W(rn=B1.2) "
           "B1.2 C(sp=B1.2,rn=B2.2;async) W(sp=B0.2) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F5.0;async) W(sn=F3.0) W(rn=B2.2) B2.2 "
           "C(sp=B2.2,rn=B0.1;async) W(sp=B1.2) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) W(sp=B2.2) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F5.0) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F3.1) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F5.1) F5.1 "
           "C(sn=F5.1,rp=F3.2;async) W(sn=F4.1) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F3.2) F3.2 "
           "C(sn=F3.2,rp=F4.2;async) W(sn=F5.1) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F4.2) F4.2 "
           "C(sn=F4.2,rp=F5.2;async) W(sn=F3.2) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.2;async) W(sp=B1.0) W(rp=F5.2) F5.2 "
           "C(sn=F5.2;async) W(sn=F4.2) W(rn=B3.2) B3.2 "
           "C(sp=B3.2,rn=B4.2;async) W(sp=B2.0) W(rn=B4.2) B4.2 "
           "C(sp=B4.2,rn=B5.2;wait) B5.2 C(sp=B5.2,rn=B3.1;wait) B3.1 "
           "C(sp=B3.1,rn=B4.1;wait) B4.1 C(sp=B4.1,rn=B5.1;wait) B5.1 "
           "C(sp=B5.1,rn=B3.0;wait) B3.0 C(sp=B3.0,rn=B4.0;wait) B4.0 "
           "C(sp=B4.0,rn=B5.0;wait) B5.0 C(sp=B5.0;wait) W(sp=B3.2)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 "
           "C(sn=F0.1,rp=F1.1;wait) F1.1 C(sn=F1.1,rp=F2.1;wait) F2.1 "
           "C(sn=F2.1,rp=F0.2;wait) F0.2 C(rp=F1.2;async) B0.2 "
           "C(sp=B0.2;async) W(rp=F1.2) F1.2 C(rp=F2.2;async) B1.2 "
           "C(sp=B1.2;async) W(sp=B0.2) W(rp=F2.2) F2.2 C(rp=F3.0;async) B2.2 "
           "C(sp=B2.2,rn=B0.1;async) W(sp=B1.2) W(rp=F3.0) F3.0 "
           "C(sn=F3.0,rp=F4.0;async) W(rn=B0.1) B0.1 C(sp=B0.1,rn=B1.1;async) "
           "W(sp=B2.2) W(rp=F4.0) F4.0 C(sn=F4.0,rp=F5.0;async) W(sn=F3.0) "
           "W(rn=B1.1) B1.1 C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F5.0) "
           "F5.0 C(sn=F5.0,rp=F3.1;async) W(sn=F4.0) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F5.0) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F3.1) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F5.1) F5.1 "
           "C(sn=F5.1,rp=F3.2;async) W(sn=F4.1) W(rn=B2.0) B2.0 "
           "C(sp=B2.0;async) W(sp=B1.0) W(rp=F3.2) F3.2 C(rp=F4.2;async) "
           "W(sn=F5.1) B3.2 C(sp=B3.2;async) W(sp=B2.0) W(rp=F4.2) F4.2 "
           "C(rp=F5.2;async) B4.2 C(sp=B4.2;async) W(sp=B3.2) W(rp=F5.2) F5.2 "
           "B5.2 C(sp=B5.2,rn=B3.1;async) W(sp=B4.2) W(rn=B3.1) B3.1 "
           "C(sp=B3.1,rn=B4.1;wait) B4.1 C(sp=B4.1,rn=B5.1;wait) B5.1 "
           "C(sp=B5.1,rn=B3.0;wait) B3.0 C(sp=B3.0,rn=B4.0;wait) B4.0 "
           "C(sp=B4.0,rn=B5.0;wait) B5.0 C(sp=B5.0;wait) W(sp=B5.2)",
       }},
      {"il_p4_v2_m4_batch", PipelineScheduleKind::Interleaved, 4, 2, 4, 0, true, false, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) F2.0 C(sn=F2.0;wait) "
           "F3.0 C(sn=F3.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1;wait) F2.1 C(sn=F2.1,rp=F3.1;wait) F3.1 "
           "C(sn=F3.1;wait) C(rn=B0.1;wait) B0.1 C(sp=B0.1,rn=B1.1;wait) B1.1 "
           "C(sp=B1.1,rn=B2.1;wait) B2.1 C(sp=B2.1,rn=B3.1;wait) B3.1 "
           "C(sp=B3.1,rn=B0.0;wait) B0.0 C(rn=B1.0;wait) B1.0 C(rn=B2.0;wait) "
           "B2.0 C(rn=B3.0;wait) B3.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F3.0;wait) F3.0 "
           "C(sn=F3.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1;wait) F2.1 C(sn=F2.1,rp=F3.1;wait) F3.1 "
           "C(sn=F3.1;wait) C(rn=B0.1;wait) B0.1 C(sp=B0.1,rn=B1.1;wait) B1.1 "
           "C(sp=B1.1,rn=B2.1;wait) B2.1 C(sp=B2.1,rn=B3.1;wait) B3.1 "
           "C(sp=B3.1,rn=B0.0;wait) B0.0 C(sp=B0.0,rn=B1.0;wait) B1.0 "
           "C(sp=B1.0,rn=B2.0;wait) B2.0 C(sp=B2.0,rn=B3.0;wait) B3.0 "
           "C(sp=B3.0;wait)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F3.0;wait) F3.0 "
           "C(sn=F3.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1,rn=B0.1;wait) F2.1 B0.1 "
           "C(sn=F2.1,sp=B0.1,rp=F3.1,rn=B1.1;wait) F3.1 B1.1 "
           "C(sn=F3.1,sp=B1.1,rn=B2.1;wait) B2.1 C(sp=B2.1,rn=B3.1;wait) B3.1 "
           "C(sp=B3.1,rn=B0.0;wait) B0.0 C(sp=B0.0,rn=B1.0;wait) B1.0 "
           "C(sp=B1.0,rn=B2.0;wait) B2.0 C(sp=B2.0,rn=B3.0;wait) B3.0 "
           "C(sp=B3.0;wait)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F3.0;wait) F3.0 "
           "C(sn=F3.0,rp=F0.1;wait) F0.1 B0.1 C(sp=B0.1,rp=F1.1;wait) F1.1 "
           "B1.1 C(sp=B1.1,rp=F2.1;wait) F2.1 B2.1 C(sp=B2.1,rp=F3.1;wait) "
           "F3.1 B3.1 C(sp=B3.1,rn=B0.0;wait) B0.0 C(sp=B0.0,rn=B1.0;wait) "
           "B1.0 C(sp=B1.0,rn=B2.0;wait) B2.0 C(sp=B2.0,rn=B3.0;wait) B3.0 "
           "C(sp=B3.0;wait)",
       }},
      {"il_p4_v2_m4_overlap_flush", PipelineScheduleKind::Interleaved, 4, 2, 4, 0, false, true, true,
       {
           "F0.0 C(sn=F0.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) F2.0 "
           "C(sn=F2.0;async) W(sn=F1.0) F3.0 C(sn=F3.0,rp=F0.1;async) "
           "W(sn=F2.0) W(rp=F0.1) F0.1 C(sn=F0.1,rp=F1.1;async) W(sn=F3.0) "
           "W(rp=F1.1) F1.1 C(sn=F1.1,rp=F2.1;async) W(sn=F0.1) W(rp=F2.1) "
           "F2.1 C(sn=F2.1,rp=F3.1;async) W(sn=F1.1) W(rp=F3.1) F3.1 "
           "C(sn=F3.1;async) W(sn=F2.1) C(rn=B0.1;wait) C(rn=B1.1;async) B0.1 "
           "C(sp=B0.1;async) W(rn=B1.1) C(rn=B2.1;async) B1.1 C(sp=B1.1;async) "
           "W(sp=B0.1) W(rn=B2.1) C(rn=B3.1;async) B2.1 C(sp=B2.1;async) "
           "W(sp=B1.1) W(rn=B3.1) C(rn=B0.0;async) B3.1 C(sp=B3.1;async) "
           "W(sp=B2.1) W(rn=B0.0) C(rn=B1.0;async) B0.0 W(sp=B3.1) W(rn=B1.0) "
           "C(rn=B2.0;async) B1.0 W(rn=B2.0) C(rn=B3.0;async) B2.0 W(rn=B3.0) "
           "B3.0",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(rp=F1.0) "
           "C(rp=F2.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) W(rp=F2.0) "
           "C(rp=F3.0;async) F2.0 C(sn=F2.0;async) W(sn=F1.0) W(rp=F3.0) "
           "C(rp=F0.1;async) F3.0 C(sn=F3.0;async) W(sn=F2.0) W(rp=F0.1) "
           "C(rp=F1.1;async) F0.1 C(sn=F0.1;async) W(sn=F3.0) W(rp=F1.1) "
           "C(rp=F2.1;async) F1.1 C(sn=F1.1;async) W(sn=F0.1) W(rp=F2.1) "
           "C(rp=F3.1;async) F2.1 C(sn=F2.1;async) W(sn=F1.1) W(rp=F3.1) F3.1 "
           "C(sn=F3.1;async) W(sn=F2.1) C(rn=B0.1;wait) C(rn=B1.1;async) B0.1 "
           "C(sp=B0.1;async) W(rn=B1.1) C(rn=B2.1;async) B1.1 C(sp=B1.1;async) "
           "W(sp=B0.1) W(rn=B2.1) C(rn=B3.1;async) B2.1 C(sp=B2.1;async) "
           "W(sp=B1.1) W(rn=B3.1) C(rn=B0.0;async) B3.1 C(sp=B3.1;async) "
           "W(sp=B2.1) W(rn=B0.0) C(rn=B1.0;async) B0.0 C(sp=B0.0;async) "
           "W(sp=B3.1) W(rn=B1.0) C(rn=B2.0;async) B1.0 C(sp=B1.0;async) "
           "W(sp=B0.0) W(rn=B2.0) C(rn=B3.0;async) B2.0 C(sp=B2.0;async) "
           "W(sp=B1.0) W(rn=B3.0) B3.0 C(sp=B3.0;async) W(sp=B2.0) W(sp=B3.0)",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(rp=F1.0) "
           "C(rp=F2.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) W(rp=F2.0) "
           "C(rp=F3.0;async) F2.0 C(sn=F2.0;async) W(sn=F1.0) W(rp=F3.0) "
           "C(rp=F0.1;async) F3.0 C(sn=F3.0;async) W(sn=F2.0) W(rp=F0.1) "
           "C(rp=F1.1;async) F0.1 C(sn=F0.1;async) W(sn=F3.0) W(rp=F1.1) "
           "C(rp=F2.1;async) F1.1 C(sn=F1.1;async) W(sn=F0.1) C(rn=B0.1;async) "
           "W(rp=F2.1) F2.1 C(sn=F2.1,rp=F3.1;async) W(sn=F1.1) W(rn=B0.1) "
           "B0.1 C(sp=B0.1,rn=B1.1;async) W(rp=F3.1) F3.1 C(sn=F3.1;async) "
           "W(sn=F2.1) W(rn=B1.1) B1.1 C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) "
           "W(rn=B2.1) C(rn=B3.1;async) B2.1 C(sp=B2.1;async) W(sp=B1.1) "
           "W(rn=B3.1) C(rn=B0.0;async) B3.1 C(sp=B3.1;async) W(sp=B2.1) "
           "W(rn=B0.0) C(rn=B1.0;async) B0.0 C(sp=B0.0;async) W(sp=B3.1) "
           "W(rn=B1.0) C(rn=B2.0;async) B1.0 C(sp=B1.0;async) W(sp=B0.0) "
           "W(rn=B2.0) C(rn=B3.0;async) B2.0 C(sp=B2.0;async) W(sp=B1.0) "
           "W(rn=B3.0) B3.0 C(sp=B3.0;async) W(sp=B2.0) W(sp=B3.0)",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(rp=F1.0) "
           "C(rp=F2.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) W(rp=F2.0) "
           "C(rp=F3.0;async) F2.0 C(sn=F2.0;async) W(sn=F1.0) W(rp=F3.0) "
           "C(rp=F0.1;async) F3.0 C(sn=F3.0;async) W(sn=F2.0) W(rp=F0.1) F0.1 "
           "C(rp=F1.1;async) W(sn=F3.0) B0.1 C(sp=B0.1;async) W(rp=F1.1) F1.1 "
           "C(rp=F2.1;async) B1.1 C(sp=B1.1;async) W(sp=B0.1) W(rp=F2.1) F2.1 "
           "C(rp=F3.1;async) B2.1 C(sp=B2.1;async) W(sp=B1.1) W(rp=F3.1) F3.1 "
           "B3.1 C(sp=B3.1,rn=B0.0;async) W(sp=B2.1) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B3.1) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.0;async) W(sp=B1.0) W(rn=B3.0) B3.0 "
           "C(sp=B3.0;async) W(sp=B2.0) W(sp=B3.0)",
       }},
      {"il_p2_v3_m5_g3_overlap_flush", PipelineScheduleKind::Interleaved, 2, 3, 5, 3, false, true, true,
       {
           "F0.0 C(sn=F0.0;async) F1.0 C(sn=F1.0,rp=F0.1;async) W(sn=F0.0) "
           "F2.0 C(sn=F2.0,rp=F1.1;async) W(sn=F1.0) W(rp=F0.1) F0.1 "
           "C(sn=F0.1,rp=F2.1;async) W(sn=F2.0) W(rp=F1.1) F1.1 "
           "C(sn=F1.1,rp=F0.2;async) W(sn=F0.1) W(rp=F2.1) F2.1 "
           "C(sn=F2.1,rp=F1.2;async) W(sn=F1.1) W(rp=F0.2) F0.2 "
           "C(sn=F0.2,rp=F2.2;async) W(sn=F2.1) W(rp=F1.2) F1.2 "
           "C(sn=F1.2;async) W(sn=F0.2) C(rn=B0.2;async) W(rp=F2.2) F2.2 "
           "C(sn=F2.2;async) W(sn=F1.2) W(rn=B0.2) B0.2 "
           "C(sp=B0.2,rn=B1.2;async) F3.0 C(sn=F3.0;async) W(sn=F2.2) "
           "W(rn=B1.2) B1.2 C(sp=B1.2,rn=B2.2;async) W(sp=B0.2) F4.0 "
           "C(sn=F4.0,rp=F3.1;async) W(sn=F3.0) W(rn=B2.2) B2.2 "
           "C(sp=B2.2,rn=B0.1;async) W(sp=B1.2) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F4.0) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) W(sp=B2.2) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F3.2;async) W(sn=F3.1) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F3.2) F3.2 "
           "C(sn=F3.2,rp=F4.2;async) W(sn=F4.1) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F4.2) F4.2 "
           "C(sn=F4.2;async) W(sn=F3.2) W(rn=B0.0) B0.0 C(rn=B1.0;async) "
           "W(sp=B2.1) W(rn=B1.0) C(rn=B2.0;async) B1.0 W(rn=B2.0) "
           "C(rn=B3.2;async) B2.0 W(rn=B3.2) C(rn=B4.2;async) B3.2 "
           "C(sp=B3.2;async) W(rn=B4.2) C(rn=B3.1;async) B4.2 C(sp=B4.2;async) "
           "W(sp=B3.2) W(rn=B3.1) C(rn=B4.1;async) B3.1 C(sp=B3.1;async) "
           "W(sp=B4.2) W(rn=B4.1) C(rn=B3.0;async) B4.1 C(sp=B4.1;async) "
           "W(sp=B3.1) W(rn=B3.0) C(rn=B4.0;async) B3.0 W(sp=B4.1) W(rn=B4.0) "
           "B4.0",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(rp=F1.0) "
           "C(rp=F2.0;async) F1.0 C(sn=F1.0;async) W(sn=F0.0) W(rp=F2.0) "
           "C(rp=F0.1;async) F2.0 C(sn=F2.0;async) W(sn=F1.0) W(rp=F0.1) "
           "C(rp=F1.1;async) F0.1 C(sn=F0.1;async) W(sn=F2.0) W(rp=F1.1) "
           "C(rp=F2.1;async) F1.1 C(sn=F1.1;async) W(sn=F0.1) W(rp=F2.1) "
           "C(rp=F0.2;async) F2.1 C(sn=F2.1;async) W(sn=F1.1) W(rp=F0.2) F0.2 "
           "C(rp=F1.2;async) W(sn=F2.1) B0.2 C(sp=B0.2;async) W(rp=F1.2) F1.2 "
           "C(rp=F2.2;async) B1.2 C(sp=B1.2,rn=B0.1;async) W(sp=B0.2) "
           "W(rp=F2.2) F2.2 C(rp=F3.0;async) B2.2 C(sp=B2.2,rn=B1.1;async) "
           "W(sp=B1.2) W(rp=F3.0) F3.0 C(sn=F3.0,rp=F4.0;async) W(rn=B0.1) "
           "B0.1 C(sp=B0.1,rn=B2.1;async) W(sp=B2.2) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F3.1;async) W(sn=F3.0) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B0.0;async) W(sp=B0.1) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F4.0) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B1.0;async) W(sp=B1.1) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F3.2;async) W(sn=F3.1) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B2.0;async) W(sp=B2.1) W(rp=F3.2) F3.2 "
           "C(rp=F4.2;async) W(sn=F4.1) W(rn=B1.0) B1.0 C(sp=B1.0;async) "
           "W(sp=B0.0) W(rp=F4.2) F4.2 W(rn=B2.0) B2.0 C(sp=B2.0;async) "
           "W(sp=B1.0) B3.2 C(sp=B3.2;async) W(sp=B2.0) B4.2 "
           "C(sp=B4.2,rn=B3.1;async) W(sp=B3.2) W(rn=B3.1) B3.1 "
           "C(sp=B3.1,rn=B4.1;async) W(sp=B4.2) W(rn=B4.1) B4.1 "
           "C(sp=B4.1,rn=B3.0;async) W(sp=B3.1) W(rn=B3.0) B3.0 "
           "C(sp=B3.0,rn=B4.0;async) W(sp=B4.1) W(rn=B4.0) B4.0 "
           "C(sp=B4.0;async) W(sp=B3.0) W(sp=B4.0)",
       }},
      {"il_p3_v2_m7_g4_overlap", PipelineScheduleKind::Interleaved, 3, 2, 7, 4, false, true, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) F2.0 "
           "C(sn=F2.0,rp=F0.1;wait) F3.0 C(sn=F3.0,rp=F1.1;wait) F0.1 "
           "C(sn=F0.1,rp=F2.1;wait) F1.1 C(sn=F1.1,rp=F3.1;wait) F2.1 "
           "C(sn=F2.1;wait) F3.1 C(sn=F3.1;wait) C(rn=B0.1;async) F4.0 "
           "C(sn=F4.0;async) W(rn=B0.1) B0.1 C(sp=B0.1,rn=B1.1;async) F5.0 "
           "C(sn=F5.0;async) W(sn=F4.0) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) F6.0 C(sn=F6.0,rp=F4.1;async) "
           "W(sn=F5.0) W(rn=B2.1) B2.1 C(sp=B2.1,rn=B3.1;async) W(sp=B1.1) "
           "W(rp=F4.1) F4.1 C(sn=F4.1,rp=F5.1;async) W(sn=F6.0) W(rn=B3.1) "
           "B3.1 C(sp=B3.1,rn=B0.0;async) W(sp=B2.1) W(rp=F5.1) F5.1 "
           "C(sn=F5.1,rp=F6.1;async) W(sn=F4.1) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B3.1) W(rp=F6.1) F6.1 C(sn=F6.1;async) "
           "W(sn=F5.1) W(rn=B1.0) B1.0 C(rn=B2.0;async) W(rn=B2.0) B2.0 "
           "C(rn=B3.0;wait) B3.0 C(rn=B4.1;wait) B4.1 C(sp=B4.1,rn=B5.1;wait) "
           "B5.1 C(sp=B5.1,rn=B6.1;wait) B6.1 C(sp=B6.1,rn=B4.0;wait) B4.0 "
           "C(rn=B5.0;wait) B5.0 C(rn=B6.0;wait) B6.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F3.0;wait) F3.0 "
           "C(sn=F3.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1;wait) C(rn=B0.1;async) F2.1 "
           "C(sn=F2.1,rp=F3.1;async) W(rn=B0.1) B0.1 C(sp=B0.1,rn=B1.1;async) "
           "W(rp=F3.1) F3.1 C(sn=F3.1,rp=F4.0;async) W(sn=F2.1) W(rn=B1.1) "
           "B1.1 C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F5.0;async) W(sn=F3.1) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B3.1;async) W(sp=B1.1) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F6.0;async) W(sn=F4.0) W(rn=B3.1) B3.1 "
           "C(sp=B3.1,rn=B0.0;async) W(sp=B2.1) W(rp=F6.0) F6.0 "
           "C(sn=F6.0,rp=F4.1;async) W(sn=F5.0) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B3.1) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F6.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F5.1) F5.1 "
           "C(sn=F5.1,rp=F6.1;async) W(sn=F4.1) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.0;async) W(sp=B1.0) W(rp=F6.1) F6.1 "
           "C(sn=F6.1;async) W(sn=F5.1) W(rn=B3.0) B3.0 "
           "C(sp=B3.0,rn=B4.1;async) W(sp=B2.0) W(rn=B4.1) B4.1 "
           "C(sp=B4.1,rn=B5.1;wait) B5.1 C(sp=B5.1,rn=B6.1;wait) B6.1 "
           "C(sp=B6.1,rn=B4.0;wait) B4.0 C(sp=B4.0,rn=B5.0;wait) B5.0 "
           "C(sp=B5.0,rn=B6.0;wait) B6.0 C(sp=B6.0;wait) W(sp=B3.0)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F3.0;wait) F3.0 "
           "C(sn=F3.0,rp=F0.1;wait) F0.1 C(rp=F1.1;async) B0.1 "
           "C(sp=B0.1;async) W(rp=F1.1) F1.1 C(rp=F2.1;async) B1.1 "
           "C(sp=B1.1;async) W(sp=B0.1) W(rp=F2.1) F2.1 C(rp=F3.1;async) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F3.1) F3.1 "
           "C(rp=F4.0;async) B3.1 C(sp=B3.1,rn=B1.0;async) W(sp=B2.1) "
           "W(rp=F4.0) F4.0 C(sn=F4.0,rp=F5.0;async) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B2.0;async) W(sp=B3.1) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F6.0;async) W(sn=F4.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B3.0;async) W(sp=B0.0) W(rp=F6.0) F6.0 "
           "C(sn=F6.0,rp=F4.1;async) W(sn=F5.0) W(rn=B2.0) B2.0 "
           "C(sp=B2.0;async) W(sp=B1.0) W(rp=F4.1) F4.1 C(rp=F5.1;async) "
           "W(sn=F6.0) W(rn=B3.0) B3.0 C(sp=B3.0;async) W(sp=B2.0) W(rp=F5.1) "
           "F5.1 C(rp=F6.1;async) B4.1 C(sp=B4.1;async) W(sp=B3.0) W(rp=F6.1) "
           "F6.1 B5.1 C(sp=B5.1;async) W(sp=B4.1) B6.1 C(sp=B6.1,rn=B4.0;wait) "
           "B4.0 C(sp=B4.0,rn=B5.0;wait) B5.0 C(sp=B5.0,rn=B6.0;wait) B6.0 "
           "C(sp=B6.0;wait) W(sp=B5.1)",
       }},
      {"il_p3_v2_m6_overlap_deallocate", PipelineScheduleKind::Interleaved, 3, 2, 6, 0, false, true, false,
       {
           "F0.0 C(sn=F0.0;wait) F1.0 C(sn=F1.0;wait) F2.0 "
           "C(sn=F2.0,rp=F0.1;wait) F0.1 C(sn=F0.1,rp=F1.1;wait) F1.1 "
           "C(sn=F1.1,rp=F2.1;wait) F2.1 C(sn=F2.1;wait) F3.0 C(sn=F3.0;wait) "
           "C(rn=B0.1;async) F4.0 C(sn=F4.0;async) W(sn=F4.0) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) F5.0 C(sn=F5.0,rp=F3.1;async) W(sn=F5.0) "
           "W(rn=B1.1) B1.1 C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F3.1) "
           "F3.1 C(sn=F3.1,rp=F4.1;async) W(sn=F3.1) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F4.1) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B2.1) W(rp=F5.1) F5.1 C(sn=F5.1;async) "
           "W(sn=F5.1) W(rn=B1.0) B1.0 C(rn=B2.0;async) W(rn=B2.0) B2.0 "
           "C(rn=B3.1;wait) B3.1 C(sp=B3.1,rn=B4.1;wait) B4.1 "
           "C(sp=B4.1,rn=B5.1;wait) B5.1 C(sp=B5.1,rn=B3.0;wait) B3.0 "
           "C(rn=B4.0;wait) B4.0 C(rn=B5.0;wait) B5.0",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 "
           "C(sn=F0.1,rp=F1.1;wait) F1.1 C(sn=F1.1,rp=F2.1;wait) "
           "C(rn=B0.1;async) F2.1 C(sn=F2.1,rp=F3.0;async) W(sn=F2.1) "
           "W(rn=B0.1) B0.1 C(sp=B0.1,rn=B1.1;async) W(rp=F3.0) F3.0 "
           "C(sn=F3.0,rp=F4.0;async) W(sn=F3.0) W(rn=B1.1) B1.1 "
           "C(sp=B1.1,rn=B2.1;async) W(sp=B0.1) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F5.0;async) W(sn=F4.0) W(rn=B2.1) B2.1 "
           "C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F5.0) W(rn=B0.0) B0.0 "
           "C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F3.1) F3.1 "
           "C(sn=F3.1,rp=F4.1;async) W(sn=F3.1) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F4.1) F4.1 "
           "C(sn=F4.1,rp=F5.1;async) W(sn=F4.1) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.1;async) W(sp=B1.0) W(rp=F5.1) F5.1 "
           "C(sn=F5.1;async) W(sn=F5.1) W(rn=B3.1) B3.1 "
           "C(sp=B3.1,rn=B4.1;async) W(sp=B2.0) W(rn=B4.1) B4.1 "
           "C(sp=B4.1,rn=B5.1;wait) B5.1 C(sp=B5.1,rn=B3.0;wait) B3.0 "
           "C(sp=B3.0,rn=B4.0;wait) B4.0 C(sp=B4.0,rn=B5.0;wait) B5.0 "
           "C(sp=B5.0;wait) W(sp=B3.1)",
           "C(rp=F0.0;wait) F0.0 C(sn=F0.0,rp=F1.0;wait) F1.0 "
           "C(sn=F1.0,rp=F2.0;wait) F2.0 C(sn=F2.0,rp=F0.1;wait) F0.1 "
           "C(rp=F1.1;async) B0.1 C(sp=B0.1;async) W(rp=F1.1) F1.1 "
           "C(rp=F2.1;async) B1.1 C(sp=B1.1;async) W(sp=B0.1) W(rp=F2.1) F2.1 "
           "C(rp=F3.0;async) B2.1 C(sp=B2.1,rn=B0.0;async) W(sp=B1.1) "
           "W(rp=F3.0) F3.0 C(sn=F3.0,rp=F4.0;async) W(sn=F3.0) W(rn=B0.0) "
           "B0.0 C(sp=B0.0,rn=B1.0;async) W(sp=B2.1) W(rp=F4.0) F4.0 "
           "C(sn=F4.0,rp=F5.0;async) W(sn=F4.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0,rn=B2.0;async) W(sp=B0.0) W(rp=F5.0) F5.0 "
           "C(sn=F5.0,rp=F3.1;async) W(sn=F5.0) W(rn=B2.0) B2.0 "
           "C(sp=B2.0;async) W(sp=B1.0) W(rp=F3.1) F3.1 C(rp=F4.1;async) B3.1 "
           "C(sp=B3.1;async) W(sp=B2.0) W(rp=F4.1) F4.1 C(rp=F5.1;async) B4.1 "
           "C(sp=B4.1;async) W(sp=B3.1) W(rp=F5.1) F5.1 B5.1 "
           "C(sp=B5.1,rn=B3.0;async) W(sp=B4.1) W(rn=B3.0) B3.0 "
           "C(sp=B3.0,rn=B4.0;wait) B4.0 C(sp=B4.0,rn=B5.0;wait) B5.0 "
           "C(sp=B5.0;wait) W(sp=B5.1)",
       },
       /*deallocate=*/true},
      {"il_p2_v2_m4_flush_deallocate", PipelineScheduleKind::Interleaved, 2, 2, 4, 0, false, true, true,
       {
           "F0.0 C(sn=F0.0;async) W(sn=F0.0) F1.0 C(sn=F1.0,rp=F0.1;async) "
           "W(sn=F1.0) W(rp=F0.1) F0.1 C(sn=F0.1,rp=F1.1;async) W(sn=F0.1) "
           "W(rp=F1.1) F1.1 C(sn=F1.1;async) W(sn=F1.1) C(rn=B0.1;async) F2.0 "
           "C(sn=F2.0;async) W(sn=F2.0) W(rn=B0.1) B0.1 "
           "C(sp=B0.1,rn=B1.1;async) F3.0 C(sn=F3.0,rp=F2.1;async) W(sn=F3.0) "
           "W(rn=B1.1) B1.1 C(sp=B1.1,rn=B0.0;async) W(sp=B0.1) W(rp=F2.1) "
           "F2.1 C(sn=F2.1,rp=F3.1;async) W(sn=F2.1) W(rn=B0.0) B0.0 "
           "C(rn=B1.0;async) W(sp=B1.1) W(rp=F3.1) F3.1 C(sn=F3.1;async) "
           "W(sn=F3.1) W(rn=B1.0) B1.0 C(rn=B2.1;async) W(rn=B2.1) "
           "C(rn=B3.1;async) B2.1 C(sp=B2.1;async) W(rn=B3.1) C(rn=B2.0;async) "
           "B3.1 C(sp=B3.1;async) W(sp=B2.1) W(rn=B2.0) C(rn=B3.0;async) B2.0 "
           "W(sp=B3.1) W(rn=B3.0) B3.0",
           "C(rp=F0.0;wait) C(rp=F1.0;async) F0.0 C(sn=F0.0;async) W(sn=F0.0) "
           "W(rp=F1.0) C(rp=F0.1;async) F1.0 C(sn=F1.0;async) W(sn=F1.0) "
           "W(rp=F0.1) F0.1 C(rp=F1.1;async) B0.1 C(sp=B0.1;async) W(rp=F1.1) "
           "F1.1 C(rp=F2.0;async) B1.1 C(sp=B1.1,rn=B0.0;async) W(sp=B0.1) "
           "W(rp=F2.0) F2.0 C(sn=F2.0,rp=F3.0;async) W(sn=F2.0) W(rn=B0.0) "
           "B0.0 C(sp=B0.0,rn=B1.0;async) W(sp=B1.1) W(rp=F3.0) F3.0 "
           "C(sn=F3.0,rp=F2.1;async) W(sn=F3.0) W(rn=B1.0) B1.0 "
           "C(sp=B1.0;async) W(sp=B0.0) W(rp=F2.1) F2.1 C(rp=F3.1;async) B2.1 "
           "C(sp=B2.1;async) W(sp=B1.0) W(rp=F3.1) F3.1 B3.1 "
           "C(sp=B3.1,rn=B2.0;async) W(sp=B2.1) W(rn=B2.0) B2.0 "
           "C(sp=B2.0,rn=B3.0;async) W(sp=B3.1) W(rn=B3.0) B3.0 "
           "C(sp=B3.0;async) W(sp=B2.0) W(sp=B3.0)",
       },
       /*deallocate=*/true},
  };
  return exchanges;
}

} // namespace ddp::megatron

#endif // DDP_UNITTESTS_STAGES_MEGATRONEXCHANGES_H
