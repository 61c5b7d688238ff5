// One rank of a 4-process Gloo job (tests/train_dist/pipeline_gloo_test.py): trains a bench model
// with the pipeline trainer on the Gloo backend (this process runs its own device of cpu:0-3) and
// compares the loss of every step, the final parameters (GetParameter: a collective) and the
// inference outputs with its own single-device TrainingSession on the same batches.
// Usage: pipeline_gloo_worker MODEL.onnx mlp|transformer STAGES MICRO_BATCHES sgd|adam
// Exit 0 when everything is within 1e-5 relative; 1 with the figures on stderr otherwise.
//        pipeline_gloo_worker die MLP.onnx
// Rank 3 exits (code 3) right before the first step; the others must fail naming it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "base/error.h"
#include "pipeline_compare.h"

using namespace oneflow;
using namespace oneflow::train;
using namespace oneflow::train::pipeline_test;

int Die(const char* model) {
  try {
    const Case c{model, true, 16, 64};
    DistributedTrainingOptions o = Pipeline(Training(c, OptimizerKind::kSgd), "cpu:0-3", 2, 4);
    o.dist.backend = "gloo";
    std::unique_ptr<DistributedTrainer> pipe = CreatePipelineTrainer(LoadModel(model), o);
    if (std::string(std::getenv("RANK")) == "3") _exit(3);
    pipe->TrainStep(Batches(c, 1, 1)[0]);
    std::fprintf(stderr, "rank %s: the step succeeded without rank 3\n", std::getenv("RANK"));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %s: %s\n", std::getenv("RANK"), e.what());
    return 1;
  }
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "die") return Die(argv[2]);
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL.onnx mlp|transformer STAGES MICRO_BATCHES sgd|adam\n", argv[0]);
    return 2;
  }
  try {
    const bool mlp = std::string(argv[2]) == "mlp";
    const Case c{argv[1], mlp, mlp ? 18 : 10, 64};
    const OptimizerKind kind = std::string(argv[5]) == "adam" ? OptimizerKind::kAdam : OptimizerKind::kSgd;
    DistributedTrainingOptions o = Pipeline(Training(c, kind), "cpu:0-3", std::atoi(argv[3]), std::atoi(argv[4]));
    o.dist.backend = "gloo";
    Figures f = CompareWithSingleDevice(LoadModel(c.file), c, o);
    const bool ok = f.all_applied && f.steps == 20 && f.same_names && f.same_outputs && f.loss <= 1e-5 &&
                    f.grad_norm <= 1e-5 && f.param_l2 <= 1e-5 && f.output <= 1e-5;
    std::fprintf(ok ? stdout : stderr,
                 "rank %s: %s %s %s stages %s micro-batches: max relative error loss %.3g, grad norm %.3g, parameters "
                 "%.3g (L2; elementwise max %.3g), outputs %.3g\n",
                 std::getenv("RANK"), argv[2], argv[5], argv[3], argv[4], f.loss, f.grad_norm, f.param_l2, f.param_max,
                 f.output);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %s: %s\n", std::getenv("RANK"), e.what());
    return 1;
  }
}
