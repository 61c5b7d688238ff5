/* oneflow_jni_train.c — JNI glue for training sessions and model saving (the "Training" and save
 * sections of oneflow_c.h), behind org.oneflow.Native's train* and graphSave natives.
 *
 * Training options cross as three primitive arrays plus strings, in the order of the fields of
 * oneflow_training_options_t (the OPT_* indices below, equal to TrainingOptions' constants); the
 * Java side starts from the values trainingOptionsDefaults reads from oneflow_training_options_init,
 * so every field maps 1:1 and a default lives only in the engine. */
#include <stdlib.h>
#include <string.h>

#include "oneflow_jni_internal.h"

/* int fields */
enum { OPT_LOSS, OPT_LOSS_REDUCTION_SUM, OPT_OPTIMIZER, OPT_NESTEROV, OPT_LR_SCHEDULE, OPT_DETERMINISTIC,
       OPT_NONFINITE_POLICY, OPT_ACTIVATION_CHECKPOINTING, OPT_NUM_INTS };
/* float fields */
enum { OPT_LEARNING_RATE, OPT_WEIGHT_DECAY, OPT_MOMENTUM, OPT_DAMPENING, OPT_BETA1, OPT_BETA2, OPT_EPS,
       OPT_WARMUP_START_FACTOR, OPT_GAMMA, OPT_MIN_LR_FACTOR, OPT_MAX_GRAD_NORM, OPT_NUM_FLOATS };
/* long fields (the seed as its two's-complement bits) */
enum { OPT_WARMUP_STEPS, OPT_STEP_SIZE, OPT_DECAY_STEPS, OPT_SEED, OPT_NUM_LONGS };

/* Fills int[OPT_NUM_INTS], float[OPT_NUM_FLOATS], long[OPT_NUM_LONGS] with the engine's defaults and
 * returns its default labels input name. */
JNIEXPORT jbyteArray JNICALL Java_org_oneflow_Native_trainingOptionsDefaults(JNIEnv* env, jclass cls, jintArray ints,
                                                                             jfloatArray floats, jlongArray longs) {
  oneflow_training_options_t o;
  jint i[OPT_NUM_INTS];
  jfloat f[OPT_NUM_FLOATS];
  jlong l[OPT_NUM_LONGS];
  (void)cls;
  oneflow_training_options_init(&o);
  i[OPT_LOSS] = o.loss;
  i[OPT_LOSS_REDUCTION_SUM] = o.loss_reduction_sum;
  i[OPT_OPTIMIZER] = o.optimizer;
  i[OPT_NESTEROV] = o.nesterov;
  i[OPT_LR_SCHEDULE] = o.lr_schedule;
  i[OPT_DETERMINISTIC] = o.deterministic;
  i[OPT_NONFINITE_POLICY] = o.nonfinite_policy;
  i[OPT_ACTIVATION_CHECKPOINTING] = o.activation_checkpointing;
  f[OPT_LEARNING_RATE] = o.learning_rate;
  f[OPT_WEIGHT_DECAY] = o.weight_decay;
  f[OPT_MOMENTUM] = o.momentum;
  f[OPT_DAMPENING] = o.dampening;
  f[OPT_BETA1] = o.beta1;
  f[OPT_BETA2] = o.beta2;
  f[OPT_EPS] = o.eps;
  f[OPT_WARMUP_START_FACTOR] = o.warmup_start_factor;
  f[OPT_GAMMA] = o.gamma;
  f[OPT_MIN_LR_FACTOR] = o.min_lr_factor;
  f[OPT_MAX_GRAD_NORM] = o.max_grad_norm;
  l[OPT_WARMUP_STEPS] = o.warmup_steps;
  l[OPT_STEP_SIZE] = o.step_size;
  l[OPT_DECAY_STEPS] = o.decay_steps;
  l[OPT_SEED] = (jlong)o.seed;
  (*env)->SetIntArrayRegion(env, ints, 0, OPT_NUM_INTS, i);
  (*env)->SetFloatArrayRegion(env, floats, 0, OPT_NUM_FLOATS, f);
  (*env)->SetLongArrayRegion(env, longs, 0, OPT_NUM_LONGS, l);
  return o.labels_input ? utf8_bytes(env, o.labels_input) : NULL;
}

