/* oneflow_jni.c — JNI glue between org.oneflow.Native and the C ABI in oneflow_c.h.
 *
 * Only conversion lives here: Java values become C arguments, statuses become OneflowException.
 * Strings cross as NUL-terminated UTF-8 byte[] (JNI's own string calls use "modified UTF-8", which
 * differs from the engine's UTF-8 for NUL and supplementary characters). Handle lifetimes and
 * closed-handle checks are the Java side's job (NativeHandle); every handle arriving here is live. */
#include <jni.h>
#include <stdlib.h>
#include <string.h>

#include "oneflow_c.h"
#include "oneflow_jni_internal.h"

static JavaVM* g_vm;
static jclass g_exception_class;   /* org.oneflow.OneflowException */
static jmethodID g_exception_ctor; /* (I[B)V: code, UTF-8 message */
static jclass g_value_info_class;  /* org.oneflow.ValueInfo */
static jmethodID g_value_info_ctor;

static jclass global_class(JNIEnv* env, const char* name) {
  jclass local = (*env)->FindClass(env, name);
  jclass global;
  if (!local) return NULL;
  global = (jclass)(*env)->NewGlobalRef(env, local);
  (*env)->DeleteLocalRef(env, local);
  return global;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  JNIEnv* env = NULL;
  (void)reserved;
  g_vm = vm;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  g_exception_class = global_class(env, "org/oneflow/OneflowException");
  g_value_info_class = global_class(env, "org/oneflow/ValueInfo");
  if (!g_exception_class || !g_value_info_class) return JNI_ERR;
  g_exception_ctor = (*env)->GetMethodID(env, g_exception_class, "<init>", "(I[B)V");
  g_value_info_ctor = (*env)->GetMethodID(env, g_value_info_class, "<init>", "([BI[J[[BI)V");
  if (!g_exception_ctor || !g_value_info_ctor) return JNI_ERR;
  return JNI_VERSION_1_8;
}

void throw_class(JNIEnv* env, const char* class_name, const char* message) {
  jclass cls = (*env)->FindClass(env, class_name);
  if (cls) (*env)->ThrowNew(env, cls, message);
}

/* A Java byte[] holding the bytes of `s` (no terminator); NULL with an exception pending on failure. */
jbyteArray utf8_bytes(JNIEnv* env, const char* s) {
  jsize n = (jsize)strlen(s);
  jbyteArray arr = (*env)->NewByteArray(env, n);
  if (arr) (*env)->SetByteArrayRegion(env, arr, 0, n, (const jbyte*)s);
  return arr;
}

/* Turns a non-NULL status into a pending OneflowException and frees it. Returns 1 when it threw. */
int throw_status(JNIEnv* env, oneflow_status_t st) {
  jbyteArray msg;
  jobject ex;
  if (!st) return 0;
  msg = utf8_bytes(env, oneflow_status_message(st));
  if (msg) {
    ex = (*env)->NewObject(env, g_exception_class, g_exception_ctor, (jint)oneflow_status_code(st), msg);
    if (ex) (*env)->Throw(env, (jthrowable)ex);
  }
  oneflow_status_free(st);
  return 1;
}

/* A malloc'd copy of a NUL-terminated UTF-8 byte[] made by the Java side; NULL for a null array. */
char* c_string(JNIEnv* env, jbyteArray bytes) {
  jsize n;
  char* s;
  if (!bytes) return NULL;
  n = (*env)->GetArrayLength(env, bytes);
  s = (char*)malloc((size_t)n + 1);
  if (!s) {
    throw_class(env, "java/lang/OutOfMemoryError", "oneflow: no memory for a string");
    return NULL;
  }
  (*env)->GetByteArrayRegion(env, bytes, 0, n, (jbyte*)s);
  s[n] = '\0';
  return s;
}

void free_strings(char** strings, jsize n) {
  jsize i;
  if (!strings) return;
  for (i = 0; i < n; ++i) free(strings[i]);
  free(strings);
}

/* Copies a byte[][] of UTF-8 names into a malloc'd char* array. Returns 0 with an exception pending
 * on failure (nothing left allocated). */
