//===- SequentialContexts.cpp - One context after another -----------------===//
//
// A program that leaves MPI to the runtime (no MPI_Init of its own) can
// create a context, finalize it and create another, as ddp-run --verify
// does for the unscheduled and the scheduled program. Run under mpirun; the
// exit status says whether both contexts computed the right sum.
//
//===----------------------------------------------------------------------===//

#include "ddp/Runtime/ddprt.h"

#include <cstdio>
#include <vector>

static int runOnce(int round) {
  ddprt_context *context = nullptr;
  if (ddprt_init(DDPRT_ABI_VERSION, "dp=2", DDPRT_BACKEND_CPU,
                 DDPRT_FLAG_RETURN_ERRORS, 10000, nullptr,
                 &context) != DDPRT_OK) {
    std::fprintf(stderr, "round %d: %s\n", round, ddprt_last_error(nullptr));
    return 1;
  }
  int32_t rank = 0, size = 0, group = 0;
  void *buffer = nullptr;
  std::vector<float> values(8, 0.0f);
  bool ok = ddprt_get_rank(context, &rank, &size) == DDPRT_OK &&
            ddprt_group_create(context, "dp", &group) == DDPRT_OK &&
            ddprt_alloc(context, DDPRT_DTYPE_F32, 8, &buffer) == DDPRT_OK;
  for (float &value : values)
    value = float(rank + round);
  ok = ok && ddprt_write(context, buffer, values.data(), 32) == DDPRT_OK &&
       ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM, DDPRT_DTYPE_F32, 8,
                        buffer, buffer, nullptr) == DDPRT_OK &&
       ddprt_read(context, values.data(), buffer, 32) == DDPRT_OK;
  if (!ok)
    std::fprintf(stderr, "round %d: %s\n", round, ddprt_last_error(context));
  // Ranks 0 and 1 contribute round and round + 1.
  for (float value : values)
    ok = ok && value == float(2 * round + 1);
  if (ddprt_finalize(context) != DDPRT_OK) {
    std::fprintf(stderr, "round %d: %s\n", round, ddprt_last_error(nullptr));
    return 1;
  }
  return ok ? 0 : 1;
}

int main() {
  for (int round = 0; round < 2; ++round)
    if (int failed = runOnce(round))
      return failed;
  std::printf("both contexts computed the right sums\n");
  return 0;
}
