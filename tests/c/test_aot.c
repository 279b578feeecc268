/*===- test_aot.c - C API: models compiled ahead of time ------------*- C
 *-*-===*
 *
 * Part of mlbridge, under the Apache License v2.0.
 *
 *===----------------------------------------------------------------------===*/
/* The AOT runner from C over the test models of tests/cpp (mlbridge-aot
 * output, linked statically: aot_gemm_small, aot_gather) and over the same
 * Gemm model built as a loadable module (MLBRIDGE_TEST_AOT_MODULE): specs
 * taken from the model or given, buffers by index and name, type checks on
 * creation and on access, data-dependent model failures.
 */
#include "mlbridge/mlbridge.h"

#include "AotGather.h"
#include "AotGemmSmall.h"

#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/** Shapes of the Gemm model: x [2,16] -> y [2,24]. */
static const int64_t ShapeX[] = {2, 16};
static const int64_t ShapeY[] = {2, 24};
static const int64_t ShapeXWrong[] = {3, 16};
static const int64_t Shape1[] = {1};

/** Elements of x and y. */
enum { NumX = 32, NumY = 48 };

/** Writes \p x (scaled by \p scale) into the runner's input "x", runs it
 * and copies "y" into \p y; returns 1 on success. */
static int run_gemm(mlbridge_runner *runner, const float *x, float scale,
                    float *y) {
  void *in = NULL;
  const void *out = NULL;
  size_t count = 0, i;
  if (!CHECK_STATUS(mlbridge_runner_input_by_name(runner, "x", MLBRIDGE_FLOAT,
                                                  &in, &count),
                    MLBRIDGE_OK) ||
      count != NumX)
    return 0;
  for (i = 0; i < NumX; ++i)
    ((float *)in)[i] = x[i] * scale;
  if (!CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_OK))
    return 0;
  if (!CHECK_STATUS(mlbridge_runner_output_by_name(runner, "y", MLBRIDGE_FLOAT,
                                                   &out, &count),
                    MLBRIDGE_OK) ||
      count != NumY)
    return 0;
  memcpy(y, out, sizeof(float) * NumY);
  return 1;
}

