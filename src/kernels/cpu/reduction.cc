// CPU kernels: reduction (Reduce*, ArgMax/ArgMin, CumSum/CumProd, TopK).
#include <algorithm>
#include <numeric>
#include <vector>

#include "graph/infer_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

enum class RK { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

template <typename T>
inline bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

// One reduction as init/pre/combine/post so the same loops serve every Reduce* op. Accumulation is
// in T (floats accumulate in lanes, which keeps f32 sums accurate enough for the node tests).
template <typename T, RK K>
struct RedOp {
  static T Init() {
    if constexpr (K == RK::kMax)
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    else if constexpr (K == RK::kMin)
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    else if constexpr (K == RK::kProd)
      return T(1);
    else
      return T(0);
  }
  static T Pre(T x) {
    if constexpr (K == RK::kL1) {
      if constexpr (std::is_unsigned_v<T>) return x;
      else return x < T(0) ? T(-x) : x;
    } else if constexpr (K == RK::kL2 || K == RK::kSumSquare) {
      return T(x * x);
    } else {
      return x;
    }
  }
  static T Combine(T a, T b) {
    if constexpr (K == RK::kProd) return T(a * b);
    else if constexpr (K == RK::kMax) return b > a ? b : a;
    else if constexpr (K == RK::kMin) return b < a ? b : a;
    else return T(a + b);
  }
  static T Post(T a, int64_t n) {
    if constexpr (K == RK::kMean) {
      if constexpr (std::is_floating_point_v<T>) return a / static_cast<T>(n);  // empty set: NaN
      else return n == 0 ? T(0) : static_cast<T>(static_cast<double>(a) / static_cast<double>(n));
    } else if constexpr (K == RK::kL2) {
      if constexpr (std::is_floating_point_v<T>) return std::sqrt(a);
      else return static_cast<T>(std::sqrt(static_cast<double>(a)));
    } else if constexpr (K == RK::kLogSum) {
      if constexpr (std::is_floating_point_v<T>) return std::log(a);
      else return static_cast<T>(std::log(static_cast<double>(a)));
    } else {
      return a;
    }
  }
};

// Reduces x[0..n) (contiguous) to an accumulator value, before Post.
template <typename T, RK K>
T ReduceRow(const T* x, int64_t n) {
  using Op = RedOp<T, K>;
  if constexpr (K == RK::kMax && std::is_floating_point_v<T>) return LaneExtreme<T, true>(x, n);
  if constexpr (K == RK::kMin && std::is_floating_point_v<T>) return LaneExtreme<T, false>(x, n);
  constexpr int L = kLanes<T>;
  T acc[L];
  for (int j = 0; j < L; ++j) acc[j] = Op::Init();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) acc[j] = Op::Combine(acc[j], Op::Pre(x[i + j]));
  T a = Op::Init();
  for (int j = 0; j < L; ++j) a = Op::Combine(a, acc[j]);
  for (; i < n; ++i) a = Op::Combine(a, Op::Pre(x[i]));
  return a;
}

// y[outer, inner] = reduce over n of x[outer, n, inner].
template <typename T, RK K>
void ReduceView(const T* x, T* y, const AxisView& v, ThreadPool& pool) {
  using Op = RedOp<T, K>;
  const int64_t n = v.n, inner = v.inner, outer = v.outer;
  if (inner == 1) {
    const int64_t threads = pool.num_threads();
    if (threads > 1 && outer < 2 * threads && n >= 65536) {
      // Few long rows (e.g. a full reduction): split each row and combine the partial results.
      const int64_t parts = std::min<int64_t>((4 * threads + outer - 1) / outer, n / 8192);
      std::vector<T> partial(static_cast<size_t>(outer * parts));
      pool.ParallelFor(outer * parts, static_cast<double>(n / parts), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t o = t / parts, p = t % parts;
          const int64_t lo = p * n / parts, hi = (p + 1) * n / parts;
          partial[t] = ReduceRow<T, K>(x + o * n + lo, hi - lo);
        }
      });
      for (int64_t o = 0; o < outer; ++o) {
        T a = Op::Init();
        for (int64_t p = 0; p < parts; ++p) a = Op::Combine(a, partial[o * parts + p]);
        y[o] = Op::Post(a, n);
      }
      return;
    }
    pool.ParallelFor(outer, static_cast<double>(n) + 4.0, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = Op::Post(ReduceRow<T, K>(x + o * n, n), n);
    });
    return;
  }
  // Strided: accumulate whole rows of `inner` elements into the output (contiguous, vectorizes).
  const int64_t kBlock = 1024;
  const int64_t nb = (inner + kBlock - 1) / kBlock;
  pool.ParallelFor(outer * nb, static_cast<double>(n * std::min(inner, kBlock)) + 4.0, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / nb, c0 = (t % nb) * kBlock, c1 = std::min(inner, c0 + kBlock), w = c1 - c0;
      T* acc = y + o * inner + c0;
      const T* base = x + o * n * inner + c0;
      for (int64_t c = 0; c < w; ++c) acc[c] = Op::Init();
      for (int64_t r = 0; r < n; ++r) {
        const T* row = base + r * inner;
        for (int64_t c = 0; c < w; ++c) acc[c] = Op::Combine(acc[c], Op::Pre(row[c]));
      }
      for (int64_t c = 0; c < w; ++c) acc[c] = Op::Post(acc[c], n);
    }
  });
}

// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the maximum, so it never overflows.
template <typename T>
void LogSumExpView(const T* x, T* y, const AxisView& v, ThreadPool& pool) {
  const int64_t n = v.n, inner = v.inner, outer = v.outer;
  auto finish = [](T m, T s) { return std::isinf(m) ? m : m + std::log(s); };
  if (inner == 1) {
    pool.ParallelFor(outer, 20.0 * static_cast<double>(n) + 4.0, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * n;
        const T m = LaneMax(row, n);
        const T s = std::isinf(m) ? T(0) : LaneSum<T>(n, [&](int64_t i) { return fastmath::Exp(row[i] - m); });
        y[o] = finish(m, s);
      }
    });
    return;
  }
  const int64_t kBlock = 512;
  const int64_t nb = (inner + kBlock - 1) / kBlock;
  pool.ParallelFor(outer * nb, 20.0 * static_cast<double>(n * std::min(inner, kBlock)), [&](int64_t b, int64_t e) {
    std::vector<T> m(kBlock), s(kBlock);
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / nb, c0 = (t % nb) * kBlock, w = std::min(inner, c0 + kBlock) - c0;
      const T* base = x + o * n * inner + c0;
      for (int64_t c = 0; c < w; ++c) { m[c] = -std::numeric_limits<T>::infinity(); s[c] = T(0); }
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < w; ++c) m[c] = base[r * inner + c] > m[c] ? base[r * inner + c] : m[c];
      for (int64_t c = 0; c < w; ++c) m[c] = std::isinf(m[c]) ? T(0) : m[c];  // avoid inf - inf
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < w; ++c) s[c] += fastmath::Exp(base[r * inner + c] - m[c]);
      for (int64_t c = 0; c < w; ++c) y[o * inner + c0 + c] = m[c] + std::log(s[c]);
    }
  });
}

template <typename T>
void ReduceTyped(RK kind, const T* x, T* y, const AxisView& v, ThreadPool& pool) {
  if constexpr (std::is_same_v<T, bool>) {
    if (kind == RK::kMax) return ReduceView<T, RK::kMax>(x, y, v, pool);
    if (kind == RK::kMin) return ReduceView<T, RK::kMin>(x, y, v, pool);
    Fail(ErrorCode::kUnsupported, "this reduction does not support bool inputs");
  } else {
    switch (kind) {
      case RK::kSum: return ReduceView<T, RK::kSum>(x, y, v, pool);
      case RK::kMean: return ReduceView<T, RK::kMean>(x, y, v, pool);
      case RK::kMax: return ReduceView<T, RK::kMax>(x, y, v, pool);
      case RK::kMin: return ReduceView<T, RK::kMin>(x, y, v, pool);
      case RK::kProd: return ReduceView<T, RK::kProd>(x, y, v, pool);
      case RK::kL1: return ReduceView<T, RK::kL1>(x, y, v, pool);
      case RK::kL2: return ReduceView<T, RK::kL2>(x, y, v, pool);
      case RK::kLogSum: return ReduceView<T, RK::kLogSum>(x, y, v, pool);
      case RK::kSumSquare: return ReduceView<T, RK::kSumSquare>(x, y, v, pool);
      case RK::kLogSumExp:
        if constexpr (std::is_floating_point_v<T>) return LogSumExpView<T>(x, y, v, pool);
        break;
    }
    Fail(ErrorCode::kInternal, "unhandled reduction");
  }
}

