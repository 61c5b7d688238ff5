/* oneflow_c.h — the OneFlow engine's stable C ABI. This header is the whole public API: what is not
 * declared here is not API.
 *
 * CONVENTIONS
 *  - Every exported symbol starts with `oneflow_` (types with `oneflow_`, macros with `ONEFLOW_`).
 *  - Handles are opaque pointers. Each `*_create` / `*_load_*` has a matching `*_release`, which
 *    accepts NULL and does nothing with it.
 *  - A call that can fail returns `oneflow_status_t`: NULL means success; otherwise a status object
 *    the caller owns and frees with oneflow_status_free(). Its message names the problem.
 *  - Outputs come last, named `out_*`. On failure they are left unchanged; on success they hold
 *    new references owned by the caller.
 *  - Strings are UTF-8 and NUL-terminated. Strings returned by the library (names, messages) are
 *    owned by the object they came from and live as long as it does.
 *  - Option structs start with `struct_size`; fill them with the matching `*_init` function so a
 *    program built against this header keeps working with later libraries that add fields.
 *  - No C++ exception ever crosses this boundary; a failure inside the library becomes a status.
 *  - The ABI only grows: signatures never change; new behaviour arrives as new functions.
 *
 * THREAD SAFETY
 *  - Graphs and tensors are immutable after creation apart from tensor data the caller writes;
 *    read-only calls on them may run from any number of threads.
 *  - oneflow_session_run may be called concurrently on one session from many threads.
 *  - Releasing a handle while another thread uses it is undefined behaviour.
 *
 * EXAMPLE
 *    oneflow_graph_t* graph = NULL;
 *    oneflow_session_t* session = NULL;
 *    oneflow_status_t st = oneflow_graph_load_file("model.onnx", &graph);
 *    if (!st) st = oneflow_session_create(NULL, graph, NULL, &session);
 *    int64_t shape[2] = {1, 784};
 *    oneflow_tensor_t* x = NULL;
 *    if (!st) st = oneflow_tensor_create(ONEFLOW_DTYPE_F32, shape, 2, &x);
 *    const char* in_names[1] = {"input"};
 *    const oneflow_tensor_t* in[1] = {x};
 *    oneflow_tensor_t* out[1] = {NULL};
 *    if (!st) st = oneflow_session_run(session, in_names, in, 1, NULL, 0, out, 1);
 *    if (st) { fprintf(stderr, "%s\n", oneflow_status_message(st)); oneflow_status_free(st); }
 *    ... read oneflow_tensor_data(out[0]) ...
 *    oneflow_tensor_release(out[0]); oneflow_tensor_release(x);
 *    oneflow_session_release(session); oneflow_graph_release(graph);
 */
#ifndef ONEFLOW_C_H_
#define ONEFLOW_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define ONEFLOW_API __declspec(dllexport)
#else
#define ONEFLOW_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ------------------------------------------------------------------------------ */

/* The ABI version this header describes. Bumped when functions are added (never removed). */
#define ONEFLOW_API_VERSION 1

/* The library's version string, e.g. "0.1.0". Static storage; never NULL. */
ONEFLOW_API const char* oneflow_version(void);
/* The ABI version the loaded library implements (>= the header's when compatible). */
ONEFLOW_API uint32_t oneflow_api_version(void);

/* ---- Status -------------------------------------------------------------------------------- */

typedef enum oneflow_code_t {
  ONEFLOW_OK = 0,
  ONEFLOW_INVALID_ARGUMENT = 1, /* a value passed in is wrong: NULL, shape, dtype, name */
  ONEFLOW_NOT_FOUND = 2,        /* a named input, output or file does not exist */
  ONEFLOW_INVALID_MODEL = 3,    /* a model file or graph is malformed */
  ONEFLOW_UNSUPPORTED = 4,      /* an op, opset, dtype or attribute value not implemented */
  ONEFLOW_OUT_OF_MEMORY = 5,
  ONEFLOW_IO = 6,               /* a file could not be read or written */
  ONEFLOW_RUNTIME = 7,          /* a kernel failed on the data (e.g. an index out of range) */
  ONEFLOW_INTERNAL = 8          /* a bug in the engine; please report it with the message */
} oneflow_code_t;

typedef struct oneflow_status_s* oneflow_status_t; /* NULL means OK */