/** Deterministic inputs in [-1, 1). */
static void fill_x(float *x, unsigned seed) {
  unsigned s = seed * 2654435761u + 1;
  size_t i;
  for (i = 0; i < NumX; ++i) {
    s = s * 1103515245u + 12345u;
    x[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

/** The largest absolute difference between \p a and \p b. */
static float max_diff(const float *a, const float *b, size_t n) {
  float worst = 0;
  size_t i;
  for (i = 0; i < n; ++i)
    if (fabsf(a[i] - b[i]) > worst)
      worst = fabsf(a[i] - b[i]);
  return worst;
}

/** The statically linked Gemm model with its own specs. */
static void test_gemm_own_specs(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_tensor_spec spec;
  float x[NumX], bias[NumY], y1[NumY], y2[NumY], expect[NumY];
  void *by_index = NULL, *by_name = NULL;
  const void *out_index = NULL, *out_name = NULL;
  size_t count = 0, i;
  float f = 0;
  int64_t i64 = 0;
  if (!CHECK_CREATED(mlbridge_aot_runner_create(
          aot_test_AotGemmSmall_model(), NULL, 0, NULL, 0, &runner, &error)))
    return;
  CHECK(mlbridge_pipe_runner_channel(runner) == NULL);
  CHECK(mlbridge_runner_num_inputs(runner) == 1);
  CHECK(mlbridge_runner_num_outputs(runner) == 1);
  if (CHECK_STATUS(mlbridge_runner_input_spec(runner, 0, &spec), MLBRIDGE_OK))
    CHECK(strcmp(spec.name, "x") == 0 && spec.dtype == MLBRIDGE_FLOAT &&
          spec.rank == 2 && spec.shape[0] == 2 && spec.shape[1] == 16);
  if (CHECK_STATUS(mlbridge_runner_output_spec(runner, 0, &spec), MLBRIDGE_OK))
    CHECK(strcmp(spec.name, "y") == 0 && spec.dtype == MLBRIDGE_FLOAT &&
          spec.rank == 2 && spec.shape[0] == 2 && spec.shape[1] == 24);

  /* The same buffer by index and by name; type checks. */
  CHECK_STATUS(
      mlbridge_runner_input(runner, 0, MLBRIDGE_FLOAT, &by_index, &count),
      MLBRIDGE_OK);
  CHECK(count == NumX);
  CHECK_STATUS(mlbridge_runner_input_by_name(runner, "x", MLBRIDGE_FLOAT,
                                             &by_name, NULL),
               MLBRIDGE_OK);
  CHECK(by_index != NULL && by_index == by_name);
  CHECK_STATUS(mlbridge_runner_input(runner, 0, MLBRIDGE_INT64, &by_name, NULL),
               MLBRIDGE_TYPE_MISMATCH);
  CHECK_LAST_ERROR(runner, "input 'x' is float, not int64_t");

  /* Zero inputs give the bias; the model is affine in x. */
  memset(x, 0, sizeof x);
  if (!run_gemm(runner, x, 1.0f, bias))
    goto done;
  fill_x(x, 1);
  if (!run_gemm(runner, x, 1.0f, y1) || !run_gemm(runner, x, 2.0f, y2))
    goto done;
  for (i = 0; i < NumY; ++i)
    expect[i] = 2.0f * (y1[i] - bias[i]) + bias[i];
  CHECK(max_diff(y2, expect, NumY) < 1e-4f);
  CHECK(max_diff(y1, bias, NumY) > 1e-3f);

  /* Output by index and by name: the same buffer. */
  CHECK_STATUS(
      mlbridge_runner_output(runner, 0, MLBRIDGE_FLOAT, &out_index, &count),
      MLBRIDGE_OK);
  CHECK_STATUS(mlbridge_runner_output_by_name(runner, "y", MLBRIDGE_FLOAT,
                                              &out_name, NULL),
               MLBRIDGE_OK);
  CHECK(out_index != NULL && out_index == out_name && count == NumY);
  CHECK(memcmp(out_index, y2, sizeof y2) == 0);
  CHECK_STATUS(
      mlbridge_runner_output(runner, 0, MLBRIDGE_DOUBLE, &out_index, NULL),
      MLBRIDGE_TYPE_MISMATCH);
  CHECK_LAST_ERROR(runner, "output 'y' is float, not double");

  /* Scalar evaluations check the output's type and size. */
  CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &i64),
               MLBRIDGE_TYPE_MISMATCH);
  CHECK_LAST_ERROR(runner, "output 'y' is float, not int64_t");
  CHECK_STATUS(mlbridge_runner_evaluate_float(runner, &f),
               MLBRIDGE_TYPE_MISMATCH);
  CHECK_LAST_ERROR(runner, "48 elements, not a scalar");
  /* Still usable. */
  CHECK_STATUS(mlbridge_runner_switch_context(runner, "next"), MLBRIDGE_OK);
  CHECK(run_gemm(runner, x, 2.0f, y1));
  CHECK(memcmp(y1, y2, sizeof y1) == 0);
done:
  mlbridge_runner_destroy(runner);
}

/** The Gemm model bound to specs the caller gives. */
static void test_gemm_given_specs(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_tensor_spec in[2], out[1];
  const mlbridge_aot_model_v1 *model = aot_test_AotGemmSmall_model();
  void *extra = NULL;
  float x[NumX], y[NumY];
  set_spec(&in[0], "extra", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&in[1], "x", MLBRIDGE_FLOAT, ShapeX, 2);
  set_spec(&out[0], "y", MLBRIDGE_FLOAT, ShapeY, 2);

  /* A feature the model does not read still gets its buffer. */
  if (CHECK_CREATED(
          mlbridge_aot_runner_create(model, in, 2, out, 1, &runner, &error))) {
    CHECK(mlbridge_runner_num_inputs(runner) == 2);
    if (CHECK_STATUS(
            mlbridge_runner_input(runner, 0, MLBRIDGE_INT64, &extra, NULL),
            MLBRIDGE_OK))
      *(int64_t *)extra = 7;
    fill_x(x, 2);
    CHECK(run_gemm(runner, x, 1.0f, y));
    CHECK(*(int64_t *)extra == 7);
    mlbridge_runner_destroy(runner);
  }
  /* Given inputs, the model's own outputs. */
  if (CHECK_CREATED(
          mlbridge_aot_runner_create(model, in, 2, NULL, 0, &runner, &error))) {
    CHECK(mlbridge_runner_num_outputs(runner) == 1);
    mlbridge_runner_destroy(runner);
  }
  /* The model's own inputs, no outputs at all (a valid, useless runner). */
  if (CHECK_CREATED(mlbridge_aot_runner_create(model, NULL, 0, out, 0, &runner,
                                               &error))) {
    CHECK(mlbridge_runner_num_outputs(runner) == 0);
    mlbridge_runner_destroy(runner);
  }

  /* Mismatches between the specs and the model, each named. */
  in[1].dtype = MLBRIDGE_INT64;
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(model, in, 2, out, 1, &runner, &error),
      MLBRIDGE_TYPE_MISMATCH,
      "model input 'x' is float, the spec says int64_t");
  in[1].dtype = MLBRIDGE_FLOAT;
  in[1].shape = ShapeXWrong;
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(model, in, 2, out, 1, &runner, &error),
      MLBRIDGE_TYPE_MISMATCH, "model input 'x' has 32 elements");
  in[1].shape = ShapeX;
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(model, in, 1, out, 1, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "input 'x'");
  out[0].name = "nope";
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(model, in, 2, out, 1, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "no output 'nope'");
  out[0].name = "y";
  out[0].dtype = MLBRIDGE_DOUBLE;
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(model, in, 2, out, 1, &runner, &error),
      MLBRIDGE_TYPE_MISMATCH, "model output 'y' is float");
  out[0].dtype = MLBRIDGE_FLOAT;
  in[0].name = "x";
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(model, in, 2, out, 1, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "'x' appears twice");
}

