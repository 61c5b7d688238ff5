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
 *  - Option and info structs start with `struct_size`. Fill each with its `*_init` macro, which
 *    passes the caller's sizeof to `*_init_sized`: the library then writes no byte past the
 *    caller's struct and reads only the fields its size covers, so a program built against this
 *    header keeps working with later libraries whose structs have grown, and a field set by a
 *    program built against a newer header is refused (ONEFLOW_UNSUPPORTED), never ignored.
 *  - No C++ exception ever crosses this boundary; a failure inside the library becomes a status.
 *  - ABI_VERSIONING: every declaration says the ABI version that added it (ONEFLOW_API_SINCE(n) on
 *    functions, an "ABI n" comment on types). From ABI 3 on the ABI only grows: no symbol is
 *    removed and no signature or struct field changes; structs grow only at their end; changed
 *    behaviour arrives as a new function with a `_v2` suffix. tests/abi checks the built library
 *    against the committed baseline (docs/abi.md).
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

/* The ABI version this header describes: 1 inference; 2 model saving and the native format,
 * training, global-tensor plans; 3 struct sizes passed by the caller (`*_init_sized`, behind the
 * `*_init` macros), CUDA devices and device sessions, the distributed trainer, the inference
 * server; 4 the narrow storage dtypes (oneflow_dtype_t 17 to 26); 5 sequences and optionals (values
 * of ONNX's two non-tensor kinds, and oneflow_value_info_t.kind); 6 string tensors
 * (ONEFLOW_DTYPE_STRING, oneflow_tensor_create_strings, oneflow_tensor_string_element). Bumped when
 * declarations or enum values are added. */
#define ONEFLOW_API_VERSION 6

/* Marks an exported function with the ABI version that added it. */
#define ONEFLOW_API_SINCE(abi_version) ONEFLOW_API

/* The library's version string, e.g. "0.1.0". Static storage; never NULL. */
ONEFLOW_API_SINCE(1) const char* oneflow_version(void);
/* The ABI version the loaded library implements (>= the header's when compatible). */
ONEFLOW_API_SINCE(1) uint32_t oneflow_api_version(void);

/* ---- Status -------------------------------------------------------------------------------- */

typedef enum oneflow_code_t { /* ABI 1 */
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

typedef struct oneflow_status_s* oneflow_status_t; /* ABI 1; NULL means OK */

/* The status' code; ONEFLOW_OK for NULL. */
ONEFLOW_API_SINCE(1) oneflow_code_t oneflow_status_code(const struct oneflow_status_s* status);
/* The status' message; "" for NULL. Owned by the status. */
ONEFLOW_API_SINCE(1) const char* oneflow_status_message(const struct oneflow_status_s* status);
/* Frees a status. NULL-safe. */
ONEFLOW_API_SINCE(1) void oneflow_status_free(oneflow_status_t status);
/* A static name for a code, e.g. "INVALID_ARGUMENT". */
ONEFLOW_API_SINCE(1) const char* oneflow_code_name(oneflow_code_t code);

/* Frees a string returned by the library. NULL-safe. */
ONEFLOW_API_SINCE(2) void oneflow_string_free(char* str);

/* ---- Element types ------------------------------------------------------------------------- */

/* Values equal ONNX's TensorProto.DataType. */
typedef enum oneflow_dtype_t { /* ABI 1 */
  ONEFLOW_DTYPE_UNDEFINED = 0,
  ONEFLOW_DTYPE_F32 = 1,
  ONEFLOW_DTYPE_U8 = 2,
  ONEFLOW_DTYPE_I8 = 3,
  ONEFLOW_DTYPE_U16 = 4,
  ONEFLOW_DTYPE_I16 = 5,
  ONEFLOW_DTYPE_I32 = 6,
  ONEFLOW_DTYPE_I64 = 7,
  ONEFLOW_DTYPE_STRING = 8, /* ABI 6: byte strings, see "String tensors" below */
  ONEFLOW_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  ONEFLOW_DTYPE_F16 = 10,
  ONEFLOW_DTYPE_F64 = 11,
  ONEFLOW_DTYPE_U32 = 12,
  ONEFLOW_DTYPE_U64 = 13,
  ONEFLOW_DTYPE_BF16 = 16,
  /* ABI 4. Narrow storage types: no arithmetic, only casts, (de)quantization and data movement. In
   * tensors they take ONE BYTE PER ELEMENT, as numpy's ml_dtypes holds them: a 4- or 2-bit integer
   * is its value in an int8/uint8 byte, a float4e2m1 its code in the low nibble (only ONNX files
   * pack them). A library older than ABI 4 reports oneflow_dtype_size() == 0 for them. */
  ONEFLOW_DTYPE_F8E4M3FN = 17,
  ONEFLOW_DTYPE_F8E4M3FNUZ = 18,
  ONEFLOW_DTYPE_F8E5M2 = 19,
  ONEFLOW_DTYPE_F8E5M2FNUZ = 20,
  ONEFLOW_DTYPE_U4 = 21,
  ONEFLOW_DTYPE_I4 = 22,
  ONEFLOW_DTYPE_F4E2M1 = 23,
  ONEFLOW_DTYPE_F8E8M0 = 24,
  ONEFLOW_DTYPE_U2 = 25,
  ONEFLOW_DTYPE_I2 = 26
} oneflow_dtype_t;

/* Bytes per element; 0 for an unknown dtype. */
ONEFLOW_API_SINCE(1) size_t oneflow_dtype_size(oneflow_dtype_t dtype);
/* A static name, e.g. "float32"; "undefined" for an unknown dtype. */
ONEFLOW_API_SINCE(1) const char* oneflow_dtype_name(oneflow_dtype_t dtype);

/* ---- Devices: where sessions run and tensors live --------------------------------------------
 * The CUDA backend (docs/cuda.md). A library built without CUDA (ONEFLOW_WITH_CUDA=OFF) still has
 * these functions: it reports no device. All of them are thread-safe. */

/* Writes the number of CUDA devices this process can use to `*out_count` (non-NULL) and returns
 * OK; 0 when there is none, no driver, or the library was built without CUDA. `reason` (may be
 * NULL) receives why there is none, as a NUL-terminated string truncated to `reason_capacity`
 * bytes ("" when devices exist). Never fails except for a NULL `out_count`. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_cuda_device_count(int32_t* out_count, char* reason, size_t reason_capacity);

typedef struct oneflow_cuda_device_info_t { /* ABI 3 */
  size_t struct_size;         /* set by oneflow_cuda_device_info_init */
  char name[256];             /* e.g. "NVIDIA H200", NUL-terminated */
  int32_t major, minor;       /* compute capability (9.0 for Hopper) */
  uint64_t total_memory;      /* bytes of device memory */
  int32_t multiprocessors;    /* streaming multiprocessors */
} oneflow_cuda_device_info_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_cuda_device_info_init_sized(oneflow_cuda_device_info_t* info, size_t struct_size);
#define oneflow_cuda_device_info_init(info) oneflow_cuda_device_info_init_sized((info), sizeof(*(info)))
/* Fills `out_info` (initialized with oneflow_cuda_device_info_init) for device `index`. Fails with
 * ONEFLOW_UNSUPPORTED "no CUDA device: <reason>" when there is none (or without CUDA), and with
 * ONEFLOW_INVALID_ARGUMENT for an index out of range. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_cuda_get_device_info(int32_t index, oneflow_cuda_device_info_t* out_info);

/* Where a session runs. */
typedef enum oneflow_device_kind_t { /* ABI 3 */
  ONEFLOW_DEVICE_CPU = 0,
  ONEFLOW_DEVICE_CUDA = 1
} oneflow_device_kind_t;

