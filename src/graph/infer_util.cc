// Shared shape-inference helpers.
#include "graph/infer_util.h"

#include <algorithm>

namespace oneflow {

int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* what) {
  OF_REQUIRE(axis >= -rank && axis < std::max<int64_t>(rank, 1), what, " ", axis,
             " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<Dim> BroadcastDims(const std::vector<Dim>& a, const std::vector<Dim>& b, const InferContext& ctx) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (da->known() && db->known()) {
      if (da->value == db->value || db->value == 1) out[i] = *da;
      else if (da->value == 1) out[i] = *db;
      else ctx.Error("shapes cannot broadcast: dim ", da->value, " vs ", db->value);
    } else if (da->known() && da->value == 1) {
      out[i] = *db;
    } else if (db->known() && db->value == 1) {
      out[i] = *da;
    } else if (da->known()) {
      out[i] = *da;  // a symbolic dim broadcast against n > 1 must itself be n (or 1)
    } else if (db->known()) {
      out[i] = *db;
    } else if (*da == *db) {
      out[i] = *da;
    } else {
      out[i] = Dim::Unknown();
    }
  }
  return out;
}

Shape BroadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    OF_REQUIRE(da == db || da == 1 || db == 1, "shapes ", ShapeToString(a), " and ", ShapeToString(b),
               " cannot broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void CheckSameDType(const InferContext& ctx) {
  DType t = DType::kUndefined;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    DType d = ctx.input_dtype(i);
    if (t == DType::kUndefined) t = d;
    else if (d != t) ctx.Error("inputs must share one dtype, got ", DTypeName(t), " and ", DTypeName(d));
  }
}

int64_t CheckedAdd(int64_t a, int64_t b, const std::string& who, const char* what) {
  int64_t r;
  OF_REQUIRE(!__builtin_add_overflow(a, b, &r), who, ": ", what, " overflows int64 (", a, " + ", b, ")");
  return r;
}

int64_t CheckedMul(int64_t a, int64_t b, const std::string& who, const char* what) {
  int64_t r;
  OF_REQUIRE(!__builtin_mul_overflow(a, b, &r), who, ": ", what, " overflows int64 (", a, " * ", b, ")");
  return r;
}

void InferSameAsInput0(InferContext& ctx) { ctx.set_output(0, ctx.input_type(0)); }

static TensorType BroadcastAll(InferContext& ctx) {
  CheckSameDType(ctx);
  TensorType out = ctx.input_type(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const TensorType& t = ctx.input_type(i);
    if (!out.has_rank || !t.has_rank) {
      out.has_rank = false;
      out.dims.clear();
      continue;
    }
    out.dims = BroadcastDims(out.dims, t.dims, ctx);
  }
  return out;
}

void InferBroadcast(InferContext& ctx) { ctx.set_output(0, BroadcastAll(ctx)); }

void InferBroadcastToBool(InferContext& ctx) {
  TensorType t = BroadcastAll(ctx);
  t.dtype = DType::kBool;
  ctx.set_output(0, t);
}

}  // namespace oneflow