/** The same model as a loadable module gives the same results. */
static void test_module(void) {
  mlbridge_runner *runner = NULL, *linked = NULL;
  mlbridge_error *error = NULL;
  mlbridge_tensor_spec in[1], out[1];
  float x[NumX], y[NumY], y_linked[NumY];
  unsigned seed;
  set_spec(&in[0], "x", MLBRIDGE_FLOAT, ShapeX, 2);
  set_spec(&out[0], "y", MLBRIDGE_FLOAT, ShapeY, 2);

  if (!CHECK_CREATED(mlbridge_aot_runner_create(
          aot_test_AotGemmSmall_model(), NULL, 0, NULL, 0, &runner, &error)))
    return;
  linked = runner;
  if (CHECK_CREATED(mlbridge_aot_runner_load(MLBRIDGE_TEST_AOT_MODULE, NULL, 0,
                                             NULL, 0, &runner, &error))) {
    CHECK(mlbridge_runner_num_inputs(runner) == 1);
    /* What the model says of itself (tools/make_aot_test_models.py). */
    CHECK(mlbridge_runner_metadata(runner, "mlbridge.note") != NULL &&
          strcmp(mlbridge_runner_metadata(runner, "mlbridge.note"),
                 "a \"quoted\"\nvalue") == 0);
    CHECK(mlbridge_runner_metadata(runner, "producer.key") == NULL);
    CHECK(mlbridge_runner_metadata(runner, NULL) == NULL);
    CHECK(mlbridge_runner_metadata(linked, "mlbridge.note") == NULL);
    for (seed = 0; seed < 20; ++seed) {
      fill_x(x, seed);
      if (!run_gemm(runner, x, 1.0f, y) || !run_gemm(linked, x, 1.0f, y_linked))
        break;
      CHECK(max_diff(y, y_linked, NumY) <= 1e-6f);
    }
    mlbridge_runner_destroy(runner);
  }
  /* Given specs, and each half given alone (the other: the module's). */
  if (CHECK_CREATED(mlbridge_aot_runner_load(MLBRIDGE_TEST_AOT_MODULE, in, 1,
                                             out, 1, &runner, &error))) {
    CHECK(run_gemm(runner, x, 1.0f, y));
    mlbridge_runner_destroy(runner);
  }
  if (CHECK_CREATED(mlbridge_aot_runner_load(MLBRIDGE_TEST_AOT_MODULE, in, 1,
                                             NULL, 0, &runner, &error))) {
    CHECK(mlbridge_runner_num_outputs(runner) == 1);
    CHECK(run_gemm(runner, x, 1.0f, y));
    mlbridge_runner_destroy(runner);
  }
  if (CHECK_CREATED(mlbridge_aot_runner_load(MLBRIDGE_TEST_AOT_MODULE, NULL, 0,
                                             out, 1, &runner, &error))) {
    CHECK(mlbridge_runner_num_inputs(runner) == 1);
    CHECK(run_gemm(runner, x, 1.0f, y));
    mlbridge_runner_destroy(runner);
  }
  in[0].dtype = MLBRIDGE_INT32;
  CHECK_CREATE_FAILS(mlbridge_aot_runner_load(MLBRIDGE_TEST_AOT_MODULE, in, 1,
                                              NULL, 0, &runner, &error),
                     MLBRIDGE_TYPE_MISMATCH, "model input 'x' is float");
  mlbridge_runner_destroy(linked);
}

