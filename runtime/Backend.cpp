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
  if (kind == CollectiveKind::AllToAllV)
    what += concat(", ", subBlocks, " sub-block(s) of ", subBlockRows(),
                   " rows x ", rowNumel);
  return what + concat(", group '", groupName, "' of ", groupSize, " ranks)");
}

Status ddprt::readRowCounts(const CollectiveOp &op, const float *counts,
                            const char *which, std::vector<int64_t> &rows) {
  int64_t n = op.groupSize * op.subBlocks, limit = op.subBlockRows();
  rows.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    float count = counts[i];
    // Whole numbers to 2^24 are exact in f32; NaN fails both comparisons.
    if (!(count >= 0.0f && count <= float(limit)) ||
        float(int64_t(count)) != count)
      return makeError(DDPRT_ERROR_INVALID_ARGUMENT, op.describe(), ": ",
                       which, " count ", i, " (group rank ",
                       i / op.subBlocks, ", sub-block ", i % op.subBlocks,
                       ") is ", count, ", not a whole number of rows from 0 "
                       "to ", limit);
    rows[size_t(i)] = int64_t(count);
  }
  return Status::ok();
}
