/*===- test_basics.c - C API: versions, errors, argument checks -----*- C
 *-*-===*
 *
 * Part of mlbridge, under the Apache License v2.0.
 *
 *===----------------------------------------------------------------------===*/
/* Versions and status names; the argument checks of every creation function
 * (NULL pointers, struct_size, enum values, timeouts, specs, unavailable
 * components, missing files); every use of a runner (specs, buffers by
 * index and name, type checks) on a pipe runner with no model side, whose
 * evaluation then times out and fails fast afterwards.
 *
 * Built with: MLBRIDGE_TEST_VERSION, MLBRIDGE_TEST_HAVE_GRPC,
 * MLBRIDGE_TEST_HAVE_ONNXRUNTIME (0/1), MLBRIDGE_TEST_NOT_A_MODULE (a shared
 * library that exports no AOT model).
 */
#include "mlbridge/mlbridge.h"

#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/** Shapes used by the specs below. */
static const int64_t Shape1[] = {1};
static const int64_t Shape2x3[] = {2, 3};
static const int64_t ShapeNegative[] = {2, -3};

/** Version queries and status names. */
static void test_versions(void) {
  CHECK(strcmp(mlbridge_version(), MLBRIDGE_TEST_VERSION) == 0);
  CHECK(mlbridge_api_version() == MLBRIDGE_C_API_VERSION);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_OK), "ok") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_INVALID_ARGUMENT),
               "invalid_argument") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_PROTOCOL), "protocol") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_TYPE_MISMATCH), "type_mismatch") ==
        0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_TIMEOUT), "timeout") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_PEER_CLOSED), "peer_closed") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_IO), "io") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_TOO_LARGE), "too_large") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_MODEL_FAILURE), "model_failure") ==
        0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_UNSUPPORTED), "unsupported") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_BROKEN), "broken") == 0);
  CHECK(strcmp(mlbridge_status_name(MLBRIDGE_OUT_OF_MEMORY), "out_of_memory") ==
        0);
  CHECK(strcmp(mlbridge_status_name((mlbridge_status)12), "unknown") == 0);
  CHECK(strcmp(mlbridge_status_name((mlbridge_status)-1), "unknown") == 0);
  /* NULL errors are harmless. */
  CHECK(strcmp(mlbridge_error_message(NULL), "") == 0);
  CHECK(mlbridge_error_status(NULL) == MLBRIDGE_OK);
  mlbridge_error_free(NULL);
  mlbridge_runner_destroy(NULL);
}

/** Option initialisers. */
static void test_option_defaults(void) {
  mlbridge_pipe_options p;
  mlbridge_grpc_options g;
  memset(&p, 0xab, sizeof p);
  memset(&g, 0xab, sizeof g);
  mlbridge_pipe_options_init(&p);
  CHECK(p.struct_size == sizeof p);
  CHECK(p.channel_base == NULL);
  CHECK(p.protocol == MLBRIDGE_PIPE_MLGO);
  CHECK(p.format == MLBRIDGE_FORMAT_BITSTREAM);
  CHECK(p.open_timeout_ms == 60000 && p.io_timeout_ms == 60000);
  mlbridge_grpc_options_init(&g);
  CHECK(g.struct_size == sizeof g);
  CHECK(g.target == NULL && g.streaming == 0);
  CHECK(g.connect_timeout_ms == 10000 && g.call_timeout_ms == 10000);
  mlbridge_pipe_options_init(NULL);
  mlbridge_grpc_options_init(NULL);
}

/** The spec checks shared by every creation function, through pipe runners
 * (extended mode: any number of outputs). */
