// The C ABI: thin wrappers that validate pointers, convert types and turn exceptions into statuses.
#include "oneflow_c.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "c_api/c_api_internal.h"
#include "serialize/model_io.h"

#ifndef ONEFLOW_VERSION_STRING
#define ONEFLOW_VERSION_STRING "0.0.0"
#endif

using namespace oneflow::capi;

namespace {

// A dtype argument named `what`, validated: ONEFLOW_INVALID_ARGUMENT naming it and the value.
// ONEFLOW_DTYPE_STRING only where `strings_allowed` (the calls that make a tensor of its own).
DType ReadDType(const oneflow_dtype_t& dtype, const char* what, bool strings_allowed = false) {
  const int32_t raw = RawEnum(dtype);
  if (raw == ONEFLOW_DTYPE_STRING) {
    OF_REQUIRE(strings_allowed, what, ": string tensors have no byte buffer to borrow; use oneflow_tensor_create_strings");
    return DType::kString;
  }
  OF_REQUIRE(IsKnownDType(raw), what, ": unknown dtype ", raw, " (not a oneflow_dtype_t value)");
  return static_cast<DType>(raw);
}

}  // namespace

extern "C" {

const char* oneflow_version(void) { return ONEFLOW_VERSION_STRING; }
uint32_t oneflow_api_version(void) { return ONEFLOW_API_VERSION; }

oneflow_code_t oneflow_status_code(const struct oneflow_status_s* status) {
  return status ? status->code : ONEFLOW_OK;
}
const char* oneflow_status_message(const struct oneflow_status_s* status) {
  return status ? status->message.c_str() : "";
}
void oneflow_status_free(oneflow_status_t status) {
  if (status != &g_oom_status) delete status;
}
// ErrorCode has int as its fixed underlying type: any int converts to it (unknown ones name "UNKNOWN").
const char* oneflow_code_name(oneflow_code_t code) { return ErrorCodeName(static_cast<ErrorCode>(RawEnum(code))); }

size_t oneflow_dtype_size(oneflow_dtype_t dtype) {
  const int32_t raw = RawEnum(dtype);
  return IsKnownDType(raw) ? DTypeSize(static_cast<DType>(raw)) : 0;
}
const char* oneflow_dtype_name(oneflow_dtype_t dtype) {
  const int32_t raw = RawEnum(dtype);
  return IsKnownDType(raw) || raw == ONEFLOW_DTYPE_STRING ? DTypeName(static_cast<DType>(raw)) : "undefined";
}

oneflow_status_t oneflow_env_create(oneflow_env_t** out_env) { return oneflow_env_create_with_options(nullptr, out_env); }

oneflow_status_t oneflow_env_options_init_sized(oneflow_env_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_env_options_t", [](oneflow_env_options_t& o) {
    o.shared_thread_pool = 0;
    o.intra_op_threads = 0;
  });
}

oneflow_status_t oneflow_env_create_with_options(const oneflow_env_options_t* options, oneflow_env_t** out_env) {
  return Guard([&] {
    OF_REQUIRE(out_env != nullptr, "out_env is NULL");
    auto env = std::make_unique<oneflow_env_s>();
    if (options != nullptr) {
      CheckSizedInput(options, "env options", "oneflow_env_options_init");
      OF_REQUIRE(options->shared_thread_pool == 0 || options->shared_thread_pool == 1,
                 "env options: shared_thread_pool is ", options->shared_thread_pool, "; expected 0 or 1");
      OF_REQUIRE(options->intra_op_threads >= 0 && options->intra_op_threads <= 1024,
                 "env options: intra_op_threads must be in [0, 1024], got ", options->intra_op_threads);
      if (options->shared_thread_pool) env->pool = std::make_shared<ThreadPool>(options->intra_op_threads);
    }
    *out_env = env.release();
  });
}
void oneflow_env_release(oneflow_env_t* env) { delete env; }

oneflow_status_t oneflow_tensor_create(oneflow_dtype_t dtype, const int64_t* shape, size_t rank,
                                       oneflow_tensor_t** out_tensor) {
  return Guard([&] {
    OF_REQUIRE(out_tensor != nullptr, "out_tensor is NULL");
    auto t = std::make_unique<oneflow_tensor_s>();
    t->tensor = Tensor(ReadDType(dtype, "dtype", true), ToShape(shape, rank));
    *out_tensor = t.release();
  });
}