/* How a CUDA session uses CUDA graphs: AUTO (default) captures a run into a graph when every
 * input dim of the model is static and the whole run stays on the device; ON does so for any
 * shapes (one graph per set of input shapes, at most 16); OFF never. A graph is captured on the
 * second run of a shape set and replayed from the third. */
typedef enum oneflow_cuda_graph_mode_t { /* ABI 3 */
  ONEFLOW_CUDA_GRAPHS_AUTO = 0,
  ONEFLOW_CUDA_GRAPHS_ON = 1,
  ONEFLOW_CUDA_GRAPHS_OFF = 2
} oneflow_cuda_graph_mode_t;

/* ---- Environment: what sessions share -------------------------------------------------------- */

/* An environment holds what the sessions created with it share: an intra-op thread pool when its
 * options ask for one (a process serving several models then runs no more compute threads than the
 * pool has, however many sessions run at once). Optional: passing NULL where an env is accepted,
 * or an env without a shared pool, gives each session a pool of its own. */
typedef struct oneflow_env_s oneflow_env_t; /* ABI 1 */

typedef struct oneflow_env_options_t { /* ABI 3 */
  size_t struct_size;         /* set by oneflow_env_options_init */
  /* 1: one thread pool shared by the sessions created with this env (plain, device and training
   * sessions) whose session options leave intra_op_threads at 0; their parallel regions take
   * turns on it. A session with an explicit intra_op_threads keeps a pool of its own. 0 (default):
   * no shared pool. */
  int32_t shared_thread_pool;
  int32_t intra_op_threads;   /* threads of the shared pool, in [0, 1024]; 0 (default) = one per core */
} oneflow_env_options_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_env_options_init_sized(oneflow_env_options_t* options, size_t struct_size);
#define oneflow_env_options_init(options) oneflow_env_options_init_sized((options), sizeof(*(options)))

/* An environment without a shared pool (as oneflow_env_create_with_options with NULL options). */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_env_create(oneflow_env_t** out_env);
/* An environment from `options` (NULL: defaults). Errors: ONEFLOW_INVALID_ARGUMENT for a thread
 * count out of range or an uninitialized struct. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_env_create_with_options(const oneflow_env_options_t* options,
                                                                      oneflow_env_t** out_env);
/* Sessions keep what they need of the env; it may be released before them. NULL-safe. */
ONEFLOW_API_SINCE(1) void oneflow_env_release(oneflow_env_t* env);

/* ---- Graphs: loading and saving models (ONNX or the native .ofm format) ---------------------- */

typedef struct oneflow_graph_s oneflow_graph_t; /* ABI 1 */

/* Loads a model from a file: ONNX or OneFlow native (.ofm), told apart by the file's first bytes
 * (the native magic), not its name. External data files are resolved relative to the model's
 * directory and must stay inside it. Native weights are mapped, not copied (see
 * oneflow_graph_load_file_ex for options). */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_graph_load_file(const char* path, oneflow_graph_t** out_graph);

/* Loads an ONNX or native model from memory (sniffed as for files); the bytes are copied, so
 * `data` may be freed on return (oneflow_graph_load_memory_ex can use them in place).
 * `external_data_dir` (nullable) is where external data files live; when NULL a model that
 * references external data is refused. */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_graph_load_memory(const void* data, size_t size, const char* external_data_dir,
                                                       oneflow_graph_t** out_graph);

/* Releases a graph. Sessions created from it keep their own copy. NULL-safe. */
ONEFLOW_API_SINCE(1) void oneflow_graph_release(oneflow_graph_t* graph);

/* The static kind of a graph input or output: ONNX's tensor, seq(tensor), optional(tensor) and
 * optional(seq(tensor)). Values of these kinds travel in oneflow_tensor_t handles (see "Sequences
 * and optionals" below). */
typedef enum oneflow_type_kind_t { /* ABI 5 */
  ONEFLOW_TYPE_TENSOR = 0,
  ONEFLOW_TYPE_SEQUENCE = 1,
  ONEFLOW_TYPE_OPTIONAL = 2,
  ONEFLOW_TYPE_OPTIONAL_SEQUENCE = 3
} oneflow_type_kind_t;

/* Describes one graph input or output. Pointers are owned by the graph. */
typedef struct oneflow_value_info_t { /* ABI 1 */
  size_t struct_size;          /* set by oneflow_value_info_init */
  const char* name;
  oneflow_dtype_t dtype;
  int64_t rank;                /* -1 when the rank is unknown */
  const int64_t* dims;         /* rank entries; -1 for a dynamic dim */
  const char* const* dim_names;/* rank entries: the symbolic name of a dynamic dim, or NULL */
  /* ABI 5. What the input or output is; for a sequence or an optional, dtype, rank, dims and
   * dim_names describe the element tensor (as far as every element shares them). */
  oneflow_type_kind_t kind;
} oneflow_value_info_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_value_info_init_sized(oneflow_value_info_t* info, size_t struct_size);
#define oneflow_value_info_init(info) oneflow_value_info_init_sized((info), sizeof(*(info)))

ONEFLOW_API_SINCE(1) size_t oneflow_graph_input_count(const oneflow_graph_t* graph);
ONEFLOW_API_SINCE(1) size_t oneflow_graph_output_count(const oneflow_graph_t* graph);
/* Fills `out_info` (initialized with oneflow_value_info_init) for input/output `index`. */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_graph_get_input_info(const oneflow_graph_t* graph, size_t index,
                                                          oneflow_value_info_t* out_info);
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_graph_get_output_info(const oneflow_graph_t* graph, size_t index,
                                                           oneflow_value_info_t* out_info);

/* Model file formats. AUTO: by the file name's extension when saving (".ofm" native, ".onnx"
 * ONNX), by the content's magic when loading. */
typedef enum oneflow_model_format_t { /* ABI 2 */
  ONEFLOW_FORMAT_AUTO = 0,
  ONEFLOW_FORMAT_ONNX = 1,
  ONEFLOW_FORMAT_NATIVE = 2 /* OneFlow's flatbuffer container with mmapped weights (.ofm) */
} oneflow_model_format_t;

/* The format of a model image: ONEFLOW_FORMAT_NATIVE when it starts with the native magic,
 * ONEFLOW_FORMAT_ONNX otherwise (ONNX has no magic; its parser judges the rest). Never fails;
 * NULL or short data gives ONEFLOW_FORMAT_ONNX. Thread-safe. */
ONEFLOW_API_SINCE(2) oneflow_model_format_t oneflow_model_format_of(const void* data, size_t size);

typedef struct oneflow_save_options_t { /* ABI 2 */
  size_t struct_size;             /* set by oneflow_save_options_init */
  oneflow_model_format_t format;  /* AUTO (default): by the path's extension */
  /* Native only: when non-NULL, a plain file name (no directory) written next to the model that
   * receives the weight segments. NULL (default): weights are stored in the model file. */
  const char* external_data_file;
  int32_t checksums;              /* native only: 1 (default) store per-tensor checksums */
} oneflow_save_options_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_save_options_init_sized(oneflow_save_options_t* options, size_t struct_size);
#define oneflow_save_options_init(options) oneflow_save_options_init_sized((options), sizeof(*(options)))

