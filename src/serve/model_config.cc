#include "serve/model_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>

#include "base/error.h"
#include "base/half.h"
#include "serve/datatype.h"
#include "serve/status.h"

namespace oneflow {
namespace serve {
namespace {

namespace pb = google::protobuf;

// Collects the text parser's findings as "label:line:column: message".
class CollectErrors : public pb::io::ErrorCollector {
 public:
  explicit CollectErrors(std::string label) : label_(std::move(label)) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    errors.push_back(Where(line, column) + message);
  }
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {
    warnings.push_back(Where(line, column) + message + " (ignored: oneflow serve does not act on it)");
  }
  std::vector<std::string> errors, warnings;

 private:
  std::string Where(int line, int column) const { return StrCat(label_, ":", line + 1, ":", column + 1, ": "); }
  std::string label_;
};

// The model's type of a graph input or output, as config dims (-1 for a dim not known statically).
std::vector<int64_t> ModelDims(const TensorType& t) {
  std::vector<int64_t> dims;
  for (const Dim& d : t.dims) dims.push_back(d.known() ? d.value : -1);
  return dims;
}

bool DimsCompatible(const std::vector<int64_t>& config, const std::vector<int64_t>& model) {
  if (config.size() != model.size()) return false;
  for (size_t i = 0; i < config.size(); ++i)
    if (config[i] != -1 && model[i] != -1 && config[i] != model[i]) return false;
  return true;
}

int ParseIntParameter(const std::map<std::string, std::string>& params, const std::string& key, int fallback,
                      int min, int max) {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  try {
    size_t used = 0;
    int v = std::stoi(it->second, &used);
    if (used == it->second.size() && v >= min && v <= max) return v;
  } catch (const std::exception&) {
  }
  Fail(ErrorCode::kInvalidModel, "config parameter '", key, "' is '", it->second, "'; expected an integer in [", min,
       ", ", max, "]");
}

// Resolves the tensors of one side (inputs or outputs): the config's entries, checked against the
// model, then the model's tensors the config does not list.
template <typename ConfigTensor>
std::vector<TensorSpec> ResolveTensors(const pb::RepeatedPtrField<ConfigTensor>& configured, const Graph& model,
                                       const std::vector<int>& graph_values, int max_batch_size, const char* side) {
  std::vector<TensorSpec> specs;
  std::set<std::string> listed;
  for (const ConfigTensor& c : configured) {
    int vid = -1;
    for (int v : graph_values)
      if (model.values[static_cast<size_t>(v)].name == c.name()) vid = v;
    OF_CHECK(vid >= 0, kInvalidModel, "config ", side, " '", c.name(), "' is not an ", side, " of the model");
    OF_CHECK(listed.insert(c.name()).second, kInvalidModel, "config lists ", side, " '", c.name(), "' twice");
    const TensorType& t = model.values[static_cast<size_t>(vid)].type;
    TensorSpec s;
    s.name = c.name();
    s.dtype = DTypeFromConfigDataType(c.data_type());
    OF_CHECK(s.dtype != DType::kUndefined, kInvalidModel, "config ", side, " '", c.name(), "' has no data_type");
    OF_CHECK(s.dtype == t.dtype, kInvalidModel, "config ", side, " '", c.name(), "' is ",
             inference::DataType_Name(c.data_type()), " but the model's is ",
             inference::DataType_Name(static_cast<inference::DataType>(ConfigDataTypeOf(t.dtype))));
    s.dims.assign(c.dims().begin(), c.dims().end());
    if (t.has_rank) {
      std::vector<int64_t> dims = ModelDims(t);
      if (max_batch_size > 0 && !dims.empty()) dims.erase(dims.begin());
      OF_CHECK(DimsCompatible(s.dims, dims), kInvalidModel, "config ", side, " '", c.name(), "' has dims ",
               DimsToString(s.dims), " but the model's are ", DimsToString(dims),
               max_batch_size > 0 ? " (without the batch dimension, as max_batch_size > 0)" : "");
    }
    if constexpr (std::is_same_v<ConfigTensor, inference::ModelInput>) s.optional = c.optional();
    specs.push_back(std::move(s));
  }
  for (int v : graph_values) {
    const Value& value = model.values[static_cast<size_t>(v)];
    if (listed.count(value.name)) continue;
    TensorSpec s;
    s.name = value.name;
    s.dtype = value.type.dtype;
    OF_CHECK(value.type.has_rank, kInvalidModel, "the model's ", side, " '", value.name,
             "' has no known rank: list its dims in config.pbtxt");
    s.dims = ModelDims(value.type);
    if (max_batch_size > 0) s.dims.erase(s.dims.begin());
    specs.push_back(std::move(s));
  }
  return specs;
}

// True when every input and output leads with a dimension the model leaves open.
bool LeadsWithDynamicDim(const Graph& model) {
  auto dynamic_lead = [&](int v) {
    const TensorType& t = model.values[static_cast<size_t>(v)].type;
    return t.has_rank && !t.dims.empty() && !t.dims[0].known();
  };
  return !model.inputs.empty() && std::all_of(model.inputs.begin(), model.inputs.end(), dynamic_lead) &&
         std::all_of(model.outputs.begin(), model.outputs.end(), dynamic_lead);
}

}  // namespace

std::string DimsToString(const std::vector<int64_t>& dims, bool batched) {
  std::string s = batched ? "[-1" : "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i || batched ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

const std::string& ModelSettings::platform() const {
  return resolved.platform().empty() ? resolved.backend() : resolved.platform();
}

ModelConfigFile ParseModelConfigText(const std::string& text, const std::string& label) {
  ModelConfigFile file;
  file.present = true;
  CollectErrors errors(label);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);  // Triton fields we do not act on: warnings, not errors
  if (!parser.ParseFromString(text, &file.config)) {
    std::string all;
    for (const std::string& e : errors.errors) all += (all.empty() ? "" : "; ") + e;
    Fail(ErrorCode::kInvalidModel, "invalid model configuration: ", all.empty() ? label : all);
  }
  file.warnings = errors.warnings;
  return file;
}

ModelConfigFile ReadModelConfig(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  OF_CHECK(in, kIo, "cannot read ", path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseModelConfigText(text.str(), path);
}

std::vector<int64_t> SelectVersions(const inference::ModelConfig& config, const std::vector<int64_t>& available) {
  const inference::ModelVersionPolicy& policy = config.version_policy();
  switch (policy.policy_choice_case()) {
    case inference::ModelVersionPolicy::kAll: return available;
    case inference::ModelVersionPolicy::kSpecific: {
      std::vector<int64_t> chosen;
      for (int64_t v : policy.specific().versions()) {
        OF_CHECK(std::find(available.begin(), available.end(), v) != available.end(), kInvalidModel,
                 "version_policy names version ", v, ", which the repository does not have");
        chosen.push_back(v);
      }
      std::sort(chosen.begin(), chosen.end());
      chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
      return chosen;
    }
    default: {
      size_t n = policy.has_latest() && policy.latest().num_versions() > 0 ? policy.latest().num_versions() : 1;
      n = std::min(n, available.size());
      return std::vector<int64_t>(available.end() - static_cast<std::ptrdiff_t>(n), available.end());
    }
  }
}

namespace {

// Random warmup data of `t`'s dtype: [0, 1) for floating types, 0..9 for integers, 0/1 for bool
// (small, so that index inputs stay in range of the embeddings they usually feed).
void FillRandom(Tensor& t, std::mt19937& rng) {
  std::uniform_real_distribution<float> real(0.0f, 1.0f);
  std::uniform_int_distribution<int> digit(0, 9), bit(0, 1);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: t.data<float>()[i] = real(rng); break;
      case DType::kFloat64: t.data<double>()[i] = real(rng); break;
      case DType::kFloat16: t.data<uint16_t>()[i] = Float16::FromFloat(real(rng)); break;
      case DType::kBFloat16: t.data<uint16_t>()[i] = BFloat16::FromFloat(real(rng)); break;
      case DType::kBool: t.data<uint8_t>()[i] = static_cast<uint8_t>(bit(rng)); break;
      case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(digit(rng)); break;
      case DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(digit(rng)); break;
      case DType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(digit(rng)); break;
      case DType::kUInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(digit(rng)); break;
      case DType::kInt32: t.data<int32_t>()[i] = digit(rng); break;
      case DType::kUInt32: t.data<uint32_t>()[i] = static_cast<uint32_t>(digit(rng)); break;
      case DType::kInt64: t.data<int64_t>()[i] = digit(rng); break;
      case DType::kUInt64: t.data<uint64_t>()[i] = static_cast<uint64_t>(digit(rng)); break;
      default: Fail(ErrorCode::kUnsupported, "no random warmup data for ", DTypeName(t.dtype()));
    }
  }
}

// `file` of the model's warmup directory, exactly `bytes` long: a regular file that lies inside
// that directory once links are resolved (a model repository is not a way to read other files).
// `bytes` is the size the file must have, or kAnySize (BYTES samples: length-prefixed, checked by the parser).
constexpr size_t kAnySize = SIZE_MAX;
std::vector<char> ReadWarmupFile(const std::string& model_dir, const std::string& file, size_t bytes,
                                 const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path rel(file);
  bool inside = !file.empty() && rel.is_relative();
  for (const fs::path& part : rel) inside = inside && part != "..";
  OF_CHECK(inside, kInvalidModel, what, ": input_data_file '", file,
           "' must name a file in the model's 'warmup' directory (a relative path without '..')");
  const fs::path dir = fs::path(model_dir) / "warmup", path = dir / rel;
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec), real_dir = fs::canonical(dir, ec);
  OF_CHECK(!ec && fs::is_regular_file(real, ec), kInvalidModel, what, ": cannot read input_data_file ", path.string(),
           " (not a regular file)");
  const std::string r = real.string(), d = real_dir.string() + "/";
  OF_CHECK(r.compare(0, d.size(), d) == 0, kInvalidModel, what, ": input_data_file ", path.string(),
           " leads outside the model's 'warmup' directory");
  const uintmax_t size = fs::file_size(real, ec);
  OF_CHECK(!ec && (size == bytes || (bytes == kAnySize && size < (uintmax_t{1} << 31))), kInvalidModel, what,
           ": input_data_file ", path.string(), " holds ", size, " bytes; the sample needs ", bytes == kAnySize ? 0 : bytes);
  bytes = static_cast<size_t>(size);
  std::vector<char> data(bytes);
  std::ifstream in(real, std::ios::binary);
  OF_CHECK(in.read(data.data(), static_cast<std::streamsize>(bytes)) || bytes == 0, kInvalidModel, what,
           ": cannot read input_data_file ", path.string());
  return data;
}

