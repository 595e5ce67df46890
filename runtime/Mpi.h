//===- Mpi.h - The MPI job under both backends ------------------*- C++ -*-===//
//
// Both backends run under mpirun: the CPU backend communicates through MPI,
// the CUDA backend bootstraps NCCL over it. This owns MPI's initialisation
// and the runtime's private duplicate of MPI_COMM_WORLD.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_MPI_H
#define DDPRT_MPI_H

#include "Status.h"

#include <mpi.h>

#include <string>
#include <vector>

namespace ddprt {

class Watchdog;

/// `MPI_Xxx(args) failed: <MPI's error string>` as a status.
Status checkMpi(int returnCode, const std::string &call);

const char *mpiThreadLevelName(int level);

class MpiSession {
public:
  /// Initialises MPI with MPI_THREAD_MULTIPLE unless the program already has
  /// (then checks that level; else MPI is finalized at exit), tells the
  /// watchdog this rank, and duplicates the world communicator (under the
  /// watchdog) with errors returned instead of aborting.
  Status start(Watchdog &watchdog);
  /// Frees the communicator.
  void stop();

  MPI_Comm getWorld() const { return world; }
  int getRank() const { return rank; }
  int getSize() const { return size; }

  /// Gathers one string per rank on rank 0 (others get an empty vector).
  /// Collective; called from one thread only.
  Status gatherStrings(const std::string &mine,
                       std::vector<std::string> &all) const;

private:
  MPI_Comm world = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  bool initializedHere = false;
};

} // namespace ddprt

#endif // DDPRT_MPI_H
