//===- Mpi.cpp - The MPI job under both backends --------------------------===//

#include "Mpi.h"
#include "Watchdog.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

using namespace ddprt;

Status ddprt::checkMpi(int returnCode, const std::string &call) {
  if (returnCode == MPI_SUCCESS)
    return Status::ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(returnCode, text, &length) != MPI_SUCCESS)
    length = std::snprintf(text, sizeof(text), "MPI error %d", returnCode);
  return makeError(DDPRT_ERROR_MPI, call,
                   " failed: ", std::string(text, length));
}

const char *ddprt::mpiThreadLevelName(int level) {
  switch (level) {
  case MPI_THREAD_SINGLE:
    return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED:
    return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED:
    return "MPI_THREAD_SERIALIZED";
  case MPI_THREAD_MULTIPLE:
    return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

void ddprt::fatalError(const std::string &message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

Status MpiSession::start(Watchdog &watchdog) {
  int initialized = 0;
  DDPRT_RETURN_IF_ERROR(
      checkMpi(MPI_Initialized(&initialized), "MPI_Initialized()"));
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    DDPRT_RETURN_IF_ERROR(checkMpi(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
        "MPI_Init_thread(required=MPI_THREAD_MULTIPLE)"));
    initializedHere = true;
    // MPI cannot be initialised twice in a process; finalizing it at exit
    // instead of in ddprt_finalize lets a program (ddp-run --verify) create
    // one context after another.
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    });
  } else {
    DDPRT_RETURN_IF_ERROR(
        checkMpi(MPI_Query_thread(&provided), "MPI_Query_thread()"));
  }
  // Messages name the rank from here on, the thread-level error included.
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  watchdog.setRank(rank);
  // The communication thread issues MPI calls while the watchdog may call
  // MPI_Abort and the program may use MPI itself.
  if (provided < MPI_THREAD_MULTIPLE)
    return makeError(DDPRT_ERROR_MPI,
                     "ddprt needs MPI_THREAD_MULTIPLE, but MPI provides ",
                     mpiThreadLevelName(provided),
                     initializedHere ? " (MPI_Init_thread)"
                                     : " (the program initialised MPI itself; "
                                       "call MPI_Init_thread with "
                                       "MPI_THREAD_MULTIPLE)");
  uint64_t ticket =
      watchdog.begin("MPI_Comm_dup(MPI_COMM_WORLD) in ddprt_init");
  Status duplicated = checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &world),
                               "MPI_Comm_dup(MPI_COMM_WORLD)");
  watchdog.end(ticket);
  DDPRT_RETURN_IF_ERROR(duplicated);
  return checkMpi(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN),
                  "MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN)");
}

void MpiSession::stop() {
  if (world != MPI_COMM_NULL)
    MPI_Comm_free(&world);
}

Status MpiSession::gatherStrings(const std::string &mine,
                                 std::vector<std::string> &all) const {
  if (mine.size() > size_t(INT_MAX))
    return makeError(DDPRT_ERROR_INTERNAL, "the trace of ", mine.size(),
                     " bytes is over 2 GiB");
  int length = int(mine.size());
  std::vector<int> lengths(rank == 0 ? size : 0);
  DDPRT_RETURN_IF_ERROR(checkMpi(
      MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world),
      concat("MPI_Gather(count=1, datatype=MPI_INT, root=0)")));
  std::vector<int> displacements(lengths.size());
  int64_t total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    displacements[i] = int(total);
    total += lengths[i];
  }
  if (total > INT_MAX)
    return makeError(DDPRT_ERROR_INTERNAL, "merged trace of ", total,
                     " bytes is over 2 GiB");
  std::vector<char> buffer(rank == 0 ? size_t(total) : 0);
  DDPRT_RETURN_IF_ERROR(checkMpi(
      MPI_Gatherv(mine.data(), length, MPI_CHAR, buffer.data(), lengths.data(),
                  displacements.data(), MPI_CHAR, 0, world),
      concat("MPI_Gatherv(sendcount=", length,
             ", datatype=MPI_CHAR, root=0)")));
  all.clear();
  for (size_t i = 0; i < lengths.size(); ++i)
    all.emplace_back(buffer.data() + displacements[i], lengths[i]);
  return Status::ok();
}
