/*===- mlbridge/mlbridge.h - The C API -----------------------------*- C -*-===*
 *
 * Part of mlbridge, under the Apache License v2.0.
 *
 *===----------------------------------------------------------------------===*/
/** \file
 * The stable C API of mlbridge (C99), for compilers written in C: the same
 * runners as the C++ API (named pipes, gRPC, ONNX Runtime in-process, models
 * compiled ahead of time), behind opaque handles.
 *
 * Conventions:
 *  - Every function that can fail returns an mlbridge_status; MLBRIDGE_OK is
 *    0. Creation functions take an optional `mlbridge_error **error`: on
 *    failure *error receives a message the caller frees with
 *    mlbridge_error_free() (on success *error is left untouched), and
 *    *runner is set to NULL. A runner remembers the message of its last
 *    failure: mlbridge_runner_last_error().
 *  - Pointer arguments must not be NULL unless documented otherwise (a NULL
 *    one is MLBRIDGE_INVALID_ARGUMENT with a message naming it); a spec
 *    array may be NULL only when its count is 0.
 *  - Tensor buffers belong to the runner; pointers stay valid until the
 *    runner is destroyed. Inputs are never reset by evaluation.
 *  - No C++ exception crosses this API; nothing prints to stdout; every
 *    blocking call has a timeout. On any error, use the default heuristic.
 *    An unexpected failure inside the library (an internal C++ exception) is
 *    MLBRIDGE_BROKEN, and a runner it hit while evaluating stays broken.
 *  - A runner is not thread-safe: one runner per thread.
 *  - The ABI is stable within MLBRIDGE_C_API_VERSION: structs passed in are
 *    only read; option structs gain fields only at their end, with their
 *    size first (struct_size: a smaller one than this version's is
 *    rejected, fields past the ones the library knows are ignored).
 *    mlbridge_tensor_spec, passed in arrays, never changes within a version.
 */
#ifndef MLBRIDGE_MLBRIDGE_H
#define MLBRIDGE_MLBRIDGE_H

#include "mlbridge/AotAbi.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this C API (mlbridge_api_version() at run time). */
#define MLBRIDGE_C_API_VERSION 1

/** Outcome of a call (mirrors mlbridge::ErrorCode). */
typedef enum mlbridge_status {
  MLBRIDGE_OK = 0,
  MLBRIDGE_INVALID_ARGUMENT = 1, /**< bad spec, unknown name, bad option */
  MLBRIDGE_PROTOCOL = 2,         /**< the peer broke the protocol */
  MLBRIDGE_TYPE_MISMATCH = 3,    /**< another dtype or size than declared */
  MLBRIDGE_TIMEOUT = 4,          /**< a deadline passed */
  MLBRIDGE_PEER_CLOSED = 5,      /**< the peer closed its end */
  MLBRIDGE_IO = 6,               /**< a system call failed */
  MLBRIDGE_TOO_LARGE = 7,        /**< a message exceeds the size limit */
  MLBRIDGE_MODEL_FAILURE = 8,    /**< the model failed to compute a result */
  MLBRIDGE_UNSUPPORTED = 9,      /**< not available in this build */
  MLBRIDGE_BROKEN = 10,          /**< unusable after an earlier error */
  MLBRIDGE_OUT_OF_MEMORY = 11    /**< an allocation failed */
} mlbridge_status;

/** Element types (LLVM's ten). */
typedef enum mlbridge_dtype {
  MLBRIDGE_FLOAT = 0,
  MLBRIDGE_DOUBLE = 1,
  MLBRIDGE_INT8 = 2,
  MLBRIDGE_UINT8 = 3,
  MLBRIDGE_INT16 = 4,
  MLBRIDGE_UINT16 = 5,
  MLBRIDGE_INT32 = 6,
  MLBRIDGE_UINT32 = 7,
  MLBRIDGE_INT64 = 8,
  MLBRIDGE_UINT64 = 9
} mlbridge_dtype;

/** Describes one tensor: its name, element type and shape. */
typedef struct mlbridge_tensor_spec {
  const char *name;     /**< unique among a runner's inputs (or outputs) */
  mlbridge_dtype dtype; /**< element type */
  const int64_t *shape; /**< rank dimensions (NULL when rank is 0) */
  size_t rank;          /**< number of dimensions */
} mlbridge_tensor_spec;

/** A runner (opaque). */
typedef struct mlbridge_runner mlbridge_runner;
/** An error message from a failed creation (opaque). */
typedef struct mlbridge_error mlbridge_error;

/** The library version, e.g. "0.1.0". */
const char *mlbridge_version(void);
/** MLBRIDGE_C_API_VERSION of the library actually loaded. */
int mlbridge_api_version(void);
/** A short lowercase name of \p status: its enumerator's name without
 * MLBRIDGE_, e.g. "timeout", "peer_closed"; "unknown" for other values. */
const char *mlbridge_status_name(mlbridge_status status);