/* Saves a loaded graph (as loaded and validated; not a session's optimized form) to `path`.
 * `options` may be NULL (defaults). The write is atomic: a temporary file in the same directory is
 * written, flushed and renamed over `path`, so a failure or crash never leaves a damaged file.
 * ONNX output needs the ONNX exporter; a build without it fails with ONEFLOW_UNSUPPORTED.
 * Thread-safe with respect to other reads of the graph. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_graph_save(const oneflow_graph_t* graph, const char* path,
                                                const oneflow_save_options_t* options);

typedef struct oneflow_load_options_t { /* ABI 2 */
  size_t struct_size;            /* set by oneflow_load_options_init */
  /* Native: 1 (default) verify every weight checksum at load (reads all weight bytes once);
   * 0 trusts the weight bytes, which then are not touched until used. The header and graph
   * section are always verified. */
  int32_t verify_checksums;
  /* Memory loads of native models: 1 = use `data` in place, without a copy. The caller then
   * promises `data` stays valid and unchanged for as long as the graph and every session created
   * from it live, and `data` must be 64-byte aligned. 0 (default): the bytes are copied. ONNX
   * models are always copied. */
  int32_t borrow_memory;
  /* Memory loads: where external data files live (NULL: external data is refused). */
  const char* external_data_dir;
} oneflow_load_options_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_load_options_init_sized(oneflow_load_options_t* options, size_t struct_size);
#define oneflow_load_options_init(options) oneflow_load_options_init_sized((options), sizeof(*(options)))

/* As oneflow_graph_load_file / oneflow_graph_load_memory, with options (NULL: defaults). */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_graph_load_file_ex(const char* path, const oneflow_load_options_t* options,
                                                        oneflow_graph_t** out_graph);
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_graph_load_memory_ex(const void* data, size_t size,
                                                          const oneflow_load_options_t* options,
                                                          oneflow_graph_t** out_graph);

/* ---- Tensors --------------------------------------------------------------------------------- */

/* A dense row-major tensor in host memory. */
typedef struct oneflow_tensor_s oneflow_tensor_t; /* ABI 1 */

/* Creates a tensor that owns zero-filled, 64-byte-aligned memory. `shape` may be NULL when
 * rank is 0 (a scalar). Dims must be >= 0; zero-sized tensors are allowed. */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_tensor_create(oneflow_dtype_t dtype, const int64_t* shape, size_t rank,
                                                   oneflow_tensor_t** out_tensor);

/* Called when the library no longer references a borrowed buffer. */
typedef void (*oneflow_deleter_fn)(void* data, void* user_data); /* ABI 1 */

/* Creates a tensor that views the caller's `data` without copying. `byte_size` must be at least
 * the tensor's size. The buffer must stay valid until `deleter` is called (with `data` and
 * `user_data`), which happens when the last reference goes away — the tensor's release and any
 * session still reading it. `deleter` may be NULL: then the caller keeps the buffer alive for
 * as long as the tensor and every run using it. `data` may be NULL only for zero-sized tensors. */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_tensor_create_borrowed(oneflow_dtype_t dtype, const int64_t* shape,
                                                            size_t rank, void* data, size_t byte_size,
                                                            oneflow_deleter_fn deleter, void* user_data,
                                                            oneflow_tensor_t** out_tensor);

/* Releases a tensor handle. NULL-safe. */
ONEFLOW_API_SINCE(1) void oneflow_tensor_release(oneflow_tensor_t* tensor);

/* Accessors. `tensor` must not be NULL (they return 0/NULL for NULL rather than crash). */
ONEFLOW_API_SINCE(1) oneflow_dtype_t oneflow_tensor_dtype(const oneflow_tensor_t* tensor);
ONEFLOW_API_SINCE(1) size_t oneflow_tensor_rank(const oneflow_tensor_t* tensor);
/* The dims; an array of rank entries owned by the tensor (NULL for rank 0). */
ONEFLOW_API_SINCE(1) const int64_t* oneflow_tensor_shape(const oneflow_tensor_t* tensor);
ONEFLOW_API_SINCE(1) int64_t oneflow_tensor_element_count(const oneflow_tensor_t* tensor);
ONEFLOW_API_SINCE(1) size_t oneflow_tensor_byte_size(const oneflow_tensor_t* tensor);
/* The data pointer (64-byte aligned for owned tensors). The caller may write through it, but
 * not while a run reads the tensor. Valid until the tensor is released. */
ONEFLOW_API_SINCE(1) void* oneflow_tensor_data(const oneflow_tensor_t* tensor);

/* ---- Sequences and optionals (ABI 5) ---------------------------------------------------------
 * Models may take and return ONNX's two non-tensor kinds of value: a sequence of tensors (one
 * dtype, shapes free), and an optional, which holds a tensor, a sequence, or nothing. A
 * oneflow_tensor_t handle carries each: an optional that holds a value is that tensor or sequence
 * handle; one that holds nothing is a "none" handle. oneflow_session_run takes and returns them
 * like tensors, checking each against the model's declared kind (a none only where the model
 * declares an optional). On a sequence or a none handle, oneflow_tensor_dtype gives the element
 * dtype, rank, element count and byte size are 0, and shape and data are NULL. */
typedef enum oneflow_value_kind_t { /* ABI 5 */
  ONEFLOW_VALUE_TENSOR = 0,   /* a dense tensor (also a NULL handle) */
  ONEFLOW_VALUE_SEQUENCE = 1, /* a sequence of tensors */
  ONEFLOW_VALUE_NONE = 2      /* an optional that holds nothing */
} oneflow_value_kind_t;

/* Creates a sequence of `count` host tensors, each of dtype `elem_dtype` (checked); `elements` may be
 * NULL when count is 0. The sequence references the elements' bytes (as a view does: borrowed
 * buffers stay in use until the sequence and every run using it are released); the element handles
 * may be released on return. Errors: a NULL, device, sequence or none element, a dtype mismatch. */
ONEFLOW_API_SINCE(5) oneflow_status_t oneflow_tensor_create_sequence(oneflow_dtype_t elem_dtype,
                                                                    const oneflow_tensor_t* const* elements,
                                                                    size_t count, oneflow_tensor_t** out_sequence);
/* Creates an optional that holds nothing; `elem_dtype` is the dtype of what it would hold
 * (ONEFLOW_DTYPE_UNDEFINED when unknown). */
ONEFLOW_API_SINCE(5) oneflow_status_t oneflow_tensor_create_none(oneflow_dtype_t elem_dtype, oneflow_tensor_t** out_none);
/* What the handle holds. */
ONEFLOW_API_SINCE(5) oneflow_value_kind_t oneflow_tensor_kind(const oneflow_tensor_t* value);
/* A sequence's element count (0 for the other kinds and NULL). */
ONEFLOW_API_SINCE(5) size_t oneflow_tensor_sequence_length(const oneflow_tensor_t* sequence);
/* A new handle to element `index` of a sequence, sharing its bytes (the caller may read them; a
 * write changes the sequence too). Errors: not a sequence, index out of range. */
ONEFLOW_API_SINCE(5) oneflow_status_t oneflow_tensor_sequence_element(const oneflow_tensor_t* sequence, size_t index,
                                                                     oneflow_tensor_t** out_element);

/* ---- String tensors (ABI 6) -----------------------------------------------------------------
 * ONNX's string element type: each element is a byte string of its own length (any bytes, NUL
 * included; the ops that interpret text read UTF-8). The library keeps its own copies, so a string
 * tensor has no flat buffer: oneflow_tensor_data returns NULL and oneflow_tensor_byte_size 0 for one,
 * and oneflow_tensor_create_borrowed refuses ONEFLOW_DTYPE_STRING. oneflow_tensor_create with it makes
 * a tensor of empty strings. Only the ops that read or write strings take them (docs/string-ops.md);
 * session creation refuses a model that feeds strings to any other op, naming the node. */