oneflow_status_t oneflow_tensor_create_strings(const int64_t* shape, size_t rank, const char* const* data,
                                               const size_t* lengths, oneflow_tensor_t** out_tensor) {
  return Guard([&] {
    OF_REQUIRE(out_tensor != nullptr, "out_tensor is NULL");
    Tensor strings(DType::kString, ToShape(shape, rank));
    OF_REQUIRE(data != nullptr || strings.numel() == 0, "data is NULL for ", strings.numel(), " strings");
    std::string* dst = strings.strings();
    for (int64_t i = 0; i < strings.numel(); ++i) {
      const char* s = data[i];
      OF_REQUIRE(s != nullptr || (lengths && lengths[i] == 0), "data[", i, "] is NULL");
      if (s) dst[i] = lengths ? std::string(s, lengths[i]) : std::string(s);
    }
    auto t = std::make_unique<oneflow_tensor_s>();
    t->tensor = std::move(strings);
    *out_tensor = t.release();
  });
}

oneflow_status_t oneflow_tensor_string_element(const oneflow_tensor_t* tensor, int64_t index, const char** out_data,
                                               size_t* out_length) {
  return Guard([&] {
    OF_REQUIRE(tensor != nullptr, "tensor is NULL");
    OF_REQUIRE(out_data != nullptr && out_length != nullptr, "out_data or out_length is NULL");
    OF_REQUIRE(tensor->tensor.is_tensor() && tensor->tensor.dtype() == DType::kString, "not a string tensor: ",
               DescribeValue(tensor->tensor));
    OF_REQUIRE(index >= 0 && index < tensor->tensor.numel(), "index ", index, " is out of range for ",
               DescribeValue(tensor->tensor));
    const std::string& s = tensor->tensor.strings()[index];
    *out_data = s.c_str();
    *out_length = s.size();
  });
}

oneflow_status_t oneflow_tensor_create_borrowed(oneflow_dtype_t dtype, const int64_t* shape, size_t rank, void* data,
                                                size_t byte_size, oneflow_deleter_fn deleter, void* user_data,
                                                oneflow_tensor_t** out_tensor) {
  return Guard([&] {
    OF_REQUIRE(out_tensor != nullptr, "out_tensor is NULL");
    DType dt = ReadDType(dtype, "dtype");
    Shape s = ToShape(shape, rank);
    size_t needed = static_cast<size_t>(NumElements(s)) * DTypeSize(dt);
    OF_REQUIRE(data != nullptr || needed == 0, "data is NULL for a tensor of ", needed, " bytes");
    OF_REQUIRE(byte_size >= needed, "buffer of ", byte_size, " bytes is too small for ", DTypeName(dt),
               ShapeToString(s), " (", needed, " bytes)");
    std::function<void()> release;
    if (deleter) release = [deleter, data, user_data] { deleter(data, user_data); };
    auto t = std::make_unique<oneflow_tensor_s>();
    t->tensor = Tensor(dt, s, Storage::Borrow(data, byte_size, std::move(release)));
    *out_tensor = t.release();
  });
}

void oneflow_tensor_release(oneflow_tensor_t* tensor) { delete tensor; }

oneflow_dtype_t oneflow_tensor_dtype(const oneflow_tensor_t* t) {
  return t ? static_cast<oneflow_dtype_t>(t->tensor.dtype()) : ONEFLOW_DTYPE_UNDEFINED;
}
size_t oneflow_tensor_rank(const oneflow_tensor_t* t) { return t ? t->tensor.shape().size() : 0; }
const int64_t* oneflow_tensor_shape(const oneflow_tensor_t* t) {
  return t && !t->tensor.shape().empty() ? t->tensor.shape().data() : nullptr;
}
int64_t oneflow_tensor_element_count(const oneflow_tensor_t* t) { return t ? t->tensor.numel() : 0; }
// A string tensor's elements are objects, not a byte layout a caller could read or write.
static bool HasBytes(const oneflow_tensor_t* t) { return t && t->tensor.dtype() != DType::kString; }
size_t oneflow_tensor_byte_size(const oneflow_tensor_t* t) { return HasBytes(t) ? t->tensor.nbytes() : 0; }
void* oneflow_tensor_data(const oneflow_tensor_t* t) { return HasBytes(t) ? t->tensor.raw() : nullptr; }

