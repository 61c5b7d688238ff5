// The timeline recorder: per-thread slice buffers, ONEFLOW_TRACE, and the Chrome-trace JSON writer.
#include "base/trace.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "base/error.h"
#include "base/file_util.h"

namespace oneflow {

namespace trace_internal {
std::atomic<bool> g_recording{false};
}

namespace {

using Clock = std::chrono::steady_clock;

// Per thread and trace: a node slice takes about 150 bytes, so this is over a million slices,
// minutes of a busy thread.
constexpr size_t kMaxBytesPerThread = size_t{256} << 20;
// Tracks that are no OS thread (shared thread names, request lanes) get ids above any Linux tid
// (at most 2^22) that still fit the 32 bits some viewers read.
constexpr int64_t kSyntheticTidBase = int64_t{1} << 30;

int64_t ToNs(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
int64_t NowNs() { return ToNs(Clock::now()); }

struct Event {
  const char* category;
  std::string name;
  int64_t begin_ns, end_ns;
  std::string args;   // the members of the args object
  std::string track;  // TraceSpan's track; "" for a slice of the thread that recorded it
};

// A thread's finished slices, packed one after another into blocks mapped for the purpose (64 KiB,
// doubling to 1 MiB) rather than malloc'ed slice by slice: recording then leaves the program's heap
// alone, and a traced run allocates (and page-faults) as an untraced one does.
class SliceLog {
 public:
  SliceLog() = default;
  SliceLog(SliceLog&& o) noexcept : blocks_(std::move(o.blocks_)), bytes_(o.bytes_) { o.bytes_ = 0; }
  SliceLog& operator=(SliceLog&& o) noexcept {
    std::swap(blocks_, o.blocks_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~SliceLog() {
    for (const Block& b : blocks_) ::munmap(b.data, b.size);
  }

  // False (nothing kept) past kMaxBytesPerThread or when no memory can be mapped.
  bool Add(int64_t begin_ns, int64_t end_ns, const char* category, std::string_view name, std::string_view args,
           std::string_view track) {
    const size_t need = Align(sizeof(Header) + name.size() + args.size() + track.size());
    if (bytes_ + need > kMaxBytesPerThread) return false;
    if (blocks_.empty() || blocks_.back().size - blocks_.back().used < need) {
      size_t size = blocks_.empty() ? (size_t{64} << 10) : std::min(blocks_.back().size * 2, size_t{1} << 20);
      size = std::max(size, need);
      void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return false;
      blocks_.push_back(Block{static_cast<char*>(p), size, 0});
    }
    Block& b = blocks_.back();
    char* at = b.data + b.used;
    const Header h{begin_ns, end_ns, category, static_cast<uint32_t>(name.size()), static_cast<uint32_t>(args.size()),
                   static_cast<uint32_t>(track.size())};
    std::memcpy(at, &h, sizeof h);
    at += sizeof h;
    std::memcpy(at, name.data(), name.size());
    std::memcpy(at + name.size(), args.data(), args.size());
    std::memcpy(at + name.size() + args.size(), track.data(), track.size());
    b.used += need;
    bytes_ += need;
    return true;
  }

  // The slices back as events, in the order they were added.
  std::vector<Event> Events() const {
    std::vector<Event> out;
    for (const Block& b : blocks_) {
      for (size_t off = 0; off < b.used;) {
        Header h;
        std::memcpy(&h, b.data + off, sizeof h);
        const char* p = b.data + off + sizeof h;
        out.push_back(Event{h.category, std::string(p, h.name), h.begin_ns, h.end_ns,
                            std::string(p + h.name, h.args), std::string(p + h.name + h.args, h.track)});
        off += Align(sizeof h + h.name + h.args + h.track);
      }
    }
    return out;
  }

 private:
  struct Header {
    int64_t begin_ns, end_ns;
    const char* category;  // a string literal
    uint32_t name, args, track;  // byte counts of what follows
  };
  struct Block {
    char* data;
    size_t size, used;
  };
  static size_t Align(size_t n) { return (n + 7) & ~size_t{7}; }
  std::vector<Block> blocks_;
  size_t bytes_ = 0;
};

struct ThreadBuffer {
  std::mutex mu;  // the owning thread appends; StopTrace takes the log
  SliceLog log;
  size_t dropped = 0;
  int64_t os_tid = 0;
  std::string name;
  bool share_by_name = false;
};

struct ThreadState {
  std::shared_ptr<ThreadBuffer> buffer;
  uint64_t generation = 0;  // the trace `buffer` belongs to
  std::string name;         // SetTraceThreadName
  bool share_by_name = false;
};
thread_local ThreadState t_thread;

struct Recorder {
  std::mutex mu;
  bool recording = false;  // g_recording mirrors it, for the lock-free check
  bool from_env = false;
  pid_t pid = 0;  // the process that started the trace: a forked child never writes it
  std::string path;
  int64_t start_ns = 0;
  std::atomic<uint64_t> generation{0};  // bumped by every StartTrace
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
};

// Never destroyed: threads may still finish slices while the process exits.
Recorder& Rec() {
  static Recorder* r = new Recorder;
  return *r;
}

int64_t OsTid() { return static_cast<int64_t>(::syscall(SYS_gettid)); }

// The process's command name ("oneflow", "python3"), as threads inherit it.
const std::string& ProcessCommand() {
  static const std::string command = [] {
    char buf[64] = {0};
    if (FILE* f = std::fopen("/proc/self/comm", "r")) {
      if (std::fgets(buf, sizeof buf, f) == nullptr) buf[0] = '\0';
      std::fclose(f);
    }
    std::string s(buf);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }();
  return command;
}

// The track name of a thread nobody named: "main", or the name it was given with
// pthread_setname_np (other threads inherit the process's name, which says nothing).
std::string DefaultThreadName() {
  if (OsTid() == static_cast<int64_t>(::getpid())) return "main";
  char own[32] = {0};
  ::pthread_getname_np(::pthread_self(), own, sizeof own);
  return own[0] != '\0' && ProcessCommand() != own ? own : "thread";
}

void Append(int64_t begin_ns, int64_t end_ns, const char* category, std::string_view name, std::string_view args,
            std::string_view track) {
  if (!TraceEnabled()) return;  // stopped while the slice was open
  Recorder& r = Rec();
  ThreadState& t = t_thread;
  const uint64_t generation = r.generation.load(std::memory_order_acquire);
  if (!t.buffer || t.generation != generation) {
    auto b = std::make_shared<ThreadBuffer>();
    b->os_tid = OsTid();
    b->name = t.name.empty() ? DefaultThreadName() : t.name;
    b->share_by_name = t.share_by_name;
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.recording || r.generation.load() != generation) return;
    r.buffers.push_back(b);
    t.buffer = std::move(b);
    t.generation = generation;
  }
  ThreadBuffer& b = *t.buffer;
  std::lock_guard<std::mutex> lock(b.mu);
  if (!b.log.Add(begin_ns, end_ns, category, name, args, track)) ++b.dropped;
}

// `s` as the body of a JSON string: quotes, backslashes and control characters escaped, and any
// byte that is not part of valid UTF-8 replaced, so the file always parses.
void AppendEscaped(std::string& out, std::string_view s) {
  // Names and shapes are almost always plain ASCII: copy the clean prefix in one piece.
  size_t clean = 0;
  while (clean < s.size()) {
    const auto c = static_cast<unsigned char>(s[clean]);
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
    ++clean;
  }
  out.append(s.data(), clean);
  for (size_t i = clean; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
}

void AppendQuoted(std::string& out, std::string_view s) {
  out += '"';
  AppendEscaped(out, s);
  out += '"';
}

// Microseconds with nanosecond digits, exact, so nesting survives the conversion (ns >= 0).
void AppendMicros(std::string& out, int64_t ns) {
  char buf[32];
  char* end = std::to_chars(buf, buf + sizeof buf, ns / 1000).ptr;
  const int64_t frac = ns % 1000;
  *end++ = '.';
  *end++ = static_cast<char>('0' + frac / 100);
  *end++ = static_cast<char>('0' + frac / 10 % 10);
  *end++ = static_cast<char>('0' + frac % 10);
  out.append(buf, end);
}

// Greedy interval partitioning: `intervals` (begin, end), in any order, get lane numbers such that
// the intervals of one lane do not overlap; as few lanes as the deepest overlap needs.
std::vector<size_t> AssignLanes(const std::vector<std::pair<int64_t, int64_t>>& intervals) {
  std::vector<size_t> order(intervals.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return intervals[a].first < intervals[b].first; });
  std::vector<int64_t> lane_end;
  std::vector<size_t> lane(intervals.size());
  for (size_t i : order) {
    size_t k = 0;
    while (k < lane_end.size() && lane_end[k] > intervals[i].first) ++k;
    if (k == lane_end.size()) lane_end.push_back(0);
    lane_end[k] = intervals[i].second;
    lane[i] = k;
  }
  return lane;
}

// What StopTrace takes out of a thread's buffer.
struct ThreadSlices {
  int64_t os_tid = 0;
  std::string name;
  bool share_by_name = false;
  std::vector<Event> events;
};

struct Track {
  int64_t tid;
  std::string name;
  std::vector<Event> events;
};

// Lays the recorded slices out on tracks: one per thread, threads sharing a name merged where
// their lifetimes allow, and request spans on lanes of their own tracks.
std::vector<Track> BuildTracks(std::vector<ThreadSlices>& threads_taken) {
  std::vector<Track> tracks;
  std::map<int64_t, size_t> by_tid;  // a tid the kernel reused after a thread ended: one track
  int64_t next_synthetic = kSyntheticTidBase;
  std::map<std::string, std::vector<Event>> spans;  // by track name
  std::map<std::string, std::vector<ThreadSlices*>> shared;
  for (ThreadSlices& slices : threads_taken) {
    ThreadSlices* b = &slices;
    std::vector<Event> own;
    for (Event& e : b->events) (e.track.empty() ? own : spans[e.track]).push_back(std::move(e));
    b->events = std::move(own);
    if (b->events.empty()) continue;
    if (b->share_by_name) {
      shared[b->name].push_back(b);
      continue;
    }
    auto [it, fresh] = by_tid.emplace(b->os_tid, tracks.size());
    if (fresh) tracks.push_back(Track{b->os_tid, b->name, {}});
    Track& t = tracks[it->second];
    t.name = b->name;
    for (Event& e : b->events) t.events.push_back(std::move(e));
  }
  for (auto& [name, threads] : shared) {
    std::vector<std::pair<int64_t, int64_t>> lifetimes;
    for (ThreadSlices* b : threads) {
      int64_t lo = b->events.front().begin_ns, hi = b->events.front().end_ns;
      for (const Event& e : b->events) lo = std::min(lo, e.begin_ns), hi = std::max(hi, e.end_ns);
      lifetimes.emplace_back(lo, hi);
    }
    const std::vector<size_t> lane = AssignLanes(lifetimes);
    const size_t first = tracks.size();
    for (size_t i = 0; i < threads.size(); ++i) {
      while (tracks.size() <= first + lane[i]) {
        const size_t k = tracks.size() - first;
        tracks.push_back(Track{next_synthetic++, k == 0 ? name : name + " (" + std::to_string(k + 1) + ")", {}});
      }
      for (Event& e : threads[i]->events) tracks[first + lane[i]].events.push_back(std::move(e));
    }
  }
  for (auto& [name, events] : spans) {
    std::vector<std::pair<int64_t, int64_t>> intervals;
    for (const Event& e : events) intervals.emplace_back(e.begin_ns, e.end_ns);
    const std::vector<size_t> lane = AssignLanes(intervals);
    const size_t first = tracks.size();
    for (size_t i = 0; i < events.size(); ++i) {
      while (tracks.size() <= first + lane[i]) {
        const size_t k = tracks.size() - first;
        tracks.push_back(Track{next_synthetic++, name + " (lane " + std::to_string(k + 1) + ")", {}});
      }
      tracks[first + lane[i]].events.push_back(std::move(events[i]));
    }
  }
  return tracks;
}

// The process's track group: its command name, and its rank under `oneflow launch` (RANK).
std::string ProcessName() {
  std::string name = ProcessCommand().empty() ? "oneflow" : ProcessCommand();
  if (const char* rank = std::getenv("RANK")) name += std::string(" rank ") + rank;
  return name;
}

void WriteJson(FileSink& sink, std::vector<Track>& tracks, int64_t start_ns, size_t dropped) {
  const long long pid = static_cast<long long>(::getpid());
  std::string out;
  out.reserve(1 << 20);
  auto flush = [&](bool force) {
    if (force || out.size() >= (1u << 20)) {
      sink.Write(out.data(), out.size());
      out.clear();
    }
  };
  char head[512];
  std::snprintf(head, sizeof head,
                "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"oneflow\",\"dropped_slices\":%llu},"
                "\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%lld,\"tid\":0,"
                "\"args\":{\"name\":",
                static_cast<unsigned long long>(dropped), pid);
  out += head;
  AppendQuoted(out, ProcessName());
  out += "}}";
  for (size_t ti = 0; ti < tracks.size(); ++ti) {
    Track& t = tracks[ti];
    // Slices before the trace started (open when it did) are clipped to its start: clipping every
    // slice the same way keeps a thread's slices nested or disjoint.
    for (Event& e : t.events) {
      e.begin_ns = std::max(e.begin_ns, start_ns) - start_ns;
      e.end_ns = std::max(e.end_ns, start_ns) - start_ns;
    }
    // Parents before their children: by start, then the longer first.
    std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
      return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.end_ns > b.end_ns;
    });
    const std::string ids = ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(t.tid);
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\"" + ids + ",\"args\":{\"name\":";
    AppendQuoted(out, t.name);
    out += "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\"" + ids + ",\"args\":{\"sort_index\":" +
           std::to_string(ti) + "}}";
    for (const Event& e : t.events) {
      out += ",\n{\"name\":";
      AppendQuoted(out, e.name);
      out += ",\"cat\":";
      AppendQuoted(out, e.category);
      out += ",\"ph\":\"X\",\"ts\":";
      AppendMicros(out, e.begin_ns);
      out += ",\"dur\":";
      AppendMicros(out, e.end_ns - e.begin_ns);
      out += ids;
      out += ",\"args\":{";
      out += e.args;
      out += "}}";
      flush(false);
    }
  }
  out += "\n]}\n";
  flush(true);
}

// Stops recording and writes the file; with `skip_if_empty`, a trace without slices is not
// written (returns ""): a process that traced nothing, such as `oneflow launch` itself under
// ONEFLOW_TRACE, must not replace a file its ranks wrote.
std::string StopAndWrite(bool skip_if_empty) {
  Recorder& r = Rec();
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::string path;
  int64_t start_ns = 0;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    OF_REQUIRE(r.recording, "no trace is being recorded");
    trace_internal::g_recording.store(false, std::memory_order_release);
    r.recording = false;
    buffers.swap(r.buffers);
    path = r.path;
    start_ns = r.start_ns;
  }
  // Each buffer is emptied under its lock: a thread that checked TraceEnabled() just before the
  // stop may still be appending a slice.
  size_t dropped = 0;
  std::vector<ThreadSlices> taken(buffers.size());
  std::vector<SliceLog> logs(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    ThreadBuffer& b = *buffers[i];
    std::lock_guard<std::mutex> lock(b.mu);
    taken[i] = ThreadSlices{b.os_tid, b.name, b.share_by_name, {}};
    logs[i] = std::move(b.log);
    dropped += b.dropped;
  }
  size_t slices = dropped;
  for (size_t i = 0; i < buffers.size(); ++i) {
    taken[i].events = logs[i].Events();
    slices += taken[i].events.size();
  }
  logs.clear();
  if (skip_if_empty && slices == 0) return "";
  std::vector<Track> tracks = BuildTracks(taken);
  try {
    WriteFileAtomically(path, [&](FileSink& sink) { WriteJson(sink, tracks, start_ns, dropped); });
  } catch (const Error& e) {
    Fail(ErrorCode::kIo, "cannot write the trace: ", e.what());
  }
  if (dropped > 0)
    std::fprintf(stderr, "oneflow: the trace %s lacks %zu slices: a thread recorded more than %zu MiB\n",
                 path.c_str(), dropped, kMaxBytesPerThread >> 20);
  return path;
}

void StopAtExit() {
  if (!TraceEnabled() || ::getpid() != Rec().pid) return;
  try {
    const std::string path = StopAndWrite(true);
    if (!path.empty())
      std::fprintf(stderr, "oneflow: trace written to %s (open it in ui.perfetto.dev or chrome://tracing)\n",
                   path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneflow: the trace could not be written: %s\n", e.what());
  }
}

// Fails here, not after a long run, when the file cannot be created.
void CheckWritable(const std::string& path) {
  struct stat st;
  OF_CHECK(!(::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)), kIo, "cannot write a trace to '", path,
           "': it is a directory");
  std::string probe = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  OF_CHECK(fd >= 0, kIo, "cannot write a trace to '", path, "': ", std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

// "%p" becomes the process id and "%r" the rank (RANK, which `oneflow launch` sets; 0 without):
// the processes of one job that share ONEFLOW_TRACE then write a file each.
std::string ExpandPath(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size() && (path[i + 1] == 'p' || path[i + 1] == 'r')) {
      const char* rank = std::getenv("RANK");
      out += path[i + 1] == 'p' ? std::to_string(::getpid()) : rank != nullptr && rank[0] != '\0' ? rank : "0";
      ++i;
    } else {
      out += path[i];
    }
  }
  return out;
}

void StartTraceImpl(const std::string& path, bool from_env) {
  OF_REQUIRE(!path.empty(), "the trace path is empty");
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(ExpandPath(path), ec).string();
  if (ec) absolute = path;
  Recorder& r = Rec();
  std::lock_guard<std::mutex> lock(r.mu);
  OF_REQUIRE(!r.recording, "a trace is already being recorded into '", r.path, "'",
             r.from_env ? " (ONEFLOW_TRACE)" : "", "; stop it first");
  CheckWritable(absolute);
  static std::once_flag at_exit;
  std::call_once(at_exit, [] {
    std::atexit(StopAtExit);
    // A child forked without exec records nothing: the trace and its file are the parent's.
    ::pthread_atfork(nullptr, nullptr, [] { trace_internal::g_recording.store(false, std::memory_order_relaxed); });
  });
  r.pid = ::getpid();
  r.path = absolute;
  r.from_env = from_env;
  r.buffers.clear();
  r.start_ns = NowNs();
  r.generation.fetch_add(1, std::memory_order_release);
  r.recording = true;
  trace_internal::g_recording.store(true, std::memory_order_release);
}

// ONEFLOW_TRACE, read once when the library loads.
const bool g_env_trace_started = [] {
  const char* path = std::getenv("ONEFLOW_TRACE");
  if (path == nullptr || path[0] == '\0') return false;
  try {
    StartTraceImpl(path, true);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneflow: ONEFLOW_TRACE=%s: %s; no trace is recorded\n", path, e.what());
    return false;
  }
}();

}  // namespace

