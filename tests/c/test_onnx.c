/*===- test_onnx.c - C API: ONNX Runtime in-process ----------------*- C -*-===*
 *
 * Part of mlbridge, under the Apache License v2.0.
 *
 *===----------------------------------------------------------------------===*/
/* The ONNX Runtime runner from C on tests/cpp's gemm_small.onnx
 * (MLBRIDGE_TEST_ONNX_MODEL) gives the results of the same model compiled
 * ahead of time (aot_gemm_small) within 1e-5; creation checks the specs
 * against the model.
 */
#include "mlbridge/mlbridge.h"

#include "AotGemmSmall.h"

#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/** Shapes of the Gemm model: x [2,16] -> y [2,24]. */
static const int64_t ShapeX[] = {2, 16};
static const int64_t ShapeY[] = {2, 24};

/** Elements of x and y. */
enum { NumX = 32, NumY = 48 };

/** Writes \p x into input 0 of \p runner, evaluates it and returns output 0
 * (NULL on failure). */
static const float *run(mlbridge_runner *runner, const float *x) {
  void *in = NULL;
  const void *out = NULL;
  size_t count = 0;
  if (!CHECK_STATUS(
          mlbridge_runner_input(runner, 0, MLBRIDGE_FLOAT, &in, &count),
          MLBRIDGE_OK))
    return NULL;
  CHECK(count == NumX);
  memcpy(in, x, sizeof(float) * NumX);
  if (!CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_OK))
    return NULL;
  if (!CHECK_STATUS(
          mlbridge_runner_output(runner, 0, MLBRIDGE_FLOAT, &out, &count),
          MLBRIDGE_OK))
    return NULL;
  CHECK(count == NumY);
  return (const float *)out;
}

/** ONNX Runtime and the AOT-compiled model agree. */
static void test_same_as_aot(void) {
  mlbridge_runner *runner = NULL, *onnx = NULL, *aot = NULL;
  mlbridge_error *error = NULL;
  mlbridge_tensor_spec in[1], out[1];
  float x[NumX], worst = 0;
  unsigned s = 12345, round;
  size_t i;
  set_spec(&in[0], "x", MLBRIDGE_FLOAT, ShapeX, 2);
  set_spec(&out[0], "y", MLBRIDGE_FLOAT, ShapeY, 2);
  if (!CHECK_CREATED(mlbridge_onnx_runner_create(
          MLBRIDGE_TEST_ONNX_MODEL, in, 1, out, 1, 0, &runner, &error)))
    return;
  onnx = runner;
  if (!CHECK_CREATED(mlbridge_aot_runner_create(
          aot_test_AotGemmSmall_model(), in, 1, out, 1, &runner, &error))) {
    mlbridge_runner_destroy(onnx);
    return;
  }
  aot = runner;
  CHECK(mlbridge_pipe_runner_channel(onnx) == NULL);
  for (round = 0; round < 50; ++round) {
    const float *y_onnx, *y_aot;
    for (i = 0; i < NumX; ++i) {
      s = s * 1103515245u + 12345u;
      x[i] = (float)((s >> 8) & 0xffff) / 16384.0f - 2.0f;
    }
    y_onnx = run(onnx, x);
    y_aot = run(aot, x);
    if (!y_onnx || !y_aot)
      break;
    for (i = 0; i < NumY; ++i)
      if (fabsf(y_onnx[i] - y_aot[i]) > worst)
        worst = fabsf(y_onnx[i] - y_aot[i]);
  }
  CHECK(worst <= 1e-5f);
  if (worst > 1e-5f)
    fprintf(stderr, "largest ONNX/AOT difference: %g\n", (double)worst);
  /* evaluate_float checks the shape: y is not a scalar. */
  {
    float f = 0;
    CHECK_STATUS(mlbridge_runner_evaluate_float(onnx, &f),
                 MLBRIDGE_TYPE_MISMATCH);
    CHECK_LAST_ERROR(onnx, "not a scalar");
  }
  mlbridge_runner_destroy(onnx);
  mlbridge_runner_destroy(aot);
}

/** Creation checks the specs against the model, naming the tensor. */
static void test_spec_mismatch(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_tensor_spec in[1], out[1];
  set_spec(&in[0], "x", MLBRIDGE_FLOAT, ShapeX, 2);
  set_spec(&out[0], "nope", MLBRIDGE_FLOAT, ShapeY, 2);
  CHECK_CREATE_FAILS(mlbridge_onnx_runner_create(MLBRIDGE_TEST_ONNX_MODEL, in,
                                                 1, out, 1, 1, &runner, &error),
                     MLBRIDGE_INVALID_ARGUMENT, "no output 'nope'");
  out[0].name = "y";
  in[0].dtype = MLBRIDGE_INT64;
  CHECK_CREATE_FAILS(mlbridge_onnx_runner_create(MLBRIDGE_TEST_ONNX_MODEL, in,
                                                 1, out, 1, 1, &runner, &error),
                     MLBRIDGE_TYPE_MISMATCH, "'x'");
}

/** Runs every test. */
int main(void) {
  test_same_as_aot();
  test_spec_mismatch();
  return test_result("c_api_onnx");
}
