// CUDA convolutions on cuDNN: Conv, FusedConv (NCHW and the layout pass's NHWC; bias, residual Z
// and activation as one epilogue pass), ConvTranspose, and the gradient ops ConvGradData /
// ConvGradFilter / ConvTransposeGradData / ConvTransposeGradFilter. 1 to 3 spatial dims, groups,
// dilations, strides, symmetric pads; f32 (TF32 only when allowed), f16 and bf16 with f32
// accumulation. Every op is one of cuDNN's three directions on a "conv input" a, filter w and
// "conv output" b; the algorithm for each problem is chosen once by cuDNN's heuristics and cached,
// the workspace comes from the caching allocator. Compiled only when cuDNN is found.
#include <cudnn.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/op_schema.h"
#include "graph/ops/conv_shape.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/matmul_cublaslt.h"
#include "kernels/cuda/nn_cuda.h"

namespace oneflow::cuda {
namespace {

[[noreturn]] void ThrowCudnnError(cudnnStatus_t status, const char* call, const char* file, int line) {
  const int s = static_cast<int>(status);
  const ErrorCode code = s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
                                 s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED
                             ? ErrorCode::kOutOfMemory
                         : s / 1000 == 3 ? ErrorCode::kUnsupported  // the CUDNN_STATUS_NOT_SUPPORTED_* family
                                         : ErrorCode::kRuntime;
  throw Error(code, StrCat("cuDNN error ", cudnnGetErrorString(status), " (", s, ") in ", call, " at ", file, ":", line));
}

#define OF_CUDNN_CHECK(call)                                                                    \
  do {                                                                                          \
    const cudnnStatus_t of_cudnn_status_ = (call);                                              \
    if (of_cudnn_status_ != CUDNN_STATUS_SUCCESS) ThrowCudnnError(of_cudnn_status_, #call, __FILE__, __LINE__); \
  } while (0)

// One cuDNN handle per thread and device; its stream is set on every call.
cudnnHandle_t Handle(int device, cudaStream_t stream) {
  struct Handles {
    std::map<int, cudnnHandle_t> by_device;
    ~Handles() {
      for (auto& [d, h] : by_device) (void)cudnnDestroy(h);
    }
  };
  thread_local Handles handles;
  auto it = handles.by_device.find(device);
  cudnnHandle_t h = nullptr;
  if (it != handles.by_device.end()) {
    h = it->second;
  } else {
    OF_CUDNN_CHECK(cudnnCreate(&h));
    handles.by_device.emplace(device, h);
  }
  OF_CUDNN_CHECK(cudnnSetStream(h, stream));
  return h;
}

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { OF_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { (void)cudnnDestroyTensorDescriptor(d); }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { OF_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { (void)cudnnDestroyFilterDescriptor(d); }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { OF_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { (void)cudnnDestroyConvolutionDescriptor(d); }
};

cudnnDataType_t CudnnType(DType dt, const std::string& node) {
  switch (dt) {
    case DType::kFloat32: return CUDNN_DATA_FLOAT;
    case DType::kFloat16: return CUDNN_DATA_HALF;
    case DType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(dt), " is not supported on CUDA");
  }
}

enum class Direction { kForward, kBackwardData, kBackwardFilter };

// One convolution problem in cuDNN's terms. Shapes are logical [N, C, spatial...] (and filter
// [K, C/group, kernel...]) with at least 2 spatial dims: 1-D problems get a leading spatial 1.
struct Problem {
  Direction dir = Direction::kForward;
  DType dtype = DType::kFloat32;
  bool nhwc = false;  // a and b channels-last in memory; the filter then KRSC
  std::vector<int64_t> a, w, b;
  std::vector<int64_t> pads, strides, dilations;
  int64_t group = 1;
};

// Problem from the runtime shapes; `geo` was resolved for a's spatial dims (the Conv family) or
// b's (the ConvTranspose family). Requires symmetric pads and that a convolves exactly to b.
Problem MakeProblem(Direction dir, DType dt, bool nhwc, const Shape& a, const Shape& w, const Shape& b,
                    const ConvGeometry& geo, const std::string& node) {
  const size_t sp = a.size() - 2;
  OF_CHECK(sp >= 1 && sp <= 3, kUnsupported, node, ": CUDA convolutions support 1 to 3 spatial dims, got ", sp);
  OF_REQUIRE(w.size() == a.size() && b.size() == a.size(), node, ": inconsistent ranks");
  Problem p;
  p.dir = dir;
  p.dtype = dt;
  p.nhwc = nhwc;
  p.group = geo.group;
  const size_t lead = sp == 1 ? 1 : 0;
  auto extend = [&](const Shape& s) {
    std::vector<int64_t> v(s.begin(), s.begin() + 2);
    if (lead) v.push_back(1);
    v.insert(v.end(), s.begin() + 2, s.end());
    return v;
  };
  p.a = extend(a);
  p.w = extend(w);
  p.b = extend(b);
  if (lead) {
    p.pads.push_back(0);
    p.strides.push_back(1);
    p.dilations.push_back(1);
  }
  for (size_t i = 0; i < sp; ++i) {
    OF_CHECK(geo.pad_begin[i] == geo.pad_end[i] && geo.pad_begin[i] >= 0, kUnsupported, node,
             ": asymmetric or negative pads (", geo.pad_begin[i], " before, ", geo.pad_end[i], " after in spatial dim ",
             i, ") are not supported on CUDA");
    p.pads.push_back(geo.pad_begin[i]);
    p.strides.push_back(geo.strides[i]);
    p.dilations.push_back(geo.dilations[i]);
    const int64_t eff = (w[2 + i] - 1) * geo.dilations[i] + 1;
    const int64_t out = (a[2 + i] + 2 * geo.pad_begin[i] - eff) / geo.strides[i] + 1;
    OF_CHECK(out == b[2 + i], kUnsupported, node, ": spatial dim ", i, " of size ", a[2 + i], " convolves to ", out,
             ", not ", b[2 + i], " (this output_padding / output_shape is not supported on CUDA)");
  }
  OF_REQUIRE(b[1] == w[0] && a[1] == w[1] * geo.group && w[0] % geo.group == 0, node, ": channels of ",
             ShapeToString(a), ", filter ", ShapeToString(w), " and ", ShapeToString(b), " do not match group ",
             geo.group);
  OF_CHECK(a[0] <= INT32_MAX, kUnsupported, node, ": batch too large for cuDNN");
  return p;
}

void SetTensor(TensorDesc& t, cudnnDataType_t type, const std::vector<int64_t>& dims, bool nhwc) {
  const int nd = static_cast<int>(dims.size());
  std::vector<int> d(dims.begin(), dims.end()), s(dims.size());
  if (nhwc) {  // memory order N, spatial..., C
    int64_t stride = dims[1];
    for (int i = nd - 1; i >= 2; --i) {
      s[i] = static_cast<int>(stride);
      stride *= dims[i];
    }
    s[1] = 1;
    s[0] = static_cast<int>(stride);
  } else {
    int64_t stride = 1;
    for (int i = nd - 1; i >= 0; --i) {
      s[i] = static_cast<int>(stride);
      stride *= dims[i];
    }
  }
  OF_CUDNN_CHECK(cudnnSetTensorNdDescriptor(t.d, type, nd, d.data(), s.data()));
}

struct Descs {
  TensorDesc a, b;
  FilterDesc w;
  ConvDesc conv;
};

void SetDescs(Descs& ds, const Problem& p, const std::string& node) {
  // The legacy descriptors take int dims and strides: every tensor must index within int range.
  for (const auto* v : {&p.a, &p.w, &p.b}) {
    int64_t n = 1;
    for (int64_t d : *v) n *= d;
    OF_CHECK(n <= INT32_MAX, kUnsupported, node, ": a tensor of ", n, " elements exceeds cuDNN's int range");
  }
  const cudnnDataType_t type = CudnnType(p.dtype, node);
  SetTensor(ds.a, type, p.a, p.nhwc);
  SetTensor(ds.b, type, p.b, p.nhwc);
  std::vector<int> wd(p.w.begin(), p.w.end());
  OF_CUDNN_CHECK(cudnnSetFilterNdDescriptor(ds.w.d, type, p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                            static_cast<int>(wd.size()), wd.data()));
  std::vector<int> pads(p.pads.begin(), p.pads.end()), strides(p.strides.begin(), p.strides.end()),
      dil(p.dilations.begin(), p.dilations.end());
  OF_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(ds.conv.d, static_cast<int>(pads.size()), pads.data(), strides.data(),
                                                 dil.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  OF_CUDNN_CHECK(cudnnSetConvolutionGroupCount(ds.conv.d, static_cast<int>(p.group)));
  // f32 stays exact f32 (FMA) unless TF32 is allowed; halves use tensor cores.
  const cudnnMathType_t math = p.dtype != DType::kFloat32 ? CUDNN_TENSOR_OP_MATH
                               : AllowTf32()              ? CUDNN_DEFAULT_MATH
                                                          : CUDNN_FMA_MATH;
  OF_CUDNN_CHECK(cudnnSetConvolutionMathType(ds.conv.d, math));
}

// The heuristics' first usable choice per problem, cached: asking costs more host time than a small
// convolution. Bounded so dynamic shapes cannot grow it without limit.
constexpr size_t kMaxWorkspace = size_t{512} << 20;
constexpr size_t kMaxPlans = 4096;
struct Algo {
  int algo = 0;
  size_t workspace = 0;
};
struct AlgoCache {
  std::mutex mu;
  std::map<std::vector<int64_t>, Algo> plans;
};
AlgoCache& Algos() {
  static AlgoCache* cache = new AlgoCache();
  return *cache;
}

std::vector<int64_t> Key(const Problem& p, int device) {
  std::vector<int64_t> k = {device, static_cast<int64_t>(p.dir), static_cast<int64_t>(p.dtype), p.nhwc, p.group,
                            AllowTf32() ? 1 : 0, static_cast<int64_t>(p.a.size())};
  for (const auto* v : {&p.a, &p.w, &p.b, &p.pads, &p.strides, &p.dilations}) k.insert(k.end(), v->begin(), v->end());
  return k;
}

// Picks the first algorithm of cuDNN's ranked list that succeeded and fits the workspace limit.
template <typename Perf>
Algo FirstUsable(const Perf* perf, int count, const std::string& node) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspace)
      return Algo{static_cast<int>(perf[i].algo), perf[i].memory};
  Fail(ErrorCode::kUnsupported, node, ": cuDNN has no algorithm for this convolution");
}

Algo ChooseAlgo(cudnnHandle_t h, const Descs& ds, const Problem& p, const std::string& node) {
  constexpr int kAsk = 16;
  int count = 0;
  switch (p.dir) {
    case Direction::kForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kAsk];
      OF_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, ds.a.d, ds.w.d, ds.conv.d, ds.b.d, kAsk, &count, perf));
      return FirstUsable(perf, count, node);
    }
    case Direction::kBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kAsk];
      OF_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, ds.w.d, ds.b.d, ds.conv.d, ds.a.d, kAsk, &count, perf));
      return FirstUsable(perf, count, node);
    }
    case Direction::kBackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kAsk];
      OF_CUDNN_CHECK(
          cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, ds.a.d, ds.b.d, ds.conv.d, ds.w.d, kAsk, &count, perf));
      return FirstUsable(perf, count, node);
    }
  }
  Fail(ErrorCode::kInternal, node, ": unknown convolution direction");
}

