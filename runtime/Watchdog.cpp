//===- Watchdog.cpp - Ends the job when a collective hangs ----------------===//

#include "Watchdog.h"
#include "Status.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

using namespace ddprt;

double ddprt::resolveTimeoutSeconds(int32_t timeoutMs, std::string &error) {
  if (timeoutMs > 0)
    return timeoutMs / 1000.0;
  if (const char *text = std::getenv("DDPRT_TIMEOUT")) {
    char *end = nullptr;
    double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(seconds > 0) || seconds > 1e9) {
      error = concat("DDPRT_TIMEOUT='", text,
                     "' is not a positive number of seconds");
      return 0;
    }
    return seconds;
  }
  return 60.0;
}

Watchdog::Watchdog(double timeoutSeconds) : timeoutSeconds(timeoutSeconds) {
  thread = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wakeUp.notify_all();
  thread.join();
}

void Watchdog::setRank(int worldRank) {
  std::lock_guard<std::mutex> lock(mutex);
  rank = worldRank;
}

uint64_t Watchdog::begin(std::string description) {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t ticket = nextTicket++;
  inFlight.emplace(ticket, InFlight{std::move(description), Clock::now()});
  return ticket;
}

void Watchdog::end(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex);
  inFlight.erase(ticket);
}

void Watchdog::setPoll(std::function<std::string()> newPoll) {
  std::lock_guard<std::mutex> pollLock(pollMutex);
  poll = std::move(newPoll);
}

void Watchdog::setBeforeAbort(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mutex);
  beforeAbort = std::move(hook);
}

void Watchdog::abortJob(const std::string &message) {
  if (beforeAbort)
    beforeAbort();
  fatalError(message);
}

void Watchdog::loop() {
  // Check often enough that the job ends within a tenth of the timeout
  // after it expires.
  auto period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::min(0.1, timeoutSeconds / 10)));
  std::unique_lock<std::mutex> lock(mutex);
  while (!wakeUp.wait_for(lock, period, [this] { return stopping; })) {
    lock.unlock();
    std::string message;
    {
      std::lock_guard<std::mutex> pollLock(pollMutex);
      if (poll)
        message = poll();
    }
    lock.lock();
    if (!message.empty())
      abortJob(
          concat("ddprt: rank ", rank, ": ", message, "; ending all ranks"));
    Clock::time_point now = Clock::now();
    for (const auto &[ticket, op] : inFlight) {
      double seconds = std::chrono::duration<double>(now - op.start).count();
      if (seconds <= timeoutSeconds)
        continue;
      char limit[32];
      std::snprintf(limit, sizeof(limit), "%g", timeoutSeconds);
      abortJob(concat(
          "ddprt: rank ", rank, ": ", op.description,
          " did not complete within the timeout of ", limit,
          " s (DDPRT_TIMEOUT or ddprt_init's timeout_ms): a rank has died, "
          "hangs, or issued a different collective; ending all ranks"));
    }
  }
}
