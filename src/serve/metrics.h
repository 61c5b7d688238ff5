// Per-model-version counters, exposed in Prometheus' text format on /metrics with Triton's metric
// names (nv_inference_*), so dashboards built for Triton work unchanged. docs/serving.md, "Metrics".
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oneflow {
namespace serve {

struct ModelMetrics {
  std::atomic<uint64_t> request_success{0};
  std::atomic<uint64_t> request_failure{0};
  std::atomic<uint64_t> inference_count{0};  // inferences: a request of batch 4 counts 4
  std::atomic<uint64_t> exec_count{0};       // model executions (batches)
  std::atomic<uint64_t> request_duration_us{0};
  std::atomic<uint64_t> queue_duration_us{0};
  std::atomic<uint64_t> compute_input_duration_us{0};  // assembling the batch
  std::atomic<uint64_t> compute_infer_duration_us{0};
  std::atomic<uint64_t> compute_output_duration_us{0};  // splitting the results
  std::atomic<int64_t> pending_requests{0};             // queued, not yet running
  std::atomic<int64_t> inflight_requests{0};            // accepted, not yet answered
  // Execution batch sizes: counts of batches with size <= 1, 2, 4, ..., 128, and above.
  static constexpr std::array<int, 8> kBatchBuckets = {1, 2, 4, 8, 16, 32, 64, 128};
  std::array<std::atomic<uint64_t>, kBatchBuckets.size() + 1> batch_size_buckets{};
  std::atomic<uint64_t> batch_size_sum{0};

  void RecordBatch(int batch_size);
};

struct LabeledMetrics {
  std::string model, version;
  std::shared_ptr<const ModelMetrics> metrics;
};

// The text exposition format: each family's HELP and TYPE, then its samples for every model
// version, labelled {model="...",version="..."}.
std::string FormatPrometheus(const std::vector<LabeledMetrics>& all);

}  // namespace serve
}  // namespace oneflow
