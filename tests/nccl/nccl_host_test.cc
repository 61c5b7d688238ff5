// Host-side tests of the NCCL backend (no GPU needed): uneven-segment padding simulated on host
// buffers against direct concatenation/summation, block copies as 2-D copies against a naive index
// loop, NCCL result codes, the launcher's environment, and the factories' errors without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "base/error.h"
#include "comm/launch_env.h"
#include "comm/nccl.h"
#include "comm/nccl_layout.h"

#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif
#ifdef ONEFLOW_HAVE_NCCL
#include "comm/nccl_api.h"
#endif

namespace oneflow {
namespace {

void Apply(const std::vector<nccl::SegmentCopy>& copies, const char* src, char* dst) {
  for (const auto& c : copies) std::memcpy(dst + c.dst, src + c.src, c.bytes);
}

std::vector<size_t> RandomSizes(std::mt19937& rng, size_t n, size_t max) {
  std::uniform_int_distribution<size_t> u(0, max);
  std::vector<size_t> s(n);
  for (auto& x : s) x = u(rng);
  return s;
}

TEST(NcclLayout, PaddingFacts) {
  EXPECT_EQ(nccl::PaddedUnit({3, 3, 2}), 3u);
  EXPECT_TRUE(nccl::AllEqual({4, 4, 4}));
  EXPECT_FALSE(nccl::AllEqual({4, 3}));
  EXPECT_EQ(nccl::CompactOffsets({2, 0, 5}), (std::vector<size_t>{0, 2, 2, 7}));
  // Empty segments need no copy; the rest land at i * unit.
  auto c = nccl::CompactToPadded({2, 0, 5});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].src, 0u);
  EXPECT_EQ(c[0].dst, 0u);
  EXPECT_EQ(c[1].src, 2u);
  EXPECT_EQ(c[1].dst, 10u);
  EXPECT_EQ(c[1].bytes, 5u);
}

// A reusable barrier for the emulated ranks (threads).
class Barrier {
 public:
  explicit Barrier(size_t n) : n_(n) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const size_t gen = generation_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  size_t n_, waiting_ = 0, generation_ = 0;
};

// NCCL's equal-count in-place collectives emulated across n threads on their padded buffers, so
// the backend's exact sequence (nccl::PaddedAllGather / PaddedReduceScatter) runs on the host.
struct EmulatedNccl {
  explicit EmulatedNccl(size_t n) : bufs(n), barrier(n) {}
  nccl::PaddedCollectiveOps Ops(size_t me) {
    nccl::PaddedCollectiveOps ops;
    ops.copy = [](void* d, const void* s, size_t b) { std::memcpy(d, s, b); };
    ops.zero = [](void* d, size_t b) { std::memset(d, 0, b); };
    ops.all_gather = [this, me](char* buf, size_t unit) {
      bufs[me] = buf;
      barrier.Wait();  // every slot j is final in bufs[j]
      for (size_t j = 0; j < bufs.size(); ++j)
        if (j != me) std::memcpy(buf + j * unit, bufs[j] + j * unit, unit);
      barrier.Wait();  // nobody reuses its buffer while others read it
    };
    ops.reduce_scatter = [this, me](char* buf, size_t unit) {  // float sums
      bufs[me] = buf;
      barrier.Wait();
      std::vector<float> sum(unit / sizeof(float), 0.0f);
      for (char* b : bufs)
        for (size_t k = 0; k < sum.size(); ++k) sum[k] += reinterpret_cast<const float*>(b + me * unit)[k];
      barrier.Wait();  // all reads of slot `me` done before it is overwritten
      std::memcpy(buf + me * unit, sum.data(), unit);
      barrier.Wait();
    };
    return ops;
  }
  std::vector<char*> bufs;
  Barrier barrier;
};

// Uneven all-gather: every rank must end with the blocks concatenated in group order.
TEST(NcclLayout, PaddedAllGatherOnEmulatedRanks) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t n = 1 + trial % 5;
    std::vector<size_t> sizes = RandomSizes(rng, n, 9);
    if (nccl::PaddedUnit(sizes) == 0) continue;  // the backend issues nothing then
    std::vector<std::vector<char>> blocks(n);
    std::vector<char> want;
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < sizes[i]; ++k) blocks[i].push_back(static_cast<char>(rng()));
      want.insert(want.end(), blocks[i].begin(), blocks[i].end());
    }
    EmulatedNccl net(n);
    std::vector<std::vector<char>> got(n, std::vector<char>(want.size(), 0x55));
    std::vector<std::thread> threads;
    for (size_t r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        std::vector<char> scratch(n * nccl::PaddedUnit(sizes), 0x33);  // garbage in the pad
        nccl::PaddedAllGather(blocks[r].data(), got[r].data(), sizes, r, scratch.data(), net.Ops(r));
      });
    for (auto& t : threads) t.join();
    for (size_t r = 0; r < n; ++r) ASSERT_EQ(got[r], want) << "trial " << trial << " rank " << r;
  }
}

