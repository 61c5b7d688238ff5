// The C ABI's training section: training options, the training session, backward/step, parameters,
// gradients, checkpoints, model export and training memory (include/oneflow_c.h, "Training").
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "c_api/c_api_internal.h"

using namespace oneflow::capi;
using oneflow::train::TrainingSession;

namespace {

// The training session behind a handle; kInvalidArgument for NULL or an inference session.
TrainingSession& Training(const oneflow_session_t* session) {
  OF_REQUIRE(session != nullptr, "session is NULL");
  OF_REQUIRE(session->training != nullptr,
             "this session was created by oneflow_session_create: it has no loss to train with (create it "
             "with oneflow_training_session_create)");
  return *session->training;
}

// Reads a field of a caller's struct only when its struct_size says the field is there, so a
// program built against an older, shorter struct keeps working.
#define OF_FIELD(opts, field, fallback) \
  ((opts)->struct_size >= offsetof(oneflow_training_options_t, field) + sizeof((opts)->field) ? (opts)->field : (fallback))

// OF_FIELD for an enum-typed field: its raw int32_t value (or `fallback`), never an enum load.
#define OF_ENUM_FIELD(opts, field, fallback)                                                      \
  ((opts)->struct_size >= offsetof(oneflow_training_options_t, field) + sizeof((opts)->field) \
       ? RawEnum((opts)->field)                                                                 \
       : static_cast<int32_t>(fallback))


oneflow_tensor_t* WrapTensor(Tensor t) {
  auto h = std::make_unique<oneflow_tensor_s>();
  h->tensor = std::move(t);
  return h.release();
}

}  // namespace

