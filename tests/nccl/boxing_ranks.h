// Runs one Boxing graph per rank on its own thread and checks every rank's output against the
// reference (tests/unit/boxing_reference.h); shared by the emulated-device and the CUDA boxing tests,
// which differ only in how a rank's graph is executed.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../unit/boxing_reference.h"
#include "comm/communicator.h"
#include "plan/plan.h"

namespace oneflow::boxing_ref {

// `run(graph, input, rank)` executes rank's graph; `comms[rank]` is registered under a fresh
// "<key_prefix>/<serial>" key for the run. A rank that throws aborts its communicator so the
// others do not wait forever.
inline void CheckRanks(const std::vector<std::shared_ptr<Communicator>>& comms, const Placement& pl, const Shape& shape,
                       const NdSbp& from, const NdSbp& to, const std::string& key_prefix,
                       const std::function<Tensor(const Graph&, const Tensor&, int)>& run) {
  Tensor x;
  std::vector<Tensor> in = MakeInputs(pl, shape, from, x);
  const int n = pl.size();
  static int serial = 0;
  std::vector<std::string> keys;
  std::vector<Graph> graphs;
  for (int p = 0; p < n; ++p) {
    keys.push_back(key_prefix + "/" + std::to_string(serial++));
    RegisterCommunicator(keys.back(), comms[static_cast<size_t>(p)]);
    graphs.push_back(BuildBoxingGraph(shape, DType::kFloat32, from, to, pl, p, keys.back()));
  }
  std::vector<Tensor> out(static_cast<size_t>(n));
  std::vector<std::string> err(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p)
    threads.emplace_back([&, p] {
      const size_t i = static_cast<size_t>(p);
      try {
        out[i] = run(graphs[i], in[i], p);
      } catch (const std::exception& e) {
        err[i] = e.what();
        comms[i]->Abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (const std::string& k : keys) UnregisterCommunicator(k);
  for (int p = 0; p < n; ++p) ASSERT_EQ(err[static_cast<size_t>(p)], "") << "device " << p;
  CheckOutputs(pl, to, x, out);
}

}  // namespace oneflow::boxing_ref
