//===- CommThread.cpp - The CPU backend's communication stream ------------===//

#include "CommThread.h"
#include "../Mpi.h"
#include "../Trace.h"
#include "../Watchdog.h"

#include <algorithm>
#include <chrono>

using namespace ddprt;

/// How long a thread that is about to sleep first keeps checking: a thread
/// woken from sleep may wait a scheduler tick for a core, far longer than a
/// small collective takes.
static constexpr std::chrono::microseconds spinTime(20);

/// Spins (yielding the core) until `ready` holds or spinTime has passed.
template <typename Ready> static bool spinUntil(Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + spinTime;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::yield();
  }
  return true;
}

void Completion::complete(Status result) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    status = std::move(result);
    finished = true;
  }
  done.notify_all();
}

Status Completion::wait() {
  spinUntil([this] { return finished.load(); });
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [this] { return finished.load(); });
  return status;
}

CommThread::CommThread(TraceRecorder &trace, Watchdog &watchdog)
    : trace(trace), watchdog(watchdog) {
  thread = std::thread([this] { loop(); });
}

CommThread::~CommThread() { stop(); }

std::shared_ptr<Completion> CommThread::submit(CommTask task) {
  auto completion = std::make_shared<Completion>();
  task.completion = completion;
  {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back(std::move(task));
    ++queued;
  }
  wakeUp.notify_one();
  return completion;
}

void CommThread::submitAfter(std::shared_ptr<Completion> task) {
  CommTask point;
  point.after = std::move(task);
  {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back(std::move(point));
    ++queued;
  }
  wakeUp.notify_one();
}

void CommThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wakeUp.notify_one();
  if (thread.joinable())
    thread.join();
}

void CommThread::loop() {
  // Polls that found nothing to do since the last progress: polling backs
  // off from yielding to short sleeps, which a new task interrupts.
  int idlePolls = 0;
  while (true) {
    CommTask task;
    bool haveTask = false;
    if (posted.empty())
      spinUntil([this] { return queued.load() > 0; });
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (posted.empty()) {
        wakeUp.wait(lock, [this] { return stopping || !queue.empty(); });
      } else if (idlePolls > 16) {
        // Sleep unless there is a task to start: an ordering point held by
        // a posted task is not one.
        int shift = std::min(idlePolls - 16, 6);
        wakeUp.wait_for(lock, std::chrono::microseconds(1 << shift), [this] {
          return stopping ||
                 (!queue.empty() && !(queue.front().after &&
                                      !queue.front().after->isFinished()));
        });
      }
      // An ordering point holds the queue until its task is done. That task
      // was queued before it, so it is posted (and completes by the polling
      // below) or already done: with nothing posted the point is passed.
      while (!queue.empty() && queue.front().after &&
             (queue.front().after->isFinished() || posted.empty())) {
        queue.pop_front();
        --queued;
      }
      if (!queue.empty() && !queue.front().after) {
        task = std::move(queue.front());
        queue.pop_front();
        --queued;
        haveTask = true;
      } else if (queue.empty() && stopping && posted.empty()) {
        return;
      }
    }
    if (haveTask) {
      startTask(task);
      idlePolls = 0;
    }
    if (!posted.empty()) {
      if (pollPosted())
        idlePolls = 0;
      else if (++idlePolls <= 16)
        std::this_thread::yield();
    }
  }
}

void CommThread::startTask(CommTask &task) {
  uint64_t ticket = watchdog.begin(task.description);
  double startUs = trace.nowUs();
  MPI_Request request = MPI_REQUEST_NULL;
  Status status = task.start(&request);
  if (!status.isOk() || request == MPI_REQUEST_NULL) {
    finishTask(task, startUs, ticket, std::move(status));
    return;
  }
  posted.push_back({request, std::move(task), startUs, ticket});
}

bool CommThread::pollPosted() {
  std::vector<MPI_Request> requests;
  requests.reserve(posted.size());
  for (const Posted &entry : posted)
    requests.push_back(entry.request);
  std::vector<int> indices(posted.size());
  std::vector<MPI_Status> statuses(posted.size());
  int count = 0;
  int rc = MPI_Testsome(int(requests.size()), requests.data(), &count,
                        indices.data(), statuses.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
    // The requests are in an unknown state: nothing can complete them.
    Status failure =
        checkMpi(rc, concat("MPI_Testsome(count=", requests.size(), ")"));
    for (Posted &entry : posted)
      finishTask(entry.task, entry.startUs, entry.ticket, failure);
    posted.clear();
    return true;
  }
  if (count == MPI_UNDEFINED || count == 0)
    return false;
  std::vector<bool> done(posted.size(), false);
  for (int i = 0; i < count; ++i) {
    Posted &entry = posted[size_t(indices[size_t(i)])];
    const MPI_Status &mpiStatus = statuses[size_t(i)];
    Status status;
    if (rc == MPI_ERR_IN_STATUS && mpiStatus.MPI_ERROR != MPI_SUCCESS)
      status = checkMpi(mpiStatus.MPI_ERROR, entry.task.description);
    else if (entry.task.finish)
      status = entry.task.finish(mpiStatus);
    finishTask(entry.task, entry.startUs, entry.ticket, std::move(status));
    done[size_t(indices[size_t(i)])] = true;
  }
  std::vector<Posted> remaining;
  for (size_t i = 0; i < posted.size(); ++i)
    if (!done[i])
      remaining.push_back(std::move(posted[i]));
  posted = std::move(remaining);
  return true;
}

void CommThread::finishTask(CommTask &task, double startUs, uint64_t ticket,
                            Status status) {
  watchdog.end(ticket);
  if (trace.isEnabled() && !task.traceName.empty())
    trace.record({task.traceName, TraceCategory::Comm, 1, startUs,
                  trace.nowUs() - startUs,
                  task.traceArgsAtEnd ? task.traceArgsAtEnd()
                                      : task.traceArgs});
  task.completion->complete(std::move(status));
}