/* Session options as in sessionCreate (set_mask bits equal SessionOptions.SET_*). */
#define SET_INTRA_OP_THREADS 1
#define SET_OPTIMIZATION_LEVEL 2

JNIEXPORT jlong JNICALL Java_org_oneflow_Native_trainingSessionCreate(
    JNIEnv* env, jclass cls, jlong env_handle, jlong graph, jint set_mask, jint intra_op_threads,
    jint optimization_level, jintArray ints, jfloatArray floats, jlongArray longs, jbyteArray loss_output,
    jbyteArray logits_output, jbyteArray labels_input, jobjectArray frozen) {
  oneflow_session_options_t so;
  oneflow_training_options_t o;
  jint i[OPT_NUM_INTS];
  jfloat f[OPT_NUM_FLOATS];
  jlong l[OPT_NUM_LONGS];
  char *loss = NULL, *logits = NULL, *labels = NULL;
  char** frozen_names = NULL;
  jsize num_frozen = 0;
  oneflow_session_t* s = NULL;
  oneflow_status_t st = NULL;
  (void)cls;
  if ((*env)->GetArrayLength(env, ints) != OPT_NUM_INTS || (*env)->GetArrayLength(env, floats) != OPT_NUM_FLOATS ||
      (*env)->GetArrayLength(env, longs) != OPT_NUM_LONGS) {
    throw_class(env, "java/lang/IllegalArgumentException", "training option arrays have the wrong length");
    return 0;
  }
  (*env)->GetIntArrayRegion(env, ints, 0, OPT_NUM_INTS, i);
  (*env)->GetFloatArrayRegion(env, floats, 0, OPT_NUM_FLOATS, f);
  (*env)->GetLongArrayRegion(env, longs, 0, OPT_NUM_LONGS, l);
  if ((loss_output && !(loss = c_string(env, loss_output))) || (logits_output && !(logits = c_string(env, logits_output))) ||
      (labels_input && !(labels = c_string(env, labels_input))) ||
      (frozen && !c_strings(env, frozen, &frozen_names, &num_frozen)))
    goto done;

  oneflow_session_options_init(&so);
  if (set_mask & SET_INTRA_OP_THREADS) so.intra_op_threads = intra_op_threads;
  if (set_mask & SET_OPTIMIZATION_LEVEL) so.optimization_level = optimization_level;
  oneflow_training_options_init(&o);
  o.loss = (oneflow_loss_t)i[OPT_LOSS];
  o.loss_output = loss;
  o.logits_output = logits;
  o.labels_input = labels;
  o.loss_reduction_sum = i[OPT_LOSS_REDUCTION_SUM];
  o.optimizer = (oneflow_optimizer_t)i[OPT_OPTIMIZER];
  o.learning_rate = f[OPT_LEARNING_RATE];
  o.weight_decay = f[OPT_WEIGHT_DECAY];
  o.momentum = f[OPT_MOMENTUM];
  o.dampening = f[OPT_DAMPENING];
  o.nesterov = i[OPT_NESTEROV];
  o.beta1 = f[OPT_BETA1];
  o.beta2 = f[OPT_BETA2];
  o.eps = f[OPT_EPS];
  o.lr_schedule = (oneflow_lr_schedule_t)i[OPT_LR_SCHEDULE];
  o.warmup_steps = l[OPT_WARMUP_STEPS];
  o.warmup_start_factor = f[OPT_WARMUP_START_FACTOR];
  o.step_size = l[OPT_STEP_SIZE];
  o.gamma = f[OPT_GAMMA];
  o.decay_steps = l[OPT_DECAY_STEPS];
  o.min_lr_factor = f[OPT_MIN_LR_FACTOR];
  o.max_grad_norm = f[OPT_MAX_GRAD_NORM];
  o.frozen = (const char* const*)frozen_names;
  o.num_frozen = (size_t)num_frozen;
  o.deterministic = i[OPT_DETERMINISTIC];
  o.seed = (uint64_t)l[OPT_SEED];
  o.nonfinite_policy = (oneflow_nonfinite_policy_t)i[OPT_NONFINITE_POLICY];
  o.activation_checkpointing = i[OPT_ACTIVATION_CHECKPOINTING];
  st = oneflow_training_session_create(HANDLE(oneflow_env_t, env_handle), HANDLE(oneflow_graph_t, graph), &so, &o, &s);
  throw_status(env, st);
done:
  free(loss);
  free(logits);
  free(labels);
  free_strings(frozen_names, num_frozen);
  return (jlong)(intptr_t)s;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_trainSetRunMode(JNIEnv* env, jclass cls, jlong h, jint mode) {
  (void)cls;
  throw_status(env, oneflow_session_set_run_mode(HANDLE(oneflow_session_t, h), (oneflow_run_mode_t)mode));
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_trainBackward(JNIEnv* env, jclass cls, jlong h) {
  (void)cls;
  throw_status(env, oneflow_session_backward(HANDLE(oneflow_session_t, h)));
}

/* Returns whether the update was applied (false: skipped by the NaN/Inf policy). */
JNIEXPORT jboolean JNICALL Java_org_oneflow_Native_trainStep(JNIEnv* env, jclass cls, jlong h) {
  int32_t applied = 0;
  (void)cls;
  if (throw_status(env, oneflow_session_step(HANDLE(oneflow_session_t, h), &applied))) return JNI_FALSE;
  return applied ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_trainZeroGradients(JNIEnv* env, jclass cls, jlong h) {
  (void)cls;
  throw_status(env, oneflow_session_zero_gradients(HANDLE(oneflow_session_t, h)));
}

/* The trained parameters' names, in the model's initializer order, as UTF-8 byte arrays. */
JNIEXPORT jobjectArray JNICALL Java_org_oneflow_Native_trainParameterNames(JNIEnv* env, jclass cls, jlong h) {
  const oneflow_session_t* s = HANDLE(oneflow_session_t, h);
  size_t n = oneflow_session_parameter_count(s), i;
  jclass byte_array_class = (*env)->FindClass(env, "[B");
  jobjectArray arr;
  (void)cls;
  if (!byte_array_class) return NULL;
  arr = (*env)->NewObjectArray(env, (jsize)n, byte_array_class, NULL);
  (*env)->DeleteLocalRef(env, byte_array_class);
  for (i = 0; arr && i < n; ++i) {
    jbyteArray name = utf8_bytes(env, oneflow_session_parameter_name(s, i));
    if (!name) return NULL;
    (*env)->SetObjectArrayElement(env, arr, (jsize)i, name);
    (*env)->DeleteLocalRef(env, name);
  }
  return arr;
}

/* A new tensor (owned by the Java side) copying a parameter's value, or its gradient when `gradient`. */
JNIEXPORT jlong JNICALL Java_org_oneflow_Native_trainGetParameter(JNIEnv* env, jclass cls, jlong h, jbyteArray name,
                                                                  jboolean gradient) {
  const oneflow_session_t* s = HANDLE(oneflow_session_t, h);
  char* n = c_string(env, name);
  oneflow_tensor_t* t = NULL;
  oneflow_status_t st;
  (void)cls;
  if (!n) return 0;
  st = gradient ? oneflow_session_get_gradient(s, n, &t) : oneflow_session_get_parameter(s, n, &t);
  free(n);
  if (throw_status(env, st)) return 0;
  return (jlong)(intptr_t)t;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_trainSetParameter(JNIEnv* env, jclass cls, jlong h, jbyteArray name,
                                                                 jlong tensor) {
  char* n = c_string(env, name);
  (void)cls;
  if (!n) return;
  throw_status(env, oneflow_session_set_parameter(HANDLE(oneflow_session_t, h), n, HANDLE(const oneflow_tensor_t, tensor)));
  free(n);
}

/* {step, skipped_steps} in `longs`, {learning_rate, last_loss, last_grad_norm} in `doubles`. */
JNIEXPORT void JNICALL Java_org_oneflow_Native_trainState(JNIEnv* env, jclass cls, jlong h, jlongArray longs,
                                                          jdoubleArray doubles) {
  oneflow_training_state_t state;
  jlong l[2];
  jdouble d[3];
  (void)cls;
  oneflow_training_state_init(&state);
  if (throw_status(env, oneflow_session_get_training_state(HANDLE(oneflow_session_t, h), &state))) return;
  l[0] = state.step;
  l[1] = state.skipped_steps;
  d[0] = state.learning_rate;
  d[1] = state.last_loss;
  d[2] = state.last_grad_norm;
  (*env)->SetLongArrayRegion(env, longs, 0, 2, l);
  (*env)->SetDoubleArrayRegion(env, doubles, 0, 3, d);
}

/* {forward_arena, saved_activation, backward_arena, peak} bytes. */
JNIEXPORT jlongArray JNICALL Java_org_oneflow_Native_trainMemory(JNIEnv* env, jclass cls, jlong h) {
  oneflow_training_memory_t m;
  jlong l[4];
  jlongArray arr;
  (void)cls;
  oneflow_training_memory_init(&m);
  if (throw_status(env, oneflow_session_get_training_memory(HANDLE(oneflow_session_t, h), &m))) return NULL;
  l[0] = (jlong)m.forward_arena_bytes;
  l[1] = (jlong)m.saved_activation_bytes;
  l[2] = (jlong)m.backward_arena_bytes;
  l[3] = (jlong)m.peak_bytes;
  arr = (*env)->NewLongArray(env, 4);
  if (arr) (*env)->SetLongArrayRegion(env, arr, 0, 4, l);
  return arr;
}

JNIEXPORT void JNICALL Java_org_oneflow_Native_trainCheckpoint(JNIEnv* env, jclass cls, jlong h, jbyteArray path,
                                                               jboolean load) {
  char* p = c_string(env, path);
  oneflow_session_t* s = HANDLE(oneflow_session_t, h);
  (void)cls;
  if (!p) return;
  throw_status(env, load ? oneflow_session_load_checkpoint(s, p) : oneflow_session_save_checkpoint(s, p));
  free(p);
}

/* The model with the current parameter values, as a new graph the Java side owns. */
JNIEXPORT jlong JNICALL Java_org_oneflow_Native_trainExportModel(JNIEnv* env, jclass cls, jlong h) {
  oneflow_graph_t* g = NULL;
  (void)cls;
  if (throw_status(env, oneflow_session_export_model(HANDLE(oneflow_session_t, h), &g))) return 0;
  return (jlong)(intptr_t)g;
}

/* ---- model saving (oneflow_graph_save) ------------------------------------------------------- */

JNIEXPORT void JNICALL Java_org_oneflow_Native_graphSave(JNIEnv* env, jclass cls, jlong h, jbyteArray path, jint format,
                                                         jbyteArray external_data_file, jboolean checksums) {
  oneflow_save_options_t o;
  char* p = c_string(env, path);
  char* ext = NULL;
  (void)cls;
  if (!p) return;
  if (external_data_file && !(ext = c_string(env, external_data_file))) {
    free(p);
    return;
  }
  oneflow_save_options_init(&o);
  o.format = (oneflow_model_format_t)format;
  o.external_data_file = ext;
  o.checksums = checksums ? 1 : 0;
  throw_status(env, oneflow_graph_save(HANDLE(const oneflow_graph_t, h), p, &o));
  free(p);
  free(ext);
}
