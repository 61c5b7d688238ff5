// Op family: the ops that read or write string tensors (OpSchema::takes_strings; docs/string-ops.md).
// Kernels: kernels/cpu/string_ops.cc.
//   StringConcat(X, Y) -> Z                   Z = X + Y elementwise, broadcasting (opset 20)
//   StringSplit(X) -> Y [..., k], Z int64     each X split on `delimiter` (runs of whitespace when
//                                             empty or absent) at most `maxsplit` times; Y padded
//                                             with "" to the longest, Z the counts (opset 20)
//   RegexFullMatch(X) -> Y bool               whether `pattern` (RE2 syntax) matches all of X (20)
//   StringNormalizer(X [C] or [1, C]) -> Y    drops `stopwords`, then lower/upper-cases (opset 10)
//   LabelEncoder(X) -> Y                      ai.onnx.ml: a table lookup (ops/label_encoder.h)
// Equal (strings since opset 19), Constant, Identity and the reshaping views take strings too; their
// schemas say so where they are defined.
#include <cmath>
#include <string>
#include <vector>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/label_encoder.h"

namespace oneflow {
namespace {

void RequireStrings(const InferContext& ctx, size_t input, const char* name) {
  const TensorType& t = ctx.input_type(input);
  if (t.dtype != DType::kString && t.dtype != DType::kUndefined)
    ctx.Error(name, " must be a string tensor, got ", t.ToString());
}

void InferStringConcat(InferContext& ctx) {
  RequireStrings(ctx, 0, "X");
  RequireStrings(ctx, 1, "Y");
  const TensorType& x = ctx.input_type(0);
  const TensorType& y = ctx.input_type(1);
  if (!x.has_rank || !y.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(DType::kString));
    return;
  }
  ctx.set_output(0, TensorType::Of(DType::kString, BroadcastDims(x.dims, y.dims, ctx)));
}

// Y's last dimension is the most pieces any element splits into: only the data says, so the kernel
// shapes its outputs (OutputsShapedByKernel) and inference gives what the types tell.
void InferStringSplit(InferContext& ctx) {
  RequireStrings(ctx, 0, "X");
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(DType::kString));
    ctx.set_output(1, TensorType::UnknownShape(DType::kInt64));
    return;
  }
  std::vector<Dim> y = x.dims;
  y.push_back(Dim::Unknown());
  ctx.set_output(0, TensorType::Of(DType::kString, y));
  ctx.set_output(1, TensorType::Of(DType::kInt64, x.dims));
}

void InferRegexFullMatch(InferContext& ctx) {
  RequireStrings(ctx, 0, "X");
  TensorType y = ctx.input_type(0);
  y.dtype = DType::kBool;
  ctx.set_output(0, y);
}

void InferStringNormalizer(InferContext& ctx) {
  RequireStrings(ctx, 0, "X");
  const std::string action = ctx.attrs().GetString("case_change_action");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.Error("case_change_action must be NONE, LOWER or UPPER, got '", action, "'");
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(DType::kString));
    return;
  }
  const bool row = x.rank() == 2 && x.dims[0].known() && x.dims[0].value == 1;
  if (x.rank() != 1 && !(x.rank() == 2 && (row || !x.dims[0].known())))
    ctx.Error("X must be [C] or [1, C], got ", x.ToString());
  // How many elements survive the stopwords is data: the kernel shapes Y.
  std::vector<Dim> y(x.dims.size(), Dim::Unknown());
  if (x.rank() == 2) y[0] = Dim::Known(1);
  ctx.set_output(0, TensorType::Of(DType::kString, y));
}

bool IsLabelEncoderDType(DType t) {
  return t == DType::kString || t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt16 ||
         t == DType::kFloat32 || t == DType::kFloat64;
}