namespace oneflow::capi {

train::TrainingOptions ConvertOptions(const oneflow_session_options_t* so, const oneflow_training_options_t* to) {
  train::TrainingOptions o;
  if (so) {
    CheckSizedInput(so, "session_options", "oneflow_session_options_init");
    o.session.intra_op_threads = so->intra_op_threads;
    o.session.optimization_level = so->optimization_level;
  }
  CheckSizedInput(to, "training_options", "oneflow_training_options_init");
  const int32_t loss = RawEnum(to->loss);  // within the struct_size checked above
  switch (loss) {
    case ONEFLOW_LOSS_MODEL_OUTPUT:
      OF_REQUIRE(to->loss_output != nullptr, "training_options.loss_output is NULL with ONEFLOW_LOSS_MODEL_OUTPUT");
      o.loss_output = to->loss_output;
      break;
    case ONEFLOW_LOSS_MSE: o.appended_loss = train::AppendedLoss::kMse; break;
    case ONEFLOW_LOSS_L1: o.appended_loss = train::AppendedLoss::kL1; break;
    case ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY: o.appended_loss = train::AppendedLoss::kSoftmaxCrossEntropy; break;
    default: Fail(ErrorCode::kInvalidArgument, "training_options.loss: unknown loss ", loss);
  }
  if (o.appended_loss != train::AppendedLoss::kNone) {
    OF_REQUIRE(to->logits_output != nullptr, "training_options.logits_output is NULL (an appended loss needs it)");
    o.logits_output = to->logits_output;
    if (to->labels_input) o.labels_input = to->labels_input;
    o.loss_sum = to->loss_reduction_sum != 0;
  }
  train::OptimizerConfig& c = o.optimizer;
  const int32_t kind = OF_ENUM_FIELD(to, optimizer, ONEFLOW_OPTIMIZER_ADAM);
  switch (kind) {
    case ONEFLOW_OPTIMIZER_SGD: c.kind = train::OptimizerKind::kSgd; break;
    case ONEFLOW_OPTIMIZER_ADAM: c.kind = train::OptimizerKind::kAdam; break;
    case ONEFLOW_OPTIMIZER_ADAMW: c.kind = train::OptimizerKind::kAdamW; break;
    default: Fail(ErrorCode::kInvalidArgument, "training_options.optimizer: unknown optimizer ", kind);
  }
  c.lr = OF_FIELD(to, learning_rate, c.lr);
  c.weight_decay = OF_FIELD(to, weight_decay, c.weight_decay);
  c.momentum = OF_FIELD(to, momentum, c.momentum);
  c.dampening = OF_FIELD(to, dampening, c.dampening);
  c.nesterov = OF_FIELD(to, nesterov, 0) != 0;
  c.beta1 = OF_FIELD(to, beta1, c.beta1);
  c.beta2 = OF_FIELD(to, beta2, c.beta2);
  c.eps = OF_FIELD(to, eps, c.eps);
  train::LrSchedule& s = o.schedule;
  const int32_t sk = OF_ENUM_FIELD(to, lr_schedule, ONEFLOW_LR_CONSTANT);
  switch (sk) {
    case ONEFLOW_LR_CONSTANT: s.kind = train::LrScheduleKind::kConstant; break;
    case ONEFLOW_LR_STEP: s.kind = train::LrScheduleKind::kStep; break;
    case ONEFLOW_LR_COSINE: s.kind = train::LrScheduleKind::kCosine; break;
    default: Fail(ErrorCode::kInvalidArgument, "training_options.lr_schedule: unknown schedule ", sk);
  }
  s.warmup_steps = OF_FIELD(to, warmup_steps, s.warmup_steps);
  s.warmup_start_factor = OF_FIELD(to, warmup_start_factor, s.warmup_start_factor);
  s.step_size = OF_FIELD(to, step_size, s.step_size);
  s.gamma = OF_FIELD(to, gamma, s.gamma);
  s.decay_steps = OF_FIELD(to, decay_steps, s.decay_steps);
  s.min_lr_factor = OF_FIELD(to, min_lr_factor, s.min_lr_factor);
  o.max_grad_norm = OF_FIELD(to, max_grad_norm, 0.0f);
  const size_t num_frozen = OF_FIELD(to, num_frozen, size_t{0});
  const char* const* frozen = OF_FIELD(to, frozen, nullptr);
  OF_REQUIRE(num_frozen == 0 || frozen != nullptr, "training_options.frozen is NULL with num_frozen = ", num_frozen);
  for (size_t i = 0; i < num_frozen; ++i) {
    OF_REQUIRE(frozen[i] != nullptr, "training_options.frozen[", i, "] is NULL");
    o.frozen.emplace_back(frozen[i]);
  }
  o.deterministic = OF_FIELD(to, deterministic, 0) != 0;
  o.seed = OF_FIELD(to, seed, uint64_t{0});
  const int32_t nf = OF_ENUM_FIELD(to, nonfinite_policy, ONEFLOW_NONFINITE_SKIP);
  OF_REQUIRE(nf == ONEFLOW_NONFINITE_SKIP || nf == ONEFLOW_NONFINITE_REFUSE,
             "training_options.nonfinite_policy: unknown policy ", nf);
  o.nonfinite = nf == ONEFLOW_NONFINITE_SKIP ? train::NonFinitePolicy::kSkip : train::NonFinitePolicy::kRefuse;
  o.activation_checkpointing = OF_FIELD(to, activation_checkpointing, 0) != 0;
  const int32_t pr = OF_ENUM_FIELD(to, precision, ONEFLOW_PRECISION_F32);
  OF_REQUIRE(pr == ONEFLOW_PRECISION_F32 || pr == ONEFLOW_PRECISION_BF16 || pr == ONEFLOW_PRECISION_F16,
             "training_options.precision: unknown precision ", pr);
  o.precision = pr == ONEFLOW_PRECISION_BF16  ? train::Precision::kBFloat16
                : pr == ONEFLOW_PRECISION_F16 ? train::Precision::kFloat16
                                              : train::Precision::kFloat32;
  const train::LossScaleConfig ls;
  o.loss_scale.enabled = OF_FIELD(to, loss_scaling_off, 0) == 0;
  o.loss_scale.initial_scale = OF_FIELD(to, loss_scale_initial, ls.initial_scale);
  o.loss_scale.growth = OF_FIELD(to, loss_scale_growth, ls.growth);
  o.loss_scale.backoff = OF_FIELD(to, loss_scale_backoff, ls.backoff);
  o.loss_scale.growth_interval = OF_FIELD(to, loss_scale_growth_interval, ls.growth_interval);
  const int32_t device = OF_FIELD(to, device_kind, int32_t{ONEFLOW_DEVICE_CPU});
  OF_REQUIRE(device == ONEFLOW_DEVICE_CPU || device == ONEFLOW_DEVICE_CUDA,
             "training_options.device_kind: unknown device ", device);
  o.session.device = device == ONEFLOW_DEVICE_CUDA ? DeviceType::kCuda : DeviceType::kCpu;
  o.session.device_index = OF_FIELD(to, device_index, int32_t{0});
  const int32_t graphs = OF_FIELD(to, cuda_graphs, int32_t{ONEFLOW_CUDA_GRAPHS_AUTO});
  OF_REQUIRE(graphs == ONEFLOW_CUDA_GRAPHS_AUTO || graphs == ONEFLOW_CUDA_GRAPHS_ON || graphs == ONEFLOW_CUDA_GRAPHS_OFF,
             "training_options.cuda_graphs: unknown mode ", graphs);
  o.session.cuda_graphs = graphs == ONEFLOW_CUDA_GRAPHS_ON    ? CudaGraphMode::kOn
                  : graphs == ONEFLOW_CUDA_GRAPHS_OFF ? CudaGraphMode::kOff
                                                      : CudaGraphMode::kAuto;
  return o;
}

}  // namespace oneflow::capi

