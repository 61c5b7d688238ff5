// A subgraph (If's branches, Loop's, Scan's and SequenceMap's body) prepared once, at its node's
// kernel creation, and run many times: typed from the node's static input types
// (graph/control_flow.h), optimized like a session's graph, with an executor of its own on the
// outer executor's pool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "graph/tensor_type.h"

namespace oneflow {

class SubgraphRunner {
 public:
  // `what` names the subgraph in errors ("Loop 'l' (opset 16), body"); a null `pool` gets one thread.
  SubgraphRunner(const Graph& sub, const std::vector<TensorType>& input_types, std::shared_ptr<ThreadPool> pool,
                 std::string what);

  // Runs with one value per subgraph input; checks each against the type the subgraph was prepared
  // with, since its kernels rely on it. The outputs are fresh memory (never the executor's arena).
  std::vector<Tensor> Run(const std::vector<Tensor>& feeds) const;

  const std::vector<TensorType>& output_types() const { return output_types_; }

 private:
  std::string what_;
  std::shared_ptr<const Graph> graph_;
  std::unique_ptr<Executor> executor_;
  std::vector<TensorType> input_types_, output_types_;
};

// The static types of a node's inputs [from, to) as its kernel's creation sees them (an omitted
// input: unknown).
std::vector<TensorType> InitTypes(const KernelInitContext& c, size_t from, size_t to);

}  // namespace oneflow
