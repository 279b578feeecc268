/*===- test_python_peer.c - C API against the Python model side -----*- C
 *-*-===*
 *
 * Part of mlbridge, under the Apache License v2.0.
 *
 *===----------------------------------------------------------------------===*/
/* Starts `python -m mlbridge serve` (fork/execv) with the test policies of
 * tests/cpp/policies/echo.py and runs C API runners against it: the pipe
 * runner in LLVM's protocol and in the extended one (every format), a
 * policy failure reported as MLBRIDGE_MODEL_FAILURE, the model side killed
 * between calls and in the middle of one (an error at once, no hang, then
 * MLBRIDGE_BROKEN fast), and, with gRPC in the build, the gRPC runner (unary
 * and streaming). Skipped (77) without the Python interpreter.
 *
 * Built with: MLBRIDGE_TEST_PYTHON (the venv's python), MLBRIDGE_TEST_POLICIES
 * (echo.py), MLBRIDGE_TEST_HAVE_GRPC (0/1).
 */
#include "mlbridge/mlbridge.h"

#include "test_util.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/** Shapes used by the specs below. */
static const int64_t Shape1[] = {1};
static const int64_t Shape3[] = {3};
static const int64_t Shape5[] = {5};
static const int64_t Shape2x3[] = {2, 3};

/** Sleeps \p ms milliseconds. */
static void sleep_ms(long ms) {
  struct timespec t;
  t.tv_sec = ms / 1000;
  t.tv_nsec = (ms % 1000) * 1000000L;
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
}

/** Starts `python -m mlbridge serve WHERE ADDRESS --policy echo.py:FUNCTION`
 * (WHERE: "--pipe" or "--grpc"); returns its pid, or -1. */
