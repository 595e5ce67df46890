//===- FaultScenarios.cpp - Jobs that must end with an error --------------===//
//
// Each scenario is a small job run under `mpirun -np 2` by
// RunFaultScenario.cmake, which checks that the job ended with an error, in
// time, with the expected message. None of them may hang.
//
//   hung-peer       rank 1 sleeps instead of joining an all-reduce
//   early-finalize  rank 1 finalizes and leaves while rank 0 still reduces
//   early-exit      rank 1 dies before the all-reduce
//   env-timeout     hung-peer with the timeout from DDPRT_TIMEOUT
//   bad-argument    rank 0 passes a bad dtype (errors end the job by default)
//   size-mismatch   rank 0 sends 100 elements, rank 1 expects 50
//   late-init       rank 1 sleeps before ddprt_init (MPI itself is up)
//   thread-level    the program initialised MPI without MPI_THREAD_MULTIPLE
//
//===----------------------------------------------------------------------===//

#include "ddp/Runtime/ddprt.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

ddprt_context *start(int32_t timeoutMs) {
  ddprt_context *context = nullptr;
  // Errors end the job (the default), as in generated code.
  if (ddprt_init(DDPRT_ABI_VERSION, "dp=2", DDPRT_BACKEND_CPU, 0, timeoutMs,
                 nullptr, &context) != DDPRT_OK)
    return nullptr;
  return context;
}

int allReduceScenario(const std::string &scenario) {
  ddprt_context *context = start(scenario == "env-timeout" ? 0 : 2000);
  int32_t rank = 0, size = 0, group = 0;
  ddprt_get_rank(context, &rank, &size);
  ddprt_group_create(context, "dp", &group);
  void *buffer = nullptr;
  ddprt_alloc(context, DDPRT_DTYPE_F32, 1024, &buffer);
  // One collective that works, so the job is known to be healthy.
  ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM, DDPRT_DTYPE_F32, 1024,
                   buffer, buffer, nullptr);
  if (rank == 1) {
    if (scenario == "early-exit")
      _exit(3);
    if (scenario == "early-finalize") {
      ddprt_finalize(context);
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM, DDPRT_DTYPE_F32, 1024,
                   buffer, buffer, nullptr);
  std::fprintf(stderr, "rank 0: the all-reduce completed, which it cannot\n");
  ddprt_finalize(context);
  return 0;
}

int badArgumentScenario() {
  ddprt_context *context = start(20000);
  int32_t rank = 0, size = 0, group = 0;
  ddprt_get_rank(context, &rank, &size);
  ddprt_group_create(context, "dp", &group);
  void *buffer = nullptr;
  if (rank == 0) {
    ddprt_alloc(context, /*dtype=*/0, 16, &buffer);
    std::fprintf(stderr, "rank 0: a bad dtype was accepted\n");
    return 0;
  }
  ddprt_alloc(context, DDPRT_DTYPE_F32, 16, &buffer);
  ddprt_all_reduce(context, group, DDPRT_REDUCTION_SUM, DDPRT_DTYPE_F32, 16,
                   buffer, buffer, nullptr);
  ddprt_finalize(context);
  return 0;
}

int sizeMismatchScenario() {
  ddprt_context *context = start(20000);
  int32_t rank = 0, size = 0, group = 0;
  ddprt_get_rank(context, &rank, &size);
  ddprt_group_create(context, "dp", &group);
  void *buffer = nullptr;
  ddprt_alloc(context, DDPRT_DTYPE_F32, 100, &buffer);
  if (rank == 0)
    ddprt_send(context, group, 1, DDPRT_DTYPE_F32, 100, buffer, nullptr);
  else
    ddprt_recv(context, group, -1, DDPRT_DTYPE_F32, 50, buffer, nullptr);
  // Rank 1 cannot get here; rank 0's eager send may complete.
  std::this_thread::sleep_for(std::chrono::seconds(30));
  ddprt_finalize(context);
  return 0;
}

int lateInitScenario() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1)
    std::this_thread::sleep_for(std::chrono::seconds(60));
  ddprt_context *context = start(2000);
  std::fprintf(stderr, "rank %d: ddprt_init returned alone\n", rank);
  ddprt_finalize(context);
  MPI_Finalize();
  return 0;
}

int threadLevelScenario() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  start(2000);
  std::fprintf(stderr, "ddprt_init accepted MPI_THREAD_SINGLE\n");
  MPI_Finalize();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SCENARIO\n", argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  if (scenario == "hung-peer" || scenario == "early-finalize" ||
      scenario == "early-exit" || scenario == "env-timeout")
    return allReduceScenario(scenario);
  if (scenario == "bad-argument")
    return badArgumentScenario();
  if (scenario == "size-mismatch")
    return sizeMismatchScenario();
  if (scenario == "late-init")
    return lateInitScenario();
  if (scenario == "thread-level")
    return threadLevelScenario();
  std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
