//===- ApiCollectives.cpp - Collectives, point-to-point and handles -------===//
//
// All-reduce, reduce-scatter, all-gather, send, receive, broadcast and
// all-to-all (whole blocks, or counted rows), and the
// handles of asynchronous ones (ddprt_wait, ddprt_join).
//
//===----------------------------------------------------------------------===//

#include "Context.h"

using namespace ddprt;

namespace {

/// A handle made by ddprt_join: waits for each joined op in turn.
class JoinedOp final : public AsyncOp {
public:
  explicit JoinedOp(std::vector<std::unique_ptr<AsyncOp>> ops)
      : ops(std::move(ops)) {}
  Status wait() override {
    Status first;
    for (std::unique_ptr<AsyncOp> &op : ops) {
      Status status = op->wait();
      if (first.isOk())
        first = std::move(status);
    }
    return first;
  }
  Status orderCommunicationAfter() override {
    for (std::unique_ptr<AsyncOp> &op : ops)
      DDPRT_RETURN_IF_ERROR(op->orderCommunicationAfter());
    return Status::ok();
  }

private:
  std::vector<std::unique_ptr<AsyncOp>> ops;
};

} // namespace

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks what every collective shares and fills in the op's group fields.
static Status prepareCollective(const ddprt_context *context, const char *entry,
                                CollectiveOp &op, int32_t dtype,
                                int64_t numel) {
  DDPRT_RETURN_IF_ERROR(checkGroup(context, entry, op.group));
  DDPRT_RETURN_IF_ERROR(checkDType(entry, "dtype", dtype));
  DDPRT_RETURN_IF_ERROR(checkCount(entry, "numel", numel));
  const Group &group = context->groups[size_t(op.group)];
  op.groupName = group.axes;
  op.groupSize = group.layout.size;
  op.groupRank = group.layout.rank;
  op.dtype = DType(dtype);
  op.numel = numel;
  // What reduce-scatter reads and all-gather writes.
  int64_t total = 0;
  return checkProduct(entry, "numel x group size", numel, op.groupSize, total);
}

static Status checkReduction(const char *entry, int32_t reduction) {
  if (reduction != DDPRT_REDUCTION_SUM && reduction != DDPRT_REDUCTION_AVG &&
      reduction != DDPRT_REDUCTION_MAX)
    return invalid(entry,
                   concat("reduction ", reduction,
                          " is not a DDPRT_REDUCTION_* (0 sum, 1 avg, 2 max)"));
  return Status::ok();
}

static ddprt_status issueCollective(ddprt_context *context,
                                    const CollectiveOp &op,
                                    ddprt_handle *handle) {
  if (!handle)
    return context->report(context->backend->collective(op, nullptr));
  *handle = 0;
  std::unique_ptr<AsyncOp> async;
  DDPRT_REPORT_IF_ERROR(context, context->backend->collective(op, &async));
  *handle = context->addHandle(std::move(async));
  return DDPRT_OK;
}

/// What all-reduce and reduce-scatter share: the checks, then the issue. A
/// reduce-scatter's input is the group's blocks of `numel` elements.
static ddprt_status issueReduction(ddprt_context *context, const char *entry,
                                   CollectiveKind kind, int32_t group,
                                   int32_t reduction, int32_t dtype,
                                   int64_t numel, const void *input,
                                   void *result, ddprt_handle *handle) {
  CollectiveOp op;
  op.kind = kind;
  op.group = group;
  op.reduction = reduction;
  op.input = input;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, entry, op, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context, checkReduction(entry, reduction));
  int64_t bytes = numel * elementSize(op.dtype);
  int64_t inputBytes =
      kind == CollectiveKind::ReduceScatter ? bytes * op.groupSize : bytes;
  DDPRT_REPORT_IF_ERROR(
      context, checkBuffer(context, entry, "input", input, inputBytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, entry, "result", result, bytes));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status ddprt_all_reduce(ddprt_context *context, int32_t group,
                                         int32_t reduction, int32_t dtype,
                                         int64_t numel, const void *input,
                                         void *result, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  return issueReduction(context, __func__, CollectiveKind::AllReduce, group,
                        reduction, dtype, numel, input, result, handle);
}

extern "C" ddprt_status ddprt_reduce_scatter(ddprt_context *context,
                                             int32_t group, int32_t reduction,
                                             int32_t dtype, int64_t numel,
                                             const void *input, void *result,
                                             ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  return issueReduction(context, __func__, CollectiveKind::ReduceScatter, group,
                        reduction, dtype, numel, input, result, handle);
}

