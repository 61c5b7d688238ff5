// C ABI, distributed training: DistributedTrainer behind an opaque handle.
#include <cstring>

#include "c_api/c_api_internal.h"
#include "train/distributed_trainer.h"

using namespace oneflow::capi;

struct oneflow_dist_trainer_s {
  std::unique_ptr<oneflow::train::DistributedTrainer> trainer;
};

extern "C" {

oneflow_status_t oneflow_dist_training_options_init_sized(oneflow_dist_training_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_dist_training_options_t", [](oneflow_dist_training_options_t& ) {});
}

oneflow_status_t oneflow_dist_trainer_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                             const oneflow_training_options_t* training,
                                             const oneflow_plan_options_t* plan,
                                             const oneflow_dist_training_options_t* dist,
                                             oneflow_dist_trainer_t** out_trainer) {
  return Guard([&] {
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(training != nullptr, "training options are NULL");
    OF_REQUIRE(out_trainer != nullptr, "out_trainer is NULL");
    train::DistributedTrainingOptions o;
    o.training = ConvertOptions(nullptr, training);
    // Distributed trainers place their graphs by plan (the placement's devices), not by these fields.
    OF_CHECK(o.training.session.device == DeviceType::kCpu, kUnsupported,
             "training_options.device_kind CUDA is for oneflow_training_session_create; a distributed trainer "
             "places its graphs by the plan's placement");
    o.dist = ToDistOptions(plan);
    if (env != nullptr) o.dist.shared_pool = env->pool;
    if (dist) {
      CheckSizedInput(dist, "dist_training_options", "oneflow_dist_training_options_init");
      o.zero_stage = dist->zero_stage;
      if (dist->bucket_bytes != 0) o.bucket_bytes = dist->bucket_bytes;
      if (dist->pipeline_stages > 1) o.pipeline_stages = dist->pipeline_stages;
      OF_REQUIRE(dist->pipeline_stages >= 0 && dist->micro_batches >= 0 && dist->max_states >= 0,
                 "pipeline_stages, micro_batches and max_states must be >= 0 (0 = default)");
      o.micro_batches = dist->micro_batches > 0 ? dist->micro_batches : o.pipeline_stages;
      if (dist->max_states > 0) o.max_states = dist->max_states;
    }
    const Graph& g = *graph->graph;  // prepared when loaded
    auto t = std::make_unique<oneflow_dist_trainer_s>();
    t->trainer = train::DistributedTrainer::Create(g, o);
    *out_trainer = t.release();
  });
}

void oneflow_dist_trainer_release(oneflow_dist_trainer_t* trainer) { delete trainer; }

oneflow_status_t oneflow_dist_trainer_step(oneflow_dist_trainer_t* trainer, const char* const* input_names,
                                           const oneflow_tensor_t* const* inputs, size_t num_inputs, double* out_loss,
                                           int32_t* out_applied) {
  return Guard([&] {
    OF_REQUIRE(trainer != nullptr, "trainer is NULL");
    oneflow_tensor_t* unused = nullptr;
    RunArguments args = ReadRunArguments(input_names, inputs, num_inputs, nullptr, 0, &unused);
    train::TrainStepResult r = trainer->trainer->TrainStep(args.feeds);
    if (out_loss) *out_loss = r.loss;
    if (out_applied) *out_applied = r.applied ? 1 : 0;
  });
}

oneflow_status_t oneflow_dist_trainer_run(oneflow_dist_trainer_t* trainer, const char* const* input_names,
                                          const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                          const char* const* output_names, size_t num_output_names,
                                          oneflow_tensor_t** out_outputs, size_t out_capacity) {
  return Guard([&] {
    OF_REQUIRE(trainer != nullptr, "trainer is NULL");
    RunArguments args = ReadRunArguments(input_names, inputs, num_inputs, output_names, num_output_names, out_outputs);
    size_t model_outputs = 0;
    const Graph& I = trainer->trainer->interface_graph();
    for (int v : I.outputs) model_outputs += I.values[static_cast<size_t>(v)].name != "loss";
    CheckOutputCapacity(out_capacity, num_output_names ? num_output_names : model_outputs);
    auto results = trainer->trainer->Run(args.feeds, args.fetches);
    CheckOutputCapacity(out_capacity, results.size());
    HandOutOutputs(results, out_outputs);
  });
}

oneflow_status_t oneflow_dist_trainer_get_parameter(oneflow_dist_trainer_t* trainer, const char* name,
                                                    oneflow_tensor_t** out_tensor) {
  return Guard([&] {
    OF_REQUIRE(trainer != nullptr, "trainer is NULL");
    OF_REQUIRE(name != nullptr, "name is NULL");
    OF_REQUIRE(out_tensor != nullptr, "out_tensor is NULL");
    auto h = std::make_unique<oneflow_tensor_s>();
    h->tensor = trainer->trainer->GetParameter(name);
    *out_tensor = h.release();
  });
}

oneflow_status_t oneflow_dist_trainer_explain(const oneflow_dist_trainer_t* trainer, int32_t json, char** out_text) {
  return Guard([&] {
    OF_REQUIRE(trainer != nullptr, "trainer is NULL");
    OF_REQUIRE(out_text != nullptr, "out_text is NULL");
    std::string text = trainer->trainer->Explain(json != 0);
    char* s = new char[text.size() + 1];
    std::memcpy(s, text.c_str(), text.size() + 1);
    *out_text = s;
  });
}

}  // extern "C"