/* The status' code; ONEFLOW_OK for NULL. */
ONEFLOW_API oneflow_code_t oneflow_status_code(const struct oneflow_status_s* status);
/* The status' message; "" for NULL. Owned by the status. */
ONEFLOW_API const char* oneflow_status_message(const struct oneflow_status_s* status);
/* Frees a status. NULL-safe. */
ONEFLOW_API void oneflow_status_free(oneflow_status_t status);
/* A static name for a code, e.g. "INVALID_ARGUMENT". */
ONEFLOW_API const char* oneflow_code_name(oneflow_code_t code);

/* ---- Element types ------------------------------------------------------------------------- */

/* Values equal ONNX's TensorProto.DataType. */
typedef enum oneflow_dtype_t {
  ONEFLOW_DTYPE_UNDEFINED = 0,
  ONEFLOW_DTYPE_F32 = 1,
  ONEFLOW_DTYPE_U8 = 2,
  ONEFLOW_DTYPE_I8 = 3,
  ONEFLOW_DTYPE_U16 = 4,
  ONEFLOW_DTYPE_I16 = 5,
  ONEFLOW_DTYPE_I32 = 6,
  ONEFLOW_DTYPE_I64 = 7,
  ONEFLOW_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  ONEFLOW_DTYPE_F16 = 10,
  ONEFLOW_DTYPE_F64 = 11,
  ONEFLOW_DTYPE_U32 = 12,
  ONEFLOW_DTYPE_U64 = 13,
  ONEFLOW_DTYPE_BF16 = 16
} oneflow_dtype_t;

/* Bytes per element; 0 for an unknown dtype. */
ONEFLOW_API size_t oneflow_dtype_size(oneflow_dtype_t dtype);
/* A static name, e.g. "float32"; "undefined" for an unknown dtype. */
ONEFLOW_API const char* oneflow_dtype_name(oneflow_dtype_t dtype);

/* ---- Environment --------------------------------------------------------------------------- */

/* An environment holds process-wide state shared by sessions (devices and, later, the
 * distributed context). Optional today: passing NULL where an env is accepted uses a default. */
typedef struct oneflow_env_s oneflow_env_t;

ONEFLOW_API oneflow_status_t oneflow_env_create(oneflow_env_t** out_env);
/* Sessions keep what they need of the env; it may be released before them. NULL-safe. */
ONEFLOW_API void oneflow_env_release(oneflow_env_t* env);

/* ---- Tensors ------------------------------------------------------------------------------- */

/* A dense row-major tensor in host memory. */
typedef struct oneflow_tensor_s oneflow_tensor_t;

/* Creates a tensor that owns zero-filled, 64-byte-aligned memory. `shape` may be NULL when
 * rank is 0 (a scalar). Dims must be >= 0; zero-sized tensors are allowed. */
ONEFLOW_API oneflow_status_t oneflow_tensor_create(oneflow_dtype_t dtype, const int64_t* shape, size_t rank,
                                                   oneflow_tensor_t** out_tensor);

/* Called when the library no longer references a borrowed buffer. */
typedef void (*oneflow_deleter_fn)(void* data, void* user_data);

/* Creates a tensor that views the caller's `data` without copying. `byte_size` must be at least
 * the tensor's size. The buffer must stay valid until `deleter` is called (with `data` and
 * `user_data`), which happens when the last reference goes away — the tensor's release and any
 * session still reading it. `deleter` may be NULL: then the caller keeps the buffer alive for
 * as long as the tensor and every run using it. `data` may be NULL only for zero-sized tensors. */
ONEFLOW_API oneflow_status_t oneflow_tensor_create_borrowed(oneflow_dtype_t dtype, const int64_t* shape,
                                                            size_t rank, void* data, size_t byte_size,
                                                            oneflow_deleter_fn deleter, void* user_data,
                                                            oneflow_tensor_t** out_tensor);

/* Releases a tensor handle. NULL-safe. */
ONEFLOW_API void oneflow_tensor_release(oneflow_tensor_t* tensor);

/* Accessors. `tensor` must not be NULL (they return 0/NULL for NULL rather than crash). */
ONEFLOW_API oneflow_dtype_t oneflow_tensor_dtype(const oneflow_tensor_t* tensor);
ONEFLOW_API size_t oneflow_tensor_rank(const oneflow_tensor_t* tensor);
/* The dims; an array of rank entries owned by the tensor (NULL for rank 0). */
ONEFLOW_API const int64_t* oneflow_tensor_shape(const oneflow_tensor_t* tensor);
ONEFLOW_API int64_t oneflow_tensor_element_count(const oneflow_tensor_t* tensor);
ONEFLOW_API size_t oneflow_tensor_byte_size(const oneflow_tensor_t* tensor);
/* The data pointer (64-byte aligned for owned tensors). The caller may write through it, but
 * not while a run reads the tensor. Valid until the tensor is released. */