extern "C" ddprt_status ddprt_all_gather(ddprt_context *context, int32_t group,
                                         int32_t dtype, int64_t numel,
                                         const void *input, void *result,
                                         ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::AllGather;
  op.group = group;
  op.input = input;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  int64_t bytes = numel * elementSize(op.dtype);
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "input", input, bytes));
  DDPRT_REPORT_IF_ERROR(context, checkBuffer(context, __func__, "result",
                                             result, bytes * op.groupSize));
  return issueCollective(context, op, handle);
}

/// The group rank `offset` places from this one; it must be another rank.
static Status resolvePeer(const char *entry, CollectiveOp &op, int64_t offset) {
  int64_t size = op.groupSize;
  if (size < 2 || offset % size == 0)
    return invalid(entry, concat("offset ", offset,
                                 " addresses this rank itself in group '",
                                 op.groupName, "' of ", size, " rank(s)"));
  op.peer = ((op.groupRank + offset) % size + size) % size;
  return Status::ok();
}

extern "C" ddprt_status ddprt_send(ddprt_context *context, int32_t group,
                                   int64_t offset, int32_t dtype, int64_t numel,
                                   const void *input, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::Send;
  op.group = group;
  op.input = input;
  op.result = nullptr;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context, resolvePeer(__func__, op, offset));
  DDPRT_REPORT_IF_ERROR(context, checkBuffer(context, __func__, "input", input,
                                             numel * elementSize(op.dtype)));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status ddprt_recv(ddprt_context *context, int32_t group,
                                   int64_t offset, int32_t dtype, int64_t numel,
                                   void *result, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::Recv;
  op.group = group;
  op.input = nullptr;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  DDPRT_REPORT_IF_ERROR(context, resolvePeer(__func__, op, offset));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "result", result,
                                    numel * elementSize(op.dtype)));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status ddprt_broadcast(ddprt_context *context, int32_t group,
                                        int64_t root, int32_t dtype,
                                        int64_t numel, const void *input,
                                        void *result, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::Broadcast;
  op.group = group;
  op.input = input;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  if (root < 0 || root >= op.groupSize)
    return context->report(
        invalid(__func__, concat("root ", root, " is not a rank of group '",
                                 op.groupName, "' of ", op.groupSize,
                                 " rank(s)")));
  op.root = root;
  int64_t bytes = numel * elementSize(op.dtype);
  // Only the root's input is read.
  if (op.groupRank == root)
    DDPRT_REPORT_IF_ERROR(
        context, checkBuffer(context, __func__, "input", input, bytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "result", result, bytes));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status ddprt_all_to_all(ddprt_context *context,
                                         int32_t group, int32_t dtype,
                                         int64_t numel, const void *input,
                                         void *result, ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::AllToAll;
  op.group = group;
  op.input = input;
  op.result = result;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  if (numel % op.groupSize != 0)
    return context->report(invalid(
        __func__, concat("numel ", numel, " does not split into ",
                         op.groupSize, " equal blocks for group '",
                         op.groupName, "' of ", op.groupSize, " rank(s)")));
  int64_t bytes = numel * elementSize(op.dtype);
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "input", input, bytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "result", result, bytes));
  return issueCollective(context, op, handle);
}

