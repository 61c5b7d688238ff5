// One rank of the multi-process Gloo tests (launched 4 times by gloo_test.py with RANK and
// WORLD_SIZE set). Modes: `collectives` checks every collective against values computed here;
// `model DIR NAME` runs a bench model data parallel and compares with the single-device run;
// `die` loses rank 3 in the middle of a step (the others must fail naming it); `loop SECONDS`
// all-reduces over every rank until the time is up (multihost/netns_test.py kills a host in it);
// `shard_rss` prints each rank's resident memory under tensor parallelism (shard_on_read_test.py).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>

#include "base/error.h"
#include "comm/communicator.h"
#include "engine/distributed_session.h"
#include "serialize/model_io.h"
#include "serialize/onnx_import.h"

using namespace oneflow;

#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      std::fprintf(stderr, "rank check failed: %s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);                   \
      std::fprintf(stderr, "\n");                          \
      return 1;                                            \
    }                                                      \
  } while (0)

static int Collectives(Communicator& c) {
  const int r = c.rank(), n = c.world_size();
  std::vector<int> world(static_cast<size_t>(n));
  std::iota(world.begin(), world.end(), 0);
  // All-reduce: sum over ranks of (rank + 1) * (i + 1).
  std::vector<float> a(5);
  for (int i = 0; i < 5; ++i) a[static_cast<size_t>(i)] = static_cast<float>((r + 1) * (i + 1));
  c.AllReduceSum(a.data(), 5, DType::kFloat32, world);
  for (int i = 0; i < 5; ++i) EXPECT(a[static_cast<size_t>(i)] == static_cast<float>(n * (n + 1) / 2 * (i + 1)), "i=%d", i);
  // All-gather with uneven sizes: rank q sends q+1 bytes of value q.
  std::vector<size_t> sizes;
  size_t total = 0;
  for (int q = 0; q < n; ++q) { sizes.push_back(static_cast<size_t>(q + 1)); total += static_cast<size_t>(q + 1); }
  std::vector<char> mine(static_cast<size_t>(r + 1), static_cast<char>(r)), all(total);
  c.AllGather(mine.data(), all.data(), sizes, world);
  size_t off = 0;
  for (int q = 0; q < n; ++q)
    for (int k = 0; k <= q; ++k) EXPECT(all[off++] == static_cast<char>(q), "gather q=%d", q);
  // Reduce-scatter: segment q has q+1 floats; everyone sends (rank+1); member q gets n(n+1)/2.
  std::vector<int64_t> counts;
  for (int q = 0; q < n; ++q) counts.push_back(q + 1);
  std::vector<float> send(total, static_cast<float>(r + 1)), recv(static_cast<size_t>(r + 1));
  c.ReduceScatterSum(send.data(), recv.data(), counts, DType::kFloat32, world);
  for (float v : recv) EXPECT(v == static_cast<float>(n * (n + 1) / 2), "reduce-scatter %g", v);
  // All-to-all: I send byte 10*r+q to q (q+1 copies); I receive 10*q+r from q (r+1 copies).
  std::vector<size_t> ssz, rsz;
  std::vector<char> sbuf, rbuf;
  for (int q = 0; q < n; ++q) {
    ssz.push_back(static_cast<size_t>(q + 1));
    rsz.push_back(static_cast<size_t>(r + 1));
    for (int k = 0; k <= q; ++k) sbuf.push_back(static_cast<char>(10 * r + q));
  }
  rbuf.resize(static_cast<size_t>(n * (r + 1)));
  c.AllToAll(sbuf.data(), ssz, rbuf.data(), rsz, world);
  for (int q = 0; q < n; ++q)
    for (int k = 0; k <= r; ++k) EXPECT(rbuf[static_cast<size_t>(q * (r + 1) + k)] == static_cast<char>(10 * q + r), "a2a");
  // Sub-groups {0,2} and {1,3}, broadcast from the second member, barrier, ring send/recv.
  std::vector<int> group = r % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
  int64_t v = r;
  c.AllReduceSum(&v, 1, DType::kInt64, group);
  EXPECT(v == group[0] + group[1], "subgroup sum %lld", static_cast<long long>(v));
  int b = r;
  c.Broadcast(&b, sizeof b, 1, group);
  EXPECT(b == group[1], "broadcast %d", b);
  c.Barrier(world);
  int token = r * 7, got = -1;
  if (r % 2 == 0) {
    c.Send(&token, sizeof token, (r + 1) % n);
    c.Recv(&got, sizeof got, (r + n - 1) % n);
  } else {
    c.Recv(&got, sizeof got, (r + n - 1) % n);
    c.Send(&token, sizeof token, (r + 1) % n);
  }
  EXPECT(got == ((r + n - 1) % n) * 7, "ring got %d", got);
  return 0;
}

// The logical input every rank builds alike.
static Tensor LogicalInput(const Shape& shape) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  Tensor x(DType::kFloat32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  return x;
}

// `got` (a distributed run of `g` on `x`) against this process's single-device run.
static int CompareWithSingleDevice(const Graph& g, const SessionOptions& so, const Tensor& x, const Tensor& got) {
  Tensor want = Session(g, so).Run({{"input", x}}, {})[0].second;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    num = std::max(num, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
    den = std::max(den, std::fabs(double(want.data<float>()[i])));
  }
  EXPECT(num <= 1e-5 * den, "max abs error %g vs max |ref| %g", num, den);
  return 0;
}