// Copies x (shape `dims`) into dst with its axes permuted by `perm` (dst dim i = src dim perm[i]).
template <typename T>
void PermuteCopy(const T* src, T* dst, const Shape& dims, const std::vector<int64_t>& perm) {
  const size_t rank = dims.size();
  std::vector<int64_t> stride(rank, 1);
  for (size_t i = rank - 1; i > 0; --i) stride[i - 1] = stride[i] * dims[i];
  Shape pd(rank);
  std::vector<int64_t> ps(rank);
  for (size_t i = 0; i < rank; ++i) { pd[i] = dims[perm[i]]; ps[i] = stride[perm[i]]; }
  const int64_t total = NumElements(pd);
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0);
  const int64_t last = pd[rank - 1], last_stride = ps[rank - 1];
  int64_t off = 0;
  for (int64_t done = 0; done < total; done += last) {
    for (int64_t j = 0; j < last; ++j) dst[done + j] = src[off + j * last_stride];
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      off += ps[d];
      if (++idx[d] < pd[d]) break;
      off -= ps[d] * pd[d];
      idx[d] = 0;
    }
  }
}

// Reduces x over `reduced` axes into y (already shaped). Adjacent axes of the same kind merge and
// size-1 axes drop out, so most reductions become one [outer, n, inner] pass; interleaved reduced
// axes are first permuted to the back.
template <typename T>
void ReduceTensor(RK kind, const Tensor& x, Tensor& y, const std::vector<bool>& reduced, ThreadPool& pool) {
  if (y.numel() == 0) return;
  Shape gdims;
  std::vector<bool> gred;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (x.dim(static_cast<int64_t>(i)) == 1) continue;
    if (!gdims.empty() && gred.back() == reduced[i]) gdims.back() *= x.dim(static_cast<int64_t>(i));
    else { gdims.push_back(x.dim(static_cast<int64_t>(i))); gred.push_back(reduced[i]); }
  }
  int64_t num_red = std::count(gred.begin(), gred.end(), true);
  AxisView v;
  const T* src = x.data<T>();
  Tensor permuted;
  if (num_red == 0) {
    v.inner = x.numel();  // reducing size-1 axes: each element passes through pre/post alone
  } else if (num_red == 1) {
    size_t r = std::find(gred.begin(), gred.end(), true) - gred.begin();
    v = ViewAround(gdims, static_cast<int64_t>(r), static_cast<int64_t>(r) + 1);
  } else {
    std::vector<int64_t> perm;
    for (size_t i = 0; i < gdims.size(); ++i) if (!gred[i]) perm.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < gdims.size(); ++i) if (gred[i]) perm.push_back(static_cast<int64_t>(i));
    permuted = Tensor::Uninitialized(x.dtype(), {x.numel()});
    PermuteCopy(src, permuted.data<T>(), gdims, perm);
    src = permuted.data<T>();
    v.outer = y.numel();
    v.n = x.numel() / y.numel();
  }
  ReduceTyped<T>(kind, src, y.data<T>(), v, pool);
}

