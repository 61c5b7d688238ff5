// The timeline recorder (base/trace.h): many threads recording at once, nesting, request lanes,
// shared thread tracks, escaping, and the start/stop errors. The files are parsed with RapidJSON,
// numbers kept as strings so times compare exactly (tests/trace checks whole runs with Python).
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/trace.h"
#include "../test_support.h"

namespace oneflow {
namespace {

struct Slice {
  std::string name, cat;
  int64_t begin_ns, end_ns, tid;
  std::string args;  // the args object, re-serialized loosely for substring checks
};

struct Parsed {
  std::vector<Slice> slices;
  std::map<int64_t, std::string> thread_names;
};

int64_t Nanos(const std::string& micros) {  // "123.456" -> 123456, exactly
  const size_t dot = micros.find('.');
  const std::string whole = micros.substr(0, dot), frac = dot == std::string::npos ? "" : micros.substr(dot + 1);
  return std::stoll(whole) * 1000 + (frac.empty() ? 0 : std::stoll((frac + "000").substr(0, 3)));
}

// A file path in a fresh directory, both removed when the test's process exits.
std::string TempPath(const std::string& name) {
  char tmpl[] = "/tmp/oneflow_trace_XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  EXPECT_NE(dir, nullptr);
  static std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>;
    std::atexit([] {
      std::error_code ec;
      for (const std::string& d : *dirs) std::filesystem::remove_all(d, ec);
    });
    return v;
  }();
  if (dir != nullptr) dirs->push_back(dir);
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

Parsed ReadTrace(const std::string& path) {
  const std::string text = test_util::ReadFileBytes(path);
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseNumbersAsStringsFlag>(text.c_str());
  Parsed p;
  EXPECT_FALSE(doc.HasParseError()) << path << ": offset " << doc.GetErrorOffset();
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("traceEvents")) return p;
  for (const auto& e : doc["traceEvents"].GetArray()) {
    const std::string ph = e["ph"].GetString();
    const int64_t tid = std::stoll(e["tid"].GetString());
    if (ph == "M") {
      if (std::string(e["name"].GetString()) == "thread_name") p.thread_names[tid] = e["args"]["name"].GetString();
      continue;
    }
    EXPECT_EQ(ph, "X");
    Slice s{e["name"].GetString(), e["cat"].GetString(), Nanos(e["ts"].GetString()), 0, tid, ""};
    s.end_ns = s.begin_ns + Nanos(e["dur"].GetString());
    for (const auto& m : e["args"].GetObject()) {
      s.args += std::string(m.name.GetString()) + "=";
      s.args += m.value.IsString() ? m.value.GetString() : m.value.IsArray() ? "[...]" : "?";
      s.args += ";";
    }
    p.slices.push_back(s);
  }
  return p;
}

// On each track, slices are nested or disjoint.
void ExpectProperNesting(const Parsed& p) {
  std::map<int64_t, std::vector<const Slice*>> by_tid;
  for (const Slice& s : p.slices) by_tid[s.tid].push_back(&s);
  for (auto& [tid, v] : by_tid) {
    EXPECT_TRUE(p.thread_names.count(tid)) << "track " << tid << " has no name";
    std::sort(v.begin(), v.end(), [](const Slice* a, const Slice* b) {
      return a->begin_ns != b->begin_ns ? a->begin_ns < b->begin_ns : a->end_ns > b->end_ns;
    });
    std::vector<const Slice*> open;
    for (const Slice* s : v) {
      while (!open.empty() && open.back()->end_ns <= s->begin_ns) open.pop_back();
      if (!open.empty()) {
        ASSERT_LE(s->end_ns, open.back()->end_ns) << s->name << " partially overlaps " << open.back()->name;
      }
      open.push_back(s);
    }
  }
}

TEST(Trace, OffCostsNothingAndRecordsNothing) {
  ASSERT_FALSE(TraceEnabled()) << "ONEFLOW_TRACE is set in the test's environment";
  TraceScope scope("test", "off");
  EXPECT_FALSE(static_cast<bool>(scope));
  scope.Arg("key", "value").Arg("n", 3);  // a no-op
  EXPECT_EQ(TracePath(), "");
}

TEST(Trace, ThreadsRecordNestedSlicesConcurrently) {
  const std::string path = TempPath("threads.json");
  StartTrace(path);
  EXPECT_EQ(TracePath(), path);
  constexpr int kThreads = 8, kIters = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      SetTraceThreadName("worker " + std::to_string(t));
      for (int i = 0; i < kIters; ++i) {
        TraceScope outer("test", "outer");
        outer.Arg("i", i).Arg("shapes", std::vector<std::string>{"float32[1,2]", "none"});
        TraceScope inner("test", "inner");
        inner.Arg("group", std::vector<int>{0, 1});
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(StopTrace(), path);
  EXPECT_FALSE(TraceEnabled());
  const Parsed p = ReadTrace(path);
  std::map<std::string, int> count;
  for (const Slice& s : p.slices) ++count[s.name];
  EXPECT_EQ(count["outer"], kThreads * kIters);
  EXPECT_EQ(count["inner"], kThreads * kIters);
  std::set<std::string> names;
  for (const auto& [tid, name] : p.thread_names) names.insert(name);
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(names.count("worker " + std::to_string(t)));
  ExpectProperNesting(p);
  for (const Slice& s : p.slices)
    if (s.name == "outer") {
      EXPECT_NE(s.args.find("shapes=[...]"), std::string::npos) << s.args;
    }
}

TEST(Trace, SpansGetLanesAndSharedNamesShareATrack) {
  const std::string path = TempPath("lanes.json");
  StartTrace(path);
  const auto t0 = std::chrono::steady_clock::now();
  auto at = [&](int us) { return t0 + std::chrono::microseconds(us); };
  TraceArgs args;
  args.Add("protocol", "http");
  TraceSpan("serve", "request", "requests m", at(0), at(10), args);
  TraceSpan("serve", "request", "requests m", at(5), at(15), args);   // overlaps the first
  TraceSpan("serve", "request", "requests m", at(12), at(20), args);  // fits after the first
  // Threads started one after another under one shared name: one track.
  for (int round = 0; round < 3; ++round)
    std::thread([] {
      SetTraceThreadName("rank 1", true);
      TraceScope s("test", "step");
    }).join();
  // Two at once: a second track.
  std::vector<std::thread> both;
  for (int k = 0; k < 2; ++k)
    both.emplace_back([] {
      SetTraceThreadName("rank 2", true);
      TraceScope s("test", "overlapping");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
  for (auto& t : both) t.join();
  StopTrace();
  const Parsed p = ReadTrace(path);
  std::map<std::string, std::set<int64_t>> tracks;  // slice name -> tids
  for (const Slice& s : p.slices) tracks[s.name].insert(s.tid);
  EXPECT_EQ(tracks["request"].size(), 2u);
  EXPECT_EQ(tracks["step"].size(), 1u);
  EXPECT_EQ(tracks["overlapping"].size(), 2u);
  std::set<std::string> names;
  for (const auto& [tid, name] : p.thread_names) names.insert(name);
  for (const char* n : {"requests m (lane 1)", "requests m (lane 2)", "rank 1", "rank 2", "rank 2 (2)"})
    EXPECT_TRUE(names.count(n)) << n;
  ExpectProperNesting(p);
}

TEST(Trace, EscapesNamesAndStopsTheClock) {
  const std::string path = TempPath("escape.json");
  StartTrace(path);
  {
    TraceScope s("test", std::string("quote\" back\\ ctl\x01 bad\xff utf8 \xc3\xa9"));
    s.StopClock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // after the clock stopped: not counted
    s.Arg("node", "n\"1");
  }
  StopTrace();
  const Parsed p = ReadTrace(path);
  ASSERT_EQ(p.slices.size(), 1u);
  EXPECT_EQ(p.slices[0].name, "quote\" back\\ ctl\x01 bad? utf8 \xc3\xa9");
  EXPECT_LT(p.slices[0].end_ns - p.slices[0].begin_ns, 10'000'000);
  EXPECT_EQ(p.slices[0].args, "node=n\"1;");
}

TEST(Trace, StartAndStopErrors) {
  EXPECT_EQ(test_util::ErrorCodeOf([&] { StopTrace(); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(test_util::ErrorCodeOf([&] { StartTrace(""); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(test_util::ErrorCodeOf([&] { StartTrace("/nonexistent-oneflow-dir/t.json"); }), ErrorCode::kIo);
  EXPECT_EQ(test_util::ErrorCodeOf([&] { StartTrace("/tmp"); }), ErrorCode::kIo);  // a directory
  EXPECT_FALSE(TraceEnabled());
  const std::string path = TempPath("twice.json");
  StartTrace(path);
  EXPECT_EQ(test_util::ErrorCodeOf([&] { StartTrace(path); }), ErrorCode::kInvalidArgument);
  StopTrace();
  EXPECT_EQ(test_util::ErrorCodeOf([&] { StopTrace(); }), ErrorCode::kInvalidArgument);
  // "%p" is the process id.
  const std::string pattern = TempPath("pid-%p.json");
  StartTrace(pattern);
  const std::string expanded = TracePath();
  StopTrace();
  EXPECT_NE(expanded.find("pid-" + std::to_string(::getpid()) + ".json"), std::string::npos) << expanded;
}

}  // namespace
}  // namespace oneflow
