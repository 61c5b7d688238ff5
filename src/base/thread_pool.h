// The intra-op thread pool: fork-join parallel loops over index ranges.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oneflow {

// A fixed set of worker threads. ParallelFor splits [0, n) into chunks; the calling thread works
// too, so a pool of N threads has N-1 workers. Calls from several threads at once are serialized
// (one parallel region at a time), which keeps per-run scheduling simple and fair.
class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // num_threads <= 0 means "number of cores"
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(begin, end) over disjoint chunks covering [0, n). `cost_per_item` is a rough number of
  // cycles per index; small loops run inline on the caller to avoid waking threads for nothing.
  void ParallelFor(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn);

  static int DefaultThreadCount();

 private:
  void WorkerLoop(int worker_index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex region_mutex_;  // one parallel region at a time
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t, int64_t)>* task_ = nullptr;
  int64_t task_n_ = 0;
  int64_t num_chunks_ = 0;
  int64_t next_chunk_ = 0;  // guarded by mutex_
  int64_t chunks_done_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace oneflow
