/* C ABI of global tensors: oneflow_plan_explain's JSON, a distributed session on 4 in-process
 * devices (auto plan) against the single-device session, and errors as statuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

int main(int argc, char** argv) {
  char path[4096];
  const char* shapes[] = {"input=6x784"};
  const char* names[] = {"input"};
  oneflow_graph_t* graph = NULL;
  oneflow_plan_options_t po;
  char* json = NULL;
  oneflow_tensor_t* x = NULL;
  oneflow_tensor_t* want = NULL;
  oneflow_tensor_t* got = NULL;
  oneflow_session_t* single = NULL;
  oneflow_dist_session_t* dist = NULL;
  oneflow_status_t st;
  const int64_t shape[2] = {6, 784};
  float* xd;
  const float* a;
  const float* b;
  double num = 0, den = 0;
  int i;
  REQUIRE(argc == 2, "usage: dist_c_api_test MODELS_DIR");
  snprintf(path, sizeof path, "%s/mlp.onnx", argv[1]);
  REQUIRE_OK(oneflow_graph_load_file(path, &graph));

  oneflow_plan_options_init(&po);
  po.placement = "cpu:0-3";
  po.mode = "auto";
  po.shape_specs = shapes;
  po.num_shape_specs = 1;
  REQUIRE_OK(oneflow_plan_explain(graph, &po, &json));
  REQUIRE(strstr(json, "\"mode\":\"auto\"") != NULL && strstr(json, "\"estimated_seconds\"") != NULL, "json: %s", json);
  REQUIRE(strstr(json, "\"collective\":\"") != NULL, "no collective in %s", json);
  oneflow_string_free(json);

  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_F32, shape, 2, &x));
  xd = (float*)oneflow_tensor_data(x);
  for (i = 0; i < 6 * 784; ++i) xd[i] = (float)sin(0.37 * i);
  REQUIRE_OK(oneflow_session_create(NULL, graph, NULL, &single));
  REQUIRE_OK(oneflow_session_run(single, names, (const oneflow_tensor_t* const*)&x, 1, NULL, 0, &want, 1));
  REQUIRE_OK(oneflow_dist_session_create(NULL, graph, NULL, &po, &dist));
  REQUIRE_OK(oneflow_dist_session_run(dist, names, (const oneflow_tensor_t* const*)&x, 1, NULL, 0, &got, 1));
  a = (const float*)oneflow_tensor_data(got);
  b = (const float*)oneflow_tensor_data(want);
  for (i = 0; i < 6 * 10; ++i) {
    if (fabs((double)a[i] - b[i]) > num) num = fabs((double)a[i] - b[i]);
    if (fabs((double)b[i]) > den) den = fabs((double)b[i]);
  }
  REQUIRE(num <= 1e-5 * den, "distributed output differs: max abs error %g, max |ref| %g", num, den);

  /* Bad input comes back as a status naming the problem. */
  po.placement = "cpu:0-5";
  po.num_devices = 4;
  st = oneflow_plan_explain(graph, &po, &json);
  REQUIRE(st != NULL && oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT &&
              strstr(oneflow_status_message(st), "4, 5") != NULL,
          "missing devices not reported");
  oneflow_status_free(st);
  po.placement = NULL;
  st = oneflow_plan_explain(graph, &po, &json);
  REQUIRE(st != NULL, "NULL placement accepted");
  oneflow_status_free(st);

  oneflow_tensor_release(got);
  oneflow_tensor_release(want);
  oneflow_tensor_release(x);
  oneflow_dist_session_release(dist);
  oneflow_session_release(single);
  oneflow_graph_release(graph);
  return c_test_finish("dist_c_api");
}