/* Creates a string tensor of `shape`, copying element i from data[i]: lengths[i] bytes, or up to its
 * NUL when `lengths` is NULL. `data` may be NULL only when the tensor has no elements. */
ONEFLOW_API_SINCE(6) oneflow_status_t oneflow_tensor_create_strings(const int64_t* shape, size_t rank,
                                                                   const char* const* data, const size_t* lengths,
                                                                   oneflow_tensor_t** out_tensor);
/* Element `index` (row-major) of a string tensor: `*out_data` points at its `*out_length` bytes,
 * followed by a NUL the length does not count; valid until the tensor is released. Errors: not a
 * string tensor, index out of range, a NULL pointer. */
ONEFLOW_API_SINCE(6) oneflow_status_t oneflow_tensor_string_element(const oneflow_tensor_t* tensor, int64_t index,
                                                                   const char** out_data, size_t* out_length);

/* Device tensors.
 * Device tensors view memory on a CUDA device; the host never reads their bytes. They are accepted
 * by oneflow_session_run_device only: oneflow_session_run and oneflow_dist_session_run refuse them
 * (ONEFLOW_INVALID_ARGUMENT), and the other calls that read tensor data (training parameters,
 * saving) must not be given them. oneflow_tensor_data returns the device pointer. */

/* Wraps device memory the caller owns as a tensor, without copying. `data` must be memory of CUDA
 * device `index` (cudaMalloc, cudaMallocAsync or managed; checked: ONEFLOW_INVALID_ARGUMENT
 * otherwise) holding at least the tensor's bytes (`byte_size`); it may be NULL only for zero-sized
 * tensors. Ownership as oneflow_tensor_create_borrowed: the buffer must stay valid until `deleter`
 * (nullable) is called when the last reference goes away; without a deleter the caller keeps it
 * alive as long as the tensor and every run using it. ONEFLOW_DEVICE_CPU is
 * oneflow_tensor_create_borrowed (index 0). Errors: ONEFLOW_UNSUPPORTED "no CUDA device: ..." when
 * there is none. The data written by the caller must be complete (its stream synchronized) before a
 * run reads it: sessions run on streams of their own and do not wait on the caller's. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_tensor_create_device_borrowed(oneflow_dtype_t dtype, const int64_t* shape,
                                                                   size_t rank, oneflow_device_kind_t device,
                                                                   int32_t index, void* data, size_t byte_size,
                                                                   oneflow_deleter_fn deleter, void* user_data,
                                                                   oneflow_tensor_t** out_tensor);

/* Where a tensor's bytes live: ONEFLOW_DEVICE_CPU for host tensors (and NULL), or
 * ONEFLOW_DEVICE_CUDA with the device index (0 for host tensors). */
ONEFLOW_API_SINCE(3) oneflow_device_kind_t oneflow_tensor_device_kind(const oneflow_tensor_t* tensor);
ONEFLOW_API_SINCE(3) int32_t oneflow_tensor_device_index(const oneflow_tensor_t* tensor);

/* Declares that work the caller queued on `cuda_stream` (a cudaStream_t; NULL is the legacy default
 * stream) reads or writes `tensor`, a device tensor from oneflow_session_run_device. When its memory
 * is later released, an event is recorded on that stream and the memory is handed out again only once
 * the event has completed, so oneflow_tensor_release may be called while the caller's kernels still
 * use it (torch's Tensor.record_stream). Without this call, release a device output only after that
 * work has completed. The stream must still exist when the tensor is released. Host tensors and
 * borrowed device memory are unaffected (the caller owns them). Errors: ONEFLOW_INVALID_ARGUMENT for
 * a NULL tensor; ONEFLOW_UNSUPPORTED in a build without CUDA. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_tensor_record_stream(const oneflow_tensor_t* tensor, void* cuda_stream);

/* ---- Sessions: inference on the CPU or a CUDA device ----------------------------------------- */

typedef struct oneflow_session_s oneflow_session_t; /* ABI 1 */

typedef struct oneflow_session_options_t { /* ABI 1 */
  size_t struct_size;         /* set by oneflow_session_options_init */
  int32_t intra_op_threads;   /* threads per run; 0 (default) = one per core */
  int32_t optimization_level; /* 0 none; 1 constant folding + dead code; 2 (default) + fusions */
} oneflow_session_options_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_session_options_init_sized(oneflow_session_options_t* options, size_t struct_size);
#define oneflow_session_options_init(options) oneflow_session_options_init_sized((options), sizeof(*(options)))

/* Compiles `graph` into a session: validates it, optimizes a copy, plans memory and creates every
 * kernel (so an unsupported op fails here, not in a run). `env` and `options` may be NULL
 * (defaults). The graph may be released afterwards. */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_session_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                    const oneflow_session_options_t* options,
                                                    oneflow_session_t** out_session);

/* Releases a session. NULL-safe. Must not race with a run on the same session. */
ONEFLOW_API_SINCE(1) void oneflow_session_release(oneflow_session_t* session);

/* Runs inference. Inputs are matched by name (`input_names[i]` feeds `inputs[i]`); every graph
 * input must be fed once. `output_names` selects outputs in the order wanted; when it is NULL
 * (with num_output_names 0) all graph outputs are returned in declaration order.
 * `out_outputs` must have room for `out_capacity` handles, at least the number of outputs
 * returned; on success each entry is a new tensor owned by the caller (release each). Outputs
 * never alias inputs or engine memory. Inputs are only read and may be borrowed tensors.
 * Thread-safe: several threads may run one session at once. */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_session_run(oneflow_session_t* session, const char* const* input_names,
                                                 const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                                 const char* const* output_names, size_t num_output_names,
                                                 oneflow_tensor_t** out_outputs, size_t out_capacity);

/* The arena size of the session's current static memory plan: all intermediate tensors of a run
 * for the most recently used input shapes (0 before the first run when shapes are dynamic). */
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_session_get_planned_peak_bytes(const oneflow_session_t* session,
                                                                    uint64_t* out_bytes);

/* The session's graph inputs and outputs are those of the graph it was created from. */
ONEFLOW_API_SINCE(1) size_t oneflow_session_input_count(const oneflow_session_t* session);
ONEFLOW_API_SINCE(1) size_t oneflow_session_output_count(const oneflow_session_t* session);
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_session_get_input_info(const oneflow_session_t* session, size_t index,
                                                            oneflow_value_info_t* out_info);
ONEFLOW_API_SINCE(1) oneflow_status_t oneflow_session_get_output_info(const oneflow_session_t* session, size_t index,
                                                             oneflow_value_info_t* out_info);

/* oneflow_session_create on a chosen device: ONEFLOW_DEVICE_CPU (index 0) is oneflow_session_create.
 * ONEFLOW_DEVICE_CUDA checks the device first: ONEFLOW_UNSUPPORTED "no CUDA device: <reason>" when
 * the library was built without CUDA or the machine has no usable device, ONEFLOW_INVALID_ARGUMENT
 * for an index out of range. Then it builds a session whose nodes run on that device where a CUDA
 * kernel exists and on the CPU otherwise (with copies around those nodes), with constants uploaded
 * once, intermediates in device memory, and CUDA graphs for static input shapes (docs/cuda.md,
 * "Executor integration"). oneflow_session_run on it takes and returns host tensors;
 * oneflow_session_run_device also takes and returns device tensors. Ownership and lifetime as
 * oneflow_session_create. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_session_create_on_device(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                              const oneflow_session_options_t* options,
                                                              oneflow_device_kind_t device, int32_t index,
                                                              oneflow_session_t** out_session);

typedef struct oneflow_device_session_options_t { /* ABI 3 */
  size_t struct_size;                   /* set by oneflow_device_session_options_init */
  oneflow_cuda_graph_mode_t cuda_graphs; /* default ONEFLOW_CUDA_GRAPHS_AUTO */
  /* When a CUDA kernel declines its node at run
   * time (a dtype or size it does not handle), 0 (default) fails the run with ONEFLOW_UNSUPPORTED
   * naming the node, its op and the reason; 1 runs that node on the CPU from then on (slower, with
   * copies around it and no CUDA graphs), counted in oneflow_session_get_device_stats. The
   * environment variable ONEFLOW_CUDA_ALLOW_FALLBACK=1 also allows it. Nodes with no CUDA kernel at
   * all run on the CPU either way (planned fallbacks, counted too). A library built for other GPU
   * architectures is ONEFLOW_INTERNAL, never a fallback. */
  int32_t allow_runtime_fallback;
} oneflow_device_session_options_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_device_session_options_init_sized(oneflow_device_session_options_t* options, size_t struct_size);
#define oneflow_device_session_options_init(options) oneflow_device_session_options_init_sized((options), sizeof(*(options)))

