// The timeline profiler: slices (node runs, collectives, training phases, server requests) recorded
// into per-thread buffers and written as one Chrome-trace / Perfetto JSON file (docs/profiling.md).
//
// A trace is recorded between StartTrace(path) and StopTrace(), or for the whole process when the
// environment holds ONEFLOW_TRACE=path (read once, when the library loads; the file is written at
// exit). At most one trace is recorded at a time. A trace still recording at exit is written then,
// unless it holds no slice: a process that traced nothing (`oneflow launch` itself, under
// ONEFLOW_TRACE) leaves the path to the processes that did.
//
// Cost: off, a TraceScope is one relaxed atomic load and a branch (and one in its destructor); the
// arguments of a slice are formatted only when it records (guard costly ones with `if (scope)`).
// On, each thread appends complete slices to a buffer of its own (an uncontended lock per slice;
// mapped memory, not the heap, so a traced run allocates as an untraced one does);
// the buffers are merged only when the trace is written. Each thread keeps at most 256 MiB of
// slices per trace (over a million); further ones are counted and reported, not kept.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oneflow {

namespace trace_internal {
extern std::atomic<bool> g_recording;
}

// Whether a trace is being recorded: the check every recording site makes first.
inline bool TraceEnabled() { return trace_internal::g_recording.load(std::memory_order_relaxed); }

// Starts recording into `path` (made absolute now, so a later chdir does not move it; "%p" in it
// becomes the process id and "%r" the RANK of `oneflow launch`, for one file per process). Throws
// kInvalidArgument when a trace is already being recorded (naming its file) or `path` is empty,
// kIo when no file can be created in its directory (checked now, so a bad path fails here rather
// than after a long run).
void StartTrace(const std::string& path);

// Stops recording and writes the file atomically (a temporary file beside it, fsync, rename).
// Returns the path written. Throws kInvalidArgument when no trace is being recorded, kIo when the
// file cannot be written (the recorded slices are then lost; recording has stopped either way).
std::string StopTrace();

// The file of the trace being recorded, or "" when none is.
std::string TracePath();

// Names the calling thread's track in traces (default: the OS thread name and id). With
// `share_by_name`, threads of the same name whose lifetimes do not overlap share one track: for
// short-lived threads started per step (the devices of a distributed run), which would otherwise
// add a track per step.
void SetTraceThreadName(std::string name, bool share_by_name = false);

// The arguments of a slice, shown beside it by the viewers: a JSON object built key by key.
// Keys are plain identifiers (not escaped); values are escaped.
class TraceArgs {
 public:
  TraceArgs& Add(std::string_view key, std::string_view value);
  TraceArgs& Add(std::string_view key, const char* value) { return Add(key, std::string_view(value)); }
  TraceArgs& Add(std::string_view key, int64_t value);
  TraceArgs& Add(std::string_view key, int value) { return Add(key, static_cast<int64_t>(value)); }
  TraceArgs& Add(std::string_view key, uint64_t value);
  TraceArgs& Add(std::string_view key, const std::vector<std::string>& values);  // a list of strings
  TraceArgs& Add(std::string_view key, const std::vector<int>& values);          // a list of integers
  // A value the caller wrote as JSON itself (for hot paths that format in place).
  TraceArgs& AddJson(std::string_view key, std::string_view json_value);
  const std::string& json_members() const { return members_; }  // "\"k\":v,..." without braces
  bool empty() const { return members_.empty(); }

 private:
  void Key(std::string_view key);
  std::string members_;
};

// Records one slice on the calling thread from construction to destruction: category `category`
// (a string literal: "node", "comm", "train", "serve", "session"), name `name`. Scopes nest; a
// thread's slices are nested or disjoint, never partially overlapping, as the viewers require.
class TraceScope {
 public:
  TraceScope(const char* category, std::string_view name) {
    if (TraceEnabled()) Begin(category, name);
  }
  ~TraceScope() {
    if (slice_) End();
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  // Whether this slice records: false when tracing was off at construction.
  explicit operator bool() const { return slice_.has_value(); }
  // Adds an argument (nothing when not recording).
  template <typename T>
  TraceScope& Arg(std::string_view key, const T& value) {
    if (slice_) slice_->args.Add(key, value);
    return *this;
  }
  TraceScope& ArgJson(std::string_view key, std::string_view json_value) {
    if (slice_) slice_->args.AddJson(key, json_value);
    return *this;
  }
  // Ends the slice's time here; arguments added afterwards are still kept, and the time spent
  // formatting them is not counted in the slice.
  void StopClock();

 private:
  struct Slice {
    const char* category;
    std::string name;
    int64_t begin_ns;
    int64_t end_ns;  // 0 until StopClock
    TraceArgs args;
  };
  void Begin(const char* category, std::string_view name);
  void End();
  std::optional<Slice> slice_;
};

// Records an interval that belongs to no one thread (a server request, from its arrival to its
// answer, passing through several threads): it is drawn on a track named `track` of its own, with
// as many lanes as overlapping intervals need. Nothing happens when tracing is off.
void TraceSpan(const char* category, std::string_view name, std::string_view track,
               std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end,
               const TraceArgs& args);

}  // namespace oneflow
