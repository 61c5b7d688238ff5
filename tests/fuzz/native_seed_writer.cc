// Writes the native fuzzer's seed corpus: each ONNX seed model converted to .ofm (models that do
// not load are skipped), the first few again with a 2-D placement and an SBP on every value (so
// mutations reach the plan checks), plus a checkpoint with every tensor role.
//   native_seed_writer OUT_DIR MODEL.onnx...
#include <cstdio>
#include <filesystem>

#include "serialize/native_format.h"
#include "serialize/onnx_import.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR MODEL.onnx...\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  using namespace oneflow;
  fs::path out = argv[1];
  fs::create_directories(out);
  int written = 0;
  for (int i = 2; i < argc; ++i) {
    try {
      Graph g = LoadOnnxFile(argv[i]);
      const std::string stem = (out / fs::path(argv[i]).stem()).string();
      WriteNativeModel(g, stem + ".ofm");
      if (written < 4) {
        g.placement = Placement::Parse("cpu:[[0,1],[2,3]]");
        for (Value& v : g.values)
          v.sbp = v.type.has_rank && !v.type.dims.empty() ? NdSbp{Sbp::S(0), Sbp::B()} : NdSbp{Sbp::B(), Sbp::P()};
        WriteNativeModel(g, stem + ".plan.ofm");
      }
      ++written;
    } catch (const Error&) {
      // Seeds that are invalid ONNX on purpose have no native form.
    }
  }
  Checkpoint c;
  c.step = 3;
  c.metadata["optimizer"] = "sgd";
  Tensor w(DType::kFloat32, {4});
  c.tensors.push_back({"w", TensorRole::kParameter, w});
  c.tensors.push_back({"w.grad", TensorRole::kGradient, w, "w"});
  c.tensors.push_back({"w.momentum", TensorRole::kOptimizerState, w, "w", "momentum"});
  WriteCheckpoint(c, (out / "checkpoint.ofm").string());
  std::printf("native_seed_writer: %d models and 1 checkpoint in %s\n", written, out.c_str());
  return written > 0 ? 0 : 1;
}