/* oneflow_session_create_on_device with device options (`device_options` may be NULL: defaults;
 * ignored for ONEFLOW_DEVICE_CPU). Errors, ownership and lifetime as oneflow_session_create_on_device. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_session_create_on_device_ex(
    oneflow_env_t* env, const oneflow_graph_t* graph, const oneflow_session_options_t* options,
    oneflow_device_kind_t device, int32_t index, const oneflow_device_session_options_t* device_options,
    oneflow_session_t** out_session);

/* What a session did with its device so far (docs/cuda.md, "Run-time fallbacks and host reads"). */
typedef struct oneflow_session_device_stats_t { /* ABI 3 */
  size_t struct_size;              /* set by oneflow_session_device_stats_init */
  uint64_t cuda_graphs_captured;   /* CUDA graphs captured (one per set of input shapes) */
  uint64_t planned_fallback_nodes; /* nodes placed on the CPU at creation: no CUDA kernel for them */
  uint64_t runtime_fallback_nodes; /* nodes moved to the CPU when their CUDA kernel declined a run
                                    * (only with allow_runtime_fallback / ONEFLOW_CUDA_ALLOW_FALLBACK=1) */
} oneflow_session_device_stats_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_session_device_stats_init_sized(oneflow_session_device_stats_t* stats, size_t struct_size);
#define oneflow_session_device_stats_init(stats) oneflow_session_device_stats_init_sized((stats), sizeof(*(stats)))
/* Fills `out_stats` (initialized with oneflow_session_device_stats_init) for an inference session;
 * a CPU session reports zeros. A training session is ONEFLOW_INVALID_ARGUMENT. Thread-safe. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_session_get_device_stats(const oneflow_session_t* session,
                                                              oneflow_session_device_stats_t* out_stats);

/* oneflow_session_run that also takes device tensors among `inputs` (they must be on the session's
 * device: used in place, no host copy) and, with `outputs_on_device` non-zero, returns the outputs
 * as device tensors on the session's device (fresh device memory owned by the handle, freed by
 * oneflow_tensor_release; the run's work is complete on return). Release a device output only after
 * work the caller queued on it has completed, or declare that work with oneflow_tensor_record_stream
 * first: its memory returns to the session's pool for reuse. A CPU session refuses device
 * tensors and outputs_on_device (ONEFLOW_INVALID_ARGUMENT), as does a training session.
 * Thread safety and the rest as oneflow_session_run. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_session_run_device(oneflow_session_t* session, const char* const* input_names,
                                                        const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                                        const char* const* output_names, size_t num_output_names,
                                                        int32_t outputs_on_device, oneflow_tensor_t** out_outputs,
                                                        size_t out_capacity);

/* ---- Training ------------------------------------------------------------------------------
 *
 * A training session is an oneflow_session_t created by oneflow_training_session_create: every
 * session call works on it (oneflow_session_run, the input/output queries, peak bytes, release),
 * and the calls below train it. The model's float initializers are its parameters (minus the
 * frozen ones); they live in the session as f32 tensors the optimizer updates in place.
 *
 * One training step:
 *    oneflow_session_run(...)        forward in train mode: keeps what backward needs
 *    oneflow_session_backward(s)     adds d(loss)/d(parameter) to the accumulated gradients
 *    oneflow_session_step(s, NULL)   optimizer update, gradients zeroed, step counter + 1
 * Several run+backward pairs before one step accumulate gradients (larger effective batches).
 *
 * Bad input: backward without a train-mode run before it (or twice after one run) and step
 * without a backward before it fail with ONEFLOW_INVALID_ARGUMENT; a session created by
 * oneflow_session_create (no loss) answers every training call with ONEFLOW_INVALID_ARGUMENT.
 * A batch whose shape differs from the previous one is re-planned (each input-shape set gets its
 * own cached memory plan), so a short last batch works. NaN or Inf in the loss or a gradient:
 * see oneflow_nonfinite_policy_t. Parameters are never left half-updated: a failed step or
 * checkpoint load changes nothing.
 *
 * THREAD SAFETY: the calls on one training session are serialized internally (one at a time); a
 * training session is a state machine, so concurrent runs on it gain nothing. */

typedef enum oneflow_loss_t { /* ABI 2 */
  ONEFLOW_LOSS_MODEL_OUTPUT = 0,        /* the model computes its loss: name the output */
  ONEFLOW_LOSS_MSE = 1,                 /* mean((logits - labels)^2), labels shaped like logits */
  ONEFLOW_LOSS_L1 = 2,                  /* mean(|logits - labels|) */
  ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY = 3 /* logits [N, C] (or [N, C, ...]), labels int64 class ids [N] */
} oneflow_loss_t;

typedef enum oneflow_optimizer_t { /* ABI 2 */
  ONEFLOW_OPTIMIZER_SGD = 0,  /* momentum, dampening, nesterov, weight_decay (L2), as torch.optim.SGD */
  ONEFLOW_OPTIMIZER_ADAM = 1, /* beta1, beta2, eps, weight_decay as an L2 term, as torch.optim.Adam */
  ONEFLOW_OPTIMIZER_ADAMW = 2 /* Adam with decoupled weight decay, as torch.optim.AdamW */
} oneflow_optimizer_t;

/* The learning rate of update t (0-based) is learning_rate times: during a linear warm-up
 * (t < warmup_steps) warmup_start_factor + (1 - warmup_start_factor) * t / warmup_steps; after it,
 * with s = t - warmup_steps: CONSTANT 1; STEP gamma^floor(s / step_size); COSINE
 * min_lr_factor + (1 - min_lr_factor) * (1 + cos(pi * min(s, decay_steps) / decay_steps)) / 2. */
typedef enum oneflow_lr_schedule_t { /* ABI 2 */
  ONEFLOW_LR_CONSTANT = 0,
  ONEFLOW_LR_STEP = 1,
  ONEFLOW_LR_COSINE = 2
} oneflow_lr_schedule_t;

/* What oneflow_session_step does when the loss of an accumulated run or a gradient holds NaN/Inf.
 * SKIP: no update, gradients dropped, the step counter unchanged, skipped_steps + 1, and step's
 * out_applied = 0. REFUSE: the step fails with ONEFLOW_RUNTIME naming the parameter (or the loss);
 * gradients stay for inspection until oneflow_session_zero_gradients. */
typedef enum oneflow_nonfinite_policy_t { /* ABI 2 */
  ONEFLOW_NONFINITE_SKIP = 0,
  ONEFLOW_NONFINITE_REFUSE = 1
} oneflow_nonfinite_policy_t;