static pid_t start_peer(const char *where, const char *address,
                        const char *function) {
  char policy[4096];
  const char *argv[9];
  pid_t pid;
  snprintf(policy, sizeof policy, "%s:%s", MLBRIDGE_TEST_POLICIES, function);
  argv[0] = MLBRIDGE_TEST_PYTHON;
  argv[1] = "-m";
  argv[2] = "mlbridge";
  argv[3] = "serve";
  argv[4] = where;
  argv[5] = address;
  argv[6] = "--policy";
  argv[7] = policy;
  argv[8] = NULL;
  pid = fork();
  if (pid == 0) {
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  CHECK(pid > 0);
  return pid;
}

/** Waits at most \p seconds for \p pid to exit; kills it after that.
 * Returns its exit code, or -1 if it did not exit by itself. */
static int wait_peer(pid_t pid, double seconds) {
  double until = test_now() + seconds;
  int status = 0;
  if (pid <= 0)
    return -1;
  while (test_now() < until) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (done < 0)
      return -1;
    sleep_ms(20);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

/** Kills \p pid and reaps it. */
static void kill_peer(pid_t pid) {
  int status;
  if (pid <= 0)
    return;
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

/** Fills every input of \p runner with values derived from \p seed and
 * returns the sum of all their bytes (what the "checksum" policy answers). */
static int64_t fill_inputs(mlbridge_runner *runner, unsigned seed) {
  int64_t sum = 0;
  size_t i, b, n = mlbridge_runner_num_inputs(runner);
  unsigned s = seed * 2654435761u + 7u;
  for (i = 0; i < n; ++i) {
    mlbridge_tensor_spec spec;
    void *data = NULL;
    size_t count = 0, bytes, elem;
    unsigned char *p;
    if (!CHECK_STATUS(mlbridge_runner_input_spec(runner, i, &spec),
                      MLBRIDGE_OK) ||
        !CHECK_STATUS(
            mlbridge_runner_input(runner, i, spec.dtype, &data, &count),
            MLBRIDGE_OK))
      return -1;
    switch (spec.dtype) {
    case MLBRIDGE_INT8:
    case MLBRIDGE_UINT8:
      elem = 1;
      break;
    case MLBRIDGE_INT16:
    case MLBRIDGE_UINT16:
      elem = 2;
      break;
    case MLBRIDGE_FLOAT:
    case MLBRIDGE_INT32:
    case MLBRIDGE_UINT32:
      elem = 4;
      break;
    default:
      elem = 8;
      break;
    }
    bytes = count * elem;
    p = (unsigned char *)data;
    if (spec.dtype == MLBRIDGE_FLOAT) {
      for (b = 0; b < count; ++b)
        ((float *)data)[b] = (float)(int)(s = s * 1103515245u + 12345u) / 8.0f;
    } else if (spec.dtype == MLBRIDGE_DOUBLE) {
      for (b = 0; b < count; ++b)
        ((double *)data)[b] = (double)(int)(s = s * 1103515245u + 12345u);
    } else {
      for (b = 0; b < bytes; ++b)
        p[b] = (unsigned char)((s = s * 1103515245u + 12345u) >> 16);
    }
    for (b = 0; b < bytes; ++b)
      sum += p[b];
  }
  return sum;
}

/** Makes a pipe runner (no error expected). */
static mlbridge_runner *make_pipe(const mlbridge_tensor_spec *in, size_t n_in,
                                  const mlbridge_tensor_spec *out, size_t n_out,
                                  const mlbridge_pipe_options *o) {
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  if (!CHECK_CREATED(mlbridge_pipe_runner_create(in, n_in, out, n_out, o,
                                                 &runner, &error)))
    return NULL;
  return runner;
}

/** The specs of the checksum sessions: several dtypes and shapes. */
static mlbridge_tensor_spec ChecksumInputs[4], Advice[1];

/** Sets up ChecksumInputs and Advice. */
static void init_checksum_specs(void) {
  set_spec(&ChecksumInputs[0], "a", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&ChecksumInputs[1], "b", MLBRIDGE_FLOAT, Shape2x3, 2);
  set_spec(&ChecksumInputs[2], "c", MLBRIDGE_UINT8, Shape5, 1);
  set_spec(&ChecksumInputs[3], "d", MLBRIDGE_DOUBLE, NULL, 0);
  set_spec(&Advice[0], "advice", MLBRIDGE_INT64, Shape1, 1);
}

/** LLVM's protocol on a private channel the runner makes: the Python host
 * answers the byte sum of the features. */
static void test_mlgo_checksum(void) {
  mlbridge_pipe_options o;
  mlbridge_runner *runner;
  pid_t peer;
  unsigned seed;
  mlbridge_pipe_options_init(&o);
  o.open_timeout_ms = 30000;
  o.io_timeout_ms = 30000;
  runner = make_pipe(ChecksumInputs, 4, Advice, 1, &o);
  if (!runner)
    return;
  peer = start_peer("--pipe", mlbridge_pipe_runner_channel(runner), "checksum");
  CHECK_STATUS(mlbridge_runner_switch_context(runner, "f"), MLBRIDGE_OK);
  for (seed = 0; seed < 20; ++seed) {
    int64_t want = fill_inputs(runner, seed), got = -1;
    if (!CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &got),
                      MLBRIDGE_OK)) {
      fprintf(stderr, "  last error: %s\n", mlbridge_runner_last_error(runner));
      break;
    }
    CHECK(got == want);
  }
  mlbridge_runner_destroy(runner);
  /* The host ends its session when the compiler goes away. */
  CHECK(wait_peer(peer, 20.0) == 0);
}

/** \p protocol (extended or shm) in \p format on a channel the test makes
 * (FIFOs first, host next, runner last): every output echoes its input. */
static void test_echo(mlbridge_pipe_protocol protocol, mlbridge_format format) {
  char dir[] = "/tmp/mlbridge-ctest-XXXXXX", base[256], in_path[300],
       out_path[300];
  mlbridge_pipe_options o;
  mlbridge_tensor_spec in[2], out[2];
  mlbridge_runner *runner = NULL;
  pid_t peer;
  int round;
  if (!mkdtemp(dir)) {
    test_fail(__FILE__, __LINE__, "mkdtemp failed");
    return;
  }
  snprintf(base, sizeof base, "%s/channel", dir);
  snprintf(in_path, sizeof in_path, "%s.in", base);
  snprintf(out_path, sizeof out_path, "%s.out", base);
  CHECK(mkfifo(in_path, 0600) == 0 && mkfifo(out_path, 0600) == 0);
  peer = start_peer("--pipe", base, "echo");
  set_spec(&in[0], "x", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&in[1], "v", MLBRIDGE_FLOAT, Shape3, 1);
  set_spec(&out[0], "x_out", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&out[1], "v_out", MLBRIDGE_FLOAT, Shape3, 1);
  mlbridge_pipe_options_init(&o);
  o.channel_base = base;
  o.protocol = protocol;
  o.format = format;
  o.open_timeout_ms = 30000;
  o.io_timeout_ms = 30000;
  runner = make_pipe(in, 2, out, 2, &o);
  if (runner) {
    CHECK(strcmp(mlbridge_pipe_runner_channel(runner), base) == 0);
    for (round = 0; round < 5; ++round) {
      void *x = NULL, *v = NULL;
      const void *x_out = NULL, *v_out = NULL;
      size_t count = 0;
      if (!CHECK_STATUS(
              mlbridge_runner_input(runner, 0, MLBRIDGE_INT64, &x, NULL),
              MLBRIDGE_OK) ||
          !CHECK_STATUS(mlbridge_runner_input_by_name(runner, "v",
                                                      MLBRIDGE_FLOAT, &v, NULL),
                        MLBRIDGE_OK))
        break;
      *(int64_t *)x = -1000000007LL * (round + 1);
      ((float *)v)[0] = 0.5f * (float)round;
      ((float *)v)[1] = -3.25f;
      ((float *)v)[2] = 1e-30f;
      if (!CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_OK)) {
        fprintf(stderr, "  last error: %s\n",
                mlbridge_runner_last_error(runner));
        break;
      }
      if (CHECK_STATUS(mlbridge_runner_output_by_name(
                           runner, "x_out", MLBRIDGE_INT64, &x_out, &count),
                       MLBRIDGE_OK))
        CHECK(count == 1 && *(const int64_t *)x_out == *(int64_t *)x);
      if (CHECK_STATUS(
              mlbridge_runner_output(runner, 1, MLBRIDGE_FLOAT, &v_out, &count),
              MLBRIDGE_OK))
        CHECK(count == 3 && memcmp(v_out, v, 3 * sizeof(float)) == 0);
    }
    mlbridge_runner_destroy(runner);
    CHECK(wait_peer(peer, 20.0) == 0);
  } else {
    kill_peer(peer);
  }
  unlink(in_path);
  unlink(out_path);
  rmdir(dir);
}

