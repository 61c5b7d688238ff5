// CUDA test helpers (see cuda_test_util.h).
#include "cuda_test_util.h"

namespace oneflow::cuda_test {

ThreadPool& Pool() {
  static ThreadPool pool(2);
  return pool;
}

std::vector<Tensor> RunKernel(DeviceType device, const OpCall& call) {
  if (device == DeviceType::kCpu) return test_util::RunCpuKernel(call);
  Graph g;
  const Node node = test_util::KernelNode(call);
  const KernelDef* def = KernelRegistry::Global().Find(call.domain, call.op, device);
  if (def == nullptr) {
    ADD_FAILURE() << "no CUDA kernel for " << call.op;
    return {};
  }
  std::unique_ptr<OpKernel> kernel = def->factory(KernelInitContext(g, node));
  KernelContext ctx(node, Pool());
  std::vector<Tensor> ins, outs;
  ins.reserve(call.inputs.size());
  outs.reserve(call.outputs.size());
  cuda::Stream stream(0);
  cuda::StreamScope scope(stream.get());
  for (const Tensor& t : call.inputs) ins.push_back(t.defined() ? cuda::ToDevice(t, 0, stream.get()) : Tensor());
  for (const auto& [dt, shape] : call.outputs) {
    Tensor t = cuda::EmptyDeviceTensor(dt, shape, 0, stream.get());
    if (t.nbytes()) OF_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0xFF, t.nbytes(), stream.get()));
    outs.push_back(t);
  }
  for (const Tensor& t : ins) ctx.inputs().push_back(t.defined() ? &t : nullptr);
  for (Tensor& t : outs) ctx.outputs().push_back(&t);
  kernel->Compute(ctx);
  std::vector<Tensor> host;
  for (const Tensor& t : outs) host.push_back(cuda::ToHost(t, stream.get()));
  return host;
}

Tensor RandomTensor(DType dt, const Shape& shape, std::mt19937& rng, float lo, float hi) {
  Tensor f(DType::kFloat32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  return dt == DType::kFloat32 ? f : CastHost(f, dt);
}

Tensor CastHost(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  OpCall c;
  c.op = "Cast";
  c.attrs.set("to", Attribute::Int(static_cast<int64_t>(to)));
  c.inputs = {t};
  c.outputs = {{to, t.shape()}};
  return RunKernel(DeviceType::kCpu, c)[0];
}

double RelL2(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return INFINITY;
  const Tensor g = CastHost(got, DType::kFloat64), w = CastHost(want, DType::kFloat64);
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double a = g.data<double>()[i], b = w.data<double>()[i];
    if (std::isnan(a) != std::isnan(b)) return INFINITY;
    if (std::isnan(a)) continue;
    num += (a - b) * (a - b);
    den += b * b;
  }
  return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace oneflow::cuda_test