// Runs the problem. kForward: b = conv(a, w). kBackwardData: a = conv^T(b, w). kBackwardFilter:
// w = the filter gradient of conv(a, .) for the output gradient b. Inputs are const; the output of
// the direction is overwritten.
void RunProblem(const Problem& p, const void* a, const void* w, const void* b, void* out, const std::string& node) {
  int device = 0;
  OF_CUDA_CHECK(cudaGetDevice(&device));
  cudaStream_t stream = CurrentStream();
  cudnnHandle_t h = Handle(device, stream);
  Descs ds;
  SetDescs(ds, p, node);
  Algo algo;
  {
    const std::vector<int64_t> key = Key(p, device);
    AlgoCache& cache = Algos();
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.plans.find(key);
    if (it != cache.plans.end()) {
      algo = it->second;
    } else {
      algo = ChooseAlgo(h, ds, p, node);
      if (cache.plans.size() >= kMaxPlans) cache.plans.clear();
      cache.plans.emplace(key, algo);
    }
  }
  // The workspace returns to this stream's pool when the storage dies; stream order keeps its next
  // user behind this convolution.
  std::shared_ptr<Storage> ws = AllocateDeviceStorage(algo.workspace, device, stream);
  const float one = 1.0f, zero = 0.0f;
  switch (p.dir) {
    case Direction::kForward:
      OF_CUDNN_CHECK(cudnnConvolutionForward(h, &one, ds.a.d, a, ds.w.d, w, ds.conv.d,
                                             static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), ws->data(),
                                             algo.workspace, &zero, ds.b.d, out));
      break;
    case Direction::kBackwardData:
      OF_CUDNN_CHECK(cudnnConvolutionBackwardData(h, &one, ds.w.d, w, ds.b.d, b, ds.conv.d,
                                                  static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), ws->data(),
                                                  algo.workspace, &zero, ds.a.d, out));
      break;
    case Direction::kBackwardFilter:
      OF_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &one, ds.a.d, a, ds.b.d, b, ds.conv.d,
                                                    static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), ws->data(),
                                                    algo.workspace, &zero, ds.w.d, out));
      break;
  }
}