// Inference of a bench model as a DistributedSession on the Gloo backend (this process is one
// rank) vs this process's single-device run.
static int Model(const std::string& path, const std::string& mode, const Shape& shape) {
  Graph g = LoadOnnxFile(path);
  PrepareGraph(g);
  SessionOptions so;
  so.intra_op_threads = 1;
  DistributedOptions d;
  d.backend = "gloo";
  d.plan.placement = Placement::Parse("cpu:0-3");
  d.plan.mode = ParsePlanMode(mode);
  DistributedSession ds(g, so, d);
  Tensor x = LogicalInput(shape);
  return CompareWithSingleDevice(g, so, x, ds.Run({{"input", x}}, {})[0].second);
}

// This process's resident memory from /proc/self/status, in KiB: VmRSS, RssAnon, RssFile.
static std::map<std::string, long> Resident() {
  std::map<std::string, long> kb;
  std::FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  while (f && std::fgets(line, sizeof line, f))
    for (const char* key : {"VmRSS", "RssAnon", "RssFile"})
      if (std::strncmp(line, key, std::strlen(key)) == 0 && line[std::strlen(key)] == ':')
        kb[key] = std::atol(line + std::strlen(key) + 1);
  if (f) std::fclose(f);
  return kb;
}

// Shard-on-read: the transformer MODEL (a native .ofm file) run tensor parallel over the 4 ranks
// (the heads and the FFN split, as sbp_models_test.cc's TensorParallelHeadsAndFfn); after the
// first run each rank prints one JSON line with its resident memory, with the model's weight
// pages given back (`release`) or kept (`keep`: a full load); then checks the outputs against this
// process's single-device run.
static int ShardRss(const std::string& path, const std::string& pages, const Shape& shape) {
  std::map<std::string, long> before = Resident();
  Graph g = LoadModelFile(path);
  SessionOptions so;
  so.intra_op_threads = 1;
  DistributedOptions d;
  d.backend = "gloo";
  d.release_model_pages = pages == "release";
  d.plan.placement = Placement::Parse("cpu:0-3");
  d.plan.mode = PlanMode::kManual;
  auto param = [&](const std::string& prefix) {
    for (const Value& v : g.values)
      if (v.is_parameter && v.name.rfind(prefix, 0) == 0) return v.name;
    throw std::runtime_error("no parameter " + prefix);
  };
  for (int l = 0; l < 4; ++l) {
    std::string p = "layer" + std::to_string(l);
    for (const char* w : {".q.weight", ".k.weight", ".v.weight", ".ffn1.weight"}) d.plan.sbp[param(p + w)] = {Sbp::S(1)};
    for (const char* w : {".attn_out.weight", ".ffn2.weight"}) d.plan.sbp[param(p + w)] = {Sbp::S(0)};
  }
  d.plan.sbp["input"] = {Sbp::B()};
  int64_t weight_bytes = 0;
  for (const Value& v : g.values)
    if (v.is_parameter) weight_bytes += static_cast<int64_t>(v.constant.nbytes());
  DistributedSession ds(g, so, d);
  Tensor x = LogicalInput(shape);
  Tensor got = ds.Run({{"input", x}}, {})[0].second;
  std::map<std::string, long> kb = Resident();
  std::printf("{\"rank\": %s, \"pages\": \"%s\", \"weights_kb\": %lld, \"start_rss_kb\": %ld, \"start_anon_kb\": %ld, "
              "\"rss_kb\": %ld, \"rss_anon_kb\": %ld, \"rss_file_kb\": %ld}\n",
              std::getenv("RANK"), pages.c_str(), static_cast<long long>(weight_bytes / 1024), before["VmRSS"],
              before["RssAnon"], kb["VmRSS"], kb["RssAnon"], kb["RssFile"]);
  std::fflush(stdout);
  return CompareWithSingleDevice(g, so, x, got);
}

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if ((mode == "model" || mode == "shard_rss") && argc == 5) {
      Shape shape;
      for (char* p = argv[4]; *p;) {
        shape.push_back(std::strtoll(p, &p, 10));
        if (*p == 'x') ++p;
      }
      return mode == "shard_rss" ? ShardRss(argv[2], argv[3], shape) : Model(argv[2], argv[3], shape);
    }
    auto c = CreateGlooCommunicatorFromEnv();
    if (mode == "collectives") return Collectives(*c);
    if (mode == "die") {
      std::vector<int> world;
      for (int q = 0; q < c->world_size(); ++q) world.push_back(q);
      float v = 1;
      c->AllReduceSum(&v, 1, DType::kFloat32, world);
      if (c->rank() == 3) _exit(3);  // lost in the middle of the step
      c->AllReduceSum(&v, 1, DType::kFloat32, world);
      std::fprintf(stderr, "rank %d: the second all-reduce succeeded without rank 3\n", c->rank());
      return 1;
    }
    if (mode == "loop" && argc == 3) {  // all-reduces over every rank for SECONDS (until a peer is lost)
      std::vector<int> world;
      for (int q = 0; q < c->world_size(); ++q) world.push_back(q);
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::atof(argv[2]));
      while (std::chrono::steady_clock::now() < end) {
        float v = 1;
        c->AllReduceSum(&v, 1, DType::kFloat32, world);
        EXPECT(v == c->world_size(), "all-reduce of ones gave %g", v);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      return 0;
    }
    std::fprintf(stderr, "usage: gloo_worker collectives | model MODEL MODE DIMS | shard_rss MODEL.ofm release|keep DIMS"
                         " | die | loop SECONDS\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank error: %s\n", e.what());
    return 1;
  }
}