/** A policy that raises: that evaluation is MLBRIDGE_MODEL_FAILURE with the
 * policy's message; the next one works. */
static void test_policy_failure(void) {
  mlbridge_pipe_options o;
  mlbridge_tensor_spec in[1], out[1];
  mlbridge_runner *runner;
  void *x = NULL;
  int64_t y = 0;
  pid_t peer;
  set_spec(&in[0], "x", MLBRIDGE_INT64, Shape1, 1);
  set_spec(&out[0], "y", MLBRIDGE_INT64, Shape1, 1);
  mlbridge_pipe_options_init(&o);
  o.protocol = MLBRIDGE_PIPE_EXTENDED;
  o.format = MLBRIDGE_FORMAT_JSON;
  o.open_timeout_ms = 30000;
  o.io_timeout_ms = 30000;
  runner = make_pipe(in, 1, out, 1, &o);
  if (!runner)
    return;
  peer = start_peer("--pipe", mlbridge_pipe_runner_channel(runner),
                    "fail_on_negative");
  if (CHECK_STATUS(mlbridge_runner_input(runner, 0, MLBRIDGE_INT64, &x, NULL),
                   MLBRIDGE_OK)) {
    *(int64_t *)x = -1;
    CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &y),
                 MLBRIDGE_MODEL_FAILURE);
    CHECK_LAST_ERROR(runner, "negative input");
    *(int64_t *)x = 20;
    if (CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &y), MLBRIDGE_OK))
      CHECK(y == 21);
  }
  mlbridge_runner_destroy(runner);
  CHECK(wait_peer(peer, 20.0) == 0);
}