void StartTrace(const std::string& path) { StartTraceImpl(path, false); }

std::string StopTrace() { return StopAndWrite(false); }

std::string TracePath() {
  Recorder& r = Rec();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.recording ? r.path : "";
}

void SetTraceThreadName(std::string name, bool share_by_name) {
  ThreadState& t = t_thread;
  t.name = std::move(name);
  t.share_by_name = share_by_name;
  if (t.buffer) {  // already recording on this thread: the name applies to its track from now on
    std::lock_guard<std::mutex> lock(t.buffer->mu);
    t.buffer->name = t.name;
    t.buffer->share_by_name = share_by_name;
  }
}

// ---- TraceArgs, TraceScope, TraceSpan ---------------------------------------------------------

void TraceArgs::Key(std::string_view key) {  // keys are identifiers: nothing to escape
  if (!members_.empty()) members_ += ',';
  members_ += '"';
  members_.append(key.data(), key.size());
  members_ += "\":";
}

TraceArgs& TraceArgs::Add(std::string_view key, std::string_view value) {
  Key(key);
  AppendQuoted(members_, value);
  return *this;
}

TraceArgs& TraceArgs::Add(std::string_view key, int64_t value) {
  Key(key);
  members_ += std::to_string(value);
  return *this;
}

TraceArgs& TraceArgs::Add(std::string_view key, uint64_t value) {
  Key(key);
  members_ += std::to_string(value);
  return *this;
}

