/*===- tiling.c - Tile sizes from a model, in C -----------------*- C -*-===*
 *
 * Part of mlbridge, under the Apache License v2.0.
 *
 *===----------------------------------------------------------------------===*/
/* A tiny "polyhedral optimiser" in C99: for each of a few hard-coded loop
 * nests it extracts features (trip counts, element size, working-set
 * estimate), asks a model through mlbridge's C API which tile size to use
 * (8, 16, 32 or 64), and falls back to its own heuristic on any error. The
 * model is chosen on the command line:
 *
 *   mlbridge-example-c-tiling pipe BASE        # a Python policy, over pipes:
 *       mlbridge serve --pipe BASE --create \
 *           --policy examples/c_tiling/tiling_policy.py:decide
 *   mlbridge-example-c-tiling aot              # the model compiled in
 *   mlbridge-example-c-tiling aot-module PATH  # ...or loaded at run time
 *   mlbridge-example-c-tiling onnx PATH        # ONNX Runtime in-process
 *
 * It prints one line per nest on stdout: "NEST: tile T (model)" or "NEST:
 * tile T (fallback: WHY)"; what it uses goes to stderr.
 */
#include "mlbridge/mlbridge.h"

#ifdef MLBRIDGE_TILING_HAVE_AOT
#include "TilingModel.h"
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/** The tile sizes the model chooses among (tiling_policy.TILES). */
static const int64_t Tiles[] = {8, 16, 32, 64};
/** Number of tile sizes. */
enum { NumTiles = sizeof Tiles / sizeof Tiles[0] };

/** A loop nest as the optimiser sees it. */
struct nest {
  const char *name;       /**< for the report */
  int depth;              /**< number of loops (1 to 3) */
  int64_t trips[3];       /**< trip count of each loop, outermost first */
  int64_t elem_size;      /**< bytes per array element */
  double footprint_bytes; /**< working set per outer iteration (estimate) */
};

/** The nests of the "program" being optimised. */
static const struct nest Nests[] = {
    {"matmul_f32_512", 3, {512, 512, 512}, 4, 3.0 * 512 * 4 * 8},
    {"matmul_f64_96", 3, {96, 96, 96}, 8, 3.0 * 96 * 8 * 8},
    {"stencil2d_f32_4096", 2, {4096, 4096, 0}, 4, 3.0 * 4096 * 4},
    {"transpose_u8_2048", 2, {2048, 2048, 0}, 1, 2.0 * 2048},
    {"conv3x3_f32_64", 3, {64, 64, 9}, 4, 64.0 * 4 * 3 + 36},
    {"gemv_batched_f64", 3, {64, 1024, 16}, 8, 1024.0 * 8 * 2},
    {"small_f32_24", 3, {24, 24, 24}, 4, 3.0 * 24 * 4},
};
/** Number of nests. */
enum { NumNests = sizeof Nests / sizeof Nests[0] };

/** The feature and decision shapes (tiling_policy.py). */
static const int64_t ShapeTrips[] = {1, 3};
static const int64_t Shape1x1[] = {1, 1};
static const int64_t Shape1[] = {1};

/** The features every runner is asked with, and the decision. */
static const mlbridge_tensor_spec Inputs[] = {
    {"log_trips", MLBRIDGE_FLOAT, ShapeTrips, 2},
    {"elem_size", MLBRIDGE_INT64, Shape1x1, 2},
    {"log_footprint", MLBRIDGE_FLOAT, Shape1x1, 2},
};
static const mlbridge_tensor_spec Outputs[] = {
    {"tile_index", MLBRIDGE_INT64, Shape1, 1},
};

/** The optimiser's own heuristic: the largest tile whose three T x T tiles
 * fit a 32 KiB L1 cache and no loop is shorter than. */
static int64_t default_tile(const struct nest *n) {
  int t, l;
  for (t = NumTiles - 1; t > 0; --t) {
    int64_t tile = Tiles[t];
    int fits = 3 * tile * tile * n->elem_size <= 32 * 1024;
    for (l = 0; l < n->depth; ++l)
      fits = fits && n->trips[l] >= tile;
    if (fits)
      return tile;
  }
  return Tiles[0];
}

/** Writes the features of \p n into the runner's inputs and asks for a
 * decision; returns the tile, or 0 with \p why set on any failure. */
