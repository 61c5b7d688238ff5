// CUDA test helpers (see cuda_test_util.h).
#include "cuda_test_util.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace oneflow::cuda_test {

ThreadPool& Pool() {
  static ThreadPool pool(2);
  return pool;
}

namespace {

// Bytes after each output view (inside its allocation) that must stay poisoned.
constexpr size_t kGuardBytes = 256;

int64_t OffsetAt(const std::vector<int64_t>& offsets, size_t i) { return i < offsets.size() ? offsets[i] : 0; }

// A device tensor of `dt`/`shape` viewing a fresh allocation `offset` elements in, the whole
// allocation (view, the bytes before it and the guard after it) filled with 0xFF.
Tensor PoisonedDeviceView(DType dt, const Shape& shape, int64_t offset, cudaStream_t stream, size_t* total_bytes) {
  const size_t es = DTypeSize(dt);
  const size_t before = static_cast<size_t>(offset) * es;
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * es;
  const size_t total = before + bytes + kGuardBytes;
  std::shared_ptr<Storage> storage = cuda::AllocateDeviceStorage(total, 0, stream);
  OF_CUDA_CHECK(cudaMemsetAsync(storage->data(), 0xFF, total, stream));
  Tensor view(dt, shape, storage, before);
  // Device allocations are at least 256-byte aligned: the view's alignment is the offset's.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.raw()) % 256, before % 256)
      << "the device allocation is not 256-byte aligned: the test would not exercise the alignment it claims";
  if (total_bytes) *total_bytes = total;
  return view;
}

// True when every byte of [p, p + n) on the device is 0xFF (the stream is synchronized first).
bool StillPoisoned(const void* p, size_t n, cudaStream_t stream) {
  if (n == 0) return true;
  std::vector<unsigned char> host(n);
  OF_CUDA_CHECK(cudaStreamSynchronize(stream));
  OF_CUDA_CHECK(cudaMemcpy(host.data(), p, n, cudaMemcpyDeviceToHost));
  return std::all_of(host.begin(), host.end(), [](unsigned char b) { return b == 0xFF; });
}

std::vector<Tensor> RunCuda(const OpCall& call, const DeviceLayout* layout) {
  Graph g;
  const Node node = test_util::KernelNode(call);
  const KernelDef* def = KernelRegistry::Global().Find(call.domain, call.op, DeviceType::kCuda);
  if (def == nullptr) {
    ADD_FAILURE() << "no CUDA kernel for " << call.op;
    return {};
  }
  std::unique_ptr<OpKernel> kernel = def->factory(KernelInitContext(g, node));
  KernelContext ctx(node, Pool());
  std::vector<Tensor> ins, outs;
  std::vector<size_t> out_totals;
  ins.reserve(call.inputs.size());
  outs.reserve(call.outputs.size());
  cuda::Stream stream(0);
  cuda::StreamScope scope(stream.get());
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    if (!t.defined()) {
      ins.emplace_back();
    } else if (layout == nullptr) {
      ins.push_back(cuda::ToDevice(t, 0, stream.get()));
    } else {
      Tensor view = PoisonedDeviceView(t.dtype(), t.shape(), OffsetAt(layout->input_offsets, i), stream.get(), nullptr);
      if (t.nbytes()) {
        const Tensor staged = cuda::ToDevice(t, 0, stream.get());
        OF_CUDA_CHECK(cudaMemcpyAsync(view.raw(), staged.raw(), t.nbytes(), cudaMemcpyDeviceToDevice, stream.get()));
      }
      ins.push_back(view);
    }
  }
  for (size_t j = 0; j < call.outputs.size(); ++j) {
    const auto& [dt, shape] = call.outputs[j];
    if (layout == nullptr) {
      Tensor t = cuda::EmptyDeviceTensor(dt, shape, 0, stream.get());
      if (t.nbytes()) OF_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0xFF, t.nbytes(), stream.get()));
      outs.push_back(t);
    } else {
      size_t total = 0;
      outs.push_back(PoisonedDeviceView(dt, shape, OffsetAt(layout->output_offsets, j), stream.get(), &total));
      out_totals.push_back(total);
    }
  }
  for (const Tensor& t : ins) ctx.inputs().push_back(t.defined() ? &t : nullptr);
  for (Tensor& t : outs) ctx.outputs().push_back(&t);
  kernel->Compute(ctx);
  std::vector<Tensor> host;
  for (const Tensor& t : outs) host.push_back(cuda::ToHost(t, stream.get()));
  if (layout != nullptr) {
    for (size_t j = 0; j < outs.size(); ++j) {
      const char* base = static_cast<const char*>(outs[j].storage()->data());
      const char* view = static_cast<const char*>(outs[j].raw());
      const size_t before = static_cast<size_t>(view - base), after = before + outs[j].nbytes();
      EXPECT_TRUE(StillPoisoned(base, before, stream.get()))
          << call.op << " output " << j << " wrote before its view (offset " << before << " bytes)";
      EXPECT_TRUE(StillPoisoned(base + after, out_totals[j] - after, stream.get()))
          << call.op << " output " << j << " wrote past its end";
    }
  }
  return host;
}

// Element i of a host tensor as a double.
using Getter = double (*)(const void*, int64_t);
template <typename T>
double GetAt(const void* p, int64_t i) {
  return CastToDouble(static_cast<const T*>(p)[i]);
}
Getter GetterFor(DType dt) {
  return DispatchAll(dt, [](auto tag) -> Getter { return &GetAt<typename decltype(tag)::type>; });
}

