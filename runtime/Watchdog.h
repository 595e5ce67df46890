//===- Watchdog.h - Ends the job when a collective hangs --------*- C++ -*-===//
//
// A collective whose peer died, hung or issued something else never
// completes. The watchdog thread ends every rank with a message naming the
// op instead, once an op has been in flight longer than the timeout.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_WATCHDOG_H
#define DDPRT_WATCHDOG_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace ddprt {

class Watchdog {
public:
  using Clock = std::chrono::steady_clock;

  explicit Watchdog(double timeoutSeconds);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  /// The rank its messages name, once MPI is up.
  void setRank(int worldRank);

  /// An op is in flight from begin() to end(ticket).
  uint64_t begin(std::string description);
  void end(uint64_t ticket);

  /// Polled by the watchdog thread between checks (the CUDA backend tracks
  /// its events and NCCL's asynchronous errors there). A non-empty result
  /// ends the job with that message. Returns only once no earlier poll is
  /// running, so that a backend can clear it and then be destroyed.
  void setPoll(std::function<std::string()> poll);
  /// Runs before the job is ended (to abort NCCL communicators).
  void setBeforeAbort(std::function<void()> hook);

private:
  void loop();
  [[noreturn]] void abortJob(const std::string &message);

  double timeoutSeconds;
  int rank = -1;
  std::mutex mutex;
  /// Held while the poll runs (without `mutex`, which the poll's begin/end
  /// calls take).
  std::mutex pollMutex;
  std::condition_variable wakeUp;
  bool stopping = false;
  uint64_t nextTicket = 1;
  struct InFlight {
    std::string description;
    Clock::time_point start;
  };
  std::map<uint64_t, InFlight> inFlight;
  std::function<std::string()> poll;
  std::function<void()> beforeAbort;
  std::thread thread;
};

/// The timeout from the init argument, else DDPRT_TIMEOUT (seconds), else
/// 60 s. Sets `error` when DDPRT_TIMEOUT is not a positive number.
double resolveTimeoutSeconds(int32_t timeoutMs, std::string &error);

} // namespace ddprt

#endif // DDPRT_WATCHDOG_H