/** Checks that a runner whose peer died failed with a transport status and
 * a message, then fails fast with MLBRIDGE_BROKEN. */
static void check_dead_peer(mlbridge_runner *runner, mlbridge_status s,
                            double elapsed, double limit) {
  int64_t y;
  double start;
  CHECK(s == MLBRIDGE_PEER_CLOSED || s == MLBRIDGE_TIMEOUT);
  if (s != MLBRIDGE_PEER_CLOSED && s != MLBRIDGE_TIMEOUT)
    fprintf(stderr, "  status %s: %s\n", mlbridge_status_name(s),
            mlbridge_runner_last_error(runner));
  CHECK(strlen(mlbridge_runner_last_error(runner)) > 0);
  CHECK(elapsed < limit);
  start = test_now();
  CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &y), MLBRIDGE_BROKEN);
  CHECK_LAST_ERROR(runner, "unusable");
  CHECK_STATUS(mlbridge_runner_switch_context(runner, "g"), MLBRIDGE_BROKEN);
  CHECK_STATUS(mlbridge_runner_evaluate(runner), MLBRIDGE_BROKEN);
  CHECK(test_now() - start < 0.5);
}

/** The host is killed between two calls: the next call fails at once. */
static void test_peer_killed_between_calls(void) {
  mlbridge_pipe_options o;
  mlbridge_runner *runner;
  pid_t peer;
  unsigned seed;
  int64_t y = 0;
  double start;
  mlbridge_status s;
  mlbridge_pipe_options_init(&o);
  o.open_timeout_ms = 30000;
  o.io_timeout_ms = 5000;
  runner = make_pipe(ChecksumInputs, 4, Advice, 1, &o);
  if (!runner)
    return;
  peer = start_peer("--pipe", mlbridge_pipe_runner_channel(runner), "checksum");
  for (seed = 0; seed < 3; ++seed) {
    int64_t want = fill_inputs(runner, seed);
    if (CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &y), MLBRIDGE_OK))
      CHECK(y == want);
  }
  kill_peer(peer);
  fill_inputs(runner, 99);
  start = test_now();
  s = mlbridge_runner_evaluate_int64(runner, &y);
  check_dead_peer(runner, s, test_now() - start, 4.0);
  mlbridge_runner_destroy(runner);
}

/** The host is killed while it computes an answer: the waiting call fails
 * as soon as it dies, long before its deadline. */
static void test_peer_killed_mid_call(void) {
  mlbridge_pipe_options o;
  mlbridge_runner *runner;
  pid_t peer, killer;
  int64_t y = 0;
  double start;
  mlbridge_status s;
  mlbridge_pipe_options_init(&o);
  o.open_timeout_ms = 30000;
  o.io_timeout_ms = 20000;
  runner = make_pipe(ChecksumInputs, 4, Advice, 1, &o);
  if (!runner)
    return;
  peer = start_peer("--pipe", mlbridge_pipe_runner_channel(runner), "slow");
  /* Connect first (the host may take a while to start). */
  CHECK_STATUS(mlbridge_runner_switch_context(runner, "f"), MLBRIDGE_OK);
  killer = fork();
  if (killer == 0) {
    sleep_ms(700);
    kill(peer, SIGKILL);
    _exit(0);
  }
  start = test_now();
  s = mlbridge_runner_evaluate_int64(runner, &y);
  check_dead_peer(runner, s, test_now() - start, 10.0);
  CHECK(s == MLBRIDGE_PEER_CLOSED);
  if (killer > 0)
    waitpid(killer, NULL, 0);
  kill_peer(peer);
  mlbridge_runner_destroy(runner);
}