static void test_spec_checks(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_pipe_options o;
  mlbridge_tensor_spec in[3], out[1];
  mlbridge_pipe_options_init(&o);
  o.protocol = MLBRIDGE_PIPE_EXTENDED;
  set_spec(&in[0], "a", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&in[1], "b", MLBRIDGE_FLOAT, Shape2x3, 2);
  set_spec(&in[2], "c", MLBRIDGE_UINT8, NULL, 0);
  set_spec(&out[0], "y", MLBRIDGE_INT64, Shape1, 1);

  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(NULL, 2, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs is NULL but num_inputs is 2");
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, NULL, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "outputs is NULL but num_outputs is 1");
  in[1].name = NULL;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs[1].name is NULL");
  in[1].name = "a";
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "tensor name 'a' appears twice");
  in[1].name = "";
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs[1]: tensor name is empty");
  in[1].name = "b";
  in[2].dtype = (mlbridge_dtype)42;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs[2].dtype is 42");
  in[2].dtype = (mlbridge_dtype)-1;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs[2].dtype is -1");
  in[2].dtype = MLBRIDGE_UINT8;
  out[0].dtype = (mlbridge_dtype)10;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "outputs[0].dtype is 10");
  out[0].dtype = MLBRIDGE_INT64;
  in[1].shape = NULL;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs[1].shape is NULL but its rank is 2");
  in[1].shape = ShapeNegative;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs[1]: tensor 'b': negative dimension");
  in[1].shape = Shape2x3;
  /* No error out-parameter: the status alone. */
  in[0].name = NULL;
  CHECK_STATUS(mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK(runner == NULL);
  in[0].name = "a";
  /* A valid set, for contrast. */
  if (CHECK_CREATED(
          mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error)))
    mlbridge_runner_destroy(runner);
}

/** The checks of mlbridge_pipe_runner_create's own arguments. */
static void test_pipe_create_checks(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_pipe_options o;
  mlbridge_tensor_spec in[1], out[2];
  struct {
    mlbridge_pipe_options v1;
    char later_fields[24];
  } bigger;
  set_spec(&in[0], "a", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&out[0], "y", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&out[1], "z", MLBRIDGE_FLOAT, Shape1, 1);
  mlbridge_pipe_options_init(&o);

  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, &o, NULL, &error),
      MLBRIDGE_INVALID_ARGUMENT, "runner is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, NULL, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options is NULL");
  o.struct_size = 8;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->struct_size is 8, smaller than");
  o.struct_size = sizeof o - 1;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "mlbridge_pipe_options_init");
  mlbridge_pipe_options_init(&o);
  o.protocol = (mlbridge_pipe_protocol)7;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->protocol is 7");
  o.protocol = MLBRIDGE_PIPE_MLGO;
  o.format = (mlbridge_format)3;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->format is 3");
  o.format = MLBRIDGE_FORMAT_JSON;
  o.open_timeout_ms = -1;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->open_timeout_ms is -1");
  o.open_timeout_ms = 1000;
  o.io_timeout_ms = INT64_MAX;
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->io_timeout_ms is");
  o.io_timeout_ms = 1000;
  /* LLVM's protocol carries exactly one output. */
  CHECK_CREATE_FAILS(
      mlbridge_pipe_runner_create(in, 1, out, 2, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "exactly one output");
  /* The channel directory does not exist: found at connection time. */
  o.channel_base = "/nonexistent-mlbridge-dir/channel";
  if (CHECK_CREATED(
          mlbridge_pipe_runner_create(in, 1, out, 1, &o, &runner, &error))) {
    CHECK(strcmp(mlbridge_pipe_runner_channel(runner),
                 "/nonexistent-mlbridge-dir/channel") == 0);
    CHECK(mlbridge_runner_evaluate(runner) != MLBRIDGE_OK);
    CHECK_LAST_ERROR(runner, "/nonexistent-mlbridge-dir/channel");
    mlbridge_runner_destroy(runner);
  }
  /* A newer caller's bigger struct: the fields after version 1's are
   * ignored. */
  memset(&bigger, 0x5a, sizeof bigger);
  mlbridge_pipe_options_init(&bigger.v1);
  bigger.v1.struct_size = sizeof bigger;
  bigger.v1.protocol = MLBRIDGE_PIPE_EXTENDED;
  if (CHECK_CREATED(mlbridge_pipe_runner_create(in, 1, out, 2, &bigger.v1,
                                                &runner, &error)))
    mlbridge_runner_destroy(runner);
}