TraceArgs& TraceArgs::Add(std::string_view key, const std::vector<std::string>& values) {
  Key(key);
  members_ += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) members_ += ',';
    AppendQuoted(members_, values[i]);
  }
  members_ += ']';
  return *this;
}

TraceArgs& TraceArgs::AddJson(std::string_view key, std::string_view json_value) {
  Key(key);
  members_ += json_value;
  return *this;
}

TraceArgs& TraceArgs::Add(std::string_view key, const std::vector<int>& values) {
  Key(key);
  members_ += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) members_ += ',';
    members_ += std::to_string(values[i]);
  }
  members_ += ']';
  return *this;
}

void TraceScope::Begin(const char* category, std::string_view name) {
  slice_.emplace(Slice{category, std::string(name), NowNs(), 0, TraceArgs()});
}

void TraceScope::StopClock() {
  if (slice_ && slice_->end_ns == 0) slice_->end_ns = NowNs();
}

void TraceScope::End() {
  Slice& s = *slice_;
  const int64_t end = s.end_ns != 0 ? s.end_ns : NowNs();
  Append(s.begin_ns, end, s.category, s.name, s.args.json_members(), "");
}

void TraceSpan(const char* category, std::string_view name, std::string_view track, Clock::time_point begin,
               Clock::time_point end, const TraceArgs& args) {
  if (!TraceEnabled()) return;
  const int64_t b = ToNs(begin), e = std::max(ToNs(end), b);
  Append(b, e, category, name, args.json_members(), track.empty() ? "spans" : track);
}

}  // namespace oneflow