ONEFLOW_API void* oneflow_tensor_data(const oneflow_tensor_t* tensor);

/* ---- Graphs (loaded models) ---------------------------------------------------------------- */

typedef struct oneflow_graph_s oneflow_graph_t;

/* Loads an ONNX model from a file. External data files are resolved relative to the model's
 * directory and must stay inside it. */
ONEFLOW_API oneflow_status_t oneflow_graph_load_file(const char* path, oneflow_graph_t** out_graph);

/* Loads an ONNX model from memory; the bytes are copied, so `data` may be freed on return.
 * `external_data_dir` (nullable) is where external data files live; when NULL a model that
 * references external data is refused. */
ONEFLOW_API oneflow_status_t oneflow_graph_load_memory(const void* data, size_t size, const char* external_data_dir,
                                                       oneflow_graph_t** out_graph);

/* Releases a graph. Sessions created from it keep their own copy. NULL-safe. */
ONEFLOW_API void oneflow_graph_release(oneflow_graph_t* graph);

/* Describes one graph input or output. Pointers are owned by the graph. */
typedef struct oneflow_value_info_t {
  size_t struct_size;          /* set by oneflow_value_info_init */
  const char* name;
  oneflow_dtype_t dtype;
  int64_t rank;                /* -1 when the rank is unknown */
  const int64_t* dims;         /* rank entries; -1 for a dynamic dim */
  const char* const* dim_names;/* rank entries: the symbolic name of a dynamic dim, or NULL */
} oneflow_value_info_t;

ONEFLOW_API void oneflow_value_info_init(oneflow_value_info_t* info);

ONEFLOW_API size_t oneflow_graph_input_count(const oneflow_graph_t* graph);
ONEFLOW_API size_t oneflow_graph_output_count(const oneflow_graph_t* graph);
/* Fills `out_info` (initialized with oneflow_value_info_init) for input/output `index`. */
ONEFLOW_API oneflow_status_t oneflow_graph_get_input_info(const oneflow_graph_t* graph, size_t index,
                                                          oneflow_value_info_t* out_info);
ONEFLOW_API oneflow_status_t oneflow_graph_get_output_info(const oneflow_graph_t* graph, size_t index,
                                                           oneflow_value_info_t* out_info);

/* ---- Sessions ------------------------------------------------------------------------------ */

typedef struct oneflow_session_s oneflow_session_t;

typedef struct oneflow_session_options_t {
  size_t struct_size;         /* set by oneflow_session_options_init */
  int32_t intra_op_threads;   /* threads per run; 0 (default) = one per core */
  int32_t optimization_level; /* 0 none; 1 constant folding + dead code; 2 (default) + fusions */
} oneflow_session_options_t;

ONEFLOW_API void oneflow_session_options_init(oneflow_session_options_t* options);

/* Compiles `graph` into a session: validates it, optimizes a copy, plans memory and creates every
 * kernel (so an unsupported op fails here, not in a run). `env` and `options` may be NULL
 * (defaults). The graph may be released afterwards. */
ONEFLOW_API oneflow_status_t oneflow_session_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                    const oneflow_session_options_t* options,
                                                    oneflow_session_t** out_session);

/* Releases a session. NULL-safe. Must not race with a run on the same session. */
ONEFLOW_API void oneflow_session_release(oneflow_session_t* session);

/* Runs inference. Inputs are matched by name (`input_names[i]` feeds `inputs[i]`); every graph
 * input must be fed once. `output_names` selects outputs in the order wanted; when it is NULL
 * (with num_output_names 0) all graph outputs are returned in declaration order.
 * `out_outputs` must have room for `out_capacity` handles, at least the number of outputs
 * returned; on success each entry is a new tensor owned by the caller (release each). Outputs
 * never alias inputs or engine memory. Inputs are only read and may be borrowed tensors.
 * Thread-safe: several threads may run one session at once. */
ONEFLOW_API oneflow_status_t oneflow_session_run(oneflow_session_t* session, const char* const* input_names,
                                                 const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                                 const char* const* output_names, size_t num_output_names,
                                                 oneflow_tensor_t** out_outputs, size_t out_capacity);

