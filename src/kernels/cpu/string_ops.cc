// CPU kernels of the string ops (graph/ops/string.cc; docs/string-ops.md): StringConcat, StringSplit,
// RegexFullMatch, StringNormalizer, LabelEncoder. Compiled once (src/CMakeLists.txt): the work is
// byte scanning and hashing, which no wider instruction-set tier changes.
#include <clocale>
#include <cmath>
#include <cstring>
#include <cwctype>
#include <locale.h>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <re2/re2.h>

#include "base/utf8.h"
#include "graph/ops/label_encoder.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

void RequireStringInput(const KernelContext& ctx, size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  OF_REQUIRE(t.dtype() == DType::kString, ctx.node_desc(), ": ", name, " must be a string tensor, got ", DescribeValue(t));
}

void StringConcatKernel(KernelContext& ctx) {
  RequireStringInput(ctx, 0, "X");
  RequireStringInput(ctx, 1, "Y");
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  Tensor& z = ctx.output(0);
  BroadcastBinary(ctx.pool(), x.strings(), x.shape(), y.strings(), y.shape(), z.strings(), z.shape(),
                  [](const std::string& a, const std::string& b) { return a + b; }, kMathCost);
}
ONEFLOW_KERNEL(StringConcat, StringConcatKernel);

// ---- StringSplit ------------------------------------------------------------------------------------

// The whitespace of an absent or empty delimiter: ASCII's six, as the spec's "whitespace" and its
// Python reference read it (onnxruntime 1.31 splits on the space character alone); not Unicode's
// other spaces.
bool IsSplitSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// Python's str.split semantics, which the ONNX spec's reference follows: with a delimiter, every
// occurrence splits (so "a--b" on "-" gives "a", "", "b"); without one, runs of whitespace split and
// leading/trailing whitespace makes no empty pieces. At most `maxsplit` splits when >= 0; the rest of
// the string is the last piece. Appends the pieces of `s` to `out` and returns how many.
size_t SplitOne(std::string_view s, const std::string& delimiter, int64_t maxsplit, std::vector<std::string_view>& out) {
  const size_t first = out.size();
  auto pieces = [&] { return static_cast<int64_t>(out.size() - first); };
  if (!delimiter.empty()) {
    size_t begin = 0;
    while (maxsplit < 0 || pieces() < maxsplit) {
      const size_t at = s.find(delimiter, begin);
      if (at == std::string_view::npos) break;
      out.push_back(s.substr(begin, at - begin));
      begin = at + delimiter.size();
    }
    out.push_back(s.substr(begin));
    return out.size() - first;
  }
  size_t i = 0;
  const size_t n = s.size();
  while (true) {
    while (i < n && IsSplitSpace(s[i])) ++i;
    if (i == n) break;
    if (maxsplit >= 0 && pieces() == maxsplit) {
      out.push_back(s.substr(i));
      break;
    }
    size_t j = i;
    while (j < n && !IsSplitSpace(s[j])) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out.size() - first;
}

void StringSplitKernel(KernelContext& ctx) {
  RequireStringInput(ctx, 0, "X");
  const Tensor& x = ctx.input(0);
  const std::string delimiter = ctx.attrs().GetString("delimiter", "");
  const int64_t maxsplit = ctx.attrs().GetInt("maxsplit", -1);
  const std::string* in = x.strings();
  // Every element's pieces in one list (views into X), so the widest row is known before Y exists.
  std::vector<std::string_view> pieces;
  Tensor z(DType::kInt64, x.shape());
  int64_t* counts = z.data<int64_t>();
  size_t widest = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t k = SplitOne(in[i], delimiter, maxsplit, pieces);
    counts[i] = static_cast<int64_t>(k);
    widest = std::max(widest, k);
  }
  Shape y_shape = x.shape();
  y_shape.push_back(static_cast<int64_t>(widest));
  Tensor y(DType::kString, y_shape);  // "" pads the shorter rows
  std::string* out = y.strings();
  size_t next = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    for (int64_t k = 0; k < counts[i]; ++k) out[static_cast<size_t>(i) * widest + static_cast<size_t>(k)] = pieces[next++];
  ctx.output(0) = std::move(y);
  if (ctx.has_output(1)) ctx.output(1) = std::move(z);
}
ONEFLOW_KERNEL(StringSplit, StringSplitKernel);