/* The precision of a training session's compute-heavy ops (docs/training.md "Mixed precision"). */
typedef enum oneflow_precision_t { /* ABI 3 */
  ONEFLOW_PRECISION_F32 = 0,
  ONEFLOW_PRECISION_BF16 = 1,
  ONEFLOW_PRECISION_F16 = 2
} oneflow_precision_t;

typedef struct oneflow_training_options_t { /* ABI 2 */
  size_t struct_size;          /* set by oneflow_training_options_init */
  /* Loss. */
  oneflow_loss_t loss;         /* default ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY */
  const char* loss_output;     /* LOSS_MODEL_OUTPUT: the model output holding a one-element loss */
  const char* logits_output;   /* appended losses: the model output they read */
  const char* labels_input;    /* appended losses: the name of the new labels input ("labels") */
  int32_t loss_reduction_sum;  /* appended losses: 1 = sum over the batch, 0 (default) = mean */
  /* Optimizer (defaults: Adam, lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay). */
  oneflow_optimizer_t optimizer;
  float learning_rate;
  float weight_decay;
  float momentum;              /* SGD */
  float dampening;             /* SGD */
  int32_t nesterov;            /* SGD: needs momentum > 0 and dampening 0 */
  float beta1, beta2, eps;     /* Adam, AdamW */
  /* Schedule (default constant, no warm-up). */
  oneflow_lr_schedule_t lr_schedule;
  int64_t warmup_steps;
  float warmup_start_factor;
  int64_t step_size;           /* STEP */
  float gamma;                 /* STEP */
  int64_t decay_steps;         /* COSINE */
  float min_lr_factor;         /* COSINE */
  /* Global gradient-norm clipping (torch.nn.utils.clip_grad_norm_); <= 0 (default) disables it. */
  float max_grad_norm;
  /* Parameters kept fixed: exact names or glob patterns ('*', '?'); each must match a float
   * parameter. The array and strings are read during the create call only. */
  const char* const* frozen;
  size_t num_frozen;
  /* Deterministic mode: the same seed, thread count and inputs give bit-identical parameters after
   * N steps. Needs an explicit intra_op_threads in the session options. */
  int32_t deterministic;
  uint64_t seed;
  oneflow_nonfinite_policy_t nonfinite_policy; /* default SKIP */
  /* Recompute forward segments in backward instead of keeping their activations: less memory,
   * about one extra forward of compute. */
  int32_t activation_checkpointing;
  /* Mixed precision: MatMul/Gemm/Conv and the elementwise ops between them in BF16 or F16 around
   * f32 master weights (parameters, gradients, optimizer state, checkpoints and exports stay f32);
   * Softmax, normalization statistics, reductions and the loss stay f32. F16 scales the loss
   * dynamically unless loss_scaling_off is 1: a step whose scaled gradients hold Inf/NaN (with a
   * finite loss) is skipped whatever nonfinite_policy says and the scale is multiplied by
   * loss_scale_backoff; after loss_scale_growth_interval consecutive applied steps it is
   * multiplied by loss_scale_growth. See oneflow_session_get_loss_scale. */
  oneflow_precision_t precision;       /* default F32 */
  int32_t loss_scaling_off;            /* F16 only; default 0 (dynamic scaling on) */
  float loss_scale_initial;            /* default 65536 */
  float loss_scale_growth;             /* default 2, >= 1 */
  float loss_scale_backoff;            /* default 0.5, in (0, 1) */
  int64_t loss_scale_growth_interval;  /* default 2000, > 0 */
  /* Where the session trains (docs/training.md, "Training on a CUDA device"). device_kind holds an
   * oneflow_device_kind_t: ONEFLOW_DEVICE_CPU (0, default) or ONEFLOW_DEVICE_CUDA, with the CUDA
   * device's index in device_index (0 for the CPU). On CUDA, parameters, gradients and optimizer
   * state live in device memory and the optimizer step is one fused launch; runs, parameter access,
   * checkpoints and export still take and return host tensors. Creation fails with
   * ONEFLOW_UNSUPPORTED "... built without CUDA" or "no CUDA device: <reason>",
   * ONEFLOW_INVALID_ARGUMENT for an index out of range, and ONEFLOW_UNSUPPORTED for deterministic
   * mode on CUDA. cuda_graphs holds an oneflow_cuda_graph_mode_t (default AUTO) for the session's
   * forward, backward and eval graphs. A distributed trainer refuses ONEFLOW_DEVICE_CUDA here. */
  int32_t device_kind;
  int32_t device_index;
  int32_t cuda_graphs;
} oneflow_training_options_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_training_options_init_sized(oneflow_training_options_t* options, size_t struct_size);
#define oneflow_training_options_init(options) oneflow_training_options_init_sized((options), sizeof(*(options)))

/* Builds a training session from `graph`: the loss (in the model or appended), the gradient graph,
 * and compiled forward, backward and eval graphs. `env` and `session_options` may be NULL;
 * `training_options` must not. Fails with ONEFLOW_INVALID_ARGUMENT for bad options (naming the
 * field) or a model without a trainable parameter, and ONEFLOW_UNSUPPORTED naming the op when the
 * loss does not differentiate back to the parameters. The graph may be released afterwards. This
 * is a separate entry point because oneflow_session_create's signature is fixed by the ABI rules
 * and an inference session has no loss, gradients or optimizer state. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_training_session_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                             const oneflow_session_options_t* session_options,
                                                             const oneflow_training_options_t* training_options,
                                                             oneflow_session_t** out_session);

typedef enum oneflow_run_mode_t { /* ABI 2 */
  ONEFLOW_RUN_TRAIN = 0, /* needs every input (labels too); keeps activations for backward */
  ONEFLOW_RUN_EVAL = 1   /* needs only the inputs the model outputs read; keeps nothing */
} oneflow_run_mode_t;

/* The mode oneflow_session_run uses on a training session (a new one starts in TRAIN). In TRAIN
 * mode a run with no output names returns the model outputs then the loss (when it is not one of
 * them); in EVAL mode the model outputs. An appended loss is the output named "loss" (unless the
 * model already has a value of that name) and is the session's last output either way. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_set_run_mode(oneflow_session_t* session, oneflow_run_mode_t mode);

/* Backward for the last train-mode run: adds its gradients to the accumulated ones and releases
 * the activations it kept. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_backward(oneflow_session_t* session);

/* Clips, updates every trained parameter, zeroes the gradients and advances the step counter.
 * `out_applied` (nullable) is set to 1, or 0 when the NaN/Inf policy skipped the update. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_step(oneflow_session_t* session, int32_t* out_applied);

/* Drops the accumulated gradients (and a NaN/Inf loss seen since the last step). */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_zero_gradients(oneflow_session_t* session);

/* The trained parameters, in the model's initializer order. Names are owned by the session;
 * oneflow_session_parameter_name returns NULL for an index out of range or a non-training session. */
ONEFLOW_API_SINCE(2) size_t oneflow_session_parameter_count(const oneflow_session_t* session);
ONEFLOW_API_SINCE(2) const char* oneflow_session_parameter_name(const oneflow_session_t* session, size_t index);

/* Copies of a parameter's value and of its accumulated gradient (zeros when none), as new tensors
 * owned by the caller. ONEFLOW_NOT_FOUND for a name that is not a trained parameter. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_get_parameter(const oneflow_session_t* session, const char* name,
                                                           oneflow_tensor_t** out_value);
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_get_gradient(const oneflow_session_t* session, const char* name,
                                                          oneflow_tensor_t** out_gradient);
/* Overwrites a parameter with `value` (copied; same dtype and shape required). */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_set_parameter(oneflow_session_t* session, const char* name,
                                                           const oneflow_tensor_t* value);