void InferLabelEncoder(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const LabelEncoderSpec spec = ParseLabelEncoderSpec(ctx.attrs(), ctx.opset(), x.dtype, ctx.node());
  if (x.dtype != DType::kUndefined && spec.keys.dtype() != DType::kUndefined && x.dtype != spec.keys.dtype())
    ctx.Error("X is ", x.ToString(), " but the keys are ", DTypeName(spec.keys.dtype()));
  TensorType y = x;
  y.dtype = spec.values.dtype();
  ctx.set_output(0, y);
}

// A 1-D tensor of `dtype` from an attribute list.
template <typename T, typename List>
Tensor ListTensor(DType dtype, const List& list) {
  Tensor t(dtype, Shape{static_cast<int64_t>(list.size())});
  for (size_t i = 0; i < list.size(); ++i) t.data<T>()[i] = static_cast<T>(list[i]);
  return t;
}

Tensor StringListTensor(const std::vector<std::string>& list) {
  Tensor t(DType::kString, Shape{static_cast<int64_t>(list.size())});
  std::copy(list.begin(), list.end(), t.strings());
  return t;
}

// The one-element default for values of `dtype`: the typed default_* attribute where the opset has
// one for that type, else the spec's: "_Unused" for strings, -1 for integers, -0.0 for floats.
Tensor TypedDefault(const AttrMap& a, DType dtype) {
  switch (dtype) {
    case DType::kString: return StringListTensor({a.GetString("default_string", "_Unused")});
    case DType::kInt64: return ListTensor<int64_t>(dtype, std::vector<int64_t>{a.GetInt("default_int64", -1)});
    case DType::kFloat32: return ListTensor<float>(dtype, std::vector<float>{a.GetFloat("default_float", -0.0f)});
    default: break;
  }
  Tensor t(dtype, Shape{1});
  DispatchNumeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.data<T>()[0] = std::is_floating_point_v<T> ? static_cast<T>(-0.0) : static_cast<T>(-1);
  });
  return t;
}

}  // namespace

LabelEncoderSpec ParseLabelEncoderSpec(const AttrMap& a, int opset, DType x_dtype, const std::string& node) {
  auto fail = [&](const auto&... args) { Fail(ErrorCode::kInvalidModel, node, ": ", args...); };
  LabelEncoderSpec s;
  if (opset < 2) {
    if (!a.has("classes_strings")) fail("classes_strings is required");
    const std::vector<std::string>& classes = a.GetStrings("classes_strings");
    std::vector<int64_t> index(classes.size());
    for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int64_t>(i);
    if (x_dtype == DType::kInt64) {
      s.keys = ListTensor<int64_t>(DType::kInt64, index);
      s.values = StringListTensor(classes);
      s.default_value = StringListTensor({a.GetString("default_string", "_Unused")});
    } else {
      if (x_dtype != DType::kString && x_dtype != DType::kUndefined)
        fail("X must be string or int64 at opset 1, got ", DTypeName(x_dtype));
      s.keys = StringListTensor(classes);
      s.values = ListTensor<int64_t>(DType::kInt64, index);
      s.default_value = ListTensor<int64_t>(DType::kInt64, std::vector<int64_t>{a.GetInt("default_int64", -1)});
    }
    return s;
  }
  int key_sources = 0, value_sources = 0;
  if (a.has("keys_strings")) s.keys = StringListTensor(a.GetStrings("keys_strings")), ++key_sources;
  if (a.has("keys_int64s")) s.keys = ListTensor<int64_t>(DType::kInt64, a.GetInts("keys_int64s")), ++key_sources;
  if (a.has("keys_floats")) s.keys = ListTensor<float>(DType::kFloat32, a.GetFloats("keys_floats")), ++key_sources;
  if (a.has("keys_tensor")) s.keys = a.GetTensor("keys_tensor"), ++key_sources;
  if (a.has("values_strings")) s.values = StringListTensor(a.GetStrings("values_strings")), ++value_sources;
  if (a.has("values_int64s")) s.values = ListTensor<int64_t>(DType::kInt64, a.GetInts("values_int64s")), ++value_sources;
  if (a.has("values_floats")) s.values = ListTensor<float>(DType::kFloat32, a.GetFloats("values_floats")), ++value_sources;
  if (a.has("values_tensor")) s.values = a.GetTensor("values_tensor"), ++value_sources;
  if (key_sources != 1) fail("exactly one of keys_strings, keys_int64s, keys_floats, keys_tensor must be set, got ", key_sources);
  if (value_sources != 1)
    fail("exactly one of values_strings, values_int64s, values_floats, values_tensor must be set, got ", value_sources);
  if (!IsLabelEncoderDType(s.keys.dtype()) || !IsLabelEncoderDType(s.values.dtype()))
    fail("keys and values must be string, int64, int32, int16, float or double, got ", DTypeName(s.keys.dtype()),
         " and ", DTypeName(s.values.dtype()));
  if (s.keys.rank() > 1 || s.values.rank() > 1) fail("keys and values must be 1-D");
  if (s.keys.numel() != s.values.numel())
    fail("there are ", s.keys.numel(), " keys but ", s.values.numel(), " values");
  if (a.has("default_tensor")) {
    s.default_value = a.GetTensor("default_tensor");
    if (s.default_value.numel() != 1 || s.default_value.dtype() != s.values.dtype())
      fail("default_tensor must hold one ", DTypeName(s.values.dtype()), ", got ", DescribeValue(s.default_value));
    s.default_value = s.default_value.Reshaped(Shape{1});
  } else {
    s.default_value = TypedDefault(a, s.values.dtype());
  }
  return s;
}

void RegisterStringOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kStringConcat).Since(20).Input("X").Input("Y").Output("Z").TakesStrings()
                 .Infer(InferStringConcat));
  r.Register(OpSchema(OpId::kStringSplit).Since(20).Input("X").Output("Y").Output("Z")
                 .OptionalAttr("delimiter", AttrKind::kString).OptionalAttr("maxsplit", AttrKind::kInt)
                 .TakesStrings().OutputsShapedByKernel().Infer(InferStringSplit));
  r.Register(OpSchema(OpId::kRegexFullMatch).Since(20).Input("X").Output("Y").RequiredAttr("pattern", AttrKind::kString)
                 .TakesStrings().Infer(InferRegexFullMatch));
  r.Register(OpSchema(OpId::kStringNormalizer).Since(10).Input("X").Output("Y")
                 .Attr("case_change_action", Attribute::String("NONE")).Attr("is_case_sensitive", Attribute::Int(0))
                 .OptionalAttr("locale", AttrKind::kString).OptionalAttr("stopwords", AttrKind::kStrings)
                 .TakesStrings().OutputsShapedByKernel().Infer(InferStringNormalizer));
  auto label_encoder = [](int since) {
    OpSchema s(OpId::kLabelEncoder);
    s.Since(since).Input("X").Output("Y").TakesStrings().Infer(InferLabelEncoder);
    if (since == 1) {
      s.Until(1).OptionalAttr("classes_strings", AttrKind::kStrings).OptionalAttr("default_int64", AttrKind::kInt)
          .OptionalAttr("default_string", AttrKind::kString);
      return s;
    }
    s.OptionalAttr("default_float", AttrKind::kFloat).OptionalAttr("default_int64", AttrKind::kInt)
        .OptionalAttr("default_string", AttrKind::kString).OptionalAttr("keys_floats", AttrKind::kFloats)
        .OptionalAttr("keys_int64s", AttrKind::kInts).OptionalAttr("keys_strings", AttrKind::kStrings)
        .OptionalAttr("values_floats", AttrKind::kFloats).OptionalAttr("values_int64s", AttrKind::kInts)
        .OptionalAttr("values_strings", AttrKind::kStrings);
    if (since == 2) s.Until(3);
    else s.OptionalAttr("default_tensor", AttrKind::kTensor).OptionalAttr("keys_tensor", AttrKind::kTensor)
            .OptionalAttr("values_tensor", AttrKind::kTensor);
    return s;
  };
  for (int since : {1, 2, 4}) r.Register(label_encoder(since));
}

}  // namespace oneflow
