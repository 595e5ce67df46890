//===- Backend.cpp - Shared pieces of the backends ------------------------===//

#include "Backend.h"

using namespace ddprt;

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
  std::string what = concat(ddp::getCollectiveName(kind), "(");
  if (kind == CollectiveKind::AllReduce ||
      kind == CollectiveKind::ReduceScatter)
    what += concat(reductionName(reduction), ", ");
  what += concat(numel, " x ", dtypeName(dtype));
  if (kind == CollectiveKind::Send)
    what += concat(" to group rank ", peer);
  if (kind == CollectiveKind::Recv)
    what += concat(" from group rank ", peer);
  if (kind == CollectiveKind::Broadcast)
    what += concat(" from group rank ", root);
  return what + concat(", group '", groupName, "' of ", groupSize, " ranks)");
}