#if MLBRIDGE_TEST_HAVE_GRPC
/** The gRPC runner, unary and streaming, against `mlbridge serve --grpc`;
 * then the server dies under the streaming runner. */
static void test_grpc(void) {
  char dir[] = "/tmp/mlbridge-ctest-XXXXXX", socket_path[256], target[300];
  mlbridge_grpc_options o;
  mlbridge_runner *runner = NULL, *runners[2] = {NULL, NULL};
  mlbridge_error *error = NULL;
  pid_t server;
  int streaming;
  unsigned seed;
  if (!mkdtemp(dir)) {
    test_fail(__FILE__, __LINE__, "mkdtemp failed");
    return;
  }
  snprintf(socket_path, sizeof socket_path, "%s/socket", dir);
  snprintf(target, sizeof target, "unix:%s", socket_path);
  /* Started before any gRPC runner exists (no threads to fork with). */
  server = start_peer("--grpc", target, "checksum");
  for (streaming = 0; streaming < 2; ++streaming) {
    mlbridge_grpc_options_init(&o);
    o.target = target;
    o.streaming = streaming;
    o.connect_timeout_ms = 30000;
    o.call_timeout_ms = 10000;
    if (!CHECK_CREATED(mlbridge_grpc_runner_create(ChecksumInputs, 4, Advice, 1,
                                                   &o, &runner, &error)))
      continue;
    runners[streaming] = runner;
    CHECK(mlbridge_pipe_runner_channel(runner) == NULL);
    for (seed = 0; seed < 10; ++seed) {
      int64_t want = fill_inputs(runner, seed), got = -1;
      if (!CHECK_STATUS(mlbridge_runner_evaluate_int64(runner, &got),
                        MLBRIDGE_OK)) {
        fprintf(stderr, "  last error: %s\n",
                mlbridge_runner_last_error(runner));
        break;
      }
      CHECK(got == want);
    }
  }
  kill_peer(server);
  if (runners[1]) {
    int64_t y;
    mlbridge_status s = mlbridge_runner_evaluate_int64(runners[1], &y);
    CHECK(s != MLBRIDGE_OK);
    CHECK(strlen(mlbridge_runner_last_error(runners[1])) > 0);
    CHECK_STATUS(mlbridge_runner_evaluate_int64(runners[1], &y),
                 MLBRIDGE_BROKEN);
  }
  mlbridge_runner_destroy(runners[0]);
  mlbridge_runner_destroy(runners[1]);
  unlink(socket_path);
  rmdir(dir);
}
#endif

/** Runs every test, or skips without Python. */
int main(void) {
  if (access(MLBRIDGE_TEST_PYTHON, X_OK) != 0) {
    fprintf(stderr, "c_api_python_peer: skipped, no Python at %s\n",
            MLBRIDGE_TEST_PYTHON);
    return TEST_SKIPPED;
  }
  init_checksum_specs();
  test_mlgo_checksum();
  test_echo(MLBRIDGE_PIPE_EXTENDED, MLBRIDGE_FORMAT_BITSTREAM);
  test_echo(MLBRIDGE_PIPE_EXTENDED, MLBRIDGE_FORMAT_JSON);
  test_echo(MLBRIDGE_PIPE_EXTENDED, MLBRIDGE_FORMAT_PROTOBUF);
  test_echo(MLBRIDGE_PIPE_SHM, MLBRIDGE_FORMAT_BITSTREAM);
  test_policy_failure();
  test_peer_killed_between_calls();
  test_peer_killed_mid_call();
#if MLBRIDGE_TEST_HAVE_GRPC
  test_grpc();
#endif
  return test_result("c_api_python_peer");
}
