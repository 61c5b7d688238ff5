#include "serve/metrics.h"

#include <functional>

namespace oneflow {
namespace serve {
namespace {

// Label values escape backslash, quote and newline (the exposition format's rule).
std::string EscapeLabel(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

std::string Labels(const LabeledMetrics& m) {
  return "model=\"" + EscapeLabel(m.model) + "\",version=\"" + EscapeLabel(m.version) + "\"";
}

struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::function<double(const ModelMetrics&)> value;
};

}  // namespace

void ModelMetrics::RecordBatch(int batch_size) {
  size_t b = 0;
  while (b < kBatchBuckets.size() && batch_size > kBatchBuckets[b]) ++b;
  batch_size_buckets[b].fetch_add(1, std::memory_order_relaxed);
  batch_size_sum.fetch_add(static_cast<uint64_t>(batch_size), std::memory_order_relaxed);
  exec_count.fetch_add(1, std::memory_order_relaxed);
  inference_count.fetch_add(static_cast<uint64_t>(batch_size), std::memory_order_relaxed);
}

std::string FormatPrometheus(const std::vector<LabeledMetrics>& all) {
  auto load = [](const std::atomic<uint64_t>& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
  const Family families[] = {
      {"nv_inference_request_success", "counter", "Number of successful inference requests",
       [&](const ModelMetrics& m) { return load(m.request_success); }},
      {"nv_inference_request_failure", "counter", "Number of failed inference requests",
       [&](const ModelMetrics& m) { return load(m.request_failure); }},
      {"nv_inference_count", "counter", "Number of inferences performed (a batch of n counts n)",
       [&](const ModelMetrics& m) { return load(m.inference_count); }},
      {"nv_inference_exec_count", "counter", "Number of model executions (batches) performed",
       [&](const ModelMetrics& m) { return load(m.exec_count); }},
      {"nv_inference_request_duration_us", "counter", "Cumulative inference request duration in microseconds",
       [&](const ModelMetrics& m) { return load(m.request_duration_us); }},
      {"nv_inference_queue_duration_us", "counter", "Cumulative inference queuing duration in microseconds",
       [&](const ModelMetrics& m) { return load(m.queue_duration_us); }},
      {"nv_inference_compute_input_duration_us", "counter",
       "Cumulative compute input duration (batch assembly) in microseconds",
       [&](const ModelMetrics& m) { return load(m.compute_input_duration_us); }},
      {"nv_inference_compute_infer_duration_us", "counter", "Cumulative compute inference duration in microseconds",
       [&](const ModelMetrics& m) { return load(m.compute_infer_duration_us); }},
      {"nv_inference_compute_output_duration_us", "counter",
       "Cumulative compute output duration (splitting the batch) in microseconds",
       [&](const ModelMetrics& m) { return load(m.compute_output_duration_us); }},
      {"nv_inference_pending_request_count", "gauge", "Instantaneous number of requests waiting in the queue",
       [](const ModelMetrics& m) { return static_cast<double>(m.pending_requests.load(std::memory_order_relaxed)); }},
      {"oneflow_inference_inflight_request_count", "gauge",
       "Instantaneous number of accepted requests not yet answered",
       [](const ModelMetrics& m) { return static_cast<double>(m.inflight_requests.load(std::memory_order_relaxed)); }},
  };
  std::string out;
  for (const Family& f : families) {
    out += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type + "\n";
    for (const LabeledMetrics& m : all)
      out += std::string(f.name) + "{" + Labels(m) + "} " + std::to_string(static_cast<uint64_t>(f.value(*m.metrics))) + "\n";
  }
  // The batch sizes as a histogram (cumulative buckets).
  const char* h = "oneflow_inference_batch_size";
  out += std::string("# HELP ") + h + " Sizes of the batches the model executed\n# TYPE " + h + " histogram\n";
  for (const LabeledMetrics& m : all) {
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= ModelMetrics::kBatchBuckets.size(); ++b) {
      cumulative += m.metrics->batch_size_buckets[b].load(std::memory_order_relaxed);
      std::string le = b < ModelMetrics::kBatchBuckets.size() ? std::to_string(ModelMetrics::kBatchBuckets[b]) : "+Inf";
      out += std::string(h) + "_bucket{" + Labels(m) + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += std::string(h) + "_sum{" + Labels(m) + "} " + std::to_string(m.metrics->batch_size_sum.load()) + "\n";
    out += std::string(h) + "_count{" + Labels(m) + "} " + std::to_string(m.metrics->exec_count.load()) + "\n";
  }
  return out;
}

}  // namespace serve
}  // namespace oneflow