/** The checks of mlbridge_grpc_runner_create; without gRPC in the build,
 * valid arguments are MLBRIDGE_UNSUPPORTED naming the CMake option. With
 * gRPC, a server that does not exist fails evaluation within the connect
 * timeout, and the runner fails fast afterwards. */
static void test_grpc_create_checks(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_grpc_options o;
  mlbridge_tensor_spec in[1], out[1];
  set_spec(&in[0], "a", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&out[0], "y", MLBRIDGE_INT64, Shape1, 1);
  mlbridge_grpc_options_init(&o);
  o.target = "unix:/nonexistent-mlbridge-dir/socket";
  o.connect_timeout_ms = 300;
  o.call_timeout_ms = 300;

  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 1, &o, NULL, &error),
      MLBRIDGE_INVALID_ARGUMENT, "runner is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 1, NULL, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options is NULL");
  o.struct_size = 4;
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->struct_size is 4");
  o.struct_size = sizeof o;
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, NULL, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "outputs is NULL but num_outputs is 1");
  o.target = NULL;
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->target is NULL");
  o.target = "unix:/nonexistent-mlbridge-dir/socket";
  o.streaming = 2;
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->streaming is 2");
  o.streaming = 0;
  o.call_timeout_ms = -5;
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "options->call_timeout_ms is -5");
  o.call_timeout_ms = 300;
#if MLBRIDGE_TEST_HAVE_GRPC
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 0, &o, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "needs an output");
  if (CHECK_CREATED(
          mlbridge_grpc_runner_create(in, 1, out, 1, &o, &runner, &error))) {
    int64_t advice = 0;
    double start = test_now();
    mlbridge_status s = mlbridge_runner_evaluate_int64(runner, &advice);
    CHECK(s != MLBRIDGE_OK);
    CHECK(strlen(mlbridge_runner_last_error(runner)) > 0);
    CHECK(test_now() - start < 10.0);
    mlbridge_runner_destroy(runner);
  }
#else
  CHECK_CREATE_FAILS(
      mlbridge_grpc_runner_create(in, 1, out, 1, &o, &runner, &error),
      MLBRIDGE_UNSUPPORTED, "MLBRIDGE_ENABLE_GRPC");
#endif
}

/** The checks of mlbridge_onnx_runner_create; without ONNX Runtime, valid
 * arguments are MLBRIDGE_UNSUPPORTED naming the CMake option. */
