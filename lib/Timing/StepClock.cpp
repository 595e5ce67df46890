//===- StepClock.cpp - The streams of a step and their timing rules -------===//

#include "ddp/Timing/StepClock.h"

using namespace ddp::timing;

//===----------------------------------------------------------------------===//
// ComputeStreamWork
//===----------------------------------------------------------------------===//

void ComputeStreamWork::addKernel(double seconds) {
  itemIsKernel.push_back(true);
  kernelPrefix.push_back(kernelPrefix.back() + seconds);
  blockedPrefix.push_back(blockedPrefix.back());
}

void ComputeStreamWork::addPrivateCollective(double seconds) {
  itemIsKernel.push_back(false);
  kernelPrefix.push_back(kernelPrefix.back());
  blockedPrefix.push_back(blockedPrefix.back() + seconds);
}

//===----------------------------------------------------------------------===//
// StepClock
//===----------------------------------------------------------------------===//

double StepClock::runKernel(double seconds) {
  // Kernels progress 1/slowdown as fast while communication is in flight.
  double duration = seconds;
  if (commBusyUntil > now && slowdown > 1) {
    double window = commBusyUntil - now;
    duration = seconds * slowdown <= window
                   ? seconds * slowdown
                   : window + (seconds - window / slowdown);
  }
  now += duration;
  return duration;
}

StepClock::Interval StepClock::issueCollective(unsigned stream,
                                               double seconds,
                                               double notBefore) {
  // `notBefore` is the end of collectives in flight, so communication stays
  // in flight without a gap up to the new one (runKernel relies on that).
  double start = std::max({now, streamFree[stream], notBefore});
  double end = start + seconds;
  streamFree[stream] = end;
  commBusyUntil = std::max(commBusyUntil, end);
  return {start, end};
}

double StepClock::blockUntil(double time) {
  if (time <= now)
    return 0;
  double held = time - now;
  now = time;
  return held;
}

void StepClock::runWork(const ComputeStreamWork &work, size_t begin,
                        size_t end) {
  if (begin == end)
    return;
  const std::vector<double> &kernels = work.kernelPrefix;
  const std::vector<double> &blocked = work.blockedPrefix;
  if (now >= commBusyUntil || slowdown <= 1) {
    now += work.getTimeBetween(begin, end);
    return;
  }
  // While communication is in flight kernels are slowed and the private
  // collectives take their time; find the item during which the in-flight
  // communication ends. The clock at the start of item p, all kernels before
  // it slowed, is nondecreasing in p.
  double busy = commBusyUntil;
  auto clockAt = [&](size_t p) {
    return now + slowdown * (kernels[p] - kernels[begin]) +
           (blocked[p] - blocked[begin]);
  };
  size_t low = begin, high = end;
  while (low < high) {
    size_t mid = low + (high - low + 1) / 2;
    if (clockAt(mid) <= busy)
      low = mid;
    else
      high = mid - 1;
  }
  size_t p = low;
  if (p == end) {
    now = clockAt(end);
    return;
  }
  double start = clockAt(p);
  double afterItem;
  if (work.itemIsKernel[p]) {
    double seconds = kernels[p + 1] - kernels[p];
    double window = busy - start;
    afterItem =
        window > 0 ? busy + (seconds - window / slowdown) : start + seconds;
  } else {
    afterItem = start + (blocked[p + 1] - blocked[p]);
  }
  now = afterItem + (kernels[end] - kernels[p + 1]) +
        (blocked[end] - blocked[p + 1]);
}

double StepClock::finishTail(double tailWork, double waitBound) const {
  // Every collective has been issued, so communication stays in flight until
  // `last`, and kernels before it are slowed. On the clock h(t) = t /
  // slowdown before `last` and last / slowdown + (t - last) after it, kernels
  // advance at full speed and waits are still maxima, so the end of the tail
  // is h^-1(max(h(now) + tailWork, waitBound)), where a collective's term of
  // waitBound is h(end) + the kernels from its wait on, and h(end) = end /
  // slowdown as no collective ends after `last`.
  double last = commBusyUntil;
  auto warp = [&](double t) {
    return t <= last ? t / slowdown : last / slowdown + (t - last);
  };
  auto unwarp = [&](double v) {
    return v <= last / slowdown ? v * slowdown : last + (v - last / slowdown);
  };
  double warped = std::max(warp(now) + tailWork, waitBound);
  return std::max(unwarp(warped), last);
}

void StepClock::releaseIdleStreams() {
  for (double &free : streamFree)
    free = std::max(free, now);
  commBusyUntil = std::max(commBusyUntil, now);
}
