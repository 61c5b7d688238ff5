/* train_digits.c — trains a classifier on scikit-learn's digits data set through OneFlow's C ABI
 * only: a training session with an appended softmax cross-entropy loss, Adam with a warm-up +
 * cosine schedule, one progress line per epoch, test accuracy, a mid-run and a final checkpoint,
 * the trained model exported to the native format and a prediction served from the exported file.
 *
 *   train_digits DATA_DIR MODEL.onnx OUT_DIR [--epochs N] [--batch B] [--lr X] [--weight-decay W]
 *                [--threads T] [--seed S] [--min-accuracy PCT] [--resume-check]
 *
 * DATA_DIR holds train_x/train_y/test_x/test_y.npy (examples/c/make_digits_data.py); MODEL.onnx
 * maps "input" [N, 64] to "logits" [N, 10] (examples/c/make_digits_models.py). --resume-check
 * trains a second session from the mid-run checkpoint and requires its final parameters to be
 * bit-identical to the uninterrupted run's (deterministic mode). Exits non-zero on any error or
 * when the test accuracy is below --min-accuracy. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h> /* isatty */

#include "oneflow_c.h"

#define CHECK(call)                                                                             \
  do {                                                                                          \
    oneflow_status_t st_ = (call);                                                              \
    if (st_) {                                                                                  \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,                  \
              oneflow_code_name(oneflow_status_code(st_)), oneflow_status_message(st_));        \
      oneflow_status_free(st_);                                                                 \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

/* ---- A minimal .npy reader (little-endian float32 / int64, C order) ---- */
typedef struct {
  int64_t rows, cols; /* cols = 1 for 1-D arrays */
  int is_float;
  void* data;
} Array;

static Array load_npy(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  FILE* f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
  unsigned char pre[10];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) { fprintf(stderr, "%s: not .npy\n", path); exit(1); }
  size_t hlen = pre[8] | (pre[9] << 8);
  if (pre[6] != 1) { /* versions 2 and 3 use a 4-byte header length */
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) exit(1);
    hlen |= ((size_t)more[0] << 16) | ((size_t)more[1] << 24);
  }
  char* header = calloc(hlen + 1, 1);
  if (!header || fread(header, 1, hlen, f) != hlen) { fprintf(stderr, "%s: short header\n", path); exit(1); }
  Array a = {0, 1, 0, NULL};
  a.is_float = strstr(header, "'<f4'") != NULL;
  if (!a.is_float && !strstr(header, "'<i8'")) { fprintf(stderr, "%s: want <f4 or <i8\n", path); exit(1); }
  if (strstr(header, "'fortran_order': True")) { fprintf(stderr, "%s: fortran order\n", path); exit(1); }
  const char* shape = strstr(header, "'shape': (");
  if (!shape || sscanf(shape + 10, "%lld, %lld", (long long*)&a.rows, (long long*)&a.cols) < 1) {
    fprintf(stderr, "%s: no shape\n", path);
    exit(1);
  }
  if (!strchr(shape + 10, ',') || strchr(shape + 10, ',') > strchr(shape + 10, ')')) a.cols = 1;
  free(header);
  size_t bytes = (size_t)(a.rows * a.cols) * (a.is_float ? 4 : 8);
  a.data = malloc(bytes);
  if (!a.data || fread(a.data, 1, bytes, f) != bytes) { fprintf(stderr, "%s: short data\n", path); exit(1); }
  fclose(f);
  return a;
}

/* ---- Deterministic shuffling: splitmix64 seeded by (seed, epoch), so a resumed run sees the same
 * batches as an uninterrupted one. ---- */
static uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void permutation(int64_t* p, int64_t n, uint64_t seed, int epoch) {
  uint64_t s = seed * 1000003ull + (uint64_t)epoch;
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = (int64_t)(splitmix64(&s) % (uint64_t)(i + 1));
    int64_t t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
  int epochs, batch, threads;
  float lr, weight_decay;
  uint64_t seed;
} Config;

static oneflow_session_t* create_session(const char* model_path, const Config* cfg, int64_t steps_total) {
  oneflow_graph_t* graph = NULL;
  CHECK(oneflow_graph_load_file(model_path, &graph));
  oneflow_session_options_t so;
  oneflow_session_options_init(&so);
  so.intra_op_threads = cfg->threads;
  oneflow_training_options_t to;
  oneflow_training_options_init(&to);
  to.loss = ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY;
  to.logits_output = "logits";
  to.labels_input = "labels";
  to.optimizer = ONEFLOW_OPTIMIZER_ADAMW;
  to.learning_rate = cfg->lr;
  to.weight_decay = cfg->weight_decay;
  to.lr_schedule = ONEFLOW_LR_COSINE;
  to.warmup_steps = steps_total / 20;
  to.warmup_start_factor = 0.1f;
  to.decay_steps = steps_total - to.warmup_steps;
  to.min_lr_factor = 0.02f;
  to.max_grad_norm = 5.0f;
  to.deterministic = 1;
  to.seed = cfg->seed;
  oneflow_session_t* session = NULL;
  CHECK(oneflow_training_session_create(NULL, graph, &so, &to, &session));
  oneflow_graph_release(graph);
  return session;
}