extern "C" ddprt_status
ddprt_all_to_all_v(ddprt_context *context, int32_t group, int64_t subBlocks,
                   int64_t rowNumel, int32_t dtype, int64_t numel,
                   const void *input, const void *sendCounts,
                   const void *recvCounts, void *result,
                   ddprt_handle *handle) {
  DDPRT_CHECK_CONTEXT(context);
  CollectiveOp op;
  op.kind = CollectiveKind::AllToAllV;
  op.group = group;
  op.input = input;
  op.result = result;
  op.sendCounts = sendCounts;
  op.recvCounts = recvCounts;
  DDPRT_REPORT_IF_ERROR(context,
                        prepareCollective(context, __func__, op, dtype, numel));
  if (subBlocks <= 0 || rowNumel <= 0)
    return context->report(invalid(
        __func__, concat("sub_blocks (", subBlocks, ") and row_numel (",
                         rowNumel, ") must be positive")));
  int64_t perBlock = 0, counts = 0;
  DDPRT_REPORT_IF_ERROR(context,
                        checkProduct(__func__, "sub_blocks x row_numel",
                                     subBlocks, rowNumel, perBlock));
  DDPRT_REPORT_IF_ERROR(context,
                        checkProduct(__func__, "group size x sub_blocks",
                                     op.groupSize, subBlocks, counts));
  int64_t unit = 0;
  DDPRT_REPORT_IF_ERROR(context, checkProduct(__func__, "the sub-block unit",
                                              perBlock, op.groupSize, unit));
  if (numel % unit != 0)
    return context->report(invalid(
        __func__,
        concat("numel ", numel, " is not group size (", op.groupSize,
               ") x sub_blocks (", subBlocks, ") x row_numel (", rowNumel,
               ") x whole rows, for group '", op.groupName, "'")));
  op.subBlocks = subBlocks;
  op.rowNumel = rowNumel;
  int64_t bytes = numel * elementSize(op.dtype);
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "input", input, bytes));
  DDPRT_REPORT_IF_ERROR(context,
                        checkBuffer(context, __func__, "result", result, bytes));
  int64_t countBytes = counts * int64_t(sizeof(float));
  DDPRT_REPORT_IF_ERROR(context, checkBuffer(context, __func__, "send_counts",
                                             sendCounts, countBytes));
  DDPRT_REPORT_IF_ERROR(context, checkBuffer(context, __func__, "recv_counts",
                                             recvCounts, countBytes));
  // The counts are read when the transfer starts, the result written as it
  // ends: a result over the counts would change what is read.
  if (rangesOverlap(result, bytes, sendCounts, countBytes) ||
      rangesOverlap(result, bytes, recvCounts, countBytes))
    return context->report(
        invalid(__func__, "the result overlaps send_counts or recv_counts"));
  return issueCollective(context, op, handle);
}

static Status takeHandle(ddprt_context *context, const char *entry,
                         ddprt_handle handle, std::unique_ptr<AsyncOp> &op) {
  auto found = context->handles.find(handle);
  if (found == context->handles.end())
    return makeError(DDPRT_ERROR_BAD_HANDLE, entry, ": handle ", handle,
                     handle == 0 || handle >= context->nextHandle
                         ? " was never issued"
                         : " was already waited or joined");
  op = std::move(found->second);
  context->handles.erase(found);
  return Status::ok();
}

extern "C" ddprt_status ddprt_wait(ddprt_context *context,
                                   ddprt_handle handle) {
  DDPRT_CHECK_CONTEXT(context);
  std::unique_ptr<AsyncOp> op;
  DDPRT_REPORT_IF_ERROR(context, takeHandle(context, __func__, handle, op));
  return context->report(op->wait());
}

extern "C" ddprt_status ddprt_comm_wait(ddprt_context *context,
                                        ddprt_handle handle) {
  DDPRT_CHECK_CONTEXT(context);
  auto found = context->handles.find(handle);
  if (found == context->handles.end())
    return context->report(makeError(
        DDPRT_ERROR_BAD_HANDLE, __func__, ": handle ", handle,
        " is not outstanding (never issued, or waited or joined already)"));
  return context->report(found->second->orderCommunicationAfter());
}

extern "C" ddprt_status ddprt_join(ddprt_context *context,
                                   const ddprt_handle *handles, int32_t count,
                                   ddprt_handle *joined) {
  DDPRT_CHECK_CONTEXT(context);
  DDPRT_REPORT_IF_ERROR(context, checkOutput(__func__, "joined", joined));
  *joined = 0;
  DDPRT_REPORT_IF_ERROR(context, checkCount(__func__, "count", count));
  if (count > 0 && !handles)
    return context->report(invalid(__func__, "'handles' is NULL"));
  // Check all before consuming any, so that a failed join changes nothing.
  for (int32_t i = 0; i < count; ++i) {
    if (!context->handles.count(handles[i]))
      return context->report(makeError(
          DDPRT_ERROR_BAD_HANDLE, __func__, ": handle #", i, " (", handles[i],
          ") is not outstanding (never issued, or waited or joined already)"));
    for (int32_t j = 0; j < i; ++j)
      if (handles[j] == handles[i])
        return context->report(
            makeError(DDPRT_ERROR_BAD_HANDLE, __func__, ": handle ", handles[i],
                      " is joined twice (#", j, " and #", i, ")"));
  }
  std::vector<std::unique_ptr<AsyncOp>> ops;
  for (int32_t i = 0; i < count; ++i) {
    std::unique_ptr<AsyncOp> op;
    DDPRT_REPORT_IF_ERROR(context,
                          takeHandle(context, __func__, handles[i], op));
    ops.push_back(std::move(op));
  }
  *joined = context->addHandle(std::make_unique<JoinedOp>(std::move(ops)));
  return DDPRT_OK;
}