static int64_t model_tile(mlbridge_runner *runner, const struct nest *n,
                          const char **why) {
  void *trips = NULL, *elem = NULL, *footprint = NULL;
  int64_t index = -1;
  int l;
  if (mlbridge_runner_input_by_name(runner, "log_trips", MLBRIDGE_FLOAT, &trips,
                                    NULL) != MLBRIDGE_OK ||
      mlbridge_runner_input_by_name(runner, "elem_size", MLBRIDGE_INT64, &elem,
                                    NULL) != MLBRIDGE_OK ||
      mlbridge_runner_input_by_name(runner, "log_footprint", MLBRIDGE_FLOAT,
                                    &footprint, NULL) != MLBRIDGE_OK) {
    *why = mlbridge_runner_last_error(runner);
    return 0;
  }
  for (l = 0; l < 3; ++l)
    ((float *)trips)[l] =
        l < n->depth ? (float)log2((double)n->trips[l]) : 0.0f;
  *(int64_t *)elem = n->elem_size;
  *(float *)footprint = (float)log2(n->footprint_bytes);
  if (mlbridge_runner_evaluate_int64(runner, &index) != MLBRIDGE_OK) {
    *why = mlbridge_runner_last_error(runner);
    return 0;
  }
  if (index < 0 || index >= NumTiles) {
    *why = "the model chose no valid tile";
    return 0;
  }
  return Tiles[index];
}

/** Makes the runner the command line asks for; NULL (and *error set, unless
 * the command line is wrong: then *usage is set) on failure. */
static mlbridge_runner *make_runner(int argc, char **argv, int *usage,
                                    mlbridge_error **error) {
  mlbridge_runner *runner = NULL;
  const char *kind = argc > 1 ? argv[1] : "";
  const char *arg = argc > 2 ? argv[2] : NULL;
  size_t n_in = sizeof Inputs / sizeof Inputs[0];
  *usage = 0;
  if (strcmp(kind, "pipe") == 0 && arg) {
    mlbridge_pipe_options o;
    mlbridge_pipe_options_init(&o);
    o.channel_base = arg;
    o.open_timeout_ms = 30000;
    o.io_timeout_ms = 5000;
    mlbridge_pipe_runner_create(Inputs, n_in, Outputs, 1, &o, &runner, error);
  } else if (strcmp(kind, "aot") == 0 && !arg) {
#ifdef MLBRIDGE_TILING_HAVE_AOT
    mlbridge_aot_runner_create(c_tiling_TilingModel_model(), Inputs, n_in,
                               Outputs, 1, &runner, error);
#else
    fprintf(stderr, "this example was built without its AOT model (it "
                    "needs MLBRIDGE_ENABLE_AOT and mlbridge-aot)\n");
#endif
  } else if (strcmp(kind, "aot-module") == 0 && arg) {
    mlbridge_aot_runner_load(arg, Inputs, n_in, Outputs, 1, &runner, error);
  } else if (strcmp(kind, "onnx") == 0 && arg) {
    mlbridge_onnx_runner_create(arg, Inputs, n_in, Outputs, 1, 1, &runner,
                                error);
  } else {
    *usage = 1;
  }
  return runner;
}

/** Tiles every nest, with the model when there is one. */
int main(int argc, char **argv) {
  mlbridge_error *error = NULL;
  int usage = 0, i, from_model = 0;
  mlbridge_runner *runner = make_runner(argc, argv, &usage, &error);
  if (usage || argc > 3) {
    fprintf(stderr, "usage: %s pipe BASE | aot | aot-module PATH | onnx PATH\n",
            argv[0]);
    mlbridge_runner_destroy(runner);
    return 2;
  }
  if (runner)
    fprintf(stderr, "mlbridge %s: asking the %s model\n", mlbridge_version(),
            argv[1]);
  else
    fprintf(stderr, "no model (%s); using the default heuristic\n",
            error ? mlbridge_error_message(error) : "not available");
  for (i = 0; i < NumNests; ++i) {
    const struct nest *n = &Nests[i];
    const char *why = "no model";
    int64_t tile = runner ? model_tile(runner, n, &why) : 0;
    if (tile) {
      ++from_model;
      printf("%s: tile %lld (model)\n", n->name, (long long)tile);
    } else {
      printf("%s: tile %lld (fallback: %s)\n", n->name,
             (long long)default_tile(n), why);
    }
  }
  fprintf(stderr, "%d of %d nests tiled by the model\n", from_model,
          (int)NumNests);
  mlbridge_runner_destroy(runner);
  mlbridge_error_free(error);
  return 0;
}
