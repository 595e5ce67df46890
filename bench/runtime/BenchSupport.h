//===- BenchSupport.h - What the runtime's GPU benchmarks share -*- C++ -*-===//
//
// Ending the benchmark on a failed call, and a clock.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_BENCH_BENCHSUPPORT_H
#define DDPRT_BENCH_BENCHSUPPORT_H

#include "ddp/Runtime/ddprt.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace ddprt::bench {

[[noreturn]] inline void fail(const char *what, const char *detail) {
  std::fprintf(stderr, "bench: %s failed: %s\n", what, detail);
  std::exit(1);
}

/// Seconds on a steady clock.
inline double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace ddprt::bench

#define CHECK_DDPRT(context, call)                                             \
  do {                                                                         \
    if ((call) != DDPRT_OK)                                                    \
      ::ddprt::bench::fail(#call, ddprt_last_error(context));                  \
  } while (false)

#endif // DDPRT_BENCH_BENCHSUPPORT_H