/* The arena size of the session's current static memory plan: all intermediate tensors of a run
 * for the most recently used input shapes (0 before the first run when shapes are dynamic). */
ONEFLOW_API oneflow_status_t oneflow_session_get_planned_peak_bytes(const oneflow_session_t* session,
                                                                    uint64_t* out_bytes);

/* The session's graph inputs and outputs are those of the graph it was created from. */
ONEFLOW_API size_t oneflow_session_input_count(const oneflow_session_t* session);
ONEFLOW_API size_t oneflow_session_output_count(const oneflow_session_t* session);
ONEFLOW_API oneflow_status_t oneflow_session_get_input_info(const oneflow_session_t* session, size_t index,
                                                            oneflow_value_info_t* out_info);
ONEFLOW_API oneflow_status_t oneflow_session_get_output_info(const oneflow_session_t* session, size_t index,
                                                             oneflow_value_info_t* out_info);

/* ---- Global tensors: plans over placements, in-process devices (docs/distributed.md) --------- */

/* How to plan a model as global tensors. Strings are borrowed for the duration of the call only. */
typedef struct oneflow_plan_options_t {
  size_t struct_size;             /* set by oneflow_plan_options_init */
  const char* placement;          /* required: "cpu:0-3", "cpu:[[0,1],[2,3]]", ... */
  const char* mode;               /* "data" (the default when NULL), "manual" or "auto" */
  const char* const* shape_specs; /* "NAME=8x784": concrete shapes of inputs with symbolic dims */
  size_t num_shape_specs;
  const char* const* sbp_specs;   /* "VALUE=SBP" annotations, e.g. "fc.weight=S(1)", "input=(S(0),B)" */
  size_t num_sbp_specs;
  int64_t memory_budget_bytes;    /* per device; 0 = unlimited */
  double flops_per_s;             /* cost model per device; 0 = default (50e9) */
  double link_bytes_per_s;        /* 0 = default (10e9) */
  double link_latency_s;          /* 0 = default (10e-6) */
  int32_t num_devices;            /* in-process virtual CPU devices; 0 = enough for the placement */
  int32_t threads_per_device;     /* intra-op threads per device; 0 = 1 */
  const char* backend;            /* sessions: "in-process" (NULL) or "gloo" (this process is one rank
                                   * of a job started by `oneflow launch`, mpirun or srun) */
} oneflow_plan_options_t;

ONEFLOW_API void oneflow_plan_options_init(oneflow_plan_options_t* options);

/* Plans `graph` under `options` and returns the explanation as JSON in `*out_json` (per op the SBP
 * chosen, each collective with bytes and estimated time, memory per device, estimated step time;
 * the same document as `oneflow plan --json`). The caller frees it with oneflow_string_free.
 * Errors: a placement naming devices that do not exist, SBP not fitting a shape, symbolic input
 * shapes without a shape_spec, no plan within the memory budget. Thread-safe. */
ONEFLOW_API oneflow_status_t oneflow_plan_explain(const oneflow_graph_t* graph, const oneflow_plan_options_t* options,
                                                  char** out_json);

/* Frees a string returned by the library. NULL-safe. */
ONEFLOW_API void oneflow_string_free(char* str);

/* A session running `graph` as global tensors on in-process virtual CPU devices (one thread per
 * device, collectives in shared memory). Created from a graph, session options (may be NULL) and
 * plan options (required); the graph may be released afterwards. */
typedef struct oneflow_dist_session_s oneflow_dist_session_t;

ONEFLOW_API oneflow_status_t oneflow_dist_session_create(const oneflow_graph_t* graph,
                                                         const oneflow_session_options_t* session_options,
                                                         const oneflow_plan_options_t* plan_options,
                                                         oneflow_dist_session_t** out_session);

/* Releases a distributed session. NULL-safe. Must not race with a run on it. */
ONEFLOW_API void oneflow_dist_session_release(oneflow_dist_session_t* session);

/* As oneflow_session_run, with whole (logical) input and output tensors; runs on one session are
 * serialized internally, so calling from several threads is safe. */
ONEFLOW_API oneflow_status_t oneflow_dist_session_run(oneflow_dist_session_t* session, const char* const* input_names,
                                                      const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                                      const char* const* output_names, size_t num_output_names,
                                                      oneflow_tensor_t** out_outputs, size_t out_capacity);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONEFLOW_C_H_ */