// Uneven reduce-scatter: rank i must get the sum over ranks of their segment i.
TEST(NcclLayout, PaddedReduceScatterOnEmulatedRanks) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t n = 1 + trial % 5;
    std::vector<size_t> counts = RandomSizes(rng, n, 7), bytes;
    size_t total = 0;
    for (size_t c : counts) {
      bytes.push_back(c * sizeof(float));
      total += c;
    }
    if (nccl::PaddedUnit(bytes) == 0) continue;
    std::vector<std::vector<float>> send(n, std::vector<float>(total));
    for (auto& s : send)
      for (float& v : s) v = u(rng);
    EmulatedNccl net(n);
    std::vector<std::vector<float>> got(n);
    std::vector<std::thread> threads;
    for (size_t r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        got[r].assign(counts[r], std::nanf(""));
        std::vector<char> scratch(n * nccl::PaddedUnit(bytes), 0x7f);  // garbage (huge floats) before zeroing
        nccl::PaddedReduceScatter(send[r].data(), got[r].data(), bytes, r, scratch.data(), net.Ops(r));
      });
    for (auto& t : threads) t.join();
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < counts[i]; ++k) {
        float want = 0;
        for (size_t r = 0; r < n; ++r) want += send[r][off + k];
        ASSERT_FLOAT_EQ(got[i][k], want) << "trial " << trial << " rank " << i << " element " << k;
      }
      off += counts[i];
    }
  }
}

// Executes 2-D copies on host memory the way cudaMemcpy2DAsync does.
void Run2D(const std::vector<nccl::Copy2D>& copies, const char* src, char* dst) {
  for (const auto& c : copies)
    for (size_t r = 0; r < c.height; ++r) std::memcpy(dst + c.dst + r * c.dst_pitch, src + c.src + r * c.src_pitch, c.width);
}

TEST(NcclLayout, BlockCopyMatchesNaiveLoop) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t rank = trial % 5;  // 0-D .. 4-D
    Shape src_shape(rank), dst_shape(rank), block(rank);
    std::vector<int64_t> ss(rank), ds(rank);
    for (size_t d = 0; d < rank; ++d) {
      block[d] = std::uniform_int_distribution<int64_t>(rng() % 7 == 0 ? 0 : 1, 4)(rng);
      // Often whole in both (as boxing's untouched axes), else a bigger tensor with an offset.
      if (rng() % 2) {
        src_shape[d] = dst_shape[d] = block[d];
      } else {
        src_shape[d] = block[d] + static_cast<int64_t>(rng() % 3);
        dst_shape[d] = block[d] + static_cast<int64_t>(rng() % 3);
      }
      ss[d] = std::uniform_int_distribution<int64_t>(0, src_shape[d] - block[d])(rng);
      ds[d] = std::uniform_int_distribution<int64_t>(0, dst_shape[d] - block[d])(rng);
    }
    const size_t es = 1 + rng() % 4;
    std::vector<char> src(static_cast<size_t>(NumElements(src_shape)) * es);
    for (char& c : src) c = static_cast<char>(rng());
    std::vector<char> want(static_cast<size_t>(NumElements(dst_shape)) * es, 0), got = want;
    // Naive: every element of the block by its multi-index.
    const int64_t count = NumElements(block);
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t rest = flat, so = 0, dof = 0, sstride = 1, dstride = 1;
      for (size_t d = rank; d-- > 0;) {
        int64_t i = rest % block[d];
        rest /= block[d];
        so += (ss[d] + i) * sstride;
        dof += (ds[d] + i) * dstride;
        sstride *= src_shape[d];
        dstride *= dst_shape[d];
      }
      std::memcpy(want.data() + dof * static_cast<int64_t>(es), src.data() + so * static_cast<int64_t>(es), es);
    }
    auto copies = nccl::PlanBlockCopy(src_shape, ss, dst_shape, ds, block, es);
    Run2D(copies, src.data(), got.data());
    ASSERT_EQ(got, want) << "trial " << trial << " block " << ShapeToString(block) << " src " << ShapeToString(src_shape)
                         << " dst " << ShapeToString(dst_shape);
  }
}