typedef struct oneflow_training_state_t { /* ABI 2 */
  size_t struct_size;     /* set by oneflow_training_state_init */
  int64_t step;           /* updates applied */
  int64_t skipped_steps;  /* updates skipped by the NaN/Inf policy */
  float learning_rate;    /* the rate the next step will use */
  double last_loss;       /* the loss of the last train-mode run (NaN before the first) */
  double last_grad_norm;  /* global gradient norm before clipping at the last step (NaN before) */
} oneflow_training_state_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_training_state_init_sized(oneflow_training_state_t* state, size_t struct_size);
#define oneflow_training_state_init(state) oneflow_training_state_init_sized((state), sizeof(*(state)))
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_get_training_state(const oneflow_session_t* session,
                                                                oneflow_training_state_t* out_state);

/* Intermediate memory of a training step, from the static plans of the last input shapes.
 * oneflow_session_get_planned_peak_bytes returns peak_bytes for a training session. */
typedef struct oneflow_training_memory_t { /* ABI 2 */
  size_t struct_size;              /* set by oneflow_training_memory_init */
  uint64_t forward_arena_bytes;    /* the forward graph's arena */
  uint64_t saved_activation_bytes; /* activations the last train-mode run kept for backward */
  uint64_t backward_arena_bytes;   /* the backward graph's arena (recomputed segments included) */
  uint64_t peak_bytes;             /* the sum of the three: what one step holds */
} oneflow_training_memory_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_training_memory_init_sized(oneflow_training_memory_t* memory, size_t struct_size);
#define oneflow_training_memory_init(memory) oneflow_training_memory_init_sized((memory), sizeof(*(memory)))
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_get_training_memory(const oneflow_session_t* session,
                                                                 oneflow_training_memory_t* out_memory);

/* Writes a checkpoint (parameters, optimizer state, accumulated gradients, the step counter) in
 * the native container, atomically: `path` has either its old contents or the complete new ones. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_save_checkpoint(const oneflow_session_t* session, const char* path);
/* Restores a checkpoint written by a session of the same model and optimizer. Everything is
 * validated first; a checkpoint from another model fails with ONEFLOW_INVALID_ARGUMENT listing the
 * mismatched names and shapes, a truncated or corrupt file with ONEFLOW_INVALID_MODEL or
 * ONEFLOW_IO, and the session is then unchanged. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_load_checkpoint(oneflow_session_t* session, const char* path);

/* The model as loaded (without an appended loss or gradients) holding the current parameter
 * values, as a new graph owned by the caller: create an inference session from it or save it. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_session_export_model(const oneflow_session_t* session,
                                                          oneflow_graph_t** out_graph);

/* The dynamic loss scale the next backward of a training session multiplies the loss by (F16
 * precision with loss scaling), or 1 when the session does not scale its loss. `session` must be a
 * training session (ONEFLOW_INVALID_ARGUMENT otherwise); `out_scale` must not be NULL. Thread-safe
 * like every training call (serialized by the session). */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_session_get_loss_scale(const oneflow_session_t* session, float* out_scale);

/* ---- Plans: global tensors over placements (docs/distributed.md) ----------------------------- */

/* How to plan a model as global tensors. Strings are borrowed for the duration of the call only. */
typedef struct oneflow_plan_options_t { /* ABI 2 */
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

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_plan_options_init_sized(oneflow_plan_options_t* options, size_t struct_size);
#define oneflow_plan_options_init(options) oneflow_plan_options_init_sized((options), sizeof(*(options)))

/* Plans `graph` under `options` and returns the explanation as JSON in `*out_json` (per op the SBP
 * chosen, each collective with bytes and estimated time, memory per device, estimated step time;
 * the same document as `oneflow plan --json`). The caller frees it with oneflow_string_free.
 * Errors: a placement naming devices that do not exist, SBP not fitting a shape, symbolic input
 * shapes without a shape_spec, no plan within the memory budget. Thread-safe. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_plan_explain(const oneflow_graph_t* graph, const oneflow_plan_options_t* options,
                                                  char** out_json);

/* ---- Distributed sessions: a model run over a placement -------------------------------------- */

/* A session running `graph` as global tensors on in-process virtual CPU devices (one thread per
 * device, collectives in shared memory). Created from a graph, session options (may be NULL) and
 * plan options (required); the graph may be released afterwards. `env` may be NULL; an env with a
 * shared thread pool lends it when this process runs a single device of the placement (a rank of a
 * Gloo job), in place of threads_per_device; in-process virtual devices run at once, so each keeps
 * threads_per_device threads of its own. The distributed trainer takes the env alike. */
typedef struct oneflow_dist_session_s oneflow_dist_session_t; /* ABI 2 */

ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_dist_session_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                         const oneflow_session_options_t* session_options,
                                                         const oneflow_plan_options_t* plan_options,
                                                         oneflow_dist_session_t** out_session);

/* Releases a distributed session. NULL-safe. Must not race with a run on it. */
ONEFLOW_API_SINCE(2) void oneflow_dist_session_release(oneflow_dist_session_t* session);

/* As oneflow_session_run, with whole (logical) input and output tensors; runs on one session are
 * serialized internally, so calling from several threads is safe. */
ONEFLOW_API_SINCE(2) oneflow_status_t oneflow_dist_session_run(oneflow_dist_session_t* session, const char* const* input_names,
                                                      const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                                      const char* const* output_names, size_t num_output_names,
                                                      oneflow_tensor_t** out_outputs, size_t out_capacity);

/* ---- Distributed training (docs/distributed.md "Training under plans", docs/pipeline.md) ------
 * A model trained over a placement: data parallel (plan mode "data", the default), tensor parallel
 * (mode "manual" with sbp_specs on the weights), 2-D, auto, ZeRO-1/2 or a 1F1B pipeline. With the
 * Gloo backend every rank creates the same trainer and feeds the same global batch; calls that
 * communicate (step, run, get_parameter) must then be made by every rank in the same order. */
typedef struct oneflow_dist_trainer_s oneflow_dist_trainer_t; /* ABI 3 */

typedef struct oneflow_dist_training_options_t { /* ABI 3 */
  size_t struct_size;      /* set by oneflow_dist_training_options_init */
  int32_t zero_stage;      /* 0 (default), 1 (optimizer state sharded), 2 (gradients too) or 3 (weights too) */
  int64_t bucket_bytes;    /* gradient all-reduce bucket size; 0 = default (25 MiB) */
  int32_t pipeline_stages; /* > 1: pipeline parallel over the placement's devices; 0 or 1 = none */
  int32_t micro_batches;   /* pipeline micro-batches per step; 0 = the number of stages */
  int32_t max_states;      /* plan search states for the training graph; 0 = default (128) */
} oneflow_dist_training_options_t;

ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_dist_training_options_init_sized(oneflow_dist_training_options_t* options, size_t struct_size);
#define oneflow_dist_training_options_init(options) oneflow_dist_training_options_init_sized((options), sizeof(*(options)))

/* Creates a trainer for `graph` (borrowed for the call). `training` is required (loss, optimizer,
 * schedule, ...; initialized with oneflow_training_options_init), `plan` is required (placement,
 * mode, annotations, backend), `dist` may be NULL (defaults). `*out_trainer` is owned by the caller
 * (oneflow_dist_trainer_release). Errors: as oneflow_training_session_create and
 * oneflow_dist_session_create, plus ZeRO or pipeline settings that do not fit. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_dist_trainer_create(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                         const oneflow_training_options_t* training,
                                                         const oneflow_plan_options_t* plan,
                                                         const oneflow_dist_training_options_t* dist,
                                                         oneflow_dist_trainer_t** out_trainer);

/* Releases a trainer. NULL-safe. Must not race with another call on it. */
ONEFLOW_API_SINCE(3) void oneflow_dist_trainer_release(oneflow_dist_trainer_t* trainer);