std::vector<int64_t> Spatial(const Shape& s) { return std::vector<int64_t>(s.begin() + 2, s.end()); }

// [N, spatial..., C] -> [N, C, spatial...] (a shape, for the NHWC forms).
Shape ToNchw(const Shape& s) {
  Shape r = {s[0], s.back()};
  r.insert(r.end(), s.begin() + 1, s.end() - 1);
  return r;
}

// Conv and FusedConv: Y = act(conv(X, W) + B + Z).
void ConvFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  const bool nhwc = ctx.attrs().GetString("layout", "NCHW") == "NHWC";
  OF_REQUIRE(x.rank() >= 3 && w.rank() == x.rank(), node, ": X ", ShapeToString(x.shape()), " and W ",
             ShapeToString(w.shape()), " must be [N, C, spatial...] and [M, C/group, kernel...]");
  OF_REQUIRE(w.dtype() == x.dtype(), node, ": W must have X's dtype");
  OF_CHECK(!nhwc || x.rank() == 4, kUnsupported, node, ": the NHWC layout needs 4-D tensors");
  if (y.numel() == 0) return;
  const Shape xs = nhwc ? ToNchw(x.shape()) : x.shape();
  const Shape ys = nhwc ? ToNchw(y.shape()) : y.shape();
  const ConvGeometry geo = ResolveConvGeometry(ctx.attrs(), Spatial(xs), Spatial(w.shape()), node);
  const Problem p = MakeProblem(Direction::kForward, x.dtype(), nhwc, xs, w.shape(), ys, geo, node);
  cudaStream_t stream = CurrentStream();
  const void* wp = w.raw();
  std::shared_ptr<Storage> w_khwc;
  if (nhwc) {  // cuDNN's channels-last filter is [K, R, S, C/group]
    int device = 0;
    OF_CUDA_CHECK(cudaGetDevice(&device));
    w_khwc = AllocateDeviceStorage(w.nbytes(), device, stream);
    LaunchTranspose(w.dtype(), w.raw(), w.shape(), {0, 2, 3, 1}, w_khwc->data(), stream);
    wp = w_khwc->data();
  }
  if (x.numel() == 0) {
    OF_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), stream));
  } else {
    RunProblem(p, x.raw(), wp, nullptr, y.raw(), node);
  }
  const ActivationParams act = ReadActivation(ctx.attrs());
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (bias) OF_REQUIRE(bias->numel() == ys[1] && bias->dtype() == x.dtype(), node, ": B must be [M] of X's dtype");
  if (z) OF_REQUIRE(z->shape() == y.shape() && z->dtype() == y.dtype(), node, ": Z must have Y's shape and dtype");
  const bool relu = act.kind == Activation::kRelu;
  const int64_t inner = nhwc ? 1 : y.numel() / (ys[0] * ys[1]);
  LaunchConvEpilogue(y.dtype(), y.raw(), bias ? bias->raw() : nullptr, z ? z->raw() : nullptr, y.numel(), ys[1], inner,
                     relu, stream);
  if (act.kind != Activation::kNone && !relu)
    LaunchActivationInPlace(y.dtype(), y.raw(), y.numel(), act, stream);
}
ONEFLOW_CUDA_KERNEL(Conv, ConvFn);
ONEFLOW_CUDA_KERNEL(FusedConv, ConvFn);

