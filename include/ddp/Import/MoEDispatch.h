//===- MoEDispatch.h - How Megatron sends tokens to experts -----*- C++ -*-===//
//
// Megatron's token dispatchers (megatron/core/transformer/moe/
// token_dispatcher.py): `allgather` gathers every token of the
// expert-and-tensor-parallel group and keeps those routed to this rank's
// experts; `alltoall` sends each expert-parallel rank only the tokens routed
// to its experts, and sends the experts' outputs back, with two all-to-alls
// over the expert-parallel group. The capacity (moe_expert_capacity_factor,
// moe_pad_expert_input_to_capacity) bounds the tokens an expert takes.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_IMPORT_MOEDISPATCH_H
#define DDP_IMPORT_MOEDISPATCH_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace ddp {

enum class MoEDispatcher { AllGather, AllToAll };

/// Megatron's names: `allgather`, `alltoall`.
std::optional<MoEDispatcher> parseMoEDispatcher(llvm::StringRef name);
llvm::StringRef stringifyMoEDispatcher(MoEDispatcher dispatcher);

struct MoEDispatchConfig {
  MoEDispatcher dispatcher = MoEDispatcher::AllGather;
  /// Unset: dropless (Megatron's None).
  std::optional<double> capacityFactor;
  /// Every expert receives exactly its capacity, padded (needs a capacity
  /// factor, as Megatron's TransformerConfig asserts).
  bool padToCapacity = false;
};

/// The tokens each expert takes from `tokens` routed tokens (each to `topk`
/// of `experts` experts). Routing is taken as balanced, so an expert's share
/// is ceil(tokens x topk / experts). With a capacity factor, Megatron's
/// get_capacity (moe_utils.py) gives ceil(tokens x topk / experts x
/// factor). Padded to capacity, the expert takes exactly that. Without
/// padding, the tokens past it are dropped, so it takes the lesser of the
/// two. The step's sizes are static.
int64_t getExpertCapacity(const MoEDispatchConfig &config, int64_t tokens,
                          int64_t topk, int64_t experts);

/// The rows an expert's buffer needs for whatever a real router picks from
/// `tokens` tokens: its capacity (the router drops the rest; unpadded, at
/// most `tokens`), or every token when dropless (a token routes to an
/// expert at most once). At least getExpertCapacity.
int64_t getExpertBufferRows(const MoEDispatchConfig &config, int64_t tokens,
                            int64_t topk, int64_t experts);

} // namespace ddp

#endif // DDP_IMPORT_MOEDISPATCH_H