static void test_onnx_create_checks(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_tensor_spec in[1], out[1];
  const char *missing = "/nonexistent-mlbridge-dir/model.onnx";
  set_spec(&in[0], "x", MLBRIDGE_FLOAT, Shape1, 1);
  set_spec(&out[0], "y", MLBRIDGE_FLOAT, Shape1, 1);

  CHECK_CREATE_FAILS(
      mlbridge_onnx_runner_create(NULL, in, 1, out, 1, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "model_path is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_onnx_runner_create(missing, in, 1, out, 1, 0, NULL, &error),
      MLBRIDGE_INVALID_ARGUMENT, "runner is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_onnx_runner_create(missing, in, 1, out, 1, -1, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "intra_op_threads is -1");
  CHECK_CREATE_FAILS(
      mlbridge_onnx_runner_create(missing, NULL, 1, out, 1, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "inputs is NULL but num_inputs is 1");
#if MLBRIDGE_TEST_HAVE_ONNXRUNTIME
  CHECK_CREATE_FAILS(
      mlbridge_onnx_runner_create(missing, in, 1, out, 1, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, missing);
#else
  CHECK_CREATE_FAILS(
      mlbridge_onnx_runner_create(missing, in, 1, out, 1, 0, &runner, &error),
      MLBRIDGE_UNSUPPORTED, "MLBRIDGE_ENABLE_ONNXRUNTIME");
#endif
}

/** mlbridge_runner_create: the runner configuration's string form (the
 * grammar itself is pinned by tests/golden/runner_configs.json). */
static void test_create_from_config(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_tensor_spec in[2], out[1];
  int64_t advice = 0;
  set_spec(&in[0], "a", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&in[1], "inlining_default", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&out[0], "y", MLBRIDGE_INT64, Shape1, 1);

  CHECK_CREATE_FAILS(
      mlbridge_runner_create(NULL, in, 2, out, 1, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "config is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_runner_create("bogus:x", in, 2, out, 1, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "unknown runner 'bogus'");
  CHECK_CREATE_FAILS(mlbridge_runner_create("pipe:/tmp/x,format=json", in, 2,
                                            out, 1, &runner, &error),
                     MLBRIDGE_INVALID_ARGUMENT, "needs protocol=extended");
  CHECK_CREATE_FAILS(
      mlbridge_runner_create("constant:1", in, 2, NULL, 1, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "outputs is NULL but num_outputs is 1");
  if (CHECK_CREATED(mlbridge_runner_create("constant:-4", in, 2, out, 1,
                                           &runner, &error))) {
    CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &advice), MLBRIDGE_OK);
    CHECK(advice == -4);
    mlbridge_runner_destroy(runner);
  }
  if (CHECK_CREATED(mlbridge_runner_create("echo:inlining_default", in, 2, out,
                                           1, &runner, &error))) {
    int64_t *fed = NULL;
    size_t count = 0;
    CHECK_STATUS(
        mlbridge_runner_input(runner, 1, MLBRIDGE_INT64, (void **)&fed, &count),
        MLBRIDGE_OK);
    if (fed) {
      *fed = 1;
      CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &advice),
                   MLBRIDGE_OK);
      CHECK(advice == 1);
    }
    mlbridge_runner_destroy(runner);
  }
  /* A pipe runner from a configuration knows its channel. */
  if (CHECK_CREATED(mlbridge_runner_create(
          "pipe,protocol=extended,format=protobuf,timeout_ms=200", in, 2, out,
          1, &runner, &error))) {
    CHECK(mlbridge_pipe_runner_channel(runner) != NULL);
    mlbridge_runner_destroy(runner);
  }
#if !MLBRIDGE_TEST_HAVE_ONNXRUNTIME
  CHECK_CREATE_FAILS(
      mlbridge_runner_create("onnx:m.onnx", in, 2, out, 1, &runner, &error),
      MLBRIDGE_UNSUPPORTED, "MLBRIDGE_ENABLE_ONNXRUNTIME");
#endif
}

/** A model object of the fake model below (never created). */
static void *fake_create(void) { return NULL; }

/** A model interface of a future ABI version. */
static const mlbridge_aot_model_v1 FutureModel = {
    2,    "Future", 0,    0,    NULL, NULL, fake_create,
    NULL, NULL,     NULL, NULL, NULL, NULL};

/** The checks of mlbridge_aot_runner_create and _load. */
static void test_aot_create_checks(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  const char *missing = "/nonexistent-mlbridge-dir/model.so";
  mlbridge_tensor_spec in[1];
  set_spec(&in[0], "x", MLBRIDGE_FLOAT, Shape1, 1);

  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(NULL, NULL, 0, NULL, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "model is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(&FutureModel, NULL, 0, NULL, 0, NULL, &error),
      MLBRIDGE_INVALID_ARGUMENT, "runner is NULL");
  CHECK_CREATE_FAILS(mlbridge_aot_runner_create(&FutureModel, NULL, 0, NULL, 0,
                                                &runner, &error),
                     MLBRIDGE_UNSUPPORTED, "ABI version 2");
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(&FutureModel, in, 1, NULL, 0, &runner, &error),
      MLBRIDGE_UNSUPPORTED, "ABI version 2");
  CHECK_CREATE_FAILS(mlbridge_aot_runner_create(&FutureModel, NULL, 3, NULL, 0,
                                                &runner, &error),
                     MLBRIDGE_INVALID_ARGUMENT,
                     "inputs is NULL but num_inputs is 3");
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_load(NULL, NULL, 0, NULL, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "module_path is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_load(missing, NULL, 0, NULL, 0, NULL, &error),
      MLBRIDGE_INVALID_ARGUMENT, "runner is NULL");
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_load(missing, NULL, 0, NULL, 0, &runner, &error),
      MLBRIDGE_IO, missing);
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_load(missing, in, 1, NULL, 0, &runner, &error),
      MLBRIDGE_IO, missing);
  CHECK_CREATE_FAILS(mlbridge_aot_runner_load(MLBRIDGE_TEST_NOT_A_MODULE, NULL,
                                              0, NULL, 0, &runner, &error),
                     MLBRIDGE_INVALID_ARGUMENT,
                     "exports no mlbridge_aot_model_v1_entry");
}