// The config's warmup samples as whole input tensors, checked against the resolved inputs.
std::vector<WarmupSample> ResolveWarmup(const inference::ModelConfig& config, const ModelSettings& s,
                                        const std::string& model_dir) {
  std::vector<WarmupSample> samples;
  std::mt19937 rng(0);  // the same data on every load
  const bool batched = s.max_batch_size > 0;
  for (const inference::ModelWarmup& w : config.model_warmup()) {
    const std::string what = "model_warmup '" + w.name() + "'";
    const int64_t rows = w.batch_size();
    if (batched)
      OF_CHECK(rows >= 1 && rows <= s.max_batch_size, kInvalidModel, what, " has batch_size ", rows,
               ", outside [1, max_batch_size = ", s.max_batch_size, "]");
    else
      OF_CHECK(rows <= 1, kInvalidModel, what, " has batch_size ", rows,
               " but the model does not batch (max_batch_size 0): use 1");
    OF_CHECK(w.count() <= 1000, kInvalidModel, what, " asks for ", w.count(), " runs per instance (at most 1000)");
    for (const auto& entry : w.inputs()) {
      bool known = false;
      for (const TensorSpec& spec : s.inputs) known |= spec.name == entry.first;
      OF_CHECK(known, kInvalidModel, what, " gives data for '", entry.first, "', which is not an input of the model");
    }
    WarmupSample sample;
    sample.name = w.name();
    sample.count = std::max<int>(1, static_cast<int>(w.count()));
    for (const TensorSpec& spec : s.inputs) {
      auto it = w.inputs().find(spec.name);
      if (it == w.inputs().end()) {
        OF_CHECK(spec.optional, kInvalidModel, what, " gives no data for the input '", spec.name, "'");
        continue;
      }
      const inference::ModelWarmup::Input& in = it->second;
      const std::string of = what + " input '" + spec.name + "'";
      const DType dtype = in.data_type() == inference::TYPE_INVALID ? spec.dtype : DTypeFromConfigDataType(in.data_type());
      OF_CHECK(dtype == spec.dtype, kInvalidModel, of, " has data_type ", inference::DataType_Name(in.data_type()),
               "; the model's input is ", DTypeName(spec.dtype));
      OF_CHECK(in.dims_size() == static_cast<int>(spec.dims.size()), kInvalidModel, of, " has dims ",
               DimsToString({in.dims().begin(), in.dims().end()}), "; the input's are ", DimsToString(spec.dims));
      Shape row;
      if (batched) row.push_back(1);
      for (int d = 0; d < in.dims_size(); ++d) {
        const int64_t want = spec.dims[static_cast<size_t>(d)];
        OF_CHECK(in.dims(d) >= 0 && (want < 0 || want == in.dims(d)), kInvalidModel, of, " has dims ",
                 DimsToString({in.dims().begin(), in.dims().end()}), "; the input's are ", DimsToString(spec.dims));
        row.push_back(in.dims(d));
      }
      Tensor one(dtype, row);  // zero_data (empty strings for BYTES), or none given
      const bool strings = dtype == DType::kString;
      if (in.input_data_type_case() == inference::ModelWarmup::Input::kRandomData && in.random_data()) {
        OF_CHECK(!strings, kInvalidModel, of, ": random_data is not defined for TYPE_STRING; use zero_data or an "
                 "input_data_file of length-prefixed strings");
        FillRandom(one, rng);
      } else if (in.input_data_type_case() == inference::ModelWarmup::Input::kInputDataFile && strings) {
        // Triton's layout for BYTES samples: each element a 4-byte little-endian length and its bytes.
        std::vector<char> data = ReadWarmupFile(model_dir, in.input_data_file(), kAnySize, of);
        try {
          one = DeserializeBytesTensor(data.data(), data.size(), row, of);
        } catch (const ServeError& e) {
          Fail(ErrorCode::kInvalidModel, e.what());
        }
      } else if (in.input_data_type_case() == inference::ModelWarmup::Input::kInputDataFile) {
        std::vector<char> data = ReadWarmupFile(model_dir, in.input_data_file(), one.nbytes(), of);
        if (!data.empty()) std::memcpy(one.raw(), data.data(), data.size());
      }
      Tensor whole = one;
      if (batched && rows > 1) {  // the sample repeated along the batch dimension
        Shape shape = row;
        shape[0] = rows;
        whole = Tensor(dtype, shape);
        for (int64_t r = 0; r < rows; ++r) {
          if (strings) std::copy(one.strings(), one.strings() + one.numel(), whole.strings() + r * one.numel());
          else std::memcpy(static_cast<char*>(whole.raw()) + static_cast<size_t>(r) * one.nbytes(), one.raw(), one.nbytes());
        }
      }
      sample.inputs.emplace_back(spec.name, whole);
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

}  // namespace

ModelSettings ResolveModelSettings(const inference::ModelConfig& config, bool config_present,
                                   const std::string& model_name, const Graph& model, const std::string& platform,
                                   const std::string& model_dir) {
  ModelSettings s;
  s.name = model_name;
  OF_CHECK(config.name().empty() || config.name() == model_name, kInvalidModel, "config names the model '",
           config.name(), "' but its directory is '", model_name, "'");
  OF_CHECK(config.max_batch_size() >= 0, kInvalidModel, "max_batch_size is negative (", config.max_batch_size(), ")");
  bool batchable = LeadsWithDynamicDim(model);
  if (config_present) {
    s.max_batch_size = config.max_batch_size();
    OF_CHECK(s.max_batch_size == 0 || batchable, kInvalidModel, "max_batch_size is ", s.max_batch_size,
             " but not every input and output of the model leads with a dynamic (batch) dimension");
    s.dynamic_batching = config.has_dynamic_batching() && s.max_batch_size > 0;
  } else {
    s.max_batch_size = batchable ? kDefaultMaxBatchSize : 0;
    s.dynamic_batching = batchable;
  }

  s.inputs = ResolveTensors(config.input(), model, model.inputs, s.max_batch_size, "input");
  s.outputs = ResolveTensors(config.output(), model, model.outputs, s.max_batch_size, "output");
  if (!model_dir.empty()) s.warmup = ResolveWarmup(config, s, model_dir);

  const inference::ModelDynamicBatching& db = config.dynamic_batching();
  for (int b : db.preferred_batch_size()) {
    OF_CHECK(b > 0 && b <= s.max_batch_size, kInvalidModel, "preferred_batch_size ", b,
             " is outside [1, max_batch_size = ", s.max_batch_size, "]");
    s.preferred_batch_sizes.push_back(b);
  }
  std::sort(s.preferred_batch_sizes.begin(), s.preferred_batch_sizes.end());
  s.max_queue_delay_us = db.max_queue_delay_microseconds();
  if (db.default_queue_policy().max_queue_size() > 0) s.max_queue_size = db.default_queue_policy().max_queue_size();
  s.default_timeout_us = db.default_queue_policy().default_timeout_microseconds();
  s.allow_timeout_override = !db.has_default_queue_policy() || db.default_queue_policy().allow_timeout_override();

  s.instance_count = 0;
  for (const inference::ModelInstanceGroup& g : config.instance_group()) {
    OF_CHECK(g.kind() != inference::ModelInstanceGroup::KIND_GPU, kUnsupported,
             "instance_group kind KIND_GPU: GPU serving is not supported yet; use KIND_CPU");
    OF_CHECK(g.count() >= 0 && g.count() <= 256, kInvalidModel, "instance_group count ", g.count(),
             " is outside [0, 256]");
    s.instance_count += g.count() > 0 ? g.count() : 1;
  }
  if (s.instance_count == 0) s.instance_count = 1;

  for (const auto& [key, value] : config.parameters()) s.parameters[key] = value.string_value();
  s.intra_op_threads = ParseIntParameter(s.parameters, "intra_op_threads", 0, 0, 1024);
  s.optimization_level = ParseIntParameter(s.parameters, "optimization_level", 2, 0, 2);
  if (s.parameters.count("placement")) {
    s.placement = s.parameters.at("placement");
    if (s.parameters.count("plan_mode")) s.plan_mode = s.parameters.at("plan_mode");
    OF_CHECK(s.plan_mode == "data" || s.plan_mode == "auto" || s.plan_mode == "manual", kInvalidModel,
             "config parameter 'plan_mode' is '", s.plan_mode, "'; expected data, auto or manual");
    OF_CHECK(s.instance_count == 1, kInvalidModel, "a sharded model (placement ", s.placement,
             ") runs as one instance over its devices; instance_group asks for ", s.instance_count);
  } else {
    OF_CHECK(!s.parameters.count("plan_mode"), kInvalidModel, "config parameter 'plan_mode' needs a 'placement'");
  }

  // The complete config, as Triton reports one: every field resolved.
  s.resolved = config;
  s.resolved.set_name(model_name);
  if (s.resolved.platform().empty() && s.resolved.backend().empty()) s.resolved.set_platform(platform);
  s.resolved.set_max_batch_size(s.max_batch_size);
  s.resolved.clear_input();
  for (const TensorSpec& t : s.inputs) {
    inference::ModelInput* in = s.resolved.add_input();
    in->set_name(t.name);
    in->set_data_type(static_cast<inference::DataType>(ConfigDataTypeOf(t.dtype)));
    for (int64_t d : t.dims) in->add_dims(d);
    in->set_optional(t.optional);
  }
  s.resolved.clear_output();
  for (const TensorSpec& t : s.outputs) {
    inference::ModelOutput* out = s.resolved.add_output();
    out->set_name(t.name);
    out->set_data_type(static_cast<inference::DataType>(ConfigDataTypeOf(t.dtype)));
    for (int64_t d : t.dims) out->add_dims(d);
  }
  if (s.dynamic_batching) {
    inference::ModelDynamicBatching* out = s.resolved.mutable_dynamic_batching();
    out->mutable_default_queue_policy()->set_max_queue_size(s.max_queue_size);
    out->mutable_default_queue_policy()->set_allow_timeout_override(s.allow_timeout_override);
  } else {
    s.resolved.clear_dynamic_batching();
  }
  if (s.resolved.instance_group_size() == 0) {
    inference::ModelInstanceGroup* g = s.resolved.add_instance_group();
    g->set_count(1);
    g->set_kind(inference::ModelInstanceGroup::KIND_CPU);
  }
  for (inference::ModelInstanceGroup& g : *s.resolved.mutable_instance_group()) {
    if (g.count() == 0) g.set_count(1);
    if (g.kind() == inference::ModelInstanceGroup::KIND_AUTO) g.set_kind(inference::ModelInstanceGroup::KIND_CPU);
    if (g.name().empty()) g.set_name(model_name);
  }
  if (!s.resolved.has_version_policy()) s.resolved.mutable_version_policy()->mutable_latest()->set_num_versions(1);
  return s;
}

}  // namespace serve
}  // namespace oneflow
