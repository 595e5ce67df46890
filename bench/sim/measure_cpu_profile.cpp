//===- measure_cpu_profile.cpp - Numbers for the cpu-mpi-2core profile ----===//
//
// Measures, on this machine, what the cpu-mpi-2core hardware profile
// describes: the CPU backend's GEMM throughput per rank (f32, f64;
// runtime/cpu/FixedOrderGemm.cpp, compiled in) with both ranks
// busy, streaming memory bandwidth per rank, and MPI_Allreduce bus bandwidth
// and latency between the two ranks. Prints a JSON fragment to paste into
// a profile.
//
// Build and run (not part of the CMake build; needs Open MPI):
//   mpicxx -O3 -std=c++17 -Iruntime/cpu bench/sim/measure_cpu_profile.cpp \
//     runtime/cpu/FixedOrderGemm.cpp -o /tmp/measure_cpu_profile
//   mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/measure_cpu_profile
//
//===----------------------------------------------------------------------===//

#include "FixedOrderGemm.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {
/// Best of `repeats` timings of `body`, with every rank starting together.
template <typename Body> double bestTime(int repeats, Body body) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    body();
    best = std::min(best, MPI_Wtime() - start);
  }
  return best;
}

double gemmFlopRate(int n, bool doublePrecision) {
  std::vector<double> ad(doublePrecision ? n * n : 0, 1.0), bd(ad), cd(ad);
  std::vector<float> af(doublePrecision ? 0 : n * n, 1.0f), bf(af), cf(af);
  double seconds = bestTime(3, [&] {
    if (doublePrecision)
      ddprt::cpu::fixedOrderGemm(false, false, n, n, n, ad.data(), bd.data(),
                                 cd.data());
    else
      ddprt::cpu::fixedOrderGemm(false, false, n, n, n, af.data(), bf.data(),
                                 cf.data());
  });
  return 2.0 * n * n * n / seconds;
}

/// STREAM-like triad a = b + s * c, counting 3 arrays moved.
double memoryBandwidth() {
  const size_t n = 32 << 20;
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  double seconds = bestTime(5, [&] {
    for (size_t i = 0; i < n; ++i)
      a[i] = b[i] + 3.0 * c[i];
  });
  return 3.0 * n * sizeof(double) / seconds;
}

double allReduceTime(size_t bytes) {
  std::vector<float> send(bytes / sizeof(float), 1.0f), recv(send.size());
  return bestTime(10, [&] {
    MPI_Allreduce(send.data(), recv.data(), static_cast<int>(send.size()),
                  MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });
}
} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  double f32 = gemmFlopRate(1024, false);
  double f64 = gemmFlopRate(1024, true);
  double memory = memoryBandwidth();
  // Latency from a tiny all-reduce; bus bandwidth from a large one, with
  // nccl-tests' factor 2(n-1)/n.
  double tiny = allReduceTime(4);
  size_t large = 64 << 20;
  double big = allReduceTime(large);
  double busFactor = 2.0 * (size - 1) / size;
  double busBandwidth = large * busFactor / (big - tiny);

  if (rank == 0)
    std::printf("{\"ranks\": %d, \"gemm_f32_gflops\": %.1f, "
                "\"gemm_f64_gflops\": %.1f, \"memory_gbps\": %.2f, "
                "\"allreduce_latency_us\": %.1f, "
                "\"allreduce_bus_bandwidth_gbps\": %.2f}\n",
                size, f32 / 1e9, f64 / 1e9, memory / 1e9, tiny * 1e6,
                busBandwidth / 1e9);
  MPI_Finalize();
  return 0;
}