/** A model written by hand in C against the AOT ABI (mlbridge/AotAbi.h):
 * y = 2 x over four floats, failing on a negative input. */
typedef struct doubler {
  void *arg;      /**< where x is read */
  void *result;   /**< where y is written */
  float own_x[4]; /**< x unless redirected */
  float own_y[4]; /**< y unless redirected */
} doubler;

/** mlbridge_aot_model_v1::create. */
static void *doubler_create(void) {
  doubler *d = (doubler *)calloc(1, sizeof *d);
  if (d) {
    d->arg = d->own_x;
    d->result = d->own_y;
  }
  return d;
}

/** mlbridge_aot_model_v1::destroy. */
static void doubler_destroy(void *model) { free(model); }

/** mlbridge_aot_model_v1::arg_data. */
static void *doubler_arg_data(void *model, int index) {
  return index == 0 ? ((doubler *)model)->arg : NULL;
}

/** mlbridge_aot_model_v1::result_data. */
static void *doubler_result_data(void *model, int index) {
  return index == 0 ? ((doubler *)model)->result : NULL;
}

/** mlbridge_aot_model_v1::set_arg_data. */
static void doubler_set_arg_data(void *model, int index, void *data) {
  doubler *d = (doubler *)model;
  if (index == 0)
    d->arg = data ? data : d->own_x;
}

/** mlbridge_aot_model_v1::set_result_data. */
static void doubler_set_result_data(void *model, int index, void *data) {
  doubler *d = (doubler *)model;
  if (index == 0)
    d->result = data ? data : d->own_y;
}

/** mlbridge_aot_model_v1::run. */
static const char *doubler_run(void *model) {
  doubler *d = (doubler *)model;
  const float *x = (const float *)d->arg;
  float *y = (float *)d->result;
  int i;
  for (i = 0; i < 4; ++i) {
    if (x[i] < 0)
      return "node 'Double' (Mul): negative input";
    y[i] = 2 * x[i];
  }
  return NULL;
}

/** The doubler's tensors. */
static const int64_t Shape4[] = {4};
static const mlbridge_aot_tensor_v1 DoublerArgs[] = {{"x", "float", 1, Shape4}};
static const mlbridge_aot_tensor_v1 DoublerResults[] = {
    {"y", "float", 1, Shape4}};
static const mlbridge_aot_tensor_v1 Bfloat16Args[] = {
    {"x", "bfloat16", 1, Shape4}};

/** The doubler's interface. */
static const mlbridge_aot_model_v1 Doubler = {1,
                                              "Doubler",
                                              1,
                                              1,
                                              DoublerArgs,
                                              DoublerResults,
                                              doubler_create,
                                              doubler_destroy,
                                              doubler_arg_data,
                                              doubler_result_data,
                                              doubler_set_arg_data,
                                              doubler_set_result_data,
                                              doubler_run};

/** The same with an element type the ABI does not have. */
static const mlbridge_aot_model_v1 Bfloat16Doubler = {1,
                                                      "Bfloat16Doubler",
                                                      1,
                                                      1,
                                                      Bfloat16Args,
                                                      DoublerResults,
                                                      doubler_create,
                                                      doubler_destroy,
                                                      doubler_arg_data,
                                                      doubler_result_data,
                                                      doubler_set_arg_data,
                                                      doubler_set_result_data,
                                                      doubler_run};

/** The AOT runner over a model written in C: it reads and writes the
 * runner's buffers; a failing run is MLBRIDGE_MODEL_FAILURE for that call
 * only. */
