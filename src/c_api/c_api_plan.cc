// C ABI, global tensors: plan options, plan explanation (JSON) and in-process distributed sessions.
#include <cstring>

#include "c_api/c_api_internal.h"
#include "engine/distributed_session.h"

using namespace oneflow::capi;

struct oneflow_dist_session_s {
  std::unique_ptr<DistributedSession> session;
  size_t num_outputs = 0;
};

namespace oneflow::capi {

DistributedOptions ToDistOptions(const oneflow_plan_options_t* o) {
  OF_REQUIRE(o != nullptr, "plan options are NULL");
  CheckSizedInput(o, "plan options", "oneflow_plan_options_init");
  OF_REQUIRE(o->placement != nullptr, "plan options: placement is NULL (e.g. \"cpu:0-3\")");
  OF_REQUIRE(o->num_shape_specs == 0 || o->shape_specs != nullptr, "shape_specs is NULL with num_shape_specs > 0");
  OF_REQUIRE(o->num_sbp_specs == 0 || o->sbp_specs != nullptr, "sbp_specs is NULL with num_sbp_specs > 0");
  DistributedOptions d;
  PlanOptions& p = d.plan;
  p.placement = Placement::Parse(o->placement);
  p.mode = ParsePlanMode(o->mode ? o->mode : "data");
  auto split = [](const char* spec, const char* what) {
    OF_REQUIRE(spec != nullptr, what, " entry is NULL");
    std::string s = spec;
    size_t eq = s.rfind('=');
    OF_REQUIRE(eq != std::string::npos && eq > 0, what, " '", s, "' is not NAME=VALUE");
    return std::make_pair(s.substr(0, eq), s.substr(eq + 1));
  };
  for (size_t i = 0; i < o->num_shape_specs; ++i) {
    auto [name, dims] = split(o->shape_specs[i], "shape_specs");
    Shape shape;
    size_t start = 0;
    while (!dims.empty()) {
      size_t x = dims.find('x', start);
      std::string part = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
      OF_REQUIRE(!part.empty() && part.size() < 16 && part.find_first_not_of("0123456789") == std::string::npos,
                 "shape_specs '", o->shape_specs[i], "': dims must be non-negative integers joined by 'x'");
      shape.push_back(std::stoll(part));
      if (x == std::string::npos) break;
      start = x + 1;
    }
    p.input_shapes[name] = shape;
  }
  for (size_t i = 0; i < o->num_sbp_specs; ++i) {
    auto [name, sbp] = split(o->sbp_specs[i], "sbp_specs");
    p.sbp[name] = ParseNdSbp(sbp);
  }
  OF_REQUIRE(o->memory_budget_bytes >= 0, "memory_budget_bytes is negative");
  p.memory_budget_bytes = o->memory_budget_bytes;
  auto rate = [](double v, double fallback, const char* what) {
    OF_REQUIRE(v >= 0 && v < 1e30, what, " must be >= 0 (0 = default), got ", v);
    return v > 0 ? v : fallback;
  };
  p.cost.flops_per_s = rate(o->flops_per_s, p.cost.flops_per_s, "flops_per_s");
  p.cost.link_bytes_per_s = rate(o->link_bytes_per_s, p.cost.link_bytes_per_s, "link_bytes_per_s");
  p.cost.link_latency_s = o->link_latency_s > 0 ? rate(o->link_latency_s, 0, "link_latency_s") : p.cost.link_latency_s;
  OF_REQUIRE(o->num_devices >= 0 && o->threads_per_device >= 0, "num_devices and threads_per_device must be >= 0");
  d.num_devices = o->num_devices;
  p.available_devices = o->num_devices;
  d.threads_per_device = o->threads_per_device > 0 ? o->threads_per_device : 1;
  if (o->backend) d.backend = o->backend;
  return d;
}

}  // namespace oneflow::capi

extern "C" {

oneflow_status_t oneflow_plan_options_init_sized(oneflow_plan_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_plan_options_t", [](oneflow_plan_options_t& ) {});
}

oneflow_status_t oneflow_plan_explain(const oneflow_graph_t* graph, const oneflow_plan_options_t* options,
                                      char** out_json) {
  return Guard([&] {
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(out_json != nullptr, "out_json is NULL");
    DistributedOptions d = ToDistOptions(options);
    const Graph& g = *graph->graph;  // prepared when loaded
    std::string json = MakePlan(g, d.plan).ToJson();
    char* s = new char[json.size() + 1];
    std::memcpy(s, json.c_str(), json.size() + 1);
    *out_json = s;
  });
}

void oneflow_string_free(char* str) { delete[] str; }

oneflow_status_t oneflow_dist_session_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                             const oneflow_session_options_t* session_options,
                                             const oneflow_plan_options_t* plan_options,
                                             oneflow_dist_session_t** out_session) {
  return Guard([&] {
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(out_session != nullptr, "out_session is NULL");
    SessionOptions so;
    if (session_options) {
      CheckSizedInput(session_options, "session options", "oneflow_session_options_init");
      so.optimization_level = session_options->optimization_level;
    }
    OF_REQUIRE(so.optimization_level >= 0 && so.optimization_level <= 2, "optimization_level must be 0, 1 or 2, got ",
               so.optimization_level);
    DistributedOptions d = ToDistOptions(plan_options);
    if (env != nullptr) d.shared_pool = env->pool;
    const Graph& g = *graph->graph;  // prepared when loaded
    auto s = std::make_unique<oneflow_dist_session_s>();
    s->num_outputs = g.outputs.size();
    s->session = std::make_unique<DistributedSession>(g, so, d);
    *out_session = s.release();
  });
}

void oneflow_dist_session_release(oneflow_dist_session_t* session) { delete session; }

oneflow_status_t oneflow_dist_session_run(oneflow_dist_session_t* session, const char* const* input_names,
                                          const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                          const char* const* output_names, size_t num_output_names,
                                          oneflow_tensor_t** out_outputs, size_t out_capacity) {
  return Guard([&] {
    OF_REQUIRE(session != nullptr, "session is NULL");
    RunArguments args = ReadRunArguments(input_names, inputs, num_inputs, output_names, num_output_names, out_outputs);
    size_t expected = num_output_names ? num_output_names : session->num_outputs;
    CheckOutputCapacity(out_capacity, expected);
    auto results = session->session->Run(args.feeds, args.fetches);
    HandOutOutputs(results, out_outputs);
  });
}

}  // extern "C"