// ConvTranspose(X, W[C, M/group, k...], B) -> Y[N, M, ...]: the data gradient of the Conv that maps
// Y's shape to X's.
void ConvTransposeFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(x.rank() >= 3 && w.rank() == x.rank(), node, ": X and W must be [N, C, spatial...] and [C, M/group, kernel...]");
  if (y.numel() == 0) return;
  const ConvGeometry geo = ResolveConvTransposeGeometry(ctx.attrs(), Spatial(x.shape()), Spatial(w.shape()), node);
  const Problem p = MakeProblem(Direction::kBackwardData, x.dtype(), false, y.shape(), w.shape(), x.shape(), geo, node);
  cudaStream_t stream = CurrentStream();
  if (x.numel() == 0) OF_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), stream));
  else RunProblem(p, nullptr, w.raw(), x.raw(), y.raw(), node);
  if (ctx.has_input(2)) {
    const Tensor& bias = ctx.input(2);
    OF_REQUIRE(bias.numel() == y.dim(1) && bias.dtype() == y.dtype(), node, ": B must be [M] of X's dtype");
    LaunchConvEpilogue(y.dtype(), y.raw(), bias.raw(), nullptr, y.numel(), y.dim(1), y.numel() / (y.dim(0) * y.dim(1)),
                       false, stream);
  }
}
ONEFLOW_CUDA_KERNEL(ConvTranspose, ConvTransposeFn);