/** The message of \p error (never NULL; "" for a NULL \p error). */
const char *mlbridge_error_message(const mlbridge_error *error);
/** The status of \p error (MLBRIDGE_OK for a NULL \p error). */
mlbridge_status mlbridge_error_status(const mlbridge_error *error);
/** Frees \p error (NULL is allowed). */
void mlbridge_error_free(mlbridge_error *error);

/* -- Creating runners ----------------------------------------------------- */

/** Named-pipe protocols. */
typedef enum mlbridge_pipe_protocol {
  MLBRIDGE_PIPE_MLGO = 0,     /**< LLVM's interactive protocol, byte for byte */
  MLBRIDGE_PIPE_EXTENDED = 1, /**< handshake + framed messages, any format */
  MLBRIDGE_PIPE_SHM = 2       /**< handshake, then tensors in shared memory */
} mlbridge_pipe_protocol;

/** Serialisation formats. */
typedef enum mlbridge_format {
  MLBRIDGE_FORMAT_BITSTREAM = 0, /**< LLVM's training-log format */
  MLBRIDGE_FORMAT_JSON = 1,
  MLBRIDGE_FORMAT_PROTOBUF = 2
} mlbridge_format;

/** Options of a pipe runner; initialise with mlbridge_pipe_options_init(). */
typedef struct mlbridge_pipe_options {
  size_t struct_size;              /**< sizeof(mlbridge_pipe_options) */
  const char *channel_base;        /**< BASE.in / BASE.out; NULL: a new one */
  mlbridge_pipe_protocol protocol; /**< default MLBRIDGE_PIPE_MLGO */
  mlbridge_format format;          /**< default MLBRIDGE_FORMAT_BITSTREAM */
  int64_t open_timeout_ms;         /**< default 60000 */
  int64_t io_timeout_ms;           /**< default 60000 */
} mlbridge_pipe_options;

/** Fills \p options with the defaults. */
void mlbridge_pipe_options_init(mlbridge_pipe_options *options);

/** A runner asking a model process over named pipes (training). */
mlbridge_status mlbridge_pipe_runner_create(
    const mlbridge_tensor_spec *inputs, size_t num_inputs,
    const mlbridge_tensor_spec *outputs, size_t num_outputs,
    const mlbridge_pipe_options *options, mlbridge_runner **runner,
    mlbridge_error **error);

/** The channel base of a pipe runner (NULL for other runners). */
const char *mlbridge_pipe_runner_channel(const mlbridge_runner *runner);

/** Options of a gRPC runner; initialise with mlbridge_grpc_options_init(). */
typedef struct mlbridge_grpc_options {
  size_t struct_size;         /**< sizeof(mlbridge_grpc_options) */
  const char *target;         /**< "unix:/path" or "host:port" */
  int streaming;              /**< 0: unary calls, 1: one bidi stream */
  int64_t connect_timeout_ms; /**< default 10000 */
  int64_t call_timeout_ms;    /**< default 10000 */
} mlbridge_grpc_options;

/** Fills \p options with the defaults. */
void mlbridge_grpc_options_init(mlbridge_grpc_options *options);

/** A runner asking a gRPC model server (training); MLBRIDGE_UNSUPPORTED when
 * the library was built without gRPC. */
mlbridge_status mlbridge_grpc_runner_create(
    const mlbridge_tensor_spec *inputs, size_t num_inputs,
    const mlbridge_tensor_spec *outputs, size_t num_outputs,
    const mlbridge_grpc_options *options, mlbridge_runner **runner,
    mlbridge_error **error);

/** An ONNX model run in-process by ONNX Runtime (deployment);
 * MLBRIDGE_UNSUPPORTED when built without it. \p intra_op_threads 0: 1. */
mlbridge_status mlbridge_onnx_runner_create(
    const char *model_path, const mlbridge_tensor_spec *inputs,
    size_t num_inputs, const mlbridge_tensor_spec *outputs, size_t num_outputs,
    int intra_op_threads, mlbridge_runner **runner, mlbridge_error **error);

/** Any runner, described by a runner configuration's string form
 * `KIND[:ARGUMENT][,KEY=VALUE]...` (docs/runner-config.md), e.g.
 * "pipe:/tmp/run/inline,protocol=extended,format=json",
 * "grpc:unix:/tmp/run/model.sock", "onnx:policy.onnx", "aot:policy.so",
 * "torch:policy.pt", "constant:1", "echo:inlining_default": the form the
 * LLVM plugin and the Python tooling accept too. "torch:" opens LibTorch's
 * runner module (mlbridge/ beside this library) on first use. A malformed
 * configuration is MLBRIDGE_INVALID_ARGUMENT naming the part that is wrong; a
 * kind this build lacks is MLBRIDGE_UNSUPPORTED. For "aot:", NULL \p inputs or
 * \p outputs (count 0) stand for the module's own, as in
 * mlbridge_aot_runner_load(). */