// ---- RegexFullMatch ----------------------------------------------------------------------------------

// The pattern is compiled once, at session creation, where a bad one is reported; RE2's matching is
// const and thread-safe, so runs share it.
class RegexFullMatchKernel final : public OpKernel {
 public:
  explicit RegexFullMatchKernel(const KernelInitContext& c) {
    const std::string& pattern = c.attrs().GetString("pattern");
    RE2::Options options;
    options.set_log_errors(false);
    regex_ = std::make_unique<RE2>(pattern, options);
    OF_CHECK(regex_->ok(), kInvalidModel, c.node().Describe(), ": pattern '", pattern, "' is not a valid RE2 expression: ",
             regex_->error());
  }
  void Compute(KernelContext& ctx) override {
    RequireStringInput(ctx, 0, "X");
    const Tensor& x = ctx.input(0);
    const std::string* in = x.strings();
    bool* out = ctx.output(0).data<bool>();
    const RE2& re = *regex_;
    ctx.pool().ParallelFor(x.numel(), 200.0, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = RE2::FullMatch(in[i], re);
    });
  }

 private:
  std::unique_ptr<RE2> regex_;
};
ONEFLOW_KERNEL_CLASS(RegexFullMatch, RegexFullMatchKernel);

// ---- StringNormalizer --------------------------------------------------------------------------------

// Unicode's simple case mapping through glibc's C.UTF-8 locale (built into glibc, so present on
// every host): the same for every `locale` attribute value.
class CaseMapper {
 public:
  CaseMapper() : locale_(newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0))) {}
  ~CaseMapper() {
    if (locale_) freelocale(locale_);
  }
  CaseMapper(const CaseMapper&) = delete;
  CaseMapper& operator=(const CaseMapper&) = delete;
  bool ok() const { return locale_ != static_cast<locale_t>(0); }
  // `upper` or lower-cases s in place; false when s is not UTF-8.
  bool Map(std::string& s, bool upper) const {
    std::u32string cps;
    if (!DecodeUtf8(s, cps)) return false;
    for (char32_t& cp : cps) {
      const wint_t w = static_cast<wint_t>(cp);
      cp = static_cast<char32_t>(upper ? towupper_l(w, locale_) : towlower_l(w, locale_));
    }
    EncodeUtf8(cps, s);
    return true;
  }

 private:
  locale_t locale_;
};

class StringNormalizerKernel final : public OpKernel {
 public:
  explicit StringNormalizerKernel(const KernelInitContext& c) : desc_(c.node().Describe()) {
    const AttrMap& a = c.attrs();
    const std::string action = a.GetString("case_change_action");
    lower_ = action == "LOWER";
    upper_ = action == "UPPER";
    case_sensitive_ = a.GetInt("is_case_sensitive") != 0;
    OF_CHECK(mapper_.ok(), kInternal, desc_, ": the C.UTF-8 locale is not available");
    if (a.has("stopwords")) {
      for (std::string w : a.GetStrings("stopwords")) {
        OF_CHECK(case_sensitive_ || mapper_.Map(w, false), kInvalidModel, desc_, ": stopword '", w, "' is not UTF-8");
        stopwords_.insert(std::move(w));
      }
    }
  }

