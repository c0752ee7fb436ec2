/*===- commrt.h - commopt communication runtime C ABI -------------*- C -*-===*\
|*                                                                            *|
|* The flat C surface that code lowered by `convert-comm-to-runtime` calls,   *|
|* and that any C or C++ program can call directly. It has no MLIR           *|
|* dependency.                                                                *|
|*                                                                            *|
|* Every function that can fail returns a commrt_status (0 on success); on    *|
|* failure commrt_last_error() describes what went wrong, naming the call and *|
|* the offending argument.                                                    *|
|*                                                                            *|
|* Collectives and the first backend initialisation are collective over all  *|
|* ranks of MPI_COMM_WORLD. Calls must come from one thread at a time.        *|
\*===----------------------------------------------------------------------===*/

#ifndef COMMRT_COMMRT_H
#define COMMRT_COMMRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. Stable: lowered code compares against COMMRT_SUCCESS. */
typedef enum commrt_status {
  COMMRT_SUCCESS = 0,
  COMMRT_ERROR_INVALID_ARGUMENT = 1, /* null buffer, bad count, bad enum */
  COMMRT_ERROR_MISMATCH = 2,         /* ranks disagree on count/dtype/op */
  COMMRT_ERROR_BACKEND = 3,          /* MPI / NCCL / CUDA reported an error */
  COMMRT_ERROR_NOT_INITIALIZED = 4,  /* used after commrt_finalize */
  COMMRT_ERROR_UNAVAILABLE = 5,      /* backend not built or no device */
} commrt_status;

/* Element types of communicated buffers. Values are part of the ABI. */
typedef enum commrt_dtype {
  COMMRT_F32 = 0,
  COMMRT_F64 = 1,
  COMMRT_F16 = 2,
  COMMRT_BF16 = 3,
} commrt_dtype;

/* Reductions. Values are part of the ABI and match #comm.reduce<...>. */
typedef enum commrt_reduce {
  COMMRT_SUM = 0,
  COMMRT_AVG = 1,
  COMMRT_MAX = 2,
  COMMRT_MIN = 3,
} commrt_reduce;

/* Backends. AUTO picks NCCL when it was built and a GPU is visible, MPI
 * otherwise; the COMMRT_BACKEND environment variable ("mpi", "nccl", "auto")
 * overrides AUTO. */
typedef enum commrt_backend {
  COMMRT_BACKEND_AUTO = 0,
  COMMRT_BACKEND_MPI = 1,
  COMMRT_BACKEND_NCCL = 2,
} commrt_backend;

/* Initialises the runtime (and MPI, unless the program already did) with the
 * backend chosen as described above. Idempotent. Every other entry point
 * initialises lazily, so lowered code need not call this. */
int32_t commrt_init(void);

/* Like commrt_init, naming the backend. Asking for NCCL where it was not built
 * or no GPU is present fails with COMMRT_ERROR_UNAVAILABLE and a message.
 * Naming a backend other than the one in use replaces it (collectively); when
 * the new one cannot be created, the one in use stays. */
int32_t commrt_init_backend(int32_t backend);

/* Tears the backend down and finalises MPI if commrt_init initialised it. A
 * runtime initialised lazily is finalised at process exit. Every call after
 * it, this one included, fails with COMMRT_ERROR_NOT_INITIALIZED: MPI cannot
 * be initialised twice. */
int32_t commrt_finalize(void);

/* This process's rank and the number of ranks (-1 if initialisation failed).
 * They initialise MPI only, not the backend, so any subset of ranks may call
 * them. */
int32_t commrt_rank(void);
int32_t commrt_size(void);

/* The backend in use (a commrt_backend), initialising if needed; -1 if
 * initialisation failed. */
int32_t commrt_backend_in_use(void);

/* Blocking in-place allreduce of `count` elements of `dtype` at `buffer`.
 * AVG divides the sum by the number of ranks. Every rank must pass the same
 * count, dtype and reduce; with consistency checks on (see below) a mismatch
 * is reported as COMMRT_ERROR_MISMATCH on every rank instead of hanging or
 * producing garbage. count == 0 is a no-op (buffer may then be null). With
 * MPI, f16 and bf16 elements are combined through f32 and rounded to nearest
 * even after every step. */
int32_t commrt_allreduce(void *buffer, int64_t count, int32_t dtype,
                         int32_t reduce);

/* Blocking in-place allreduce of `count` f32 elements at `buffer` that travel
 * in the reduced precision `wire` (COMMRT_F16 or COMMRT_BF16): every element
 * is multiplied by `prescale` and rounded to the wire type (round to nearest
 * even), the wire values are reduced, and the result is widened back to f32
 * and divided by `prescale`. `prescale` only keeps values in the wire type's
 * range (e.g. 1/size against f16 overflow): the result approximates the f32
 * reduction named by `reduce`, which is computed as for commrt_allreduce
 * (AVG divides after widening, in f32). `prescale` must be finite and nonzero.
 * The cast and scale run in the backend's pack/unpack kernels (on the GPU with
 * NCCL). The consistency checks compare count, wire and reduce. */
int32_t commrt_allreduce_wire(float *buffer, int64_t count, int32_t wire,
                              int32_t reduce, float prescale);

/* Turns the cross-rank argument check of collectives on (1) or off (0). It
 * costs one small allreduce per collective. Default: off, unless the
 * environment sets COMMRT_CHECK=1. Collective: all ranks must agree.
 * With checks on, a rank that passes invalid arguments makes every rank
 * return COMMRT_ERROR_INVALID_ARGUMENT. With checks off, arguments are still
 * validated locally, but only the offending rank returns: the others wait in
 * the collective for it, so turn checks on while a plan is being debugged. */
int32_t commrt_set_consistency_checks(int32_t enabled);

/* A description of the last failure on this thread ("" if none). */
const char *commrt_last_error(void);

/* Does nothing when `status` is COMMRT_SUCCESS. Otherwise prints
 * "commrt: rank R: <status name>: <last error>" to stderr and aborts every
 * rank with MPI_Abort (the process exits if MPI is not running), so that a
 * failed collective never leaves other ranks waiting. Lowered code calls it
 * after every runtime call, since it has no way to handle a status. */
void commrt_abort_on_error(int32_t status);

/* A fixed name for a status code, e.g. "COMMRT_ERROR_MISMATCH". */
const char *commrt_status_string(int32_t status);

#ifdef __cplusplus
}
#endif

#endif /* COMMRT_COMMRT_H */
