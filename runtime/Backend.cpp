//===- Backend.cpp - Shared pieces of the backends ------------------------===//

#include "Backend.h"

using namespace ddprt;

const char *ddprt::collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::Send:
    return "send";
  case CollectiveKind::Recv:
    return "recv";
  }
  return "?";
}

const char *ddprt::reductionName(int32_t reduction) {
  switch (reduction) {
  case DDPRT_REDUCTION_SUM:
    return "sum";
  case DDPRT_REDUCTION_AVG:
    return "avg";
  case DDPRT_REDUCTION_MAX:
    return "max";
  }
  return "?";
}

std::string CollectiveOp::describe() const {
  std::string what = concat(collectiveName(kind), "(");
  if (kind == CollectiveKind::AllReduce ||
      kind == CollectiveKind::ReduceScatter)
    what += concat(reductionName(reduction), ", ");
  what += concat(numel, " x ", dtypeName(dtype));
  if (kind == CollectiveKind::Send)
    what += concat(" to group rank ", peer);
  if (kind == CollectiveKind::Recv)
    what += concat(" from group rank ", peer);
  return what + concat(", group '", groupName, "' of ", groupSize, " ranks)");
}