template <RK K>
void ReduceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const AttrMap& attrs = ctx.attrs();
  std::vector<int64_t> axes;
  if (attrs.has("axes")) axes = attrs.GetInts("axes");
  else if (ctx.has_input(1)) axes = ctx.input(1).ToInt64Vector();
  const int64_t rank = x.rank();
  if (axes.empty() && attrs.GetInt("noop_with_empty_axes", 0) != 0) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(NormalizeAxis(a, rank))] = true;

  const DType dt = x.dtype();
  if (IsHalfDType(dt)) {
    Tensor xf = WidenToFloat(x);
    Tensor yf = Tensor::Uninitialized(DType::kFloat32, y.shape());
    ReduceTensor<float>(K, xf, yf, reduced, ctx.pool());
    NarrowFromFloat(yf, y);
  } else if (dt == DType::kBool) {
    OF_CHECK(K == RK::kMax || K == RK::kMin, kUnsupported, ctx.node_desc(), ": bool input is only supported by ReduceMax/ReduceMin");
    ReduceTensor<bool>(K, x, y, reduced, ctx.pool());
  } else if (K == RK::kLogSumExp && IsIntegerDType(dt)) {
    // Integer log-sum-exp: compute in double and truncate, as numpy's astype would.
    Tensor xd = Tensor::Uninitialized(DType::kFloat64, x.shape());
    Tensor yd = Tensor::Uninitialized(DType::kFloat64, y.shape());
    DispatchNumeric(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < x.numel(); ++i) xd.data<double>()[i] = static_cast<double>(x.data<T>()[i]);
      ReduceTensor<double>(K, xd, yd, reduced, ctx.pool());
      for (int64_t i = 0; i < y.numel(); ++i) y.data<T>()[i] = static_cast<T>(yd.data<double>()[i]);
    });
  } else {
    DispatchNumeric(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      ReduceTensor<T>(K, x, y, reduced, ctx.pool());
    });
  }
}
ONEFLOW_KERNEL(ReduceSum, ReduceKernel<RK::kSum>);
ONEFLOW_KERNEL(ReduceMean, ReduceKernel<RK::kMean>);
ONEFLOW_KERNEL(ReduceMax, ReduceKernel<RK::kMax>);
ONEFLOW_KERNEL(ReduceMin, ReduceKernel<RK::kMin>);
ONEFLOW_KERNEL(ReduceProd, ReduceKernel<RK::kProd>);
ONEFLOW_KERNEL(ReduceL1, ReduceKernel<RK::kL1>);
ONEFLOW_KERNEL(ReduceL2, ReduceKernel<RK::kL2>);
ONEFLOW_KERNEL(ReduceLogSum, ReduceKernel<RK::kLogSum>);
ONEFLOW_KERNEL(ReduceLogSumExp, ReduceKernel<RK::kLogSumExp>);
ONEFLOW_KERNEL(ReduceSumSquare, ReduceKernel<RK::kSumSquare>);

// ---------------------------------------------------------------------------------------------
// ArgMax / ArgMin: index of the first (or, with select_last_index, last) extreme value.

template <typename T, bool kMax>
void ArgReduce(const T* x, int64_t* y, const AxisView& v, bool last, ThreadPool& pool) {
  const int64_t n = v.n, inner = v.inner;
  auto better = [last](T a, T best) {
    if constexpr (kMax) return last ? a >= best : a > best;
    else return last ? a <= best : a < best;
  };
  pool.ParallelFor(v.outer, static_cast<double>(n * inner) + 4.0, [&](int64_t b, int64_t e) {
    std::vector<T> best(static_cast<size_t>(inner));
    for (int64_t o = b; o < e; ++o) {
      const T* base = x + o * n * inner;
      int64_t* out = y + o * inner;
      if (inner == 1) {
        T bv = base[0];
        int64_t bi = 0;
        for (int64_t i = 1; i < n; ++i)
          if (better(base[i], bv)) { bv = base[i]; bi = i; }
        out[0] = bi;
        continue;
      }
      for (int64_t c = 0; c < inner; ++c) { best[c] = base[c]; out[c] = 0; }
      for (int64_t r = 1; r < n; ++r) {
        const T* row = base + r * inner;
        for (int64_t c = 0; c < inner; ++c) {
          const bool u = better(row[c], best[c]);
          best[c] = u ? row[c] : best[c];
          out[c] = u ? r : out[c];
        }
      }
    }
  });
}

template <bool kMax>
void ArgKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x0.rank());
  const bool last = ctx.attrs().GetInt("select_last_index") != 0;
  if (y.numel() == 0) return;
  const Tensor x = IsHalfDType(x0.dtype()) ? WidenToFloat(x0) : x0;
  const AxisView v = ViewAround(x.shape(), axis, axis + 1);
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ArgReduce<T, kMax>(x.data<T>(), y.data<int64_t>(), v, last, ctx.pool());
  });
}
ONEFLOW_KERNEL(ArgMax, ArgKernel<true>);
ONEFLOW_KERNEL(ArgMin, ArgKernel<false>);

// ---------------------------------------------------------------------------------------------
// CumSum / CumProd along one axis given as an input.

template <typename T, bool kProd>
void Cumulative(const T* x, T* y, const AxisView& v, bool exclusive, bool reverse, ThreadPool& pool) {
  const int64_t n = v.n, inner = v.inner;
  pool.ParallelFor(v.outer, static_cast<double>(n * inner) + 4.0, [&](int64_t b, int64_t e) {
    std::vector<T> acc(static_cast<size_t>(inner));
    for (int64_t o = b; o < e; ++o) {
      std::fill(acc.begin(), acc.end(), kProd ? T(1) : T(0));
      for (int64_t s = 0; s < n; ++s) {
        const int64_t r = reverse ? n - 1 - s : s;
        const T* xr = x + (o * n + r) * inner;
        T* yr = y + (o * n + r) * inner;
        if (exclusive) {
          for (int64_t c = 0; c < inner; ++c) {
            yr[c] = acc[c];
            acc[c] = kProd ? T(acc[c] * xr[c]) : T(acc[c] + xr[c]);
          }
        } else {
          for (int64_t c = 0; c < inner; ++c) {
            acc[c] = kProd ? T(acc[c] * xr[c]) : T(acc[c] + xr[c]);
            yr[c] = acc[c];
          }
        }
      }
    }
  });
}