bool IsExactDType(DType dt) { return IsIntegerDType(dt) || dt == DType::kBool; }

std::string IndexString(const Shape& shape, int64_t i) {
  std::string s = std::to_string(i);
  if (shape.size() <= 1) return s;
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  s += " (";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
  return s + ")";
}

}  // namespace

std::vector<Tensor> RunKernel(DeviceType device, const OpCall& call) {
  if (device == DeviceType::kCpu) return test_util::RunCpuKernel(call);
  return RunCuda(call, nullptr);
}

std::vector<Tensor> RunKernel(DeviceType device, const OpCall& call, const DeviceLayout& layout) {
  if (device == DeviceType::kCpu) return test_util::RunCpuKernel(call);
  return RunCuda(call, &layout);
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

Tol ExactTol() { return Tol{}; }

Tol DefaultTol(DType dt) {
  switch (dt) {
    case DType::kFloat32:
    case DType::kFloat64: return Tol{1e-5, 1e-6, 1e-5, 1e-5};
    case DType::kFloat16: return Tol{2e-3, 1e-4, 2e-3, 2e-3};
    case DType::kBFloat16: return Tol{1.6e-2, 1e-3, 1e-2, 1e-2};
    default: return ExactTol();
  }
}

Tol Tf32Tol() { return Tol{5e-3, 1e-4, 5e-3, 3e-3}; }

Tol LegacyTol(double tol) { return tol <= 0.0 ? ExactTol() : Tol{tol, 0.0, tol, tol}; }

::testing::AssertionResult ElementsClose(const Tensor& got, const Tensor& want, const Tol& tol) {
  if (!got.defined() || !want.defined())
    return ::testing::AssertionFailure() << "a tensor is undefined (got " << got.defined() << ", want "
                                         << want.defined() << ")";
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << ShapeToString(got.shape()) << " != expected "
                                         << ShapeToString(want.shape());
  const int64_t n = got.numel();
  const bool exact_ints = IsExactDType(got.dtype()) || IsExactDType(want.dtype());
  const Tol t = exact_ints ? ExactTol() : tol;
  const Getter gg = GetterFor(got.dtype()), gw = GetterFor(want.dtype());
  const void* pg = got.raw();
  const void* pw = want.raw();
  // Integers of the same dtype compare by value bits (exact beyond 2^53).
  const bool bitwise = exact_ints && got.dtype() == want.dtype();
  const size_t es = DTypeSize(got.dtype());

  double sq = 0.0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = gw(pw, i);
    if (std::isfinite(w)) sq += w * w, ++finite;
  }
  const double rms = finite ? std::sqrt(sq / static_cast<double>(finite)) : 0.0;
  const double atol = t.atol + t.atol_rms * rms;

  constexpr int kShow = 8;
  int64_t bad = 0;
  std::ostringstream first;
  first.precision(9);
  double num = 0.0, den = 0.0;
  bool nan_mismatch = false;
  for (int64_t i = 0; i < n; ++i) {
    const double g = gg(pg, i), w = gw(pw, i);
    bool ok;
    double allowed = 0.0;
    if (bitwise) {
      ok = std::memcmp(static_cast<const char*>(pg) + i * es, static_cast<const char*>(pw) + i * es, es) == 0;
    } else if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else {
      allowed = atol + t.rtol * std::fabs(w);
      ok = std::isfinite(g) && std::fabs(g - w) <= allowed;
    }
    if (std::isnan(g) != std::isnan(w)) nan_mismatch = true;
    if (std::isfinite(g) && std::isfinite(w)) {
      num += (g - w) * (g - w);
      den += w * w;
    }
    if (!ok) {
      if (bad < kShow)
        first << "\n  [" << IndexString(got.shape(), i) << "] got " << g << " want " << w << " (|diff| "
              << std::fabs(g - w) << ", allowed " << allowed << ")";
      ++bad;
    }
  }
  const double rel_l2 = nan_mismatch ? INFINITY : den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
  const bool l2_ok = t.rel_l2 <= 0.0 || rel_l2 <= t.rel_l2;
  if (bad == 0 && l2_ok) return ::testing::AssertionSuccess();
  std::ostringstream m;
  m.precision(3);
  m << DTypeName(got.dtype()) << ShapeToString(got.shape()) << " vs reference " << DTypeName(want.dtype()) << ": ";
  if (bad) {
    m << bad << " of " << n << " elements out of tolerance";
    if (exact_ints || (t.rtol == 0.0 && atol == 0.0)) m << " (exact comparison)";
    else m << " (|got - want| <= " << t.atol << " + " << t.atol_rms << " * rms " << rms << " + " << t.rtol << " * |want|)";
    m << "; first " << std::min<int64_t>(bad, kShow) << ":" << first.str() << "\n  ";
  }
  m << "relative L2 error " << rel_l2;
  if (t.rel_l2 > 0.0) m << (l2_ok ? " (within " : " (above the bound ") << t.rel_l2 << ")";
  return ::testing::AssertionFailure() << m.str();
}

void PoisonHost(Tensor& t) {
  if (t.nbytes()) std::memset(t.raw(), 0xFF, t.nbytes());
}

}  // namespace oneflow::cuda_test