TEST(NcclLayout, BlockCopyOfOneAxisIsOneCopy) {
  // Boxing cuts one axis: rows 2..4 of a [7, 3, 5] tensor's axis 1 ... one strided copy.
  auto c = nccl::PlanBlockCopy({7, 6, 5}, {0, 2, 0}, {7, 3, 5}, {0, 0, 0}, {7, 3, 5}, 4);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].height, 7u);
  EXPECT_EQ(c[0].width, 3u * 5 * 4);
  EXPECT_EQ(c[0].src_pitch, 6u * 5 * 4);
  EXPECT_EQ(c[0].dst_pitch, 3u * 5 * 4);
  EXPECT_EQ(c[0].src, 2u * 5 * 4);
  // A cut of the leading axis is contiguous: one row.
  c = nccl::PlanBlockCopy({8, 4}, {6, 0}, {2, 4}, {0, 0}, {2, 4}, 4);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].height, 1u);
  EXPECT_EQ(c[0].width, 2u * 4 * 4);
}

TEST(NcclLayout, BlockCopyRejectsBlocksThatDoNotFit) {
  try {
    nccl::PlanBlockCopy({4, 4}, {3, 0}, {2, 4}, {0, 0}, {2, 4}, 4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("does not fit at dim 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nccl::PlanBlockCopy({4}, {0, 0}, {4}, {0}, {4}, 4), Error);
}

TEST(NcclErrors, ResultCodesAndMessages) {
  EXPECT_STREQ(nccl::NcclResultName(2), "ncclSystemError");
  EXPECT_STREQ(nccl::NcclResultName(7), "ncclInProgress");
  EXPECT_STREQ(nccl::NcclResultName(42), "unknown ncclResult_t");
  EXPECT_EQ(nccl::NcclErrorCode(4), ErrorCode::kInvalidArgument);
  EXPECT_EQ(nccl::NcclErrorCode(5), ErrorCode::kInvalidArgument);
  EXPECT_EQ(nccl::NcclErrorCode(1), ErrorCode::kRuntime);
  EXPECT_EQ(nccl::NcclErrorCode(6), ErrorCode::kRuntime);
  const std::string m = nccl::NcclErrorMessage(3, "all-gather (ncclAllGather)", {1, 3}, 6, "remote process exited",
                                               "peer 1 closed the connection");
  EXPECT_EQ(m, "rank 3: all-gather (ncclAllGather) on group [1,3] failed: ncclRemoteError (6): remote process exited; "
               "peer 1 closed the connection");
#ifdef ONEFLOW_HAVE_NCCL
  // Our names follow nccl.h's values (also a static_assert in nccl.cc).
  EXPECT_STREQ(nccl::NcclResultName(ncclInvalidUsage), "ncclInvalidUsage");
#endif
}

#ifdef ONEFLOW_HAVE_NCCL
// NCCL is loaded at run time (no GPU needed for this): every entry point bound, a usable version,
// and its own error text.
TEST(NcclApi, LoadsAtRunTime) {
  const nccl::Api& api = nccl::LoadApi();
  EXPECT_GE(api.version, 21400) << api.library;
  EXPECT_NE(api.AllReduce, nullptr);
  EXPECT_NE(api.GroupEnd, nullptr);
  EXPECT_GT(std::strlen(api.GetErrorString(ncclSystemError)), 0u);
  EXPECT_EQ(&nccl::LoadApi(), &api) << "loaded once";
}
#endif

// Sets environment variables for one test and restores them afterwards.
class EnvScope {
 public:
  EnvScope(std::initializer_list<std::pair<const char*, const char*>> vars) {
    static const char* const kAll[] = {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                       "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "LOCAL_RANK",
                                       "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                       "ONEFLOW_COMM_TIMEOUT_MS", "ONEFLOW_GLOO_STORE", "ONEFLOW_GLOO_HOST",
                                       "MASTER_ADDR", "MASTER_PORT"};
    for (const char* n : kAll) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v ? std::make_unique<std::string>(v) : nullptr);
      unsetenv(n);
    }
    for (const auto& [n, v] : vars) setenv(n, v, 1);
  }
  ~EnvScope() {
    for (const auto& [n, v] : saved_) {
      if (v) setenv(n.c_str(), v->c_str(), 1);
      else unsetenv(n.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::unique_ptr<std::string>>> saved_;
};

TEST(LaunchEnv, TorchrunStyle) {
  EnvScope env({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", "1234"}, {"ONEFLOW_COMM_TIMEOUT_MS", "2500"}});
  LaunchEnv e = ReadLaunchEnv(300000);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.timeout_ms, 2500);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 1234);
  EXPECT_EQ(e.store_dir, "") << "ranks meet through the TCP store unless a directory is named";
  EXPECT_EQ(e.host, "127.0.0.1");
}

TEST(LaunchEnv, HostIsTheAddressOnTheRouteToTheMaster) {
  // A non-loopback master: this host's address is the one its route to the master leaves from
  // (what a peer on that network reaches). 127.0.0.2 is not "local" by name but routes over lo.
  EXPECT_EQ(LocalAddressToward("127.0.0.2"), "127.0.0.1");
  EnvScope env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "no-such-host.invalid"}});
  try {
    ReadLaunchEnv(1000);
    FAIL() << "no error for an unresolvable MASTER_ADDR";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR 'no-such-host.invalid' does not resolve"), std::string::npos)
        << e.what();
  }
}

TEST(LaunchEnv, MpiAndSlurmStyle) {
  {
    EnvScope env({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                  {"ONEFLOW_GLOO_STORE", "/shared/store"}, {"ONEFLOW_GLOO_HOST", "10.0.0.7"}});
    LaunchEnv e = ReadLaunchEnv(1000);
    EXPECT_EQ(e.rank, 5);
    EXPECT_EQ(e.world_size, 6);
    EXPECT_EQ(e.local_rank, 2);
    EXPECT_EQ(e.timeout_ms, 1000);
    EXPECT_EQ(e.store_dir, "/shared/store");
    EXPECT_EQ(e.host, "10.0.0.7");
  }
  EnvScope env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  LaunchEnv e = ReadLaunchEnv(1000);
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.local_rank, 1);  // no local rank: the rank itself
}