template <bool kProd>
void CumKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Tensor& at = ctx.input(1);
  OF_REQUIRE(at.numel() == 1, ctx.node_desc(), ": axis must hold exactly one value");
  const int64_t rank = x0.rank();
  int64_t axis = at.GetAsInt64(0);
  OF_REQUIRE(axis >= -rank && axis < std::max<int64_t>(rank, 1), ctx.node_desc(), ": axis ", axis,
             " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  const bool exclusive = ctx.attrs().GetInt("exclusive") != 0;
  const bool reverse = ctx.attrs().GetInt("reverse") != 0;
  if (x0.numel() == 0) return;
  const bool half = IsHalfDType(x0.dtype());
  const Tensor x = half ? WidenToFloat(x0) : x0;
  Tensor yt = half ? Tensor::Uninitialized(DType::kFloat32, y.shape()) : y;
  const AxisView v = rank == 0 ? AxisView{} : ViewAround(x.shape(), axis, axis + 1);
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Cumulative<T, kProd>(x.data<T>(), yt.data<T>(), v, exclusive, reverse, ctx.pool());
  });
  if (half) NarrowFromFloat(yt, y);
}
ONEFLOW_KERNEL(CumSum, CumKernel<false>);
ONEFLOW_KERNEL(CumProd, CumKernel<true>);

// ---------------------------------------------------------------------------------------------
// TopK: the k largest (or smallest) values along an axis with their indices. Ties go to the lower
// index; NaN ranks above every number, so the ordering stays a strict weak order.

template <typename T>
void TopKTyped(const T* x, T* vals, int64_t* idxs, const AxisView& v, int64_t k, bool largest, ThreadPool& pool) {
  const int64_t n = v.n, inner = v.inner;
  const double cost = static_cast<double>(n) * (4.0 + std::log2(static_cast<double>(k) + 1.0));
  pool.ParallelFor(v.outer * inner, cost, [&](int64_t b, int64_t e) {
    std::vector<T> col(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / inner, c = t % inner;
      const T* base = x + o * n * inner + c;
      for (int64_t i = 0; i < n; ++i) col[i] = base[i * inner];
      std::iota(order.begin(), order.end(), int64_t{0});
      auto gt = [](T a, T b2) { return a > b2 || (IsNan(a) && !IsNan(b2)); };
      auto before = [&](int64_t i, int64_t j) {
        const T a = col[i], b2 = col[j];
        if (largest) { if (gt(a, b2)) return true; if (gt(b2, a)) return false; }
        else { if (gt(b2, a)) return true; if (gt(a, b2)) return false; }
        return i < j;
      };
      if (k < n) std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      else std::sort(order.begin(), order.end(), before);
      T* vo = vals + o * k * inner + c;
      int64_t* io = idxs + o * k * inner + c;
      for (int64_t j = 0; j < k; ++j) { vo[j * inner] = col[order[j]]; io[j * inner] = order[j]; }
    }
  });
}

void TopKKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const int64_t rank = x0.rank();
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), rank);
  const int64_t k = ctx.input(1).GetAsInt64(0);
  const bool largest = ctx.attrs().GetInt("largest") != 0;
  Tensor& values = ctx.output(0);
  Tensor& indices = ctx.output(1);
  if (values.numel() == 0) return;
  const bool half = IsHalfDType(x0.dtype());
  const Tensor x = half ? WidenToFloat(x0) : x0;
  Tensor vt = half ? Tensor::Uninitialized(DType::kFloat32, values.shape()) : values;
  const AxisView v = ViewAround(x.shape(), axis, axis + 1);
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    TopKTyped<T>(x.data<T>(), vt.data<T>(), indices.data<int64_t>(), v, k, largest, ctx.pool());
  });
  if (half) NarrowFromFloat(vt, values);
}
ONEFLOW_KERNEL(TopK, TopKKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
