// The reference side of the boxing tests, shared by every backend (CPU in-process here, CUDA with
// staged or NCCL communicators in tests/nccl): inputs of each device for a source SBP and the check
// of each device's output against numpy-style slicing of the logical tensor.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/tensor.h"
#include "graph/placement.h"
#include "graph/sbp.h"

namespace oneflow::boxing_ref {

// Reference slicing, written independently of sbp.cc: `x[lo0:hi0, lo1:hi1]` of a rank-2 tensor,
// the bounds from the balanced rule (first n % parts pieces get one more), nested over axes.
struct Bounds { int64_t lo[2], hi[2]; };
Bounds RefBlock(const Shape& shape, const NdSbp& sbp, const std::vector<int64_t>& hier, const std::vector<int64_t>& coord) {
  Bounds b{{0, 0}, {shape[0], shape[1]}};
  for (size_t k = 0; k < sbp.size(); ++k) {
    if (!sbp[k].is_split()) continue;
    int a = sbp[k].axis;
    int64_t n = b.hi[a] - b.lo[a], parts = hier[k], i = coord[k];
    int64_t start = 0;
    for (int64_t p = 0; p < i; ++p) start += n / parts + (p < n % parts ? 1 : 0);
    b.lo[a] += start;
    b.hi[a] = b.lo[a] + n / parts + (i < n % parts ? 1 : 0);
  }
  return b;
}

Tensor Slice(const Tensor& x, const Bounds& b) {
  Tensor t(DType::kFloat32, {b.hi[0] - b.lo[0], b.hi[1] - b.lo[1]});
  for (int64_t i = b.lo[0]; i < b.hi[0]; ++i)
    for (int64_t j = b.lo[1]; j < b.hi[1]; ++j)
      t.data<float>()[(i - b.lo[0]) * t.dim(1) + (j - b.lo[1])] = x.data<float>()[i * x.dim(1) + j];
  return t;
}

// A random [rows, cols] logical tensor `x` and each device's input for `from`: its block of x;
// for P axes, random parts whose sum over each P group is the block.
inline std::vector<Tensor> MakeInputs(const Placement& pl, const Shape& shape, const NdSbp& from, Tensor& x) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  x = Tensor(DType::kFloat32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  const int n = pl.size();
  // Inputs: the block of x; for P axes, random parts whose sum over each P group is the block.
  std::vector<Tensor> in(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    NdSbp as_b = from;
    for (Sbp& s : as_b) if (s.is_partial()) s = Sbp::B();
    in[static_cast<size_t>(p)] = Slice(x, RefBlock(shape, as_b, pl.hierarchy, pl.Coord(p)));
  }
  for (int p = 0; p < n; ++p) {
    std::vector<int64_t> c = pl.Coord(p);
    bool first = true;
    for (size_t k = 0; k < from.size(); ++k) first &= !from[k].is_partial() || c[k] == 0;
    if (first) continue;
    // Move a random share from this device to the first device of its P group.
    std::vector<int64_t> c0 = c;
    for (size_t k = 0; k < from.size(); ++k) if (from[k].is_partial()) c0[k] = 0;
    Tensor& mine = in[static_cast<size_t>(p)];
    Tensor& root = in[static_cast<size_t>(pl.Position(c0))];
    for (int64_t i = 0; i < mine.numel(); ++i) {
      float r = u(rng);
      root.data<float>()[i] -= r;
      mine.data<float>()[i] = r;
    }
  }
  return in;
}

// Every device's output against the block of x under `to`; for P axes, the sum over each P group.
inline void CheckOutputs(const Placement& pl, const NdSbp& to, const Tensor& x, const std::vector<Tensor>& out) {
  const int n = pl.size();
  // Expected: the block of x under `to`; for P axes, the sum over each P group equals the block.
  for (int p = 0; p < n; ++p) {
    std::vector<int64_t> c = pl.Coord(p);
    bool first = true;
    for (size_t k = 0; k < to.size(); ++k) first &= !to[k].is_partial() || c[k] == 0;
    if (!first) continue;
    NdSbp as_b = to;
    for (Sbp& s : as_b) if (s.is_partial()) s = Sbp::B();
    Tensor want = Slice(x, RefBlock(x.shape(), as_b, pl.hierarchy, c));
    Tensor got(DType::kFloat32, want.shape());
    for (int q = 0; q < n; ++q) {
      std::vector<int64_t> cq = pl.Coord(q);
      bool same = true;
      for (size_t k = 0; k < to.size(); ++k) same &= to[k].is_partial() || cq[k] == c[k];
      if (!same) continue;
      const Tensor& o = out[static_cast<size_t>(q)];
      ASSERT_EQ(o.shape(), want.shape()) << "device " << q;
      for (int64_t i = 0; i < o.numel(); ++i) got.data<float>()[i] += o.data<float>()[i];
    }
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << "device " << p << " element " << i;
  }
}

// The 1-D SBPs the tables pair: every pair over 4 devices, every pair of pairs over 2x2.
inline std::vector<Sbp> OneD() { return {Sbp::S(0), Sbp::S(1), Sbp::B(), Sbp::P()}; }

}  // namespace oneflow::boxing_ref