mlbridge_status
mlbridge_runner_create(const char *config, const mlbridge_tensor_spec *inputs,
                       size_t num_inputs, const mlbridge_tensor_spec *outputs,
                       size_t num_outputs, mlbridge_runner **runner,
                       mlbridge_error **error);

/** A model compiled ahead of time by mlbridge-aot, linked into the program
 * (its header declares the function returning \p model). With \p inputs
 * NULL (and \p num_inputs 0), the runner takes the model's own inputs; with
 * \p outputs NULL (and \p num_outputs 0), its own outputs. */
mlbridge_status mlbridge_aot_runner_create(
    const mlbridge_aot_model_v1 *model, const mlbridge_tensor_spec *inputs,
    size_t num_inputs, const mlbridge_tensor_spec *outputs, size_t num_outputs,
    mlbridge_runner **runner, mlbridge_error **error);

/** Same, for a model built as a loadable module
 * (mlbridge_add_aot_model(... SHARED)) at \p module_path. */
mlbridge_status mlbridge_aot_runner_load(
    const char *module_path, const mlbridge_tensor_spec *inputs,
    size_t num_inputs, const mlbridge_tensor_spec *outputs, size_t num_outputs,
    mlbridge_runner **runner, mlbridge_error **error);

/** Frees \p runner and its buffers (NULL is allowed). */
void mlbridge_runner_destroy(mlbridge_runner *runner);

/* -- Using runners -------------------------------------------------------- */

/** Number of inputs / outputs (0 for a NULL \p runner). */
size_t mlbridge_runner_num_inputs(const mlbridge_runner *runner);
size_t mlbridge_runner_num_outputs(const mlbridge_runner *runner);

/** The spec of input / output \p index; the strings and shape live as long
 * as the runner. MLBRIDGE_INVALID_ARGUMENT if \p index is out of range. */
mlbridge_status mlbridge_runner_input_spec(const mlbridge_runner *runner,
                                           size_t index,
                                           mlbridge_tensor_spec *spec);
mlbridge_status mlbridge_runner_output_spec(const mlbridge_runner *runner,
                                            size_t index,
                                            mlbridge_tensor_spec *spec);

/** The index of the input called \p name. */
mlbridge_status mlbridge_runner_input_index(mlbridge_runner *runner,
                                            const char *name, size_t *index);

/** The buffer of input \p index, checked against \p dtype
 * (MLBRIDGE_TYPE_MISMATCH otherwise); \p count receives its element count
 * (may be NULL). On failure *data is NULL and *count 0. */
mlbridge_status mlbridge_runner_input(mlbridge_runner *runner, size_t index,
                                      mlbridge_dtype dtype, void **data,
                                      size_t *count);
/** Same, by name. */
mlbridge_status mlbridge_runner_input_by_name(mlbridge_runner *runner,
                                              const char *name,
                                              mlbridge_dtype dtype, void **data,
                                              size_t *count);

/** Runs the model on the current inputs. On failure use the default
 * heuristic; mlbridge_runner_last_error() says why. */
mlbridge_status mlbridge_runner_evaluate(mlbridge_runner *runner);

/** The result of output \p index from the last successful evaluation,
 * checked against \p dtype (on failure *data is NULL and *count 0). */
mlbridge_status mlbridge_runner_output(mlbridge_runner *runner, size_t index,
                                       mlbridge_dtype dtype, const void **data,
                                       size_t *count);
/** Same, by name. */
mlbridge_status mlbridge_runner_output_by_name(mlbridge_runner *runner,
                                               const char *name,
                                               mlbridge_dtype dtype,
                                               const void **data,
                                               size_t *count);

/** Evaluates and returns output 0 as a scalar of the named type
 * (MLBRIDGE_TYPE_MISMATCH unless it is one element of that type). */
mlbridge_status mlbridge_runner_evaluate_int64(mlbridge_runner *runner,
                                               int64_t *result);
mlbridge_status mlbridge_runner_evaluate_float(mlbridge_runner *runner,
                                               float *result);

/** Starts a new context (e.g. the function being compiled). */
mlbridge_status mlbridge_runner_switch_context(mlbridge_runner *runner,
                                               const char *name);

/** The value of the model's metadata entry \p key (its ONNX metadata_props
 * whose key starts with "mlbridge.", which mlbridge-aot carries into its
 * modules), or NULL when the model says nothing under it (or the runner
 * has no model file: pipes, gRPC). Valid as long as the runner; a value
 * holding a NUL character reads as its text up to it. A model is
 * untrusted: a value is a claim, never code or a path. */
const char *mlbridge_runner_metadata(const mlbridge_runner *runner,
                                     const char *key);

/** The message of the runner's last failed call, or "" (valid until the
 * next call on the runner; a successful call does not clear it). */
const char *mlbridge_runner_last_error(const mlbridge_runner *runner);

#ifdef __cplusplus
}
#endif

#endif /* MLBRIDGE_MLBRIDGE_H */
