/* Pass/fail bookkeeping for the C99 tests of the C ABI (c_api, native, train, cuda, distributed).
 * Include once per test program; it defines the counters g_pass and g_fail.
 *   EXPECT(cond, fmt, ...)  counts a check; on failure prints the condition and the message.
 *   EXPECT_TRUE(cond)       the same without a message (the condition says it all).
 *   expect_ok(st, what)     counts a call's status: 1 when NULL, else prints and frees it, returns 0.
 *   OK(call)                on an error status fails the test and returns from the calling void
 *                           function (later steps in it depend on this one).
 *   REQUIRE(cond, fmt, ...) / REQUIRE_OK(call)
 *                           on failure print and exit(1) at once: for setup nothing else can run
 *                           without, and for functions that return a value.
 *   c_test_finish(name)     prints the counts; returns main's exit status (1 when anything failed). */
#ifndef ONEFLOW_TESTS_C_TEST_CHECK_H_
#define ONEFLOW_TESTS_C_TEST_CHECK_H_

#include <stdio.h>
#include <stdlib.h>

#include "oneflow_c.h"

static int g_pass = 0, g_fail = 0;

/* Counts one check: 0 when `ok`; else prints "FAIL file:line: cond" (the caller ends the line), 1. */
static inline int c_test_failed(int ok, const char* file, int line, const char* cond) {
  if (ok) {
    ++g_pass;
    return 0;
  }
  ++g_fail;
  fprintf(stderr, "FAIL %s:%d: %s", file, line, cond);
  return 1;
}

#define EXPECT(cond, ...)                                     \
  do {                                                        \
    if (c_test_failed(!!(cond), __FILE__, __LINE__, #cond)) { \
      fprintf(stderr, ": ");                                  \
      fprintf(stderr, __VA_ARGS__);                           \
      fprintf(stderr, "\n");                                  \
    }                                                         \
  } while (0)

#define EXPECT_TRUE(cond)                                                          \
  do {                                                                             \
    if (c_test_failed(!!(cond), __FILE__, __LINE__, #cond)) fprintf(stderr, "\n"); \
  } while (0)

/* Exits the test program when the check just made (EXPECT's arguments) failed. */
#define REQUIRE(cond, ...)               \
  do {                                   \
    const int fail_before_ = g_fail;     \
    EXPECT(cond, __VA_ARGS__);           \
    if (g_fail != fail_before_) exit(1); \
  } while (0)

/* 0 when `st` is NULL (success); else counts a failure, prints "FAIL [file:line: ]what: CODE: message",
 * frees `st` and returns 1. */
static inline int c_test_status_failed(oneflow_status_t st, const char* file, int line, const char* what) {
  if (!st) return 0;
  ++g_fail;
  const char* code = oneflow_code_name(oneflow_status_code(st));
  if (file)
    fprintf(stderr, "FAIL %s:%d: %s: %s: %s\n", file, line, what, code, oneflow_status_message(st));
  else
    fprintf(stderr, "FAIL %s: %s: %s\n", what, code, oneflow_status_message(st));
  oneflow_status_free(st);
  return 1;
}

/* Counts `st` as a check named `what`: 1 when it is NULL (success), else 0 (reported and freed). */
static inline int expect_ok(oneflow_status_t st, const char* what) {
  if (c_test_status_failed(st, NULL, 0, what)) return 0;
  ++g_pass;
  return 1;
}

/* Fails the test and returns from the calling void function (later steps in it depend on this one)
 * when `call` returns a status. */
#define OK(call)                                                         \
  do {                                                                   \
    if (c_test_status_failed((call), __FILE__, __LINE__, #call)) return; \
  } while (0)

/* Fails the test and exits the program when `call` returns a status. */
#define REQUIRE_OK(call)                                                  \
  do {                                                                    \
    if (c_test_status_failed((call), __FILE__, __LINE__, #call)) exit(1); \
  } while (0)

/* The last line of a test program: `return c_test_finish("name");`. */
static inline int c_test_finish(const char* name) {
  printf("%s: %d passed, %d failed\n", name, g_pass, g_fail);
  return g_fail ? 1 : 0;
}

#endif /* ONEFLOW_TESTS_C_TEST_CHECK_H_ */