extern "C" {

oneflow_status_t oneflow_training_options_init_sized(oneflow_training_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_training_options_t", [](oneflow_training_options_t& o) {
    o.loss = ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY;
    o.labels_input = "labels";
    const train::OptimizerConfig c;
    const train::LrSchedule s;
    o.optimizer = ONEFLOW_OPTIMIZER_ADAM;
    o.learning_rate = c.lr;
    o.beta1 = c.beta1;
    o.beta2 = c.beta2;
    o.eps = c.eps;
    o.lr_schedule = ONEFLOW_LR_CONSTANT;
    o.step_size = s.step_size;
    o.gamma = s.gamma;
    o.decay_steps = s.decay_steps;
    o.nonfinite_policy = ONEFLOW_NONFINITE_SKIP;
    const train::LossScaleConfig ls;
    o.precision = ONEFLOW_PRECISION_F32;
    o.loss_scale_initial = ls.initial_scale;
    o.loss_scale_growth = ls.growth;
    o.loss_scale_backoff = ls.backoff;
    o.loss_scale_growth_interval = ls.growth_interval;
  });
}

oneflow_status_t oneflow_training_session_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                 const oneflow_session_options_t* session_options,
                                                 const oneflow_training_options_t* training_options,
                                                 oneflow_session_t** out_session) {
  return Guard([&] {
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(training_options != nullptr, "training_options is NULL");
    OF_REQUIRE(out_session != nullptr, "out_session is NULL");
    train::TrainingOptions opts = ConvertOptions(session_options, training_options);
    ApplyEnv(env, opts.session.intra_op_threads, opts.session.pool);
    auto h = std::make_unique<oneflow_session_s>();
    h->training = std::make_unique<TrainingSession>(*graph->graph, opts);
    h->io.Build(h->training->interface_graph());
    *out_session = h.release();
  });
}

oneflow_status_t oneflow_session_set_run_mode(oneflow_session_t* session, oneflow_run_mode_t mode) {
  return Guard([&] {
    Training(session);
    const int32_t raw = RawEnum(mode);
    OF_REQUIRE(raw == ONEFLOW_RUN_TRAIN || raw == ONEFLOW_RUN_EVAL, "mode: unknown run mode ", raw,
               " (expected ONEFLOW_RUN_TRAIN or ONEFLOW_RUN_EVAL)");
    session->mode = raw == ONEFLOW_RUN_TRAIN ? train::RunMode::kTrain : train::RunMode::kEval;
  });
}

oneflow_status_t oneflow_session_backward(oneflow_session_t* session) {
  return Guard([&] { Training(session).Backward(); });
}

oneflow_status_t oneflow_session_step(oneflow_session_t* session, int32_t* out_applied) {
  return Guard([&] {
    train::StepOutcome r = Training(session).Step();
    if (out_applied) *out_applied = r == train::StepOutcome::kApplied ? 1 : 0;
  });
}

oneflow_status_t oneflow_session_zero_gradients(oneflow_session_t* session) {
  return Guard([&] { Training(session).ZeroGradients(); });
}