static void test_c_model(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  void *in = NULL;
  const void *out = NULL;
  float *x;
  const float *y;
  size_t count = 0;
  mlbridge_aot_model_v1 broken = Doubler;
  broken.run = NULL;
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(&broken, NULL, 0, NULL, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "model->run is NULL");
  broken = Doubler;
  broken.args = NULL;
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(&broken, NULL, 0, NULL, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "model->args is NULL");
  broken = Doubler;
  broken.num_results = -1;
  CHECK_CREATE_FAILS(
      mlbridge_aot_runner_create(&broken, NULL, 0, NULL, 0, &runner, &error),
      MLBRIDGE_INVALID_ARGUMENT, "-1 outputs");
  CHECK_CREATE_FAILS(mlbridge_aot_runner_create(&Bfloat16Doubler, NULL, 0, NULL,
                                                0, &runner, &error),
                     MLBRIDGE_INVALID_ARGUMENT, "bfloat16");
  if (!CHECK_CREATED(mlbridge_aot_runner_create(&Doubler, NULL, 0, NULL, 0,
                                                &runner, &error)))
    return;
  if (!CHECK_STATUS(mlbridge_runner_input_by_name(runner, "x", MLBRIDGE_FLOAT,
                                                  &in, &count),
                    MLBRIDGE_OK) ||
      !CHECK_STATUS(
          mlbridge_runner_output(runner, 0, MLBRIDGE_FLOAT, &out, &count),
          MLBRIDGE_OK)) {
    mlbridge_runner_destroy(runner);
    return;
  }
  CHECK(count == 4);
  x = (float *)in;
  y = (const float *)out;
  x[0] = 1, x[1] = 2.5f, x[2] = -0.0f, x[3] = 1e20f;
  if (CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_OK))
    CHECK(y[0] == 2 && y[1] == 5 && y[2] == 0 && y[3] == 2e20f);
  x[2] = -1;
  CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_MODEL_FAILURE);
  CHECK_LAST_ERROR(runner, "node 'Double' (Mul): negative input");
  x[2] = 3;
  if (CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_OK))
    CHECK(y[2] == 6);
  mlbridge_runner_destroy(runner);
}

