//===- measure_cpu_profile.cpp - Numbers for the cpu-mpi-2core profile ----===//
//
// Measures, on this machine, what the cpu-mpi-2core hardware profile
// describes: the CPU backend's GEMM throughput per rank (f32, f64) with both
// ranks busy, by OpenBLAS (runtime/cpu/BlasGemm.cpp, what runs that measure
// use and the profile describes) and by the fixed-order kernel
// (runtime/cpu/FixedOrderGemm.cpp, what --verify runs use), streaming memory
// bandwidth per rank, and MPI_Allreduce bus bandwidth and latency between
// the two ranks. Prints a JSON fragment to paste into a profile.
//
// Build and run (not part of the CMake build; needs Open MPI and Debian's
// libopenblas-dev):
//   mpicxx -O3 -std=c++17 -Iruntime/cpu -DDDPRT_HAVE_BLAS=1 \
//     -I/usr/include/x86_64-linux-gnu/openblas-pthread \
//     bench/sim/measure_cpu_profile.cpp runtime/cpu/BlasGemm.cpp \
//     runtime/cpu/FixedOrderGemm.cpp -lopenblas -o /tmp/measure_cpu_profile
//   mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/measure_cpu_profile
//
//===----------------------------------------------------------------------===//

#include "BlasGemm.h"
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

double gemmFlopRate(int n, bool doublePrecision, bool blas) {
  std::vector<double> ad(doublePrecision ? n * n : 0, 1.0), bd(ad), cd(ad);
  std::vector<float> af(doublePrecision ? 0 : n * n, 1.0f), bf(af), cf(af);
  double seconds = bestTime(3, [&] {
    using namespace ddprt::cpu;
    if (doublePrecision && blas)
      blasGemm(false, false, n, n, n, ad.data(), bd.data(), cd.data());
    else if (doublePrecision)
      fixedOrderGemm(false, false, n, n, n, ad.data(), bd.data(), cd.data());
    else if (blas)
      blasGemm(false, false, n, n, n, af.data(), bf.data(), cf.data());
    else
      fixedOrderGemm(false, false, n, n, n, af.data(), bf.data(), cf.data());
  });
  return 2.0 * n * n * n / seconds;
}

/// STREAM-like triad a = b + s * c over arrays of `n` doubles, counting 3
/// arrays moved, repeated so that each timing moves at least 768 MiB.
double memoryBandwidth(size_t n) {
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  size_t repeats = std::max<size_t>(1, (size_t(32) << 20) / n);
  double seconds = bestTime(5, [&] {
    for (size_t r = 0; r < repeats; ++r) {
      for (size_t i = 0; i < n; ++i)
        a[i] = b[i] + 3.0 * c[i];
      // Keeps the repeats from being merged into one.
      asm volatile("" : : "r"(a.data()) : "memory");
    }
  });
  return 3.0 * double(n * repeats) * sizeof(double) / seconds;
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

  double f32 = gemmFlopRate(1024, false, true);
  double f64 = gemmFlopRate(1024, true, true);
  double fixedF32 = gemmFlopRate(1024, false, false);
  double fixedF64 = gemmFlopRate(1024, true, false);
  // From memory (768 MiB of arrays) and from the cache (768 KiB, what the
  // CPU backend's small steps, tiny and the examples, touch per kernel).
  double memory = memoryBandwidth(size_t(32) << 20);
  double cached = memoryBandwidth(size_t(32) << 10);
  // Latency from a tiny all-reduce; bus bandwidth from a large one, with
  // nccl-tests' factor 2(n-1)/n.
  double tiny = allReduceTime(4);
  size_t large = 64 << 20;
  double big = allReduceTime(large);
  double busFactor = 2.0 * (size - 1) / size;
  double busBandwidth = large * busFactor / (big - tiny);

  if (rank == 0)
    std::printf("{\"ranks\": %d, \"gemm_f32_gflops\": %.1f, "
                "\"gemm_f64_gflops\": %.1f, "
                "\"fixed_order_gemm_f32_gflops\": %.1f, "
                "\"fixed_order_gemm_f64_gflops\": %.1f, \"memory_gbps\": %.2f, "
                "\"cached_memory_gbps\": %.2f, "
                "\"allreduce_latency_us\": %.1f, "
                "\"allreduce_bus_bandwidth_gbps\": %.2f}\n",
                size, f32 / 1e9, f64 / 1e9, fixedF32 / 1e9, fixedF64 / 1e9,
                memory / 1e9, cached / 1e9, tiny * 1e6, busBandwidth / 1e9);
  MPI_Finalize();
  return 0;
}