size_t oneflow_session_parameter_count(const oneflow_session_t* s) {
  return s && s->training ? s->training->parameter_names().size() : 0;
}

const char* oneflow_session_parameter_name(const oneflow_session_t* s, size_t index) {
  if (!s || !s->training || index >= s->training->parameter_names().size()) return nullptr;
  return s->training->parameter_names()[index].c_str();
}

oneflow_status_t oneflow_session_get_parameter(const oneflow_session_t* session, const char* name,
                                               oneflow_tensor_t** out_value) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    OF_REQUIRE(name != nullptr, "name is NULL");
    OF_REQUIRE(out_value != nullptr, "out_value is NULL");
    *out_value = WrapTensor(t.GetParameter(name));
  });
}

oneflow_status_t oneflow_session_get_gradient(const oneflow_session_t* session, const char* name,
                                              oneflow_tensor_t** out_gradient) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    OF_REQUIRE(name != nullptr, "name is NULL");
    OF_REQUIRE(out_gradient != nullptr, "out_gradient is NULL");
    *out_gradient = WrapTensor(t.GetGradient(name));
  });
}

oneflow_status_t oneflow_session_set_parameter(oneflow_session_t* session, const char* name,
                                               const oneflow_tensor_t* value) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    OF_REQUIRE(name != nullptr, "name is NULL");
    OF_REQUIRE(value != nullptr, "value is NULL");
    t.SetParameter(name, value->tensor);
  });
}

oneflow_status_t oneflow_training_state_init_sized(oneflow_training_state_t* state, size_t struct_size) {
  return InitSizedStruct(state, struct_size, "oneflow_training_state_t", [](oneflow_training_state_t&) {});
}

oneflow_status_t oneflow_session_get_training_state(const oneflow_session_t* session,
                                                    oneflow_training_state_t* out_state) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    CheckSizedOutput(out_state, "out_state", "oneflow_training_state_init");
    out_state->step = t.step();
    out_state->skipped_steps = t.skipped_steps();
    out_state->learning_rate = t.learning_rate();
    out_state->last_loss = t.last_loss();
    out_state->last_grad_norm = t.last_grad_norm();
  });
}

oneflow_status_t oneflow_session_get_loss_scale(const oneflow_session_t* session, float* out_scale) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    OF_REQUIRE(out_scale != nullptr, "out_scale is NULL");
    *out_scale = t.loss_scale();
  });
}

oneflow_status_t oneflow_training_memory_init_sized(oneflow_training_memory_t* memory, size_t struct_size) {
  return InitSizedStruct(memory, struct_size, "oneflow_training_memory_t", [](oneflow_training_memory_t&) {});
}

oneflow_status_t oneflow_session_get_training_memory(const oneflow_session_t* session,
                                                     oneflow_training_memory_t* out_memory) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    CheckSizedOutput(out_memory, "out_memory", "oneflow_training_memory_init");
    train::TrainingMemory m = t.memory();
    out_memory->forward_arena_bytes = m.forward_arena;
    out_memory->saved_activation_bytes = m.saved_bytes;
    out_memory->backward_arena_bytes = m.backward_arena;
    out_memory->peak_bytes = m.peak();
  });
}

oneflow_status_t oneflow_session_save_checkpoint(const oneflow_session_t* session, const char* path) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    OF_REQUIRE(path != nullptr, "path is NULL");
    t.SaveCheckpoint(path);
  });
}

oneflow_status_t oneflow_session_load_checkpoint(oneflow_session_t* session, const char* path) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    OF_REQUIRE(path != nullptr, "path is NULL");
    t.LoadCheckpoint(path);
  });
}

oneflow_status_t oneflow_session_export_model(const oneflow_session_t* session, oneflow_graph_t** out_graph) {
  return Guard([&] {
    TrainingSession& t = Training(session);
    OF_REQUIRE(out_graph != nullptr, "out_graph is NULL");
    auto h = std::make_unique<oneflow_graph_s>();
    h->graph = std::make_shared<const Graph>(t.ExportModel());
    h->io.Build(*h->graph);
    *out_graph = h.release();
  });
}

}  // extern "C"