/* Accuracy (in %) of `session` in eval mode on x/y, as one batch. */
static double evaluate(oneflow_session_t* session, const Array* x, const Array* y) {
  CHECK(oneflow_session_set_run_mode(session, ONEFLOW_RUN_EVAL));
  int64_t shape[2] = {x->rows, x->cols};
  oneflow_tensor_t* in = NULL;
  CHECK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, x->data, (size_t)(x->rows * x->cols) * 4, NULL,
                                       NULL, &in));
  const char* names[1] = {"input"};
  const oneflow_tensor_t* ins[1] = {in};
  const char* outs[1] = {"logits"};
  oneflow_tensor_t* logits = NULL;
  CHECK(oneflow_session_run(session, names, ins, 1, outs, 1, &logits, 1));
  const float* l = oneflow_tensor_data(logits);
  const int64_t* labels = y->data;
  int64_t correct = 0;
  for (int64_t i = 0; i < x->rows; ++i) {
    int best = 0;
    for (int c = 1; c < 10; ++c)
      if (l[i * 10 + c] > l[i * 10 + best]) best = c;
    correct += best == labels[i];
  }
  oneflow_tensor_release(logits);
  oneflow_tensor_release(in);
  CHECK(oneflow_session_set_run_mode(session, ONEFLOW_RUN_TRAIN));
  return 100.0 * (double)correct / (double)x->rows;
}

/* Trains epochs [first, last) and prints a progress line per epoch; saves `ckpt_path` after epoch
 * `ckpt_epoch` (1-based count of finished epochs) when it is in range. */
static void train(oneflow_session_t* session, const Config* cfg, const Array* xtr, const Array* ytr, const Array* xte,
                  const Array* yte, int first, int last, int ckpt_epoch, const char* ckpt_path, int verbose) {
  const int64_t n = xtr->rows, d = xtr->cols;
  int64_t* perm = malloc(sizeof(int64_t) * (size_t)n);
  float* bx = malloc(sizeof(float) * (size_t)(cfg->batch * d));
  int64_t* by = malloc(sizeof(int64_t) * (size_t)cfg->batch);
  /* On a terminal a bar follows the batches of an epoch; logs and pipes get the epoch lines only. */
  const int bar = verbose && isatty(2);
  static const char kDone[] = "##############################", kLeft[] = "..............................";
  for (int epoch = first; epoch < last; ++epoch) {
    double t0 = now_s(), loss_sum = 0;
    int64_t seen = 0, correct = 0;
    int drawn = -1;
    permutation(perm, n, cfg->seed, epoch);
    for (int64_t b = 0; b < n; b += cfg->batch) {
      int64_t m = n - b < cfg->batch ? n - b : cfg->batch; /* the short last batch is re-planned */
      for (int64_t i = 0; i < m; ++i) {
        memcpy(bx + i * d, (const float*)xtr->data + perm[b + i] * d, sizeof(float) * (size_t)d);
        by[i] = ((const int64_t*)ytr->data)[perm[b + i]];
      }
      int64_t xs[2] = {m, d}, ys[1] = {m};
      oneflow_tensor_t *x = NULL, *y = NULL;
      CHECK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, xs, 2, bx, sizeof(float) * (size_t)(m * d), NULL, NULL, &x));
      CHECK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_I64, ys, 1, by, sizeof(int64_t) * (size_t)m, NULL, NULL, &y));
      const char* names[2] = {"input", "labels"};
      const oneflow_tensor_t* ins[2] = {x, y};
      oneflow_tensor_t* outs[2] = {NULL, NULL}; /* logits, loss */
      CHECK(oneflow_session_run(session, names, ins, 2, NULL, 0, outs, 2));
      CHECK(oneflow_session_backward(session));
      int32_t applied = 0;
      CHECK(oneflow_session_step(session, &applied));
      if (!applied) fprintf(stderr, "warning: a step was skipped (NaN/Inf)\n");
      const float* l = oneflow_tensor_data(outs[0]);
      for (int64_t i = 0; i < m; ++i) {
        int best = 0;
        for (int c = 1; c < 10; ++c)
          if (l[i * 10 + c] > l[i * 10 + best]) best = c;
        correct += best == by[i];
      }
      loss_sum += (double)*(const float*)oneflow_tensor_data(outs[1]) * (double)m;
      seen += m;
      if (bar && (int)(30 * seen / n) != drawn) { /* redrawn when it moves, not per batch */
        drawn = (int)(30 * seen / n);
        fprintf(stderr, "\repoch %3d/%d [%.*s%.*s] %lld/%lld", epoch + 1, cfg->epochs, drawn, kDone, 30 - drawn, kLeft,
                (long long)seen, (long long)n);
      }
      oneflow_tensor_release(outs[0]);
      oneflow_tensor_release(outs[1]);
      oneflow_tensor_release(x);
      oneflow_tensor_release(y);
    }
    if (bar) fputs("\r\033[K", stderr);
    if (verbose) {
      oneflow_training_state_t state;
      oneflow_training_state_init(&state);
      CHECK(oneflow_session_get_training_state(session, &state));
      double test_acc = evaluate(session, xte, yte);
      printf("epoch %3d/%d  loss %.4f  train acc %5.1f%%  test acc %5.1f%%  lr %.2e  step %lld  %.2f s\n", epoch + 1,
             cfg->epochs, loss_sum / (double)seen, 100.0 * (double)correct / (double)seen, test_acc,
             state.learning_rate, (long long)state.step, now_s() - t0);
      fflush(stdout);
    }
    if (epoch + 1 == ckpt_epoch && ckpt_path) CHECK(oneflow_session_save_checkpoint(session, ckpt_path));
  }
  free(perm);
  free(bx);
  free(by);
}