void ExpectInvalid(std::initializer_list<std::pair<const char*, const char*>> vars, const std::string& needle) {
  EnvScope env(vars);
  try {
    ReadLaunchEnv(1000);
    FAIL() << "no error for " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(LaunchEnv, BadValuesAreNamed) {
  ExpectInvalid({}, "set RANK and WORLD_SIZE");
  ExpectInvalid({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, "RANK 2 is not below WORLD_SIZE 2");
  ExpectInvalid({{"RANK", "x1"}, {"WORLD_SIZE", "2"}}, "RANK='x1' is not a valid count");
  ExpectInvalid({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}}, "LOCAL_RANK='-1'");
  ExpectInvalid({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"ONEFLOW_COMM_TIMEOUT_MS", "0"}}, "timeout must be positive");
  ExpectInvalid({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}, "MASTER_PORT=70000 is not a TCP port");
}

TEST(InMemoryStore, SetGetAndTimeout) {
  auto store = CreateInMemoryStore();
  store->Set("a", {'x', 'y'});
  EXPECT_EQ(store->Get("a", 10), (std::vector<char>{'x', 'y'}));
  EXPECT_TRUE(store->Check("a"));
  EXPECT_FALSE(store->Check("missing"));
  try {
    store->Get("missing", 20);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("'missing' was not published within 20 ms"), std::string::npos) << e.what();
  }
}

// The Gloo FileStore behind the same interface (the multi-process NCCL id exchange uses it).
TEST(FileStore, SetGetCheckAndTimeout) {
  char dir[] = "/tmp/oneflow-nccl-store-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::shared_ptr<RendezvousStore> store;
  try {
    store = CreateFileStore(dir);
  } catch (const Error& e) {
    ASSERT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("no Gloo"), std::string::npos) << e.what();
    return;  // built without Gloo: the error is the behaviour
  }
  EXPECT_FALSE(store->Check("nccl/id[0,1]"));
  store->Set("nccl/id[0,1]", {'1', '2', '3'});
  EXPECT_TRUE(store->Check("nccl/id[0,1]"));
  // A second handle on the directory (another process in a real job) sees the value.
  EXPECT_EQ(CreateFileStore(dir)->Get("nccl/id[0,1]", 1000), (std::vector<char>{'1', '2', '3'}));
  try {
    store->Get("never", 50);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("'never' was not published within 50 ms"), std::string::npos) << e.what();
  }
  std::string cmd = std::string("rm -rf ") + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

// Two ranks on one GPU are refused up front, whatever the machine has.
TEST(NcclFactory, DuplicateDevicesAreRefused) {
  try {
    CreateNcclGroup({0, 0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
#ifdef ONEFLOW_HAVE_NCCL
    EXPECT_NE(std::string(e.what()).find("ranks 0 and 1 on device 0"), std::string::npos) << e.what();
#endif
  }
}

// Without a GPU (or without NCCL) the factories say so; with one, a 1-rank group is created.
TEST(NcclFactory, NoDeviceIsReported) {
  int devices = 0;
  std::string why = "built without CUDA";
#ifdef ONEFLOW_HAVE_CUDA
  devices = cuda::DeviceCount(&why);
#endif
#ifdef ONEFLOW_HAVE_NCCL
  if (devices > 0) {
    auto g = CreateNcclGroup({0}, 5000);
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g[0]->memory(), Communicator::Memory::kCuda);
    EXPECT_EQ(g[0]->backend(), "nccl");
    return;
  }
  const std::string want = "no CUDA device: ";
#else
  const std::string want = "no NCCL backend";
#endif
  try {
    CreateNcclGroup({0});
    FAIL() << "no error (" << devices << " devices)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  EnvScope env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"ONEFLOW_GLOO_STORE", "/tmp/oneflow-nccl-host-test"}});
  try {
    CreateNcclCommunicatorFromEnv(1000);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oneflow
