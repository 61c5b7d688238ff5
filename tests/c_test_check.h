/* Pass/fail bookkeeping for the C99 tests of the C ABI (train_c_api_test.c,
 * mixed_precision_c_api_test.c): EXPECT counts a check, OK aborts the calling test function on an
 * error status. Include once per test program; it defines the counters g_pass and g_fail. */
#ifndef ONEFLOW_TESTS_C_TEST_CHECK_H_
#define ONEFLOW_TESTS_C_TEST_CHECK_H_

#include <stdio.h>

#include "oneflow_c.h"

static int g_pass = 0, g_fail = 0;

#define EXPECT(cond, ...)                                             \
  do {                                                                \
    if (cond) {                                                       \
      ++g_pass;                                                       \
    } else {                                                          \
      ++g_fail;                                                       \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
    }                                                                 \
  } while (0)

/* Fails the test (and aborts it: later steps depend on this one) when `call` returns a status. */
#define OK(call)                                                                                       \
  do {                                                                                                 \
    oneflow_status_t st_ = (call);                                                                     \
    if (st_) {                                                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, oneflow_status_message(st_)); \
      oneflow_status_free(st_);                                                                        \
      ++g_fail;                                                                                        \
      return;                                                                                          \
    }                                                                                                  \
  } while (0)

#endif /* ONEFLOW_TESTS_C_TEST_CHECK_H_ */
