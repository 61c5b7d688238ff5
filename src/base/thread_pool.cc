// ThreadPool implementation: a seqlock-style published region plus atomic chunk claiming.
#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OF_CPU_RELAX() _mm_pause()
#else
#define OF_CPU_RELAX() std::this_thread::yield()
#endif

namespace oneflow {

namespace {
// How long an idle worker spins before it sleeps: longer than the gap between two ops of a run,
// far shorter than the gap between runs of a service that is mostly idle.
constexpr int kSpinMicros = 300;

// Waits for `done()` by spinning, then yielding: when more threads are runnable than there are
// cores (another process, or another engine's spinning pool), the thread we wait for may be
// preempted, and yielding hands it the core instead of burning the rest of our time slice.
template <typename Done>
void SpinThenYield(Done done) {
  for (int i = 0; !done(); ++i) {
    if (i < 2000) OF_CPU_RELAX();
    else std::this_thread::yield();
  }
}
}  // namespace

int ThreadPool::DefaultThreadCount() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(num_threads <= 0 ? DefaultThreadCount() : num_threads) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
  }
  sleep_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunChunks() {
  const int64_t chunks = num_chunks_, n = task_n_;
  for (;;) {
    int64_t c = next_chunk_.fetch_add(1);
    if (c >= chunks) return;
    (*task_)(c * n / chunks, (c + 1) * n / chunks);
    chunks_done_.fetch_add(1);
  }
}

void ThreadPool::ParallelFor(int64_t n, double cost_per_item,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Handing work to another thread costs about a microsecond even when it is spinning; below
  // ~20k cycles of work it does not pay.
  const double total_cost = static_cast<double>(n) * std::max(cost_per_item, 1.0);
  if (num_threads_ == 1 || n == 1 || total_cost < 20000.0) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> region(region_mutex_);
  // A few chunks per thread balance uneven work; each chunk is worth at least ~10k cycles.
  int64_t chunks = std::min<int64_t>(n, static_cast<int64_t>(num_threads_) * 4);
  chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, static_cast<int64_t>(total_cost / 10000.0)));

  generation_.fetch_add(1);  // odd: being written; workers keep out
  SpinThenYield([&] { return active_.load() == 0; });
  task_ = &fn;
  task_n_ = n;
  num_chunks_ = chunks;
  next_chunk_.store(0);
  chunks_done_.store(0);
  generation_.fetch_add(1);  // even: published
  if (sleeping_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    sleep_cv_.notify_all();
  }
  RunChunks();
  SpinThenYield([&] { return chunks_done_.load() == chunks; });
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load();
    int spins = 0;
    auto spin_start = std::chrono::steady_clock::now();
    while ((g == seen || (g & 1)) && !stop_.load()) {
      ++spins;
      // Pause first, then yield (an oversubscribed core still runs the threads that have work),
      // and sleep once ~kSpinMicros have passed with nothing to do.
      if (spins < 2000) {
        OF_CPU_RELAX();
      } else if ((spins & 63) != 0 ||
                 std::chrono::steady_clock::now() - spin_start < std::chrono::microseconds(kSpinMicros)) {
        std::this_thread::yield();
      } else {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleeping_.fetch_add(1);
        sleep_cv_.wait(lock, [&] {
          uint64_t now = generation_.load();
          return stop_.load() || (now != seen && !(now & 1));
        });
        sleeping_.fetch_sub(1);
        spins = 0;
        spin_start = std::chrono::steady_clock::now();
      }
      g = generation_.load();
    }
    if (stop_.load()) return;
    active_.fetch_add(1);
    if (generation_.load() != g) {  // a new region started being written meanwhile: retry
      active_.fetch_sub(1);
      continue;
    }
    RunChunks();
    active_.fetch_sub(1);
    seen = g;
  }
}

}  // namespace oneflow
