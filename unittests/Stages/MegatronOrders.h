//===- MegatronOrders.h - Megatron-Core's per-rank orders -------*- C++ -*-===//
//
// What Megatron-Core's schedules.py runs on each pipeline rank (NVIDIA/
// Megatron-LM d98e8a64: get_schedule_table L989-1016,
// get_pp_rank_microbatches L929-986, the loops of
// forward_backward_pipelining_with_interleaving L1573/L1733/L1971 and
// _without_interleaving L2334/L2379/L2452). Printed by running those
// functions with torch and the p2p communicator stubbed out; 4440 shapes of
// p <= 5, v <= 4, m <= 12 agreed with a transcription of the loops, and
// these are the cases the tests keep. One string per rank, tasks separated
// by spaces.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_UNITTESTS_STAGES_MEGATRONORDERS_H
#define DDP_UNITTESTS_STAGES_MEGATRONORDERS_H

#include <cstdint>
#include <vector>

namespace ddp::megatron {

struct MegatronOrder {
  const char *name;
  int64_t stages, virtualStages, microbatches, groupSize;
  std::vector<const char *> ranks;
};

inline const std::vector<MegatronOrder> &getMegatronOrders() {
  static const std::vector<MegatronOrder> orders = {
      {"1f1b_p3_m5", 3, 1, 5, 0,
       {
           "F0.0 F1.0 F2.0 B0.0 F3.0 B1.0 F4.0 B2.0 B3.0 B4.0",
           "F0.0 F1.0 B0.0 F2.0 B1.0 F3.0 B2.0 F4.0 B3.0 B4.0",
           "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 F4.0 B4.0",
       }},
      {"1f1b_p4_m2", 4, 1, 2, 0,
       {
           "F0.0 F1.0 B0.0 B1.0",
           "F0.0 F1.0 B0.0 B1.0",
           "F0.0 F1.0 B0.0 B1.0",
           "F0.0 B0.0 F1.0 B1.0",
       }},
      {"1f1b_p4_m8", 4, 1, 8, 0,
       {
           "F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 F6.0 B3.0 F7.0 B4.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 F2.0 B0.0 F3.0 B1.0 F4.0 B2.0 F5.0 B3.0 F6.0 B4.0 F7.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 B0.0 F2.0 B1.0 F3.0 B2.0 F4.0 B3.0 F5.0 B4.0 F6.0 B5.0 F7.0 B6.0 B7.0",
           "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 F4.0 B4.0 F5.0 B5.0 F6.0 B6.0 F7.0 B7.0",
       }},
      {"il_p2_v2_m4", 2, 2, 4, 0,
       {
           "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0",
           "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0",
       }},
      {"il_p2_v2_m5_g3", 2, 2, 5, 3,
       {
           "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 B0.1 F3.0 B1.1 F4.0 B2.1 F3.1 B0.0 F4.1 B1.0 B2.0 B3.1 B4.1 B3.0 B4.0",
           "F0.0 F1.0 F2.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.0 B0.0 F4.0 B1.0 F3.1 B2.0 F4.1 B3.1 B4.1 B3.0 B4.0",
       }},
      {"il_p2_v2_m6_g4", 2, 2, 6, 4,
       {
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F4.1 B0.0 F5.1 B1.0 B2.0 B3.0 B4.1 B5.1 B4.0 B5.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F4.1 B2.0 F5.1 B3.0 B4.1 B5.1 B4.0 B5.0",
       }},
      {"il_p2_v3_m5_g3", 2, 3, 5, 3,
       {
           "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 F0.2 F1.2 F2.2 B0.2 F3.0 B1.2 F4.0 B2.2 F3.1 B0.1 F4.1 B1.1 F3.2 B2.1 F4.2 B0.0 B1.0 B2.0 B3.2 B4.2 B3.1 B4.1 B3.0 B4.0",
           "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 F0.2 B0.2 F1.2 B1.2 F2.2 B2.2 F3.0 B0.1 F4.0 B1.1 F3.1 B2.1 F4.1 B0.0 F3.2 B1.0 F4.2 B2.0 B3.2 B4.2 B3.1 B4.1 B3.0 B4.0",
       }},
      {"il_p3_v2_m6", 3, 2, 6, 0,
       {
           "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 F3.0 F4.0 B0.1 F5.0 B1.1 F3.1 B2.1 F4.1 B0.0 F5.1 B1.0 B2.0 B3.1 B4.1 B5.1 B3.0 B4.0 B5.0",
           "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 B0.1 F3.0 B1.1 F4.0 B2.1 F5.0 B0.0 F3.1 B1.0 F4.1 B2.0 F5.1 B3.1 B4.1 B5.1 B3.0 B4.0 B5.0",
           "F0.0 F1.0 F2.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 F3.1 B3.1 F4.1 B4.1 F5.1 B5.1 B3.0 B4.0 B5.0",
       }},
      {"il_p3_v2_m7_g4", 3, 2, 7, 4,
       {
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 B0.1 F5.0 B1.1 F6.0 B2.1 F4.1 B3.1 F5.1 B0.0 F6.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B4.0 B5.0 B6.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F6.0 B0.0 F4.1 B1.0 F5.1 B2.0 F6.1 B3.0 B4.1 B5.1 B6.1 B4.0 B5.0 B6.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F4.1 B3.0 F5.1 B4.1 F6.1 B5.1 B6.1 B4.0 B5.0 B6.0",
       }},
      {"il_p4_v2_m4", 4, 2, 4, 0,
       {
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 B0.0 B1.0 B2.0 B3.0",
       }},
      {"il_p4_v2_m8", 4, 2, 8, 0,
       {
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 F7.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 B0.1 F5.0 B1.1 F6.0 B2.1 F7.0 B3.1 F4.1 B0.0 F5.1 B1.0 F6.1 B2.0 F7.1 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F6.0 B0.0 F7.0 B1.0 F4.1 B2.0 F5.1 B3.0 F6.1 B4.1 F7.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0",
       }},
      {"il_p4_v2_m9_g5", 4, 2, 9, 5,
       {
           "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F1.1 F2.1 F3.1 F4.1 F5.0 F6.0 B0.1 F7.0 B1.1 F8.0 B2.1 F5.1 B3.1 F6.1 B4.1 F7.1 B0.0 F8.1 B1.0 B2.0 B3.0 B4.0 B5.1 B6.1 B7.1 B8.1 B5.0 B6.0 B7.0 B8.0",
           "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F1.1 F2.1 F3.1 F4.1 B0.1 F5.0 B1.1 F6.0 B2.1 F7.0 B3.1 F8.0 B4.1 F5.1 B0.0 F6.1 B1.0 F7.1 B2.0 F8.1 B3.0 B4.0 B5.1 B6.1 B7.1 B8.1 B5.0 B6.0 B7.0 B8.0",
           "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.1 B2.1 F5.0 B3.1 F6.0 B4.1 F7.0 B0.0 F8.0 B1.0 F5.1 B2.0 F6.1 B3.0 F7.1 B4.0 F8.1 B5.1 B6.1 B7.1 B8.1 B5.0 B6.0 B7.0 B8.0",
           "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.1 B4.1 F5.0 B0.0 F6.0 B1.0 F7.0 B2.0 F8.0 B3.0 F5.1 B4.0 F6.1 B5.1 F7.1 B6.1 F8.1 B7.1 B8.1 B5.0 B6.0 B7.0 B8.0",
       }},
      {"il_p4_v4_m8", 4, 4, 8, 0,
       {
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F0.2 F1.2 F2.2 F3.2 F0.3 F1.3 F2.3 F3.3 F4.0 F5.0 F6.0 B0.3 F7.0 B1.3 F4.1 B2.3 F5.1 B3.3 F6.1 B0.2 F7.1 B1.2 F4.2 B2.2 F5.2 B3.2 F6.2 B0.1 F7.2 B1.1 F4.3 B2.1 F5.3 B3.1 F6.3 B0.0 F7.3 B1.0 B2.0 B3.0 B4.3 B5.3 B6.3 B7.3 B4.2 B5.2 B6.2 B7.2 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F0.2 F1.2 F2.2 F3.2 F0.3 F1.3 F2.3 F3.3 F4.0 B0.3 F5.0 B1.3 F6.0 B2.3 F7.0 B3.3 F4.1 B0.2 F5.1 B1.2 F6.1 B2.2 F7.1 B3.2 F4.2 B0.1 F5.2 B1.1 F6.2 B2.1 F7.2 B3.1 F4.3 B0.0 F5.3 B1.0 F6.3 B2.0 F7.3 B3.0 B4.3 B5.3 B6.3 B7.3 B4.2 B5.2 B6.2 B7.2 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F0.2 F1.2 F2.2 F3.2 F0.3 F1.3 F2.3 B0.3 F3.3 B1.3 F4.0 B2.3 F5.0 B3.3 F6.0 B0.2 F7.0 B1.2 F4.1 B2.2 F5.1 B3.2 F6.1 B0.1 F7.1 B1.1 F4.2 B2.1 F5.2 B3.1 F6.2 B0.0 F7.2 B1.0 F4.3 B2.0 F5.3 B3.0 F6.3 B4.3 F7.3 B5.3 B6.3 B7.3 B4.2 B5.2 B6.2 B7.2 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
           "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F0.2 F1.2 F2.2 F3.2 F0.3 B0.3 F1.3 B1.3 F2.3 B2.3 F3.3 B3.3 F4.0 B0.2 F5.0 B1.2 F6.0 B2.2 F7.0 B3.2 F4.1 B0.1 F5.1 B1.1 F6.1 B2.1 F7.1 B3.1 F4.2 B0.0 F5.2 B1.0 F6.2 B2.0 F7.2 B3.0 F4.3 B4.3 F5.3 B5.3 F6.3 B6.3 F7.3 B7.3 B4.2 B5.2 B6.2 B7.2 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
       }},
      {"nopp_p1_m3", 1, 1, 3, 0,
       {
           "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0",
       }},
  };
  return orders;
}

/// Shapes Megatron rejects, and a phrase of the error ddp gives.
struct MegatronRejection {
  const char *name;
  int64_t stages, virtualStages, microbatches, groupSize;
  const char *phrase;
};

inline const std::vector<MegatronRejection> &getMegatronRejections() {
  static const std::vector<MegatronRejection> rejections = {
      // Megatron: ValueError, the group size is outside [PP, M] (L1159-1168).
      {"REJECT_il_p2_v2_m4_g5", 2, 2, 4, 5, "set it in [2, 4]"},
      // Megatron: RuntimeError, the ragged last group is below PP (L1172-1180).
      {"REJECT_il_p2_v3_m5_g2", 2, 3, 5, 2, "last group of 1"},
      // Megatron: ValueError, the group size is outside [PP, M] (L1159-1168).
      {"REJECT_il_p3_v2_m7_g2", 3, 2, 7, 2, "set it in [3, 7]"},
      // Megatron: RuntimeError, the ragged last group is below PP (L1172-1180).
      {"REJECT_il_p3_v2_m7_g3", 3, 2, 7, 3, "last group of 1"},
      // Megatron: ValueError, the group size is outside [PP, M] (L1159-1168).
      {"REJECT_il_p4_v2_m2", 4, 2, 2, 0, "at least as many microbatches as pipeline stages"},
      // Megatron: RuntimeError, the ragged last group is below PP (L1172-1180).
      {"REJECT_il_p4_v2_m6", 4, 2, 6, 0, "last group of 2"},
  };
  return rejections;
}

} // namespace ddp::megatron

#endif // DDP_UNITTESTS_STAGES_MEGATRONORDERS_H
