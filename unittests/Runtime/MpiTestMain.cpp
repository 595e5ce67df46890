//===- MpiTestMain.cpp - GoogleTest main for tests run under mpirun -------===//
//
// Every rank runs every test in the same order (the collectives inside must
// match). Rank 0 prints the usual report; the other ranks print only their
// failures, tagged with the rank. The exit status is the worst of all ranks.
//
//===----------------------------------------------------------------------===//

#include "gtest/gtest.h"

#include <mpi.h>

#include <cstdio>

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int rank) : rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (!result.failed())
      return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank,
                 result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

private:
  int rank;
};

} // namespace

int main(int argc, char **argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int result = RUN_ALL_TESTS();
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && worst != result)
    std::fprintf(stderr, "some tests failed on other ranks\n");
  MPI_Finalize();
  return worst;
}
