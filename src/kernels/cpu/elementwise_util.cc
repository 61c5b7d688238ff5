// The broadcast planner and ApplyActivation declared in elementwise_util.h.
#include "kernels/cpu/elementwise_util.h"

namespace oneflow {

BroadcastPlan MakeBroadcastPlan(const std::vector<Shape>& operands, const Shape& out) {
  const size_t k = operands.size();
  const size_t rank = out.size();
  BroadcastPlan p;
  p.numel = NumElements(out);
  std::vector<std::vector<char>> full;  // per merged dim: does operand j span it (else broadcasts)
  std::vector<char> f(k);
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // size-1 output dims contribute nothing to the iteration
    for (size_t j = 0; j < k; ++j) {
      const Shape& s = operands[j];
      OF_ASSERT(s.size() <= rank);
      size_t off = rank - s.size();
      int64_t sd = d < off ? 1 : s[d - off];
      OF_REQUIRE(sd == out[d] || sd == 1, "shape ", ShapeToString(s), " does not broadcast to ", ShapeToString(out));
      f[j] = sd == out[d];
    }
    if (!p.dims.empty() && full.back() == f) {
      p.dims.back() *= out[d];
    } else {
      p.dims.push_back(out[d]);
      full.push_back(f);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    full.push_back(std::vector<char>(k, 1));
  }
  p.strides.assign(k, std::vector<int64_t>(p.dims.size(), 0));
  for (size_t j = 0; j < k; ++j) {
    int64_t running = 1;
    for (size_t d = p.dims.size(); d-- > 0;) {
      if (full[d][j]) {
        p.strides[j][d] = running;
        running *= p.dims[d];
      }
    }
  }
  return p;
}

void ApplyActivation(const ActivationParams& p, float* x, int64_t n) {
  switch (p.kind) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case Activation::kLeakyRelu: {
      const float a = p.alpha;
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] < 0.0f ? a * x[i] : x[i];
      return;
    }
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = fastmath::Sigmoid(x[i]);
      return;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) x[i] = fastmath::Tanh(x[i]);
      return;
    case Activation::kGelu:
      for (int64_t i = 0; i < n; ++i) x[i] = fastmath::Gelu(x[i]);
      return;
    case Activation::kGeluTanh:
      for (int64_t i = 0; i < n; ++i) x[i] = fastmath::GeluTanh(x[i]);
      return;
    case Activation::kHardSigmoid: {
      const float a = p.alpha, b = p.beta;
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(a * x[i] + b, 0.0f), 1.0f);
      return;
    }
    case Activation::kHardSwish:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] * std::min(std::max(x[i] * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
      return;
    case Activation::kClip: {
      const float lo = p.min, hi = p.max;
      for (int64_t i = 0; i < n; ++i) {
        float v = x[i] < lo ? lo : x[i];
        x[i] = v > hi ? hi : v;
      }
      return;
    }
  }
}

void ApplyActivation(const ActivationParams& p, double* x, int64_t n) {
  const double alpha = p.alpha, beta = p.beta, lo = p.min, hi = p.max;
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    switch (p.kind) {
      case Activation::kNone: return;
      case Activation::kRelu: x[i] = v > 0.0 ? v : 0.0; break;
      case Activation::kLeakyRelu: x[i] = v < 0.0 ? alpha * v : v; break;
      case Activation::kSigmoid: x[i] = 1.0 / (1.0 + std::exp(-v)); break;
      case Activation::kTanh: x[i] = std::tanh(v); break;
      case Activation::kGelu: x[i] = 0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440)); break;
      case Activation::kGeluTanh:
        x[i] = 0.5 * v * (1.0 + std::tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
        break;
      case Activation::kHardSigmoid: x[i] = std::min(std::max(alpha * v + beta, 0.0), 1.0); break;
      case Activation::kHardSwish: x[i] = v * std::min(std::max(v / 6.0 + 0.5, 0.0), 1.0); break;
      case Activation::kClip: x[i] = std::min(std::max(v, lo), hi); break;
    }
  }
}

namespace {
constexpr std::pair<Activation, const char*> kActivationNames[] = {
    {Activation::kNone, "None"},           {Activation::kRelu, "Relu"},          {Activation::kLeakyRelu, "LeakyRelu"},
    {Activation::kSigmoid, "Sigmoid"},     {Activation::kTanh, "Tanh"},          {Activation::kGelu, "Gelu"},
    {Activation::kGeluTanh, "GeluTanh"},   {Activation::kHardSigmoid, "HardSigmoid"},
    {Activation::kHardSwish, "HardSwish"}, {Activation::kClip, "Clip"},
};
}  // namespace

Activation ActivationFromName(const std::string& name) {
  if (name.empty()) return Activation::kNone;
  for (const auto& [kind, n] : kActivationNames)
    if (name == n) return kind;
  Fail(ErrorCode::kInvalidModel, "unknown fused activation '", name, "'");
}

const char* ActivationName(Activation a) {
  for (const auto& [kind, n] : kActivationNames)
    if (kind == a) return n;
  return "?";
}

bool ActivationFromOnnx(const std::string& op, const AttrMap& attrs, ActivationParams* out) {
  ActivationParams p;
  if (op == "Relu") {
    p.kind = Activation::kRelu;
  } else if (op == "LeakyRelu") {
    p.kind = Activation::kLeakyRelu;
    p.alpha = attrs.GetFloat("alpha", 0.01f);
  } else if (op == "Sigmoid") {
    p.kind = Activation::kSigmoid;
  } else if (op == "Tanh") {
    p.kind = Activation::kTanh;
  } else if (op == "Gelu") {
    std::string approx = attrs.GetString("approximate", "none");
    if (approx == "none") p.kind = Activation::kGelu;
    else if (approx == "tanh") p.kind = Activation::kGeluTanh;
    else return false;
  } else if (op == "HardSigmoid") {
    p.kind = Activation::kHardSigmoid;
    p.alpha = attrs.GetFloat("alpha", 0.2f);
    p.beta = attrs.GetFloat("beta", 0.5f);
  } else if (op == "HardSwish") {
    p.kind = Activation::kHardSwish;
  } else {
    return false;
  }
  *out = p;
  return true;
}

}  // namespace oneflow
