// oneflow_conv_bench: ResNet-18 conv shapes (batch 1) and the cnn bench model's (batch 16): the engine's Conv with its im2col + SGEMM path,
// with its oneDNN path (brgconv in NHWC, row bands on our pool), and a plain oneDNN primitive on OpenMP threads.
// Best of REPS runs; COLD=1 evicts the caches before each (see EvictCaches).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/session.h"
#include "kernels/cpu/conv_dnnl.h"

#if defined(ONEFLOW_HAVE_DNNL)
#include <oneapi/dnnl/dnnl.hpp>
extern "C" void omp_set_num_threads(int);
#endif

using namespace oneflow;
using Clock = std::chrono::steady_clock;

struct Shape4 { int64_t c, m, hw, k, s, p, n = 1; };

// COLD=1: before each timed run, read 96 MB so weights and activations start in DRAM, as inside
// a net whose weights exceed the last-level cache (ResNet-18: 46 MB), not in cache as in a loop.
static void EvictCaches() {
  static const bool cold = std::getenv("COLD") != nullptr;
  if (!cold) return;
  static std::vector<float> junk(size_t{24} << 20, 1.0f);
  volatile float sink = 0;
  float acc = 0;
  for (size_t i = 0; i < junk.size(); i += 16) acc += junk[i];
  sink = acc;
  (void)sink;
}

