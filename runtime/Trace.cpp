//===- Trace.cpp - Chrome traces of a run ---------------------------------===//

#include "Trace.h"

#include <cstdio>

using namespace ddprt;

void ddprt::appendJsonString(std::string &out, const std::string &text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
        out += escaped;
      } else {
        out += char(c);
      }
    }
  }
  out += '"';
}

static std::string formatDouble(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", value);
  return text;
}

void TraceArgs::addKey(const char *key) {
  if (!body.empty())
    body += ", ";
  appendJsonString(body, key);
  body += ": ";
}

TraceArgs &TraceArgs::add(const char *key, const std::string &value) {
  addKey(key);
  appendJsonString(body, value);
  return *this;
}

TraceArgs &TraceArgs::add(const char *key, const char *value) {
  return add(key, std::string(value ? value : ""));
}

TraceArgs &TraceArgs::add(const char *key, int64_t value) {
  addKey(key);
  body += std::to_string(value);
  return *this;
}

TraceArgs &TraceArgs::add(const char *key, double value) {
  addKey(key);
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  body += text;
  return *this;
}

void TraceRecorder::record(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mutex);
  events.push_back(std::move(event));
}

static const char *categoryName(TraceCategory category) {
  switch (category) {
  case TraceCategory::Compute:
    return "compute";
  case TraceCategory::Comm:
    return "comm";
  case TraceCategory::Wait:
    return "wait";
  }
  return "compute";
}

static void appendMetadata(std::string &out, const char *what, int pid, int tid,
                           const std::string &name) {
  out += "{\"name\": \"";
  out += what;
  out += "\", \"ph\": \"M\", \"pid\": " + std::to_string(pid);
  if (tid >= 0)
    out += ", \"tid\": " + std::to_string(tid);
  out += ", \"args\": {\"name\": ";
  appendJsonString(out, name);
  out += "}}";
}

std::string TraceRecorder::serialize(int rank, int numCommStreams) const {
  std::string out;
  appendMetadata(out, "process_name", rank, -1, "rank " + std::to_string(rank));
  out += ",\n";
  appendMetadata(out, "thread_name", rank, 0, "compute");
  for (int stream = 1; stream <= numCommStreams; ++stream) {
    out += ",\n";
    appendMetadata(out, "thread_name", rank, stream,
                   "comm" + std::to_string(stream - 1));
  }
  std::lock_guard<std::mutex> lock(mutex);
  for (const TraceEvent &event : events) {
    out += ",\n{\"name\": ";
    appendJsonString(out, event.name);
    out += ", \"cat\": \"";
    out += categoryName(event.category);
    out += "\", \"ph\": \"X\", \"ts\": " + formatDouble(event.startUs) +
           ", \"dur\": " + formatDouble(event.durationUs) +
           ", \"pid\": " + std::to_string(rank) +
           ", \"tid\": " + std::to_string(event.stream) +
           ", \"args\": " + (event.args.empty() ? "{}" : event.args) + "}";
  }
  return out;
}

std::string TraceRecorder::mergeRanks(const std::vector<std::string> &ranks) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i)
      out += ",\n";
    out += ranks[i];
  }
  out += "\n]}\n";
  return out;
}

TraceSpan::TraceSpan(TraceRecorder &recorder, std::string name,
                     TraceCategory category, int stream)
    : recorder(recorder), name(std::move(name)), category(category),
      stream(stream) {
  if (recorder.isEnabled())
    startUs = recorder.nowUs();
}

TraceSpan::~TraceSpan() {
  if (!recorder.isEnabled())
    return;
  double endUs = recorder.nowUs();
  recorder.record({std::move(name), category, stream, startUs, endUs - startUs,
                   eventArgs.str()});
}