/** Gather: a run-time index out of range fails that evaluation, naming the
 * node; the runner stays usable. */
static void test_gather(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  int64_t *ids = NULL;
  float *x = NULL;
  void *ids_data = NULL, *x_data = NULL;
  const void *rows = NULL, *picked = NULL;
  size_t count = 0, r, c, k;
  if (!CHECK_CREATED(mlbridge_aot_runner_create(
          aot_test_AotGather_model(), NULL, 0, NULL, 0, &runner, &error)))
    return;
  CHECK(mlbridge_runner_num_inputs(runner) == 2);
  CHECK(mlbridge_runner_num_outputs(runner) == 3);
  if (!CHECK_STATUS(mlbridge_runner_input_by_name(runner, "ids", MLBRIDGE_INT64,
                                                  &ids_data, &count),
                    MLBRIDGE_OK) ||
      !CHECK_STATUS(mlbridge_runner_input_by_name(runner, "x", MLBRIDGE_FLOAT,
                                                  &x_data, NULL),
                    MLBRIDGE_OK))
    goto done;
  ids = (int64_t *)ids_data;
  x = (float *)x_data;
  CHECK(count == 3);
  for (r = 0; r < 10; ++r)
    for (c = 0; c < 6; ++c)
      x[r * 6 + c] = (float)(r * 10 + c);

  ids[0] = 2, ids[1] = 9, ids[2] = -1;
  if (CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_OK) &&
      CHECK_STATUS(mlbridge_runner_output_by_name(
                       runner, "rows", MLBRIDGE_FLOAT, &rows, &count),
                   MLBRIDGE_OK) &&
      CHECK_STATUS(mlbridge_runner_output_by_name(
                       runner, "picked", MLBRIDGE_FLOAT, &picked, NULL),
                   MLBRIDGE_OK)) {
    const float *rw = (const float *)rows, *pk = (const float *)picked;
    CHECK(count == 18);
    for (c = 0; c < 6; ++c) {
      CHECK(rw[0 * 6 + c] == (float)(20 + c));
      CHECK(rw[1 * 6 + c] == (float)(90 + c));
      CHECK(rw[2 * 6 + c] == (float)(90 + c));
    }
    /* picked = x[:, [5, -1, 0]] */
    for (r = 0; r < 10; ++r) {
      CHECK(pk[r * 3 + 0] == (float)(r * 10 + 5));
      CHECK(pk[r * 3 + 1] == (float)(r * 10 + 5));
      CHECK(pk[r * 3 + 2] == (float)(r * 10));
    }
  }

  /* Out of range: that evaluation fails, naming the node. */
  ids[1] = 10;
  CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_MODEL_FAILURE);
  CHECK_LAST_ERROR(runner, "node 'Gather_0' (Gather)");
  CHECK_LAST_ERROR(runner, "outside [-10, 10)");
  ids[1] = -11;
  CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_MODEL_FAILURE);
  /* The next evaluation with valid indices works. */
  ids[0] = 1, ids[1] = 0, ids[2] = 3;
  if (CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_OK) &&
      CHECK_STATUS(
          mlbridge_runner_output(runner, 2, MLBRIDGE_FLOAT, &rows, &count),
          MLBRIDGE_OK)) {
    const float *rw = (const float *)rows;
    for (k = 0; k < 3; ++k)
      for (c = 0; c < 6; ++c)
        CHECK(rw[k * 6 + c] == (float)((size_t)ids[k] * 10 + c));
  }
done:
  mlbridge_runner_destroy(runner);
}

/** Runs every test. */
int main(void) {
  test_gemm_own_specs();
  test_gemm_given_specs();
  test_module();
  test_gather();
  return test_result("c_api_aot");
}