template <typename Fn>
static double BestSeconds(int reps, Fn&& fn) {
  fn();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    EvictCaches();
    auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  if (reps <= 0) {
    std::fprintf(stderr, "usage: %s [REPS (default 10)]\n", argv[0]);
    return 2;
  }
  const Shape4 shapes[] = {{3, 64, 224, 7, 2, 3},   {64, 64, 56, 3, 1, 1},   {64, 128, 56, 3, 2, 1},
                           {128, 128, 28, 3, 1, 1}, {64, 128, 56, 1, 2, 0},  {128, 256, 28, 3, 2, 1},
                           {256, 256, 14, 3, 1, 1}, {256, 512, 14, 3, 2, 1}, {512, 512, 7, 3, 1, 1},
                           // the cnn bench model's convs at batch 16
                           {3, 32, 32, 3, 1, 1, 16},  {32, 64, 16, 3, 1, 1, 16}};
  // Plain oneDNN on OpenMP (WITH_OPENMP=1) leaves spinning OpenMP workers behind that slow down
  // everything else measured in the same process: compare it in a separate run.
  for (int threads = 1; threads <= 2; ++threads) {
    double tot_ours = 0, tot_dnnl = 0, tot_im2col = 0;
    for (const Shape4& sh : shapes) {
      const int64_t oh = (sh.hw + 2 * sh.p - sh.k) / sh.s + 1;
      const double flop = 2.0 * sh.n * sh.m * sh.c * sh.k * sh.k * oh * oh;
      Tensor x(DType::kFloat32, {sh.n, sh.c, sh.hw, sh.hw}), w(DType::kFloat32, {sh.m, sh.c, sh.k, sh.k}),
          b(DType::kFloat32, {sh.m});
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 17) / 17.0f;
      for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 13) / 130.0f;
      Graph g;
      g.opset_imports[""] = 17;
      int xv = g.AddValue("X", TensorType::Of(DType::kFloat32, x.shape()));
      g.inputs.push_back(xv);
      Node n;
      n.op_type = "Conv";
      n.opset = 17;
      n.inputs = {xv, g.AddConstant("W", w), g.AddConstant("B", b)};
      n.outputs = {g.AddValue("Y")};
      n.attrs.set("strides", Attribute::Ints({sh.s, sh.s}));
      n.attrs.set("pads", Attribute::Ints({sh.p, sh.p, sh.p, sh.p}));
      g.outputs = n.outputs;
      g.nodes.push_back(n);
      PrepareGraph(g);
      std::vector<std::pair<std::string, Tensor>> feeds = {{"X", x}};
      SetDnnlConvEnabled(false);
      Session s0(g, SessionOptions{threads, 2});
      const double im2col = BestSeconds(reps, [&] { s0.Run(feeds, {}); });
      SetDnnlConvEnabled(true);
      Session s(g, SessionOptions{threads, 2});
      const double ours = BestSeconds(reps, [&] { s.Run(feeds, {}); });
      tot_ours += ours;
      tot_im2col += im2col;
      std::printf("threads=%d conv %3lld->%3lld %3lldx%-3lld k%lld s%lld b%-2lld: im2col %6.1f GFLOP/s  engine(oneDNN NHWC bands) %6.1f GFLOP/s (%.3f ms)",
                  threads, (long long)sh.c, (long long)sh.m, (long long)sh.hw, (long long)sh.hw, (long long)sh.k,
                  (long long)sh.s, (long long)sh.n, flop / im2col / 1e9, flop / ours / 1e9, ours * 1e3);
#if defined(ONEFLOW_HAVE_DNNL)
      if (!std::getenv("WITH_OPENMP")) {
        std::printf("\n");
        continue;
      }
      using namespace dnnl;
      omp_set_num_threads(threads);
      engine eng(engine::kind::cpu, 0);
      stream strm(eng);
      using tag = memory::format_tag;
      using dt = memory::data_type;
      memory::desc src_user({sh.n, sh.c, sh.hw, sh.hw}, dt::f32, tag::nchw);
      memory::desc w_user({sh.m, sh.c, sh.k, sh.k}, dt::f32, tag::oihw);
      memory::desc b_md({sh.m}, dt::f32, tag::x);
      memory::desc dst_user({sh.n, sh.m, oh, oh}, dt::f32, tag::nchw);
      const bool force = std::getenv("FORCE16") != nullptr;
      memory::desc src_any({sh.n, sh.c, sh.hw, sh.hw}, dt::f32, force ? (sh.c % 16 == 0 ? tag::nChw16c : tag::nchw) : tag::any);
      memory::desc w_any({sh.m, sh.c, sh.k, sh.k}, dt::f32, tag::any);
      memory::desc dst_any({sh.n, sh.m, oh, oh}, dt::f32, force ? tag::nChw16c : tag::any);
      convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct, src_any, w_any, b_md,
                                   dst_any, {sh.s, sh.s}, {sh.p, sh.p}, {sh.p, sh.p});
      convolution_forward::primitive_desc pd(cd, eng);
      memory src_m(src_user, eng, x.data<float>()), w_m(w_user, eng, w.data<float>()), b_m(b_md, eng, b.data<float>());
      std::vector<float> yv(static_cast<size_t>(sh.n * sh.m * oh * oh));
      memory dst_m(dst_user, eng, yv.data());
      memory w_blk(pd.weights_desc(), eng);
      reorder(w_m, w_blk).execute(strm, w_m, w_blk);
      memory src_blk(pd.src_desc(), eng), dst_blk(pd.dst_desc(), eng);
      convolution_forward conv(pd);
      reorder rs(src_m, src_blk), rd(dst_blk, dst_m);
      const bool src_same = pd.src_desc() == src_user, dst_same = pd.dst_desc() == dst_user;
      const double dn = BestSeconds(reps, [&] {
        if (!src_same) rs.execute(strm, src_m, src_blk);
        conv.execute(strm, {{DNNL_ARG_SRC, src_same ? src_m : src_blk}, {DNNL_ARG_WEIGHTS, w_blk},
                            {DNNL_ARG_BIAS, b_m}, {DNNL_ARG_DST, dst_same ? dst_m : dst_blk}});
        if (!dst_same) rd.execute(strm, dst_blk, dst_m);
        strm.wait();
      });
      tot_dnnl += dn;
      std::printf("  oneDNN+OpenMP %6.1f GFLOP/s [%s]", flop / dn / 1e9, pd.impl_info_str());
#endif
      std::printf("\n");
    }
    std::printf("threads=%d total: im2col %.3f ms, engine %.3f ms, oneDNN+OpenMP %.3f ms\n", threads, tot_im2col * 1e3,
                tot_ours * 1e3, tot_dnnl * 1e3);
  }
  return 0;
}