void ZeroOutput(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  OF_CUDA_CHECK(cudaMemsetAsync(out.raw(), 0, out.nbytes(), CurrentStream()));
}

// ConvGradData(dY, W, X_shape) -> dX.
void ConvGradDataFn(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& dx = ctx.output(0);
  if (dx.numel() == 0) return;
  if (dy.numel() == 0) return ZeroOutput(ctx);
  const ConvGeometry geo = ResolveConvGeometry(ctx.attrs(), Spatial(dx.shape()), Spatial(w.shape()), ctx.node_desc());
  const Problem p =
      MakeProblem(Direction::kBackwardData, dy.dtype(), false, dx.shape(), w.shape(), dy.shape(), geo, ctx.node_desc());
  RunProblem(p, nullptr, w.raw(), dy.raw(), dx.raw(), ctx.node_desc());
}
ONEFLOW_CUDA_KERNEL(ConvGradData, ConvGradDataFn);

// ConvGradFilter(X, dY, W_shape) -> dW.
void ConvGradFilterFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  Tensor& dw = ctx.output(0);
  if (dw.numel() == 0) return;
  if (dy.numel() == 0) return ZeroOutput(ctx);
  const ConvGeometry geo = ResolveConvGeometry(ctx.attrs(), Spatial(x.shape()), Spatial(dw.shape()), ctx.node_desc());
  const Problem p =
      MakeProblem(Direction::kBackwardFilter, x.dtype(), false, x.shape(), dw.shape(), dy.shape(), geo, ctx.node_desc());
  RunProblem(p, x.raw(), nullptr, dy.raw(), dw.raw(), ctx.node_desc());
}
ONEFLOW_CUDA_KERNEL(ConvGradFilter, ConvGradFilterFn);

// ConvTransposeGradData(dY, W, X_shape) -> dX: the forward Conv of dY by W.
void ConvTransposeGradDataFn(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& dx = ctx.output(0);
  if (dx.numel() == 0) return;
  if (dy.numel() == 0) return ZeroOutput(ctx);
  const ConvGeometry geo =
      ResolveConvTransposeGeometry(ctx.attrs(), Spatial(dx.shape()), Spatial(w.shape()), ctx.node_desc());
  const Problem p =
      MakeProblem(Direction::kForward, dy.dtype(), false, dy.shape(), w.shape(), dx.shape(), geo, ctx.node_desc());
  RunProblem(p, dy.raw(), w.raw(), nullptr, dx.raw(), ctx.node_desc());
}
ONEFLOW_CUDA_KERNEL(ConvTransposeGradData, ConvTransposeGradDataFn);

// ConvTransposeGradFilter(X, dY, W_shape) -> dW: the filter gradient of the Conv from dY to X.
void ConvTransposeGradFilterFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  Tensor& dw = ctx.output(0);
  if (dw.numel() == 0) return;
  if (dy.numel() == 0 || x.numel() == 0) return ZeroOutput(ctx);
  const ConvGeometry geo =
      ResolveConvTransposeGeometry(ctx.attrs(), Spatial(x.shape()), Spatial(dw.shape()), ctx.node_desc());
  const Problem p =
      MakeProblem(Direction::kBackwardFilter, x.dtype(), false, dy.shape(), dw.shape(), x.shape(), geo, ctx.node_desc());
  RunProblem(p, dy.raw(), nullptr, x.raw(), dw.raw(), ctx.node_desc());
}
ONEFLOW_CUDA_KERNEL(ConvTransposeGradFilter, ConvTransposeGradFilterFn);

}  // namespace
}  // namespace oneflow::cuda