/** Every call with a NULL runner fails cleanly. */
static void test_null_runner(void) {
  mlbridge_tensor_spec spec;
  size_t index = 0, count = 7;
  void *data = &count;
  const void *cdata = &count;
  int64_t i64 = 0;
  float f = 0;
  CHECK(mlbridge_runner_num_inputs(NULL) == 0);
  CHECK(mlbridge_runner_num_outputs(NULL) == 0);
  CHECK(mlbridge_pipe_runner_channel(NULL) == NULL);
  CHECK(strcmp(mlbridge_runner_last_error(NULL), "runner is NULL") == 0);
  CHECK_STATUS(mlbridge_runner_input_spec(NULL, 0, &spec),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_output_spec(NULL, 0, &spec),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_input_index(NULL, "a", &index),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_input(NULL, 0, MLBRIDGE_FLOAT, &data, &count),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK(data == NULL && count == 0);
  CHECK_STATUS(
      mlbridge_runner_input_by_name(NULL, "a", MLBRIDGE_FLOAT, &data, NULL),
      MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_output(NULL, 0, MLBRIDGE_FLOAT, &cdata, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK(cdata == NULL);
  CHECK_STATUS(
      mlbridge_runner_output_by_name(NULL, "y", MLBRIDGE_FLOAT, &cdata, NULL),
      MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_evaluate(NULL), MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_evaluate_int64(NULL, &i64),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_evaluate_float(NULL, &f),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_switch_context(NULL, "f"),
               MLBRIDGE_INVALID_ARGUMENT);
}

/** Specs, buffers and type checks of a pipe runner with no model side; its
 * evaluation times out, then fails fast. */
static void test_runner_use(void) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  mlbridge_pipe_options o;
  mlbridge_tensor_spec in[3], out[1], spec;
  size_t index = 99, count = 99;
  void *data = NULL, *data2 = NULL;
  const void *cdata = NULL;
  int64_t advice = 0;
  float f = 0;
  const char *channel;
  double start;
  set_spec(&in[0], "a", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&in[1], "b", MLBRIDGE_FLOAT, Shape2x3, 2);
  set_spec(&in[2], "scalar", MLBRIDGE_UINT8, NULL, 0);
  set_spec(&out[0], "advice", MLBRIDGE_INT64, Shape1, 1);
  mlbridge_pipe_options_init(&o);
  o.open_timeout_ms = 300;
  o.io_timeout_ms = 300;
  if (!CHECK_CREATED(
          mlbridge_pipe_runner_create(in, 3, out, 1, &o, &runner, &error)))
    return;
  CHECK(strcmp(mlbridge_runner_last_error(runner), "") == 0);
  channel = mlbridge_pipe_runner_channel(runner);
  CHECK(channel != NULL && strlen(channel) > 0);

  /* Specs. */
  CHECK(mlbridge_runner_num_inputs(runner) == 3);
  CHECK(mlbridge_runner_num_outputs(runner) == 1);
  if (CHECK_STATUS(mlbridge_runner_input_spec(runner, 1, &spec), MLBRIDGE_OK))
    CHECK(strcmp(spec.name, "b") == 0 && spec.dtype == MLBRIDGE_FLOAT &&
          spec.rank == 2 && spec.shape[0] == 2 && spec.shape[1] == 3);
  if (CHECK_STATUS(mlbridge_runner_input_spec(runner, 2, &spec), MLBRIDGE_OK))
    CHECK(strcmp(spec.name, "scalar") == 0 && spec.dtype == MLBRIDGE_UINT8 &&
          spec.rank == 0 && spec.shape == NULL);
  if (CHECK_STATUS(mlbridge_runner_output_spec(runner, 0, &spec), MLBRIDGE_OK))
    CHECK(strcmp(spec.name, "advice") == 0 && spec.dtype == MLBRIDGE_INT64 &&
          spec.rank == 1 && spec.shape[0] == 1);
  CHECK_STATUS(mlbridge_runner_input_spec(runner, 3, &spec),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "no input #3 (the runner has 3 inputs)");
  CHECK_STATUS(mlbridge_runner_output_spec(runner, 1, &spec),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "no output #1 (the runner has 1 outputs)");
  CHECK_STATUS(mlbridge_runner_input_spec(runner, 0, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "spec is NULL");
  CHECK_STATUS(mlbridge_runner_output_spec(runner, 0, NULL),
               MLBRIDGE_INVALID_ARGUMENT);

  /* Names. */
  if (CHECK_STATUS(mlbridge_runner_input_index(runner, "b", &index),
                   MLBRIDGE_OK))
    CHECK(index == 1);
  CHECK_STATUS(mlbridge_runner_input_index(runner, "zz", &index),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "no input named 'zz'");
  CHECK_STATUS(mlbridge_runner_input_index(runner, NULL, &index),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "name is NULL");
  CHECK_STATUS(mlbridge_runner_input_index(runner, "b", NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "index is NULL");

  /* Input buffers, by index and by name, checked against their dtype. */
  if (CHECK_STATUS(
          mlbridge_runner_input(runner, 0, MLBRIDGE_INT64, &data, &count),
          MLBRIDGE_OK)) {
    CHECK(data != NULL && count == 1);
    *(int64_t *)data = 42;
  }
  if (CHECK_STATUS(
          mlbridge_runner_input(runner, 1, MLBRIDGE_FLOAT, &data, &count),
          MLBRIDGE_OK))
    CHECK(data != NULL && count == 6);
  if (CHECK_STATUS(mlbridge_runner_input_by_name(runner, "b", MLBRIDGE_FLOAT,
                                                 &data2, NULL),
                   MLBRIDGE_OK))
    CHECK(data2 == data);
  if (CHECK_STATUS(
          mlbridge_runner_input(runner, 2, MLBRIDGE_UINT8, &data, &count),
          MLBRIDGE_OK))
    CHECK(data != NULL && count == 1);
  CHECK_STATUS(mlbridge_runner_input(runner, 0, MLBRIDGE_FLOAT, &data, &count),
               MLBRIDGE_TYPE_MISMATCH);
  CHECK(data == NULL && count == 0);
  CHECK_LAST_ERROR(runner, "input 'a' is int64_t, not float");
  CHECK_STATUS(
      mlbridge_runner_input_by_name(runner, "b", MLBRIDGE_DOUBLE, &data, NULL),
      MLBRIDGE_TYPE_MISMATCH);
  CHECK_LAST_ERROR(runner, "input 'b' is float, not double");
  CHECK_STATUS(
      mlbridge_runner_input(runner, 0, (mlbridge_dtype)77, &data, &count),
      MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "dtype is 77");
  CHECK_STATUS(mlbridge_runner_input(runner, 5, MLBRIDGE_INT64, &data, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "no input #5");
  CHECK_STATUS(mlbridge_runner_input(runner, 0, MLBRIDGE_INT64, NULL, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "data is NULL");
  CHECK_STATUS(mlbridge_runner_input_by_name(runner, "nope", MLBRIDGE_INT64,
                                             &data, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "no input named 'nope'");
  CHECK_STATUS(
      mlbridge_runner_input_by_name(runner, NULL, MLBRIDGE_INT64, &data, NULL),
      MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "name is NULL");

  /* Output buffers (zero before any evaluation). */
  if (CHECK_STATUS(
          mlbridge_runner_output(runner, 0, MLBRIDGE_INT64, &cdata, &count),
          MLBRIDGE_OK))
    CHECK(cdata != NULL && count == 1 && *(const int64_t *)cdata == 0);
  if (CHECK_STATUS(mlbridge_runner_output_by_name(runner, "advice",
                                                  MLBRIDGE_INT64, &cdata, NULL),
                   MLBRIDGE_OK))
    CHECK(cdata != NULL);
  CHECK_STATUS(
      mlbridge_runner_output(runner, 0, MLBRIDGE_UINT64, &cdata, &count),
      MLBRIDGE_TYPE_MISMATCH);
  CHECK(cdata == NULL && count == 0);
  CHECK_LAST_ERROR(runner, "output 'advice' is int64_t, not uint64_t");
  CHECK_STATUS(mlbridge_runner_output(runner, 1, MLBRIDGE_INT64, &cdata, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "no output #1");
  CHECK_STATUS(
      mlbridge_runner_output_by_name(runner, "y", MLBRIDGE_INT64, &cdata, NULL),
      MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "no output named 'y'");
  CHECK_STATUS(mlbridge_runner_output(runner, 0, MLBRIDGE_INT64, NULL, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "data is NULL");

  /* Scalar results need their out-parameter; context names too. */
  CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "result is NULL");
  CHECK_STATUS(mlbridge_runner_evaluate_float(runner, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_STATUS(mlbridge_runner_switch_context(runner, NULL),
               MLBRIDGE_INVALID_ARGUMENT);
  CHECK_LAST_ERROR(runner, "name is NULL");

  /* Nobody serves the channel: the first evaluation times out... */
  start = test_now();
  CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &advice),
               MLBRIDGE_TIMEOUT);
  CHECK(strlen(mlbridge_runner_last_error(runner)) > 0);
  CHECK(test_now() - start < 5.0);
  /* ...and every later call fails fast, saying why. */
  start = test_now();
  CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_BROKEN);
  CHECK_LAST_ERROR(runner, "timeout");
  CHECK_STATUS(mlbridge_runner_evaluate_float(runner, &f), MLBRIDGE_BROKEN);
  CHECK_STATUS(mlbridge_runner_switch_context(runner, "g"), MLBRIDGE_BROKEN);
  CHECK(test_now() - start < 0.5);
  /* Inputs stay readable and writable. */
  if (CHECK_STATUS(
          mlbridge_runner_input(runner, 0, MLBRIDGE_INT64, &data, NULL),
          MLBRIDGE_OK))
    CHECK(*(int64_t *)data == 42);
  mlbridge_runner_destroy(runner);
}

/** Runs every test. */
int main(void) {
  test_versions();
  test_option_defaults();
  test_spec_checks();
  test_pipe_create_checks();
  test_grpc_create_checks();
  test_onnx_create_checks();
  test_aot_create_checks();
  test_create_from_config();
  test_c_model();
  test_null_runner();
  test_runner_use();
  return test_result("c_api_basics");
}
