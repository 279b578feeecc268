/*===- test_util.h - Checks shared by the C API tests ---------------*- C
 *-*-===*
 *
 * Part of mlbridge, under the Apache License v2.0.
 *
 *===----------------------------------------------------------------------===*/
/** \file
 * Minimal checking macros for the C99 tests of the C API: a failed check
 * prints where and why and counts a failure; a test program returns
 * test_result() (0 when every check passed, 1 otherwise).
 */
#ifndef MLBRIDGE_TESTS_C_TEST_UTIL_H
#define MLBRIDGE_TESTS_C_TEST_UTIL_H

#include "mlbridge/mlbridge.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/** Number of failed checks so far. */
static int test_failures = 0;

/** Exit status of a test that cannot run here (ctest SKIP_RETURN_CODE). */
#define TEST_SKIPPED 77

/** Counts and reports a failed check at \p file : \p line. */
static inline void test_fail(const char *file, int line, const char *what) {
  fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
  ++test_failures;
}

/** Checks that \p cond holds. */
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      test_fail(__FILE__, __LINE__, #cond);                                    \
  } while (0)

/** Checks that \p got is \p want; says both by name otherwise. */
static inline int test_check_status(const char *file, int line,
                                    const char *expr, mlbridge_status got,
                                    mlbridge_status want) {
  if (got == want)
    return 1;
  fprintf(stderr, "%s:%d: %s is %s, expected %s\n", file, line, expr,
          mlbridge_status_name(got), mlbridge_status_name(want));
  ++test_failures;
  return 0;
}

/** Checks that the call \p call returns \p want. */
#define CHECK_STATUS(call, want)                                               \
  test_check_status(__FILE__, __LINE__, #call, (call), (want))

/** Checks that \p text contains \p needle. */
static inline int test_check_contains(const char *file, int line,
                                      const char *text, const char *needle) {
  if (text && strstr(text, needle))
    return 1;
  fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", file, line,
          text ? text : "(null)", needle);
  ++test_failures;
  return 0;
}

/** Checks that the string \p text contains \p needle. */
#define CHECK_CONTAINS(text, needle)                                           \
  test_check_contains(__FILE__, __LINE__, (text), (needle))

/** Checks that the runner's last error contains \p needle. */
#define CHECK_LAST_ERROR(runner, needle)                                       \
  CHECK_CONTAINS(mlbridge_runner_last_error(runner), (needle))

/** Checks the outcome of a creation expected to fail: status \p want, a NULL
 * runner, a message containing \p needle; frees the error. */
static inline void
test_check_creation_failed(const char *file, int line, const char *expr,
                           mlbridge_status got, mlbridge_status want,
                           mlbridge_runner *runner, mlbridge_error *error,
                           const char *needle) {
  test_check_status(file, line, expr, got, want);
  if (runner) {
    test_fail(file, line, "the runner of a failed creation is not NULL");
    mlbridge_runner_destroy(runner);
  }
  if (!error) {
    test_fail(file, line, "a failed creation gave no error");
    return;
  }
  if (mlbridge_error_status(error) != got)
    test_fail(file, line, "the error's status is not the one returned");
  test_check_contains(file, line, mlbridge_error_message(error), needle);
  mlbridge_error_free(error);
}

/** Runs the creation \p call (which writes `runner` and `error`, two local
 * variables reset here) and checks that it fails with \p want and a message
 * containing \p needle. */
#define CHECK_CREATE_FAILS(call, want, needle)                                 \
  do {                                                                         \
    mlbridge_status status_;                                                   \
    runner = NULL;                                                             \
    error = NULL;                                                              \
    status_ = (call);                                                          \
    test_check_creation_failed(__FILE__, __LINE__, #call, status_, (want),     \
                               runner, error, (needle));                       \
    runner = NULL;                                                             \
  } while (0)

/** Runs the creation \p call and checks that it succeeds (prints the error
 * otherwise). Evaluates to 1 on success. */
static inline int test_check_created(const char *file, int line,
                                     const char *expr, mlbridge_status got,
                                     mlbridge_runner *runner,
                                     mlbridge_error *error) {
  if (got == MLBRIDGE_OK && runner)
    return 1;
  fprintf(stderr, "%s:%d: %s failed: %s: %s\n", file, line, expr,
          mlbridge_status_name(got),
          error ? mlbridge_error_message(error) : "(no error)");
  mlbridge_error_free(error);
  ++test_failures;
  return 0;
}

/** The status of the last creation checked by CHECK_CREATED. */
static mlbridge_status test_created_status;

/** Runs the creation \p call (which writes the local variables `runner` and
 * `error`) and checks that it succeeds; evaluates to 1 when it did. */
#define CHECK_CREATED(call)                                                    \
  (runner = NULL, error = NULL, test_created_status = (call),                  \
   test_check_created(__FILE__, __LINE__, #call, test_created_status, runner,  \
                      error))

/** Sets \p spec to name, dtype and shape. */
static inline void set_spec(mlbridge_tensor_spec *spec, const char *name,
                            mlbridge_dtype dtype, const int64_t *shape,
                            size_t rank) {
  spec->name = name;
  spec->dtype = dtype;
  spec->shape = shape;
  spec->rank = rank;
}

/** Seconds on a monotonic clock. */
static inline double test_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/** Prints the outcome and returns the test's exit status. */
static inline int test_result(const char *name) {
  (void)test_created_status;
  if (test_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
    return 1;
  }
  fprintf(stderr, "%s: all checks passed\n", name);
  return 0;
}

#endif /* MLBRIDGE_TESTS_C_TEST_UTIL_H */
