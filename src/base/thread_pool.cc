// ThreadPool implementation: chunked work-sharing with a generation counter.
#include "base/thread_pool.h"

#include <algorithm>

namespace oneflow {

int ThreadPool::DefaultThreadCount() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(num_threads <= 0 ? DefaultThreadCount() : num_threads) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ParallelFor(int64_t n, double cost_per_item,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Waking a thread costs a few microseconds; below ~20k cycles of work it does not pay.
  const double total_cost = static_cast<double>(n) * std::max(cost_per_item, 1.0);
  if (num_threads_ == 1 || n == 1 || total_cost < 20000.0) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> region(region_mutex_);
  // A few chunks per thread balance uneven work without much scheduling overhead.
  int64_t chunks = std::min<int64_t>(n, static_cast<int64_t>(num_threads_) * 4);
  chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, static_cast<int64_t>(total_cost / 10000.0)));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &fn;
    task_n_ = n;
    num_chunks_ = chunks;
    next_chunk_ = 0;
    chunks_done_ = 0;
    ++generation_;
  }
  work_cv_.notify_all();
  // The caller works too.
  for (;;) {
    int64_t c;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_chunk_ >= num_chunks_) break;
      c = next_chunk_++;
    }
    fn(c * n / chunks, (c + 1) * n / chunks);
    std::lock_guard<std::mutex> lock(mutex_);
    ++chunks_done_;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return chunks_done_ == num_chunks_; });
  task_ = nullptr;
}

void ThreadPool::WorkerLoop(int) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && task_ != nullptr); });
    if (stop_) return;
    seen = generation_;
    while (task_ != nullptr && next_chunk_ < num_chunks_) {
      int64_t c = next_chunk_++;
      const auto* task = task_;
      int64_t n = task_n_, chunks = num_chunks_;
      lock.unlock();
      (*task)(c * n / chunks, (c + 1) * n / chunks);
      lock.lock();
      if (++chunks_done_ == num_chunks_) done_cv_.notify_all();
    }
  }
}

}  // namespace oneflow