oneflow_status_t oneflow_tensor_create_sequence(oneflow_dtype_t elem_dtype, const oneflow_tensor_t* const* elements,
                                                size_t count, oneflow_tensor_t** out_sequence) {
  return Guard([&] {
    OF_REQUIRE(out_sequence != nullptr, "out_sequence is NULL");
    OF_REQUIRE(elements != nullptr || count == 0, "elements is NULL for ", count, " elements");
    const DType dtype = ReadDType(elem_dtype, "elem_dtype", true);
    std::vector<Tensor> items;
    items.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      const oneflow_tensor_t* e = elements[i];
      OF_REQUIRE(e != nullptr, "elements[", i, "] is NULL");
      OF_REQUIRE(e->device == ONEFLOW_DEVICE_CPU, "elements[", i, "] is a CUDA device tensor; sequences hold host tensors");
      OF_REQUIRE(e->tensor.is_tensor(), "elements[", i, "] is ", DescribeValue(e->tensor), "; sequences hold tensors");
      OF_REQUIRE(e->tensor.dtype() == dtype, "elements[", i, "] is ", DescribeValue(e->tensor), " in a sequence of ",
                 DTypeName(dtype));
      items.push_back(e->tensor);
    }
    auto t = std::make_unique<oneflow_tensor_s>();
    t->tensor = Tensor::Sequence(dtype, std::move(items));
    *out_sequence = t.release();
  });
}

oneflow_status_t oneflow_tensor_create_none(oneflow_dtype_t elem_dtype, oneflow_tensor_t** out_none) {
  return Guard([&] {
    OF_REQUIRE(out_none != nullptr, "out_none is NULL");
    const DType dtype = elem_dtype == ONEFLOW_DTYPE_UNDEFINED ? DType::kUndefined : ReadDType(elem_dtype, "elem_dtype", true);
    auto t = std::make_unique<oneflow_tensor_s>();
    t->tensor = Tensor::None(dtype);
    *out_none = t.release();
  });
}

oneflow_value_kind_t oneflow_tensor_kind(const oneflow_tensor_t* t) {
  if (!t) return ONEFLOW_VALUE_TENSOR;
  switch (t->tensor.kind()) {
    case ValueKind::kSequence: return ONEFLOW_VALUE_SEQUENCE;
    case ValueKind::kNone: return ONEFLOW_VALUE_NONE;
    case ValueKind::kTensor: break;
  }
  return ONEFLOW_VALUE_TENSOR;
}

size_t oneflow_tensor_sequence_length(const oneflow_tensor_t* t) { return t ? t->tensor.elements().size() : 0; }

oneflow_status_t oneflow_tensor_sequence_element(const oneflow_tensor_t* sequence, size_t index,
                                                 oneflow_tensor_t** out_element) {
  return Guard([&] {
    OF_REQUIRE(sequence != nullptr, "sequence is NULL");
    OF_REQUIRE(out_element != nullptr, "out_element is NULL");
    OF_REQUIRE(sequence->tensor.is_sequence(), "the handle holds ", DescribeValue(sequence->tensor), ", not a sequence");
    const std::vector<Tensor>& items = sequence->tensor.elements();
    OF_REQUIRE(index < items.size(), "index ", index, " is out of range for a sequence of ", items.size());
    auto t = std::make_unique<oneflow_tensor_s>();
    t->tensor = items[index];
    *out_element = t.release();
  });
}

oneflow_status_t oneflow_graph_load_file(const char* path, oneflow_graph_t** out_graph) {
  return Guard([&] {
    OF_REQUIRE(path != nullptr, "path is NULL");
    OF_REQUIRE(out_graph != nullptr, "out_graph is NULL");
    *out_graph = WrapGraph(LoadModelFile(path));
  });
}

oneflow_status_t oneflow_graph_load_memory(const void* data, size_t size, const char* external_data_dir,
                                           oneflow_graph_t** out_graph) {
  return Guard([&] {
    OF_REQUIRE(data != nullptr, "data is NULL");
    OF_REQUIRE(out_graph != nullptr, "out_graph is NULL");
    *out_graph = WrapGraph(LoadModelMemory(data, size, external_data_dir ? external_data_dir : ""));
  });
}

void oneflow_graph_release(oneflow_graph_t* graph) { delete graph; }

