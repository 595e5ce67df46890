//===- CommThread.h - The CPU backend's communication stream ----*- C++ -*-===//
//
// Every MPI call of the CPU backend runs on this one thread, in issue order:
// MPI requires the collectives on a communicator to be issued in the same
// order on every rank, and issuing from one thread in program order gives
// that. The compute thread keeps running BLAS meanwhile, so asynchronous
// collectives really overlap compute. Synchronous collectives block this
// thread (the compute thread waits for them anyway); asynchronous ones, and
// every send and receive, are posted and completed by polling, which backs
// off to short sleeps so that it does not take the cores the GEMMs run on,
// and which lets a ring exchange (send to the next, receive from the
// previous) proceed without deadlock.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_CPU_COMMTHREAD_H
#define DDPRT_CPU_COMMTHREAD_H

#include "../Status.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ddprt {

class TraceRecorder;
class Watchdog;

/// The outcome of one task, waited on by the compute thread.
class Completion {
public:
  void complete(Status result);
  Status wait();
  bool isFinished() const { return finished.load(); }

private:
  std::mutex mutex;
  std::condition_variable done;
  std::atomic<bool> finished{false};
  Status status;
};

struct CommTask {
  /// The trace event's name ("all_reduce") and args; no event when empty.
  std::string traceName;
  std::string traceArgs;
  /// When set, the args instead, taken once the task is done (what it moved
  /// may be known only then).
  std::function<std::string()> traceArgsAtEnd;
  /// What the watchdog and error messages call it.
  std::string description;
  /// Runs on the communication thread. Either does all the work, or posts
  /// one nonblocking request in *request; `finish` then runs once that
  /// request completes, with its MPI_Status.
  std::function<Status(MPI_Request *request)> start;
  std::function<Status(const MPI_Status &status)> finish;
  std::shared_ptr<Completion> completion;
  /// For an ordering point (submitAfter) instead of a task: the task that
  /// every later task starts after.
  std::shared_ptr<Completion> after;
};

class CommThread {
public:
  CommThread(TraceRecorder &trace, Watchdog &watchdog);
  ~CommThread();
  CommThread(const CommThread &) = delete;
  CommThread &operator=(const CommThread &) = delete;

  /// Queues a task; its completion is set once it is done.
  std::shared_ptr<Completion> submit(CommTask task);
  /// Starts the tasks queued after this call only once `task` (queued
  /// before) is done, as cudaStreamWaitEvent orders a stream; the thread
  /// keeps progressing the posted requests meanwhile.
  void submitAfter(std::shared_ptr<Completion> task);
  /// Drains the queue and the posted requests, then ends the thread.
  void stop();

private:
  void loop();
  void startTask(CommTask &task);
  /// Tests the posted requests; returns whether any completed.
  bool pollPosted();
  void finishTask(CommTask &task, double startUs, uint64_t ticket,
                  Status status);

  TraceRecorder &trace;
  Watchdog &watchdog;
  std::mutex mutex;
  std::condition_variable wakeUp;
  std::deque<CommTask> queue;
  std::atomic<size_t> queued{0};
  bool stopping = false;

  // Touched by the communication thread only.
  struct Posted {
    MPI_Request request;
    CommTask task;
    double startUs;
    uint64_t ticket;
  };
  std::vector<Posted> posted;
  std::thread thread;
};

} // namespace ddprt

#endif // DDPRT_CPU_COMMTHREAD_H
