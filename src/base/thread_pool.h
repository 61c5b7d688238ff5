// The intra-op thread pool: fork-join parallel loops over index ranges.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oneflow {

// A fixed set of worker threads. ParallelFor splits [0, n) into chunks that the caller and the
// workers claim from a shared counter, so a pool of N threads has N-1 workers. Between regions
// workers spin briefly before sleeping: an inference run issues one region per op, and waking a
// sleeping thread costs more than many small ops take. Regions from several threads at once are
// serialized (one region at a time).
class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // num_threads <= 0 means "number of cores"
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(begin, end) over disjoint chunks covering [0, n). `cost_per_item` is a rough number of
  // cycles per index; small loops run inline on the caller to avoid waking threads for nothing.
  // fn must not throw (kernels report errors before or after their parallel loops).
  void ParallelFor(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn);

  static int DefaultThreadCount();

 private:
  void WorkerLoop();
  void RunChunks();

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex region_mutex_;  // one parallel region at a time

  // Region state, written by the dispatcher only while `generation_` is odd and no worker is
  // inside (active_ == 0); read by workers after they registered in active_ for an even one.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};
  const std::function<void(int64_t, int64_t)>* task_ = nullptr;
  int64_t task_n_ = 0;
  int64_t num_chunks_ = 0;
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<int64_t> chunks_done_{0};

  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace oneflow
