/* Uses the installed C API from C99: a runner from a configuration string,
 * evaluated; and a malformed configuration refused with a message. */
#include "mlbridge/mlbridge.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  mlbridge_tensor_spec in = {0}, out = {0};
  int64_t shape[1] = {1};
  mlbridge_runner *runner = NULL;
  mlbridge_error *error = NULL;
  int64_t advice = 0;
  in.name = "x";
  in.dtype = MLBRIDGE_INT64;
  in.shape = shape;
  in.rank = 1;
  out = in;
  out.name = "y";
  if (mlbridge_runner_create("constant:7", &in, 1, &out, 1, &runner, &error) !=
      MLBRIDGE_OK) {
    fprintf(stderr, "%s\n", mlbridge_error_message(error));
    return 1;
  }
  if (mlbridge_runner_evaluate_int64(runner, &advice) != MLBRIDGE_OK ||
      advice != 7)
    return 2;
  mlbridge_runner_destroy(runner);
  if (mlbridge_runner_create("bogus:1", &in, 1, &out, 1, &runner, &error) !=
          MLBRIDGE_INVALID_ARGUMENT ||
      !strstr(mlbridge_error_message(error), "unknown runner 'bogus'"))
    return 3;
  mlbridge_error_free(error);
  printf("c api ok %s\n", mlbridge_version());
  return 0;
}