  void Compute(KernelContext& ctx) override {
    RequireStringInput(ctx, 0, "X");
    const Tensor& x = ctx.input(0);
    const bool row = x.rank() == 2;
    OF_REQUIRE(x.rank() == 1 || (row && x.dim(0) == 1), desc_, ": X must be [C] or [1, C], got ", DescribeValue(x));
    std::vector<std::string> kept;
    std::string folded;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const std::string& s = x.strings()[i];
      if (!stopwords_.empty()) {
        folded = s;
        OF_REQUIRE(case_sensitive_ || mapper_.Map(folded, false), desc_, ": element ", i, " of X is not UTF-8");
        if (stopwords_.count(folded)) continue;
      }
      kept.push_back(s);
      if (lower_ || upper_)
        OF_REQUIRE(mapper_.Map(kept.back(), upper_), desc_, ": element ", i, " of X is not UTF-8");
    }
    // Everything dropped: one empty string, as the spec says ([1] or [1, 1]).
    if (kept.empty()) kept.emplace_back();
    const int64_t count = static_cast<int64_t>(kept.size());
    Tensor y(DType::kString, row ? Shape{1, count} : Shape{count});
    std::move(kept.begin(), kept.end(), y.strings());
    ctx.output(0) = std::move(y);
  }

 private:
  std::string desc_;
  CaseMapper mapper_;
  bool lower_ = false, upper_ = false, case_sensitive_ = false;
  std::unordered_set<std::string> stopwords_;  // lower-cased unless case-sensitive
};
ONEFLOW_KERNEL_CLASS(StringNormalizer, StringNormalizerKernel);

// ---- LabelEncoder ------------------------------------------------------------------------------------

// The table as a hash map from key to value index. Numeric keys are compared as doubles (every
// int16/int32 and float is exact in one; int64 keys keep their own map so none collide). NaN equals
// nothing, a NaN key included, so a NaN input takes the default (onnxruntime and the ONNX reference
// agree).
class LabelEncoderKernel final : public OpKernel {
 public:
  explicit LabelEncoderKernel(const KernelInitContext& c)
      : desc_(c.node().Describe()),
        spec_(ParseLabelEncoderSpec(c.attrs(), c.opset(), c.input_type(0).dtype, desc_)) {
    const Tensor& keys = spec_.keys;
    for (int64_t i = keys.numel() - 1; i >= 0; --i) {  // the first of repeated keys wins
      if (keys.dtype() == DType::kString) by_string_[keys.strings()[i]] = i;
      else if (keys.dtype() == DType::kInt64) by_int_[keys.data<int64_t>()[i]] = i;
      else if (const double k = keys.GetAsDouble(i); !std::isnan(k)) by_double_[k] = i;
    }
  }

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    OF_REQUIRE(x.dtype() == spec_.keys.dtype(), desc_, ": X is ", DescribeValue(x), " but the keys are ",
               DTypeName(spec_.keys.dtype()));
    // One typed loop per (key type, value type): the lookup and the write inline, no per-element dispatch.
    auto find = [](const auto& map, const auto& key) -> int64_t {
      auto it = map.find(key);
      return it == map.end() ? -1 : it->second;
    };
    if (x.dtype() == DType::kString) {
      const std::string* in = x.strings();
      WriteValues(x.numel(), [&](int64_t i) { return find(by_string_, in[i]); }, ctx.output(0));
    } else if (x.dtype() == DType::kInt64) {
      const int64_t* in = x.data<int64_t>();
      WriteValues(x.numel(), [&](int64_t i) { return find(by_int_, in[i]); }, ctx.output(0));
    } else {
      DispatchNumeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* in = x.data<T>();
        // NaN finds nothing.
        WriteValues(x.numel(), [&](int64_t i) { return find(by_double_, static_cast<double>(in[i])); }, ctx.output(0));
      });
    }
  }

 private:
  // y[i] = values[index_of(i)], or the default where index_of(i) < 0.
  template <typename IndexOf>
  void WriteValues(int64_t n, IndexOf index_of, Tensor& y) const {
    const Tensor& values = spec_.values;
    if (values.dtype() == DType::kString) {
      const std::string* v = values.strings();
      const std::string& fallback = spec_.default_value.strings()[0];
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = index_of(i);
        y.strings()[i] = at < 0 ? fallback : v[at];
      }
      return;
    }
    DispatchNumeric(values.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* v = values.data<T>();
      const T fallback = spec_.default_value.data<T>()[0];
      T* out = y.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = index_of(i);
        out[i] = at < 0 ? fallback : v[at];
      }
    });
  }

  std::string desc_;
  LabelEncoderSpec spec_;
  std::unordered_map<std::string, int64_t> by_string_;
  std::unordered_map<int64_t, int64_t> by_int_;
  std::unordered_map<double, int64_t> by_double_;
};
ONEFLOW_KERNEL_CLASS(LabelEncoder, LabelEncoderKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
