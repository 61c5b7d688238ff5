// The executor: runs an optimized graph in topological order with one kernel instance per node,
// placing intermediates in a per-run arena laid out by a memory plan cached per input signature.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/memory_plan.h"
#include "engine/node_runner.h"

namespace oneflow {

class Executor {
 public:
  // `graph` must have schemas resolved and shapes inferred. Creates every kernel up front so that
  // missing kernels are reported at session creation, not in the middle of a run.
  Executor(std::shared_ptr<const Graph> graph, int num_threads);
  // The same, running kernels on a pool shared with other executors (a training session's forward
  // and backward graphs): one set of spinning workers instead of one per graph.
  Executor(std::shared_ptr<const Graph> graph, std::shared_ptr<ThreadPool> pool);

  // Runs the graph. `feeds[i]` is the tensor for graph input i (already validated by the caller).
  // Returns the graph outputs in declaration order; they never alias engine-owned memory.
  // Safe to call from several threads at once.
  std::vector<Tensor> Run(const std::vector<Tensor>& feeds) const;

  // Bytes of the arena of the most recently built plan (0 when no plan exists yet).
  size_t planned_peak_bytes() const;
  int num_threads() const { return pool_->num_threads(); }

 private:
  struct Step {
    std::unique_ptr<NodeRunner> runner;
    std::vector<int> free_after;  // values whose last reader is this step
  };
  struct Plan {
    std::vector<int64_t> offset;  // per value; -1 = not in the arena
    std::vector<size_t> bytes;    // per value: planned size
    size_t arena_bytes = 0;
  };

  std::shared_ptr<const Plan> BuildPlan(const std::vector<size_t>& value_bytes) const;
  std::shared_ptr<const Plan> StaticPlan() const;  // from static shapes, when all are known

  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<Step> steps_;
  std::vector<int> root_;        // value -> the value owning its bytes (views alias their input)
  std::vector<int> def_step_;    // value -> step that produces it (-1 for inputs/constants)
  std::vector<int> last_step_;   // value -> last step that reads it or any of its views
  std::vector<char> is_output_;  // value -> is a graph output

  mutable std::mutex mutex_;
  mutable std::map<std::vector<Shape>, std::shared_ptr<const Plan>> plans_;  // by input shapes
  mutable std::shared_ptr<const Plan> last_plan_;
  mutable std::vector<std::shared_ptr<Storage>> free_arenas_;
};

}  // namespace oneflow
