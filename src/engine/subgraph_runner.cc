// SubgraphRunner (engine/subgraph_runner.h).
#include "engine/subgraph_runner.h"

#include "engine/session.h"
#include "graph/control_flow.h"
#include "kernels/kernel.h"

namespace oneflow {

SubgraphRunner::SubgraphRunner(const Graph& sub, const std::vector<TensorType>& input_types,
                               std::shared_ptr<ThreadPool> pool, std::string what)
    : what_(std::move(what)) {
  if (!pool) pool = std::make_shared<ThreadPool>(1);
  auto g = std::make_shared<Graph>(TypedSubgraph(sub, input_types));
  OptimizeForDevice(*g, 2, *pool, DeviceType::kCpu);
  for (int v : g->inputs) input_types_.push_back(g->values[static_cast<size_t>(v)].type);
  for (int v : g->outputs) output_types_.push_back(g->values[static_cast<size_t>(v)].type);
  graph_ = g;
  executor_ = std::make_unique<Executor>(graph_, std::move(pool));
}

std::vector<Tensor> SubgraphRunner::Run(const std::vector<Tensor>& feeds) const {
  OF_ASSERT(feeds.size() == input_types_.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const TensorType& want = input_types_[i];
    const Tensor& t = feeds[i];
    OF_CHECK(want.Admits(t), kInvalidArgument, what_, ": input '",
             graph_->values[static_cast<size_t>(graph_->inputs[i])].name, "' is ", DescribeValue(t),
             " where the subgraph expects ", want.ToString());
  }
  return executor_->Run(feeds);
}

std::vector<TensorType> InitTypes(const KernelInitContext& c, size_t from, size_t to) {
  std::vector<TensorType> out;
  for (size_t i = from; i < to; ++i) out.push_back(c.has_input(i) ? c.input_type(i) : TensorType());
  return out;
}

}  // namespace oneflow
