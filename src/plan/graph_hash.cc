// A 64-bit structural hash of a graph, compared across ranks so that different models on
// different ranks fail at plan time instead of deadlocking in a collective.
#include <cstring>

#include "base/hash.h"
#include "plan/plan_internal.h"

namespace oneflow {

namespace {

struct Hasher {
  uint64_t h = 0xcbf29ce484222325ull;
  void Bytes(const void* d, size_t n) { h = Fnv1a(d, n, h); }
  void Str(const std::string& s) { Int(static_cast<int64_t>(s.size())); Bytes(s.data(), s.size()); }
  void Int(int64_t v) { Bytes(&v, sizeof v); }
  void Type(const TensorType& t) {
    Int(static_cast<int64_t>(t.dtype));
    Int(t.has_rank ? t.rank() : -1);
    for (const Dim& d : t.dims) { Int(d.value); Str(d.symbol); }
  }
  void Data(const Tensor& t) {
    Int(static_cast<int64_t>(t.dtype()));
    for (int64_t d : t.shape()) Int(d);
    if (t.defined() && t.nbytes()) Bytes(t.raw(), t.nbytes());
  }
};

}  // namespace

uint64_t GraphHash(const Graph& g) {
  Hasher h;
  h.Int(static_cast<int64_t>(g.captured_inputs));
  h.Int(static_cast<int64_t>(g.values.size()));
  for (const Value& v : g.values) {
    h.Type(v.type);
    h.Int(v.constant.defined());
    if (v.constant.defined()) h.Data(v.constant);
    for (const Sbp& s : v.sbp) h.Int(s.kind * 1000 + s.axis);
  }
  for (const Node& n : g.nodes) {
    h.Str(n.op_type);
    h.Str(n.domain);
    h.Int(n.opset);
    for (int i : n.inputs) h.Int(i);
    h.Int(-2);
    for (int o : n.outputs) h.Int(o);
    for (const auto& [name, a] : n.attrs.all()) {
      h.Str(name);
      h.Int(static_cast<int64_t>(a.kind));
      h.Int(a.i);
      h.Bytes(&a.f, sizeof a.f);
      h.Str(a.s);
      for (int64_t x : a.ints) h.Int(x);
      for (float x : a.floats) h.Bytes(&x, sizeof x);
      for (const std::string& x : a.strings) h.Str(x);
      if (a.t.defined()) h.Data(a.t);
      if (a.graph) h.Int(static_cast<int64_t>(GraphHash(*a.graph)));
    }
  }
  for (int i : g.inputs) h.Int(i);
  h.Int(-3);
  for (int o : g.outputs) h.Int(o);
  return h.h;
}

}  // namespace oneflow