/* Serves one prediction from the exported model file through a plain inference session. */
static void serve(const char* model_file, const Array* xte, const Array* yte, int64_t index) {
  oneflow_graph_t* graph = NULL;
  CHECK(oneflow_graph_load_file(model_file, &graph));
  oneflow_session_t* s = NULL;
  CHECK(oneflow_session_create(NULL, graph, NULL, &s));
  int64_t shape[2] = {1, xte->cols};
  oneflow_tensor_t* x = NULL;
  CHECK(oneflow_tensor_create(ONEFLOW_DTYPE_F32, shape, 2, &x));
  memcpy(oneflow_tensor_data(x), (const float*)xte->data + index * xte->cols, sizeof(float) * (size_t)xte->cols);
  const char* names[1] = {"input"};
  const oneflow_tensor_t* ins[1] = {x};
  oneflow_tensor_t* out = NULL;
  CHECK(oneflow_session_run(s, names, ins, 1, NULL, 0, &out, 1));
  const float* l = oneflow_tensor_data(out);
  int best = 0;
  double z = 0;
  for (int c = 1; c < 10; ++c)
    if (l[c] > l[best]) best = c;
  for (int c = 0; c < 10; ++c) z += exp((double)(l[c] - l[best]));
  printf("served from %s: test sample %lld is a %d (p = %.3f); its label is %lld\n", model_file, (long long)index,
         best, 1.0 / z, (long long)((const int64_t*)yte->data)[index]);
  oneflow_tensor_release(out);
  oneflow_tensor_release(x);
  oneflow_session_release(s);
  oneflow_graph_release(graph);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s DATA_DIR MODEL.onnx OUT_DIR [--epochs N] [--batch B] [--lr X] [--weight-decay W] "
                    "[--threads T] [--seed S] [--min-accuracy PCT] [--resume-check]\n", argv[0]);
    return 2;
  }
  const char *data_dir = argv[1], *model = argv[2], *out_dir = argv[3];
  Config cfg = {30, 32, 2, 3e-3f, 1e-4f, 42};
  double min_acc = 0;
  int resume_check = 0;
  for (int i = 4; i < argc; ++i) {
    if (!strcmp(argv[i], "--epochs") && i + 1 < argc) cfg.epochs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc) cfg.batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--lr") && i + 1 < argc) cfg.lr = (float)atof(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) cfg.threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--weight-decay") && i + 1 < argc) cfg.weight_decay = (float)atof(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) cfg.seed = (uint64_t)atoll(argv[++i]);
    else if (!strcmp(argv[i], "--min-accuracy") && i + 1 < argc) min_acc = atof(argv[++i]);
    else if (!strcmp(argv[i], "--resume-check")) resume_check = 1;
    else { fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
  }
  if (cfg.epochs < 2 || cfg.batch < 1 || cfg.threads < 1) { fprintf(stderr, "bad --epochs/--batch/--threads\n"); return 2; }
  if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) { fprintf(stderr, "cannot create %s\n", out_dir); return 1; }
  Array xtr = load_npy(data_dir, "train_x"), ytr = load_npy(data_dir, "train_y");
  Array xte = load_npy(data_dir, "test_x"), yte = load_npy(data_dir, "test_y");
  const int64_t steps_total = cfg.epochs * ((xtr.rows + cfg.batch - 1) / cfg.batch);
  printf("%s: %lld train / %lld test samples, %d epochs of batch %d, %d threads, liboneflow %s\n", model,
         (long long)xtr.rows, (long long)xte.rows, cfg.epochs, cfg.batch, cfg.threads, oneflow_version());

  oneflow_session_t* session = create_session(model, &cfg, steps_total);
  printf("training %zu parameters:", oneflow_session_parameter_count(session));
  for (size_t i = 0; i < oneflow_session_parameter_count(session); ++i) printf(" %s", oneflow_session_parameter_name(session, i));
  printf("\n");
  char mid_ckpt[4096], final_ckpt[4096], exported[4096];
  snprintf(mid_ckpt, sizeof mid_ckpt, "%s/mid.ckpt", out_dir);
  snprintf(final_ckpt, sizeof final_ckpt, "%s/final.ckpt", out_dir);
  snprintf(exported, sizeof exported, "%s/trained.ofm", out_dir);
  const int mid_epoch = cfg.epochs / 2;
  double t0 = now_s();
  train(session, &cfg, &xtr, &ytr, &xte, &yte, 0, cfg.epochs, mid_epoch, mid_ckpt, 1);
  double acc = evaluate(session, &xte, &yte);
  oneflow_training_memory_t mem;
  oneflow_training_memory_init(&mem);
  CHECK(oneflow_session_get_training_memory(session, &mem));
  printf("test accuracy %.2f%% after %.1f s; training step memory: forward arena %llu B, kept activations %llu B, "
         "backward arena %llu B\n", acc, now_s() - t0, (unsigned long long)mem.forward_arena_bytes,
         (unsigned long long)mem.saved_activation_bytes, (unsigned long long)mem.backward_arena_bytes);

  CHECK(oneflow_session_save_checkpoint(session, final_ckpt));
  printf("checkpoints: %s (after epoch %d), %s\n", mid_ckpt, mid_epoch, final_ckpt);
  oneflow_graph_t* trained = NULL;
  CHECK(oneflow_session_export_model(session, &trained));
  CHECK(oneflow_graph_save(trained, exported, NULL));
  printf("exported the trained model to %s\n", exported);
  /* ONNX too, where the library has the ONNX exporter. */
  char exported_onnx[4096];
  snprintf(exported_onnx, sizeof exported_onnx, "%s/trained.onnx", out_dir);
  oneflow_status_t onnx_st = oneflow_graph_save(trained, exported_onnx, NULL);
  if (!onnx_st) {
    printf("exported the trained model to %s\n", exported_onnx);
  } else if (oneflow_status_code(onnx_st) == ONEFLOW_UNSUPPORTED) {
    printf("ONNX export is not in this build: %s\n", oneflow_status_message(onnx_st));
  } else {
    fprintf(stderr, "ONNX export failed: %s\n", oneflow_status_message(onnx_st));
    oneflow_status_free(onnx_st);
    return 1;
  }
  oneflow_status_free(onnx_st);
  oneflow_graph_release(trained);
  serve(exported, &xte, &yte, 0);

  int rc = 0;
  if (resume_check) {
    /* A fresh session resumes from the mid-run checkpoint and trains the remaining epochs. */
    oneflow_session_t* resumed = create_session(model, &cfg, steps_total);
    CHECK(oneflow_session_load_checkpoint(resumed, mid_ckpt));
    train(resumed, &cfg, &xtr, &ytr, &xte, &yte, mid_epoch, cfg.epochs, -1, NULL, 0);
    size_t n = oneflow_session_parameter_count(session), bytes = 0, differing = 0;
    for (size_t i = 0; i < n; ++i) {
      const char* name = oneflow_session_parameter_name(session, i);
      oneflow_tensor_t *a = NULL, *b = NULL;
      CHECK(oneflow_session_get_parameter(session, name, &a));
      CHECK(oneflow_session_get_parameter(resumed, name, &b));
      bytes += oneflow_tensor_byte_size(a);
      if (memcmp(oneflow_tensor_data(a), oneflow_tensor_data(b), oneflow_tensor_byte_size(a)) != 0) {
        fprintf(stderr, "resume check: parameter %s differs\n", name);
        ++differing;
      }
      oneflow_tensor_release(a);
      oneflow_tensor_release(b);
    }
    printf("resume check: %zu parameters (%zu bytes) after resuming from epoch %d are %s\n", n, bytes, mid_epoch,
           differing ? "DIFFERENT" : "bit-identical to the uninterrupted run");
    if (differing) rc = 1;
    oneflow_session_release(resumed);
  }
  if (acc < min_acc) {
    fprintf(stderr, "test accuracy %.2f%% is below the required %.2f%%\n", acc, min_acc);
    rc = 1;
  }
  oneflow_session_release(session);
  free(xtr.data);
  free(ytr.data);
  free(xte.data);
  free(yte.data);
  return rc;
}
