//===- CollectiveKind.h - How the cost model prices a collective -*- C++ -*-===//
//
// Apart from CostModel.h so that the dialect's CollectiveOpInterface can
// return it (getCostKind) without pulling in the hardware profiles.
//
//===----------------------------------------------------------------------===//

#ifndef DDP_TIMING_COLLECTIVEKIND_H
#define DDP_TIMING_COLLECTIVEKIND_H

#include "llvm/ADT/StringRef.h"

namespace ddp {
namespace timing {

/// Send and receive are one point-to-point transfer to the cost model.
enum class CollectiveKind { AllReduce, ReduceScatter, AllGather, SendRecv };
/// `all_reduce`, ..., `send_recv`, as the simulator's report writes it.
llvm::StringRef stringifyCollectiveKind(CollectiveKind kind);

} // namespace timing
} // namespace ddp

#endif // DDP_TIMING_COLLECTIVEKIND_H
