//===- Trace.h - Chrome traces of a run -------------------------*- C++ -*-===//
//
// Every op's start and end per stream, in the Chrome Trace Event Format that
// the simulator writes too (docs/Runtime.md, "Trace"): pid is the rank, tid 0
// the compute stream, tid 1.. the communication streams.
//
//===----------------------------------------------------------------------===//

#ifndef DDPRT_TRACE_H
#define DDPRT_TRACE_H

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ddprt {

enum class TraceCategory { Compute, Comm, Wait };

/// The `args` object of an event, built up key by key.
class TraceArgs {
public:
  TraceArgs &add(const char *key, const std::string &value);
  TraceArgs &add(const char *key, const char *value);
  TraceArgs &add(const char *key, int64_t value);
  TraceArgs &add(const char *key, double value);
  /// `{"k": v, ...}`
  std::string str() const { return "{" + body + "}"; }

private:
  void addKey(const char *key);
  std::string body;
};

struct TraceEvent {
  std::string name;
  TraceCategory category;
  int stream;
  double startUs;
  double durationUs;
  std::string args; // a JSON object
};

/// Appends `text` to `out` as a JSON string literal.
void appendJsonString(std::string &out, const std::string &text);

/// Collects the events of one rank. Thread-safe: the compute thread and the
/// communication thread both record.
class TraceRecorder {
public:
  bool isEnabled() const { return enabled; }
  void enable() { enabled = true; }
  /// Sets time zero; every rank calls it right after a barrier so that the
  /// ranks' timelines line up.
  void resetEpoch() { epoch = std::chrono::steady_clock::now(); }
  double nowUs() const {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now() - epoch)
        .count();
  }
  void record(TraceEvent event);

  /// This rank's events, with the metadata that names the process and its
  /// streams, as JSON objects separated by commas.
  std::string serialize(int rank, int numCommStreams) const;

  /// The whole file from the serialized events of every rank.
  static std::string mergeRanks(const std::vector<std::string> &ranks);

private:
  bool enabled = false;
  std::chrono::steady_clock::time_point epoch =
      std::chrono::steady_clock::now();
  mutable std::mutex mutex;
  std::vector<TraceEvent> events;
};

/// Records one event from construction to destruction on the calling
/// thread, if tracing is on.
class TraceSpan {
public:
  TraceSpan(TraceRecorder &recorder, std::string name, TraceCategory category,
            int stream);
  ~TraceSpan();
  TraceSpan(const TraceSpan &) = delete;
  TraceSpan &operator=(const TraceSpan &) = delete;
  bool isActive() const { return recorder.isEnabled(); }
  TraceArgs &args() { return eventArgs; }

private:
  TraceRecorder &recorder;
  std::string name;
  TraceCategory category;
  int stream;
  double startUs = 0;
  TraceArgs eventArgs;
};

} // namespace ddprt

#endif // DDPRT_TRACE_H