oneflow_status_t oneflow_value_info_init_sized(oneflow_value_info_t* info, size_t struct_size) {
  return InitSizedStruct(info, struct_size, "oneflow_value_info_t", [](oneflow_value_info_t&) {});
}

size_t oneflow_graph_input_count(const oneflow_graph_t* g) { return g ? g->io.inputs.names.size() : 0; }
size_t oneflow_graph_output_count(const oneflow_graph_t* g) { return g ? g->io.outputs.names.size() : 0; }

static oneflow_status_t GetInfo(const IoInfo* io, bool input, size_t index, oneflow_value_info_t* out) {
  return Guard([&] {
    OF_REQUIRE(io != nullptr, "handle is NULL");
    CheckInfoStruct(out);
    const ValueInfoStore& store = input ? io->inputs : io->outputs;
    OF_REQUIRE(index < store.names.size(), input ? "input" : "output", " index ", index, " is out of range (",
               store.names.size(), " ", input ? "inputs" : "outputs", ")");
    store.Fill(index, out);
  });
}

oneflow_status_t oneflow_graph_get_input_info(const oneflow_graph_t* g, size_t i, oneflow_value_info_t* out) {
  return GetInfo(g ? &g->io : nullptr, true, i, out);
}
oneflow_status_t oneflow_graph_get_output_info(const oneflow_graph_t* g, size_t i, oneflow_value_info_t* out) {
  return GetInfo(g ? &g->io : nullptr, false, i, out);
}

oneflow_status_t oneflow_session_options_init_sized(oneflow_session_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_session_options_t", [](oneflow_session_options_t& o) {
    o.intra_op_threads = 0;
    o.optimization_level = 2;
  });
}

oneflow_status_t oneflow_session_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                        const oneflow_session_options_t* options, oneflow_session_t** out_session) {
  return Guard([&] {
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(out_session != nullptr, "out_session is NULL");
    SessionOptions opts = ReadSessionOptions(options);
    ApplyEnv(env, opts.intra_op_threads, opts.pool);
    auto h = std::make_unique<oneflow_session_s>();
    h->session = std::make_unique<Session>(*graph->graph, opts);
    h->io.Build(h->session->model());
    *out_session = h.release();
  });
}

void oneflow_session_release(oneflow_session_t* session) { delete session; }

oneflow_status_t oneflow_session_run(oneflow_session_t* session, const char* const* input_names,
                                     const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                     const char* const* output_names, size_t num_output_names,
                                     oneflow_tensor_t** out_outputs, size_t out_capacity) {
  return Guard([&] {
    OF_REQUIRE(session != nullptr, "session is NULL");
    RunArguments args = ReadRunArguments(input_names, inputs, num_inputs, output_names, num_output_names, out_outputs);
    size_t expected = num_output_names        ? num_output_names
                      : session->training ? session->training->DefaultFetchCount(session->mode)
                                          : session->session->optimized().outputs.size();
    CheckOutputCapacity(out_capacity, expected);
    auto results = session->training ? session->training->Run(args.feeds, args.fetches, session->mode)
                                     : session->session->Run(args.feeds, args.fetches);
    HandOutOutputs(results, out_outputs);
  });
}

oneflow_status_t oneflow_session_get_planned_peak_bytes(const oneflow_session_t* session, uint64_t* out_bytes) {
  return Guard([&] {
    OF_REQUIRE(session != nullptr, "session is NULL");
    OF_REQUIRE(out_bytes != nullptr, "out_bytes is NULL");
    *out_bytes = session->training ? session->training->memory().peak() : session->session->planned_peak_bytes();
  });
}

size_t oneflow_session_input_count(const oneflow_session_t* s) { return s ? s->io.inputs.names.size() : 0; }
size_t oneflow_session_output_count(const oneflow_session_t* s) { return s ? s->io.outputs.names.size() : 0; }
oneflow_status_t oneflow_session_get_input_info(const oneflow_session_t* s, size_t i, oneflow_value_info_t* out) {
  return GetInfo(s ? &s->io : nullptr, true, i, out);
}
oneflow_status_t oneflow_session_get_output_info(const oneflow_session_t* s, size_t i, oneflow_value_info_t* out) {
  return GetInfo(s ? &s->io : nullptr, false, i, out);
}

}  // extern "C"