/* One optimizer step on a global batch (every input whole, the labels too): forward, backward,
 * gradient reduction and the update. `out_loss` (may be NULL) receives the batch's loss,
 * `out_applied` (may be NULL) 1, or 0 when a NaN/Inf was skipped. A failure leaves the trainer
 * unusable (devices may have stopped at different points): release it. Not thread-safe. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_dist_trainer_step(oneflow_dist_trainer_t* trainer, const char* const* input_names,
                                                       const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                                       double* out_loss, int32_t* out_applied);

/* Inference under the trainer's placement and current weights; as oneflow_dist_session_run
 * (whole tensors in and out; no output names = every model output). Not thread-safe. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_dist_trainer_run(oneflow_dist_trainer_t* trainer, const char* const* input_names,
                                                      const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                                      const char* const* output_names, size_t num_output_names,
                                                      oneflow_tensor_t** out_outputs, size_t out_capacity);

/* The whole (logical) value of trained weight `name` as a new tensor owned by the caller.
 * ONEFLOW_NOT_FOUND for a name that is not a trained weight. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_dist_trainer_get_parameter(oneflow_dist_trainer_t* trainer, const char* name,
                                                                oneflow_tensor_t** out_tensor);

/* The training plan of the last step as text (`json` 0) or JSON (1; "strategy" and
 * "estimated_step_seconds" are always present), freed with oneflow_string_free.
 * ONEFLOW_INVALID_ARGUMENT before the first step (plans are made per batch shape). */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_dist_trainer_explain(const oneflow_dist_trainer_t* trainer, int32_t json,
                                                          char** out_text);

/* ---- Inference server ---------------------------------------------------------------------------
 * The server of `oneflow serve` (docs/serving.md), embedded in the caller's process: a Triton-style
 * model repository served over the KServe v2 protocol (HTTP/REST and gRPC) with dynamic batching
 * and Prometheus metrics. All functions are thread-safe except that oneflow_server_release must not
 * race with another call on the same server. */

typedef struct oneflow_server_s oneflow_server_t; /* ABI 3 */

typedef struct oneflow_server_options_t { /* ABI 3 */
  size_t struct_size;            /* the caller's sizeof: set by oneflow_server_options_init */
  const char* model_repository;  /* required: DIR/<model>/<version>/model.{onnx,ofm} */
  const char* host;              /* address to listen on; default "127.0.0.1" */
  int32_t http_port;             /* default 8000; 0 = any free port; -1 = no HTTP */
  int32_t grpc_port;             /* default 8001; 0 = any free port; -1 = no gRPC */
  int32_t metrics_port;          /* default 8002 (GET /metrics); 0 = any free port; -1 = none */
  int32_t threads;               /* compute threads shared by the model instances; 0 = one per core */
  int32_t http_threads;          /* HTTP I/O threads; 0 = min(4, cores) */
  uint64_t max_request_bytes;    /* larger requests get HTTP 413 / gRPC RESOURCE_EXHAUSTED; default 256 MiB */
  int32_t idle_timeout_seconds;  /* idle or too slow HTTP connections are closed; default 60 */
  int32_t access_log;            /* non-zero: one line per request on stderr; default 0 */
} oneflow_server_options_t;

/* Fills `options` with the defaults. `struct_size` is the caller's sizeof(oneflow_server_options_t)
 * (the oneflow_server_options_init macro passes it): the library writes no byte past it, so a program built against
 * this header keeps working with later libraries whose struct has grown. Errors:
 * ONEFLOW_INVALID_ARGUMENT for NULL or a size smaller than this first version of the struct. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_server_options_init_sized(oneflow_server_options_t* options, size_t struct_size);
#define oneflow_server_options_init(options) oneflow_server_options_init_sized((options), sizeof(*(options)))

/* Creates a server from `options` (copied; the strings are not kept). Nothing is loaded or bound
 * until oneflow_server_start. `*out_server` is owned by the caller (oneflow_server_release).
 * Errors: ONEFLOW_INVALID_ARGUMENT for a missing repository, bad ports or counts. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_server_create(const oneflow_server_options_t* options,
                                                   oneflow_server_t** out_server);

/* Loads every model of the repository and opens the ports; returns once the server answers. A
 * model that fails to load does not fail the start: it is listed UNAVAILABLE with its reason.
 * Errors: ONEFLOW_NOT_FOUND when the repository is not a directory, ONEFLOW_IO when a port cannot
 * be bound, ONEFLOW_INVALID_ARGUMENT when already started. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_server_start(oneflow_server_t* server);

typedef enum oneflow_server_port_t { /* ABI 3 */
  ONEFLOW_SERVER_PORT_HTTP = 0,
  ONEFLOW_SERVER_PORT_GRPC = 1,
  ONEFLOW_SERVER_PORT_METRICS = 2,
} oneflow_server_port_t;

/* The port a started server listens on for `which` (the one the system chose for port 0), or -1
 * when that front end is off or the server is not started. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_server_port(const oneflow_server_t* server, int32_t which, int32_t* out_port);

/* `*out_ready` = 1 when the server is started, not stopping, and every model is ready. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_server_ready(const oneflow_server_t* server, int32_t* out_ready);

/* Stops accepting requests, finishes the ones already accepted for up to `drain_timeout_ms`
 * milliseconds (the rest are answered "unavailable"), unloads the models and closes the ports.
 * Idempotent; a stopped server cannot be started again. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_server_stop(oneflow_server_t* server, int64_t drain_timeout_ms);

/* Stops the server without a drain if it is running, and frees it. NULL-safe. */
ONEFLOW_API_SINCE(3) void oneflow_server_release(oneflow_server_t* server);

/* ---- Tracing (ABI 3) ---------------------------------------------------------------------- */

/* A timeline of what the library does, written as a Chrome-trace / Perfetto JSON file (open it in
 * https://ui.perfetto.dev or chrome://tracing; docs/profiling.md): one slice per node run (op type,
 * node name, input and output shapes), per session run, per collective (bytes, group or peer),
 * per training phase (forward, backward, step) and per server request (model, protocol), each on
 * the thread that ran it. Setting ONEFLOW_TRACE=path in the environment records a trace of the
 * whole process instead (written at exit). One trace is recorded at a time, process-wide.
 *
 * Starts recording into `path` ("%p" in it becomes the process id, "%r" the rank under
 * `oneflow launch`). The file is written by oneflow_trace_stop (or at process exit if the trace
 * is still being recorded then), but a file that cannot be created in `path`'s directory is
 * reported now. Errors: ONEFLOW_INVALID_ARGUMENT for NULL or an empty path, or when a
 * trace is already being recorded (also one started by ONEFLOW_TRACE); ONEFLOW_IO when no file can
 * be created there. Thread-safe. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_trace_start(const char* path);

/* Stops recording and writes the file atomically (a temporary file beside it, then a rename: the
 * path never holds a partial trace). Errors: ONEFLOW_INVALID_ARGUMENT when no trace is being
 * recorded; ONEFLOW_IO when the file cannot be written (recording has stopped either way).
 * Thread-safe; slices still open on other threads at that moment are left out. */
ONEFLOW_API_SINCE(3) oneflow_status_t oneflow_trace_stop(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONEFLOW_C_H_ */