int c_strings(JNIEnv* env, jobjectArray arr, char*** out, jsize* out_n) {
  jsize n = arr ? (*env)->GetArrayLength(env, arr) : 0, i;
  char** strings = (char**)calloc((size_t)n + 1, sizeof(char*));
  if (!strings) {
    throw_class(env, "java/lang/OutOfMemoryError", "oneflow: no memory for names");
    return 0;
  }
  for (i = 0; i < n; ++i) {
    jbyteArray b = (jbyteArray)(*env)->GetObjectArrayElement(env, arr, i);
    strings[i] = c_string(env, b);
    (*env)->DeleteLocalRef(env, b);
    if (!strings[i]) {
      free_strings(strings, i);
      return 0;
    }
  }
  *out = strings;
  *out_n = n;
  return 1;
}

/* Copies a long[] shape into a malloc'd int64_t array (which may be empty for a scalar). */
static int64_t* c_shape(JNIEnv* env, jlongArray shape, size_t* rank) {
  jsize n = (*env)->GetArrayLength(env, shape);
  int64_t* dims = (int64_t*)malloc(((size_t)n + 1) * sizeof(int64_t));
  if (!dims) {
    throw_class(env, "java/lang/OutOfMemoryError", "oneflow: no memory for a shape");
    return NULL;
  }
  (*env)->GetLongArrayRegion(env, shape, 0, n, (jlong*)dims);
  *rank = (size_t)n;
  return dims;
}

/* ---- library ------------------------------------------------------------------------------- */

JNIEXPORT jbyteArray JNICALL Java_org_oneflow_Native_version(JNIEnv* env, jclass cls) {
  (void)cls;
  return utf8_bytes(env, oneflow_version());
}

JNIEXPORT jint JNICALL Java_org_oneflow_Native_apiVersion(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return (jint)oneflow_api_version();
}

JNIEXPORT jbyteArray JNICALL Java_org_oneflow_Native_dtypeName(JNIEnv* env, jclass cls, jint dtype) {
  (void)cls;
  return utf8_bytes(env, oneflow_dtype_name((oneflow_dtype_t)dtype));
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_dtypeSize(JNIEnv* env, jclass cls, jint dtype) {
  (void)env;
  (void)cls;
  return (jlong)oneflow_dtype_size((oneflow_dtype_t)dtype);
}

/* ---- environment --------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_envCreate(JNIEnv* env, jclass cls) {
  oneflow_env_t* e = NULL;
  (void)cls;
  if (throw_status(env, oneflow_env_create(&e))) return 0;
  return (jlong)(intptr_t)e;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_envRelease(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  oneflow_env_release(HANDLE(oneflow_env_t, h));
}

/* ---- tensors ------------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorCreate(JNIEnv* env, jclass cls, jint dtype, jlongArray shape) {
  size_t rank = 0;
  int64_t* dims = c_shape(env, shape, &rank);
  oneflow_tensor_t* t = NULL;
  oneflow_status_t st;
  (void)cls;
  if (!dims) return 0;
  st = oneflow_tensor_create((oneflow_dtype_t)dtype, dims, rank, &t);
  free(dims);
  if (throw_status(env, st)) return 0;
  return (jlong)(intptr_t)t;
}

/* The engine calls this when it no longer reads a borrowed ByteBuffer. It may run on a thread the JVM
 * does not know (whichever thread drops the last reference), so it attaches one when needed. */
static void release_buffer_ref(void* data, void* user_data) {
  JNIEnv* env = NULL;
  jint got;
  (void)data;
  got = (*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_1_8);
  if (got == JNI_EDETACHED) {
    if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, NULL) != JNI_OK) return;
    (*env)->DeleteGlobalRef(env, (jobject)user_data);
    (*g_vm)->DetachCurrentThread(g_vm);
  } else if (got == JNI_OK) {
    (*env)->DeleteGlobalRef(env, (jobject)user_data);
  }
}

/* A tensor viewing `buffer` from byte `offset` on. The engine holds a global reference to the buffer
 * until it calls release_buffer_ref, so the memory stays reachable for as long as it is read. */
JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorCreateBorrowed(JNIEnv* env, jclass cls, jint dtype,
                                                                     jlongArray shape, jobject buffer,
                                                                     jlong offset, jlong byte_size) {
  size_t rank = 0;
  char* base = (char*)(*env)->GetDirectBufferAddress(env, buffer);
  int64_t* dims;
  jobject ref;
  oneflow_tensor_t* t = NULL;
  oneflow_status_t st;
  (void)cls;
  if (!base) {
    throw_class(env, "java/lang/IllegalArgumentException", "the buffer is not a direct ByteBuffer");
    return 0;
  }
  dims = c_shape(env, shape, &rank);
  if (!dims) return 0;
  ref = (*env)->NewGlobalRef(env, buffer);
  if (!ref) {
    free(dims);
    throw_class(env, "java/lang/OutOfMemoryError", "oneflow: no global reference for the buffer");
    return 0;
  }
  st = oneflow_tensor_create_borrowed((oneflow_dtype_t)dtype, dims, rank, base + offset, (size_t)byte_size,
                                      release_buffer_ref, ref, &t);
  free(dims);
  if (st) {
    /* A refused tensor never took the buffer: the deleter will not run, so drop the reference here. */
    (*env)->DeleteGlobalRef(env, ref);
    throw_status(env, st);
    return 0;
  }
  return (jlong)(intptr_t)t;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_tensorRelease(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  oneflow_tensor_release(HANDLE(oneflow_tensor_t, h));
}

/* A sequence of the tensors whose handles `elements` holds (each referenced, not copied). */
JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorCreateSequence(JNIEnv* env, jclass cls, jint dtype,
                                                                     jlongArray elements) {
  jsize n = (*env)->GetArrayLength(env, elements);
  jlong* raw = (*env)->GetLongArrayElements(env, elements, NULL);
  const oneflow_tensor_t** items = (const oneflow_tensor_t**)calloc((size_t)n + 1, sizeof *items);
  oneflow_tensor_t* t = NULL;
  oneflow_status_t st;
  (void)cls;
  if (!raw || !items) {
    if (raw) (*env)->ReleaseLongArrayElements(env, elements, raw, JNI_ABORT);
    free(items);
    throw_class(env, "java/lang/OutOfMemoryError", "oneflow: no memory for the sequence's elements");
    return 0;
  }
  for (jsize i = 0; i < n; ++i) items[i] = HANDLE(oneflow_tensor_t, raw[i]);
  st = oneflow_tensor_create_sequence((oneflow_dtype_t)dtype, items, (size_t)n, &t);
  (*env)->ReleaseLongArrayElements(env, elements, raw, JNI_ABORT);
  free(items);
  if (throw_status(env, st)) return 0;
  return (jlong)(intptr_t)t;
}

/* A string tensor: the Java byte arrays are read once each and copied by the engine. */
JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorCreateStrings(JNIEnv* env, jclass cls, jlongArray shape,
                                                                    jobjectArray elements) {
  jsize rank = (*env)->GetArrayLength(env, shape);
  jsize n = (*env)->GetArrayLength(env, elements);
  jlong* dims = (*env)->GetLongArrayElements(env, shape, NULL);
  const char** data = (const char**)calloc((size_t)n + 1, sizeof *data);
  size_t* lengths = (size_t*)calloc((size_t)n + 1, sizeof *lengths);
  jbyteArray* arrays = (jbyteArray*)calloc((size_t)n + 1, sizeof *arrays);
  oneflow_tensor_t* t = NULL;
  oneflow_status_t st = NULL;
  jsize got = 0;
  (void)cls;
  if (!dims || !data || !lengths || !arrays) {
    throw_class(env, "java/lang/OutOfMemoryError", "oneflow: no memory for the strings");
    goto done;
  }
  for (; got < n; ++got) {
    arrays[got] = (jbyteArray)(*env)->GetObjectArrayElement(env, elements, got);
    if (arrays[got] == NULL) {
      throw_class(env, "java/lang/NullPointerException", "oneflow: a string element is null");
      goto done;
    }
    lengths[got] = (size_t)(*env)->GetArrayLength(env, arrays[got]);
    data[got] = (const char*)(*env)->GetByteArrayElements(env, arrays[got], NULL);
    if (data[got] == NULL) goto done; /* OutOfMemoryError pending */
  }
  st = oneflow_tensor_create_strings((const int64_t*)dims, (size_t)rank, data, lengths, &t);
  throw_status(env, st);
done:
  for (jsize i = 0; i < got; ++i) {
    if (data[i]) (*env)->ReleaseByteArrayElements(env, arrays[i], (jbyte*)data[i], JNI_ABORT);
    (*env)->DeleteLocalRef(env, arrays[i]);
  }
  if (got < n && arrays && arrays[got]) (*env)->DeleteLocalRef(env, arrays[got]);
  if (dims) (*env)->ReleaseLongArrayElements(env, shape, dims, JNI_ABORT);
  free(data);
  free(lengths);
  free(arrays);
  return (jlong)(intptr_t)t;
}

JNIEXPORT jobjectArray JNICALL Java_org_oneflow_Native_tensorStrings(JNIEnv* env, jclass cls, jlong h) {
  const oneflow_tensor_t* t = HANDLE(oneflow_tensor_t, h);
  jlong n = oneflow_tensor_element_count(t);
  jclass bytes_class = (*env)->FindClass(env, "[B");
  jobjectArray out;
  (void)cls;
  if (oneflow_tensor_dtype(t) != ONEFLOW_DTYPE_STRING) {
    throw_class(env, "java/lang/IllegalStateException", "oneflow: not a STRING tensor");
    return NULL;
  }
  if (bytes_class == NULL) return NULL;
  out = (*env)->NewObjectArray(env, (jsize)n, bytes_class, NULL);
  if (out == NULL) return NULL;
  for (jlong i = 0; i < n; ++i) {
    const char* data = NULL;
    size_t len = 0;
    jbyteArray b;
    if (throw_status(env, oneflow_tensor_string_element(t, i, &data, &len))) return NULL;
    b = (*env)->NewByteArray(env, (jsize)len);
    if (b == NULL) return NULL;
    (*env)->SetByteArrayRegion(env, b, 0, (jsize)len, (const jbyte*)data);
    (*env)->SetObjectArrayElement(env, out, (jsize)i, b);
    (*env)->DeleteLocalRef(env, b);
  }
  return out;
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorCreateNone(JNIEnv* env, jclass cls, jint dtype) {
  oneflow_tensor_t* t = NULL;
  (void)cls;
  if (throw_status(env, oneflow_tensor_create_none((oneflow_dtype_t)dtype, &t))) return 0;
  return (jlong)(intptr_t)t;
}

JNIEXPORT jint JNICALL Java_org_oneflow_Native_tensorKind(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  return (jint)oneflow_tensor_kind(HANDLE(oneflow_tensor_t, h));
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorSequenceLength(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  return (jlong)oneflow_tensor_sequence_length(HANDLE(oneflow_tensor_t, h));
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorSequenceElement(JNIEnv* env, jclass cls, jlong h, jlong index) {
  oneflow_tensor_t* t = NULL;
  (void)cls;
  if (index < 0) {
    throw_class(env, "java/lang/IndexOutOfBoundsException", "oneflow: a negative sequence index");
    return 0;
  }
  if (throw_status(env, oneflow_tensor_sequence_element(HANDLE(oneflow_tensor_t, h), (size_t)index, &t))) return 0;
  return (jlong)(intptr_t)t;
}

JNIEXPORT jint JNICALL Java_org_oneflow_Native_tensorDType(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  return (jint)oneflow_tensor_dtype(HANDLE(oneflow_tensor_t, h));
}

JNIEXPORT jlongArray JNICALL Java_org_oneflow_Native_tensorShape(JNIEnv* env, jclass cls, jlong h) {
  const oneflow_tensor_t* t = HANDLE(oneflow_tensor_t, h);
  jsize rank = (jsize)oneflow_tensor_rank(t);
  jlongArray arr = (*env)->NewLongArray(env, rank);
  (void)cls;
  if (arr && rank > 0) (*env)->SetLongArrayRegion(env, arr, 0, rank, (const jlong*)oneflow_tensor_shape(t));
  return arr;
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorElementCount(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  return (jlong)oneflow_tensor_element_count(HANDLE(oneflow_tensor_t, h));
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_tensorByteSize(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  return (jlong)oneflow_tensor_byte_size(HANDLE(oneflow_tensor_t, h));
}

/* Copies between a tensor and a primitive Java array of exactly the tensor's byte size (the Java side
 * picks the array type from the dtype; the size check here keeps a mismatch from overrunning memory). */
static void copy_array(JNIEnv* env, jlong h, jarray array, jlong array_bytes, int to_tensor) {
  const oneflow_tensor_t* t = HANDLE(oneflow_tensor_t, h);
  size_t n = oneflow_tensor_byte_size(t);
  void* p;
  if ((size_t)array_bytes != n) {
    throw_class(env, "java/lang/IllegalArgumentException", "array size does not match the tensor's byte size");
    return;
  }
  if (n == 0) return;
  p = (*env)->GetPrimitiveArrayCritical(env, array, NULL);
  if (!p) return; /* OutOfMemoryError pending */
  if (to_tensor)
    memcpy(oneflow_tensor_data(t), p, n);
  else
    memcpy(p, oneflow_tensor_data(t), n);
  (*env)->ReleasePrimitiveArrayCritical(env, array, p, to_tensor ? JNI_ABORT : 0);
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_tensorWriteArray(JNIEnv* env, jclass cls, jlong h, jarray array,
                                                                jlong array_bytes) {
  (void)cls;
  copy_array(env, h, array, array_bytes, 1);
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_tensorReadArray(JNIEnv* env, jclass cls, jlong h, jarray array,
                                                               jlong array_bytes) {
  (void)cls;
  copy_array(env, h, array, array_bytes, 0);
}

/* Copies the tensor's bytes into a direct buffer from byte `offset` on; the Java side checked room. */
JNIEXPORT void JNICALL Java_org_oneflow_Native_tensorReadBuffer(JNIEnv* env, jclass cls, jlong h, jobject buffer,
                                                                jlong offset, jlong capacity) {
  const oneflow_tensor_t* t = HANDLE(oneflow_tensor_t, h);
  size_t n = oneflow_tensor_byte_size(t);
  char* base = (char*)(*env)->GetDirectBufferAddress(env, buffer);
  (void)cls;
  if (!base) {
    throw_class(env, "java/lang/IllegalArgumentException", "the buffer is not a direct ByteBuffer");
    return;
  }
  if ((size_t)capacity < n) {
    throw_class(env, "java/nio/BufferOverflowException", NULL);
    return;
  }
  if (n) memcpy(base + offset, oneflow_tensor_data(t), n);
}

/* ---- graphs -------------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_graphLoadFile(JNIEnv* env, jclass cls, jbyteArray path) {
  char* p = c_string(env, path);
  oneflow_graph_t* g = NULL;
  oneflow_status_t st;
  (void)cls;
  if (!p) return 0;
  st = oneflow_graph_load_file(p, &g);
  free(p);
  if (throw_status(env, st)) return 0;
  return (jlong)(intptr_t)g;
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_graphLoadMemory(JNIEnv* env, jclass cls, jbyteArray model,
                                                                jbyteArray external_data_dir) {
  char* dir = NULL;
  jsize n = (*env)->GetArrayLength(env, model);
  jbyte* bytes;
  oneflow_graph_t* g = NULL;
  oneflow_status_t st;
  (void)cls;
  if (external_data_dir && !(dir = c_string(env, external_data_dir))) return 0;
  bytes = (*env)->GetByteArrayElements(env, model, NULL);
  if (!bytes) {
    free(dir);
    return 0;
  }
  st = oneflow_graph_load_memory(bytes, (size_t)n, dir, &g);
  (*env)->ReleaseByteArrayElements(env, model, bytes, JNI_ABORT);
  free(dir);
  if (throw_status(env, st)) return 0;
  return (jlong)(intptr_t)g;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_graphRelease(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  oneflow_graph_release(HANDLE(oneflow_graph_t, h));
}

/* Builds a ValueInfo from the C description. Deletes its local references: value_infos calls it once
 * per input or output, and a model may have more of them than a native frame's local capacity. */
static jobject value_info(JNIEnv* env, const oneflow_value_info_t* info) {
  jbyteArray name = utf8_bytes(env, info->name);
  jlongArray dims = NULL;
  jobjectArray dim_names = NULL;
  jclass byte_array_class = NULL;
  jobject result = NULL;
  int64_t i;
  if (!name) return NULL;
  if (info->rank >= 0) {
    dims = (*env)->NewLongArray(env, (jsize)info->rank);
    byte_array_class = dims ? (*env)->FindClass(env, "[B") : NULL;
    dim_names = byte_array_class ? (*env)->NewObjectArray(env, (jsize)info->rank, byte_array_class, NULL) : NULL;
    if (!dim_names) goto done;
    if (info->rank > 0) (*env)->SetLongArrayRegion(env, dims, 0, (jsize)info->rank, (const jlong*)info->dims);
    for (i = 0; i < info->rank; ++i) {
      jbyteArray dn;
      if (!info->dim_names[i]) continue;
      dn = utf8_bytes(env, info->dim_names[i]);
      if (!dn) goto done;
      (*env)->SetObjectArrayElement(env, dim_names, (jsize)i, dn);
      (*env)->DeleteLocalRef(env, dn);
    }
  }
  result = (*env)->NewObject(env, g_value_info_class, g_value_info_ctor, name, (jint)info->dtype, dims, dim_names,
                             (jint)info->kind);
done:
  (*env)->DeleteLocalRef(env, name);
  if (dims) (*env)->DeleteLocalRef(env, dims);
  if (byte_array_class) (*env)->DeleteLocalRef(env, byte_array_class);
  if (dim_names) (*env)->DeleteLocalRef(env, dim_names);
  return result;
}

typedef oneflow_status_t (*info_fn)(const void* handle, size_t index, oneflow_value_info_t* out_info);

/* Describes `count` inputs or outputs of a graph or session through `get`. */
static jobjectArray value_infos(JNIEnv* env, const void* handle, size_t count, info_fn get) {
  jobjectArray arr = (*env)->NewObjectArray(env, (jsize)count, g_value_info_class, NULL);
  size_t i;
  if (!arr) return NULL;
  for (i = 0; i < count; ++i) {
    oneflow_value_info_t info;
    jobject vi;
    oneflow_value_info_init(&info);
    if (throw_status(env, get(handle, i, &info))) return NULL;
    vi = value_info(env, &info);
    if (!vi) return NULL;
    (*env)->SetObjectArrayElement(env, arr, (jsize)i, vi);
    (*env)->DeleteLocalRef(env, vi);
  }
  return arr;
}

static oneflow_status_t graph_input(const void* h, size_t i, oneflow_value_info_t* info) {
  return oneflow_graph_get_input_info((const oneflow_graph_t*)h, i, info);
}
static oneflow_status_t graph_output(const void* h, size_t i, oneflow_value_info_t* info) {
  return oneflow_graph_get_output_info((const oneflow_graph_t*)h, i, info);
}
static oneflow_status_t session_input(const void* h, size_t i, oneflow_value_info_t* info) {
  return oneflow_session_get_input_info((const oneflow_session_t*)h, i, info);
}
static oneflow_status_t session_output(const void* h, size_t i, oneflow_value_info_t* info) {
  return oneflow_session_get_output_info((const oneflow_session_t*)h, i, info);
}

JNIEXPORT jobjectArray JNICALL Java_org_oneflow_Native_graphInfo(JNIEnv* env, jclass cls, jlong h, jboolean outputs) {
  const oneflow_graph_t* g = HANDLE(oneflow_graph_t, h);
  (void)cls;
  return outputs ? value_infos(env, g, oneflow_graph_output_count(g), graph_output)
                 : value_infos(env, g, oneflow_graph_input_count(g), graph_input);
}

/* ---- sessions ------------------------------------------------------------------------------ */

/* Bits of `set_mask`: which options the caller set (the rest keep oneflow_session_options_init's values).
 * Equal to SessionOptions.SET_*. */
#define SET_INTRA_OP_THREADS 1
#define SET_OPTIMIZATION_LEVEL 2

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_sessionCreate(JNIEnv* env, jclass cls, jlong env_handle, jlong graph,
                                                              jint set_mask, jint intra_op_threads,
                                                              jint optimization_level) {
  oneflow_session_options_t options;
  oneflow_session_t* s = NULL;
  (void)cls;
  oneflow_session_options_init(&options);
  if (set_mask & SET_INTRA_OP_THREADS) options.intra_op_threads = intra_op_threads;
  if (set_mask & SET_OPTIMIZATION_LEVEL) options.optimization_level = optimization_level;
  if (throw_status(env, oneflow_session_create(HANDLE(oneflow_env_t, env_handle), HANDLE(oneflow_graph_t, graph),
                                               &options, &s)))
    return 0;
  return (jlong)(intptr_t)s;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_sessionRelease(JNIEnv* env, jclass cls, jlong h) {
  (void)env;
  (void)cls;
  oneflow_session_release(HANDLE(oneflow_session_t, h));
}

JNIEXPORT jobjectArray JNICALL Java_org_oneflow_Native_sessionInfo(JNIEnv* env, jclass cls, jlong h,
                                                                   jboolean outputs) {
  const oneflow_session_t* s = HANDLE(oneflow_session_t, h);
  (void)cls;
  return outputs ? value_infos(env, s, oneflow_session_output_count(s), session_output)
                 : value_infos(env, s, oneflow_session_input_count(s), session_input);
}

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_sessionPlannedPeakBytes(JNIEnv* env, jclass cls, jlong h) {
  uint64_t bytes = 0;
  (void)cls;
  if (throw_status(env, oneflow_session_get_planned_peak_bytes(HANDLE(oneflow_session_t, h), &bytes))) return 0;
  return (jlong)bytes;
}

/* Runs the session. `output_names` null selects every output. Returns the output handles, which the
 * Java side wraps (and so owns) at once. */
JNIEXPORT jlongArray JNICALL Java_org_oneflow_Native_sessionRun(JNIEnv* env, jclass cls, jlong h,
                                                                jobjectArray input_names, jlongArray input_handles,
                                                                jobjectArray output_names) {
  oneflow_session_t* s = HANDLE(oneflow_session_t, h);
  char** in_names = NULL;
  char** out_names = NULL;
  jsize n_in = 0, n_out_names = 0, i;
  size_t n_out;
  const oneflow_tensor_t** inputs = NULL;
  oneflow_tensor_t** outputs = NULL;
  jlong* handles = NULL;
  jlongArray result = NULL;
  oneflow_status_t st;
  (void)cls;

  if (!c_strings(env, input_names, &in_names, &n_in)) return NULL;
  if (output_names && !c_strings(env, output_names, &out_names, &n_out_names)) goto done;
  n_out = output_names ? (size_t)n_out_names : oneflow_session_output_count(s);
  inputs = (const oneflow_tensor_t**)calloc((size_t)n_in + 1, sizeof(*inputs));
  outputs = (oneflow_tensor_t**)calloc(n_out + 1, sizeof(*outputs));
  handles = (jlong*)calloc((size_t)n_in + n_out + 1, sizeof(jlong));
  if (!inputs || !outputs || !handles) {
    throw_class(env, "java/lang/OutOfMemoryError", "oneflow: no memory for a run");
    goto done;
  }
  (*env)->GetLongArrayRegion(env, input_handles, 0, n_in, handles);
  for (i = 0; i < n_in; ++i) inputs[i] = HANDLE(const oneflow_tensor_t, handles[i]);

  st = oneflow_session_run(s, (const char* const*)in_names, inputs, (size_t)n_in, (const char* const*)out_names,
                           (size_t)n_out_names, outputs, n_out);
  if (throw_status(env, st)) goto done;
  /* With no names, a training session in EVAL mode fills fewer slots (the model outputs, not the loss). */
  while (n_out > 0 && !outputs[n_out - 1]) --n_out;
  for (i = 0; i < (jsize)n_out; ++i) handles[i] = (jlong)(intptr_t)outputs[i];
  result = (*env)->NewLongArray(env, (jsize)n_out);
  if (result) {
    (*env)->SetLongArrayRegion(env, result, 0, (jsize)n_out, handles);
  } else {
    for (i = 0; i < (jsize)n_out; ++i) oneflow_tensor_release(outputs[i]);
  }

done:
  free_strings(in_names, n_in);
  free_strings(out_names, n_out_names);
  free(inputs);
  free(outputs);
  free(handles);
  return result;
}
