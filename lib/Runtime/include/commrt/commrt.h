/*===- commrt.h - commopt communication runtime C ABI -------------*- C -*-===*\
|*                                                                            *|
|* The flat C surface that code lowered by `convert-comm-to-runtime` calls,   *|
|* and that any C or C++ program can call directly. It has no MLIR            *|
|* dependency.                                                                *|
|*                                                                            *|
|* Every function that can fail returns a commrt_status (0 on success); on    *|
|* failure commrt_last_error() describes what went wrong, naming the call and *|
|* the offending argument.                                                    *|
|*                                                                            *|
|* Collectives and the first backend initialisation are collective over all   *|
|* ranks of MPI_COMM_WORLD, except the commrt_group_* collectives, which are  *|
|* collective over the ranks of a process group (see commrt_group_split).     *|
|* Calls must come from one thread at a time.                                 *|
|*                                                                            *|
|* Asynchronous collectives (commrt_*_start) run on channels, numbered from 0 *|
|* to commrt_channels() - 1. A channel runs its collectives one after the     *|
|* other, in the order they were started; collectives on different channels   *|
|* may be in flight at once. Every rank must start the same collectives on    *|
|* each channel in the same order. A start returns a handle that exactly one  *|
|* commrt_wait consumes; until then the buffers belong to the runtime.        *|
|*                                                                            *|
|* How they progress while the caller computes:                               *|
|*  - MPI: every channel has a communicator of its own and, from its first    *|
|*    asynchronous collective on, a thread that runs the channel's            *|
|*    collectives and keeps them progressing (an MPI operation advances only  *|
|*    inside MPI calls under OpenMPI 4.1). This needs MPI_THREAD_MULTIPLE:    *|
|*    commrt_init asks for it when it initialises MPI; where the program      *|
|*    initialised MPI with less, the starts fail with                         *|
|*    COMMRT_ERROR_UNAVAILABLE and the blocking calls keep working.           *|
|*  - NCCL: every channel has a CUDA stream and an NCCL communicator of its   *|
|*    own, the latter created by the channel's first collective (collective   *|
|*    over all ranks); a start enqueues the work and records an event, which  *|
|*    commrt_test queries and commrt_wait synchronises. Ranks must also       *|
|*    start the collectives of different channels in the same order: the      *|
|*    kernels of NCCL communicators sharing a GPU can wait for each other.    *|
|*    Every call's GPU work first waits for the work issued before the call   *|
|*    on the legacy default stream (kernels launched without a stream, and    *|
|*    PyTorch's default stream, which also waits for the blocking streams),   *|
|*    so a gradient that is still being computed is read once it is; work on  *|
|*    the caller's non-blocking streams the caller synchronises itself.       *|
|*                                                                            *|
|* How the MPI backend reduces: a ring allreduce of its own for large         *|
|* buffers, MPI_Allreduce otherwise. The ring treats the buffers of a plan as *|
|* one (a fused f32/f64 plan without a wire type is reduced where its buffers *|
|* are, with no packing; a wire type is packed first) and cuts it into one    *|
|* near-equal segment per rank, then runs a reduce-scatter of p - 1 steps     *|
|* (send a segment to the right neighbour, reduce the one received from the   *|
|* left into the buffer) and an allgather of p - 1 steps, on the communicator *|
|* the collective runs on (a channel's own for asynchronous ones). Each step  *|
|* moves its segment in pieces of 1 MiB, and the steps are pipelined: a piece *|
|* goes on to the right as soon as it has come in from the left and been      *|
|* reduced, while the next ones travel, so the link stays busy across steps.  *|
|* Each rank sends and receives 2 (p - 1) / p of the buffer, so large         *|
|* messages approach the link rate where OpenMPI's default allreduce over TCP *|
|* reaches about half of it. Results are the same on every                    *|
|* rank; AVG divides the sum afterwards. 16-bit sums are rounded to the wire  *|
|* type at every step of the reduce-scatter, as MPI_Allreduce's are; which    *|
|* order an element is summed in depends on its segment. Environment, read at *|
|* initialisation and required to be the same on every rank                   *|
|* (COMMRT_ERROR_MISMATCH otherwise; an invalid value fails with              *|
|* COMMRT_ERROR_INVALID_ARGUMENT):                                            *|
|*  - COMMRT_ALLREDUCE: "auto" (default) uses the ring from                   *|
|*    COMMRT_RING_MIN_BYTES on with more than two ranks; "mpi" always uses    *|
|*    MPI_Allreduce; "ring" uses the ring whenever p > 1; "hierarchical"      *|
|*    reduces in two levels where the ranks of the communicator the           *|
|*    collective runs on (all ranks, a group, a channel's copy of either)     *|
|*    form m > 1 nodes of q > 1 ranks each: MPI_Reduce_scatter within each    *|
|*    node leaves each of its ranks one near-equal piece of the plan (n / q   *|
|*    elements, one more for the first n % q; a plan is packed into one       *|
|*    buffer first), an allreduce reduces that piece among the ranks with the *|
|*    same place on every node (the ring from COMMRT_RING_MIN_BYTES on,       *|
|*    MPI_Allreduce below), and MPI_Allgatherv within each node gives         *|
|*    every rank the whole result, so only 1/q of the buffer crosses between  *|
|*    nodes; parts of 16 MiB are pipelined through the three phases. Where    *|
|*    the nodes differ in size, or there is one node or one rank per node, it *|
|*    is MPI_Allreduce (no error). The node and peers                         *|
|*    communicators are split once per communicator, when the backend is made *|
|*    and at commrt_group_split, so asynchronous collectives on channels are  *|
|*    hierarchical too. Results are those of the flat reduction, exact where  *|
|*    it is (AVG divides the total once by p); 16-bit sums are rounded to the *|
|*    wire type at each level. Under NCCL, the same two levels with           *|
|*    ncclReduceScatter, ncclAllReduce and ncclAllGather, each whole.         *|
|*  - COMMRT_RING_MIN_BYTES: the threshold of "auto" in bytes (default        *|
|*    1048576).                                                               *|
|*  - COMMRT_RANKS_PER_NODE: the nodes of "hierarchical": unset, the ranks    *|
|*    sharing memory (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED); N (1 or *|
|*    more), the ranks of MPI_COMM_WORLD whose rank divided by N is the same  *|
|*    (N consecutive ranks; also within a group), to emulate several nodes on *|
|*    one machine.                                                            *|
|*                                                                            *|
|* How the MPI backend takes device buffers, where commrt was built with CUDA *|
|* and a device is visible (the device current when the backend is made): any *|
|* buffer of any MPI entry point (except commrt_rows_allreduce, host memory   *|
|* only) may be CUDA device memory of that device (managed memory counts as   *|
|* host memory; another device's memory fails with                            *|
|* COMMRT_ERROR_INVALID_ARGUMENT naming the buffer). Its work runs on a non-  *|
|* blocking stream of the call's lane (one per group's blocking calls, one    *|
|* per channel), after the work issued before the call on the legacy default  *|
|* stream, and the call returns once it is done (a start, once its channel    *|
|* has run it):                                                               *|
|*  - An allreduce plan whose buffers are all device memory (reduced by SUM,  *|
|*    MAX or MIN, or AVG over a wire type) is packed into the wire type on    *|
|*    the device (the NCCL backend's kernels), reduced, and unpacked on the   *|
|*    device. Where the ring reduces it and every rank's buffers are device   *|
|*    memory (the ranks agree with one small MPI_Allreduce), the ring moves   *|
|*    it through pinned host memory in pieces of 1 MiB, the copy of one piece *|
|*    overlapping the transfer of the one before, and a kernel reduces each   *|
|*    received piece; otherwise the packed buffer is copied to pinned host    *|
|*    memory, reduced there as a host buffer is, and copied back.             *|
|*  - Where MPI reads device memory itself (Open MPI built with CUDA, as      *|
|*    MPIX_Query_cuda_support says at run time), MPI_Allreduce of f32 or f64, *|
|*    broadcasts and allgathers take the device pointers as they are.         *|
|*  - Anything else (AVG without a wire type, mixed-wire and sharded plans,   *|
|*    plans of device and host buffers, sparse allreduces, and broadcasts and *|
|*    allgathers where MPI does not read device memory) runs on host copies   *|
|*    of its device buffers in pinned memory, with the results of host        *|
|*    buffers.                                                                *|
|* Where a buffer lies is looked up once per call and allocation: the runtime *|
|* caches the device allocations it has seen and checks an allocation's       *|
|* unique id once per call, so memory freed and allocated again is looked up  *|
|* anew. Debian's OpenMPI is not CUDA-aware.                                  *|
|*                                                                            *|
|* How the MPI backend waits: its MPI operations are nonblocking, and a       *|
|* thread that waits for them (the caller's in a blocking call, a channel's)  *|
|* does not hold its core while the data crosses a network: on a communicator *|
|* whose ranks do not all share memory it tests for COMMRT_WAIT_SPIN_US       *|
|* microseconds (default 1000) unless its recent waits were longer than twice *|
|* that, then tests between sleeps that grow to at most COMMRT_WAIT_SLEEP_US  *|
|* (default 500; 100 for MPI's own nonblocking collectives, whose rounds move *|
|* on only while the rank tests). A wait for a piece of the ring allreduce    *|
|* first sleeps three quarters of the time such pieces took recently. Over    *|
|* shared memory, where OpenMPI moves data only while both ranks call into    *|
|* MPI, it polls as MPI_Waitall does. COMMRT_WAIT: "auto" (default) as just   *|
|* said, "poll" polls everywhere, "sleep" sleeps everywhere (slower over      *|
|* shared memory, but the cores stay with the ranks that compute). These are  *|
|* read once per process and may differ between ranks.                        *|
|*                                                                            *|
|* A rank that died, hangs or ended early never leaves the others waiting for *|
|* ever (lib/Runtime/Watchdog.h):                                             *|
|*  - A call that runs longer than COMMRT_TIMEOUT_S seconds (default 600, 0   *|
|*    for no limit) aborts the job (MPI_Abort, exit code                      *|
|*    COMMRT_ERROR_TIMED_OUT), with a line on stderr naming the call. The     *|
|*    limit covers the whole call: a first collective may wait for ranks that *|
|*    still load data. A killed rank is caught by mpirun itself.              *|
|*  - Where the runtime initialised MPI: when a rank's runtime ends           *|
|*    (commrt_finalize, or exit() or the end of main, which finalise a        *|
|*    runtime still up), it completes its collectives in flight and tells the *|
|*    other ranks how many collectives it ran (over MPI_COMM_WORLD, tag       *|
|*    32001). A rank waiting in a later collective, which can never complete, *|
|*    aborts the job at once (exit code COMMRT_ERROR_PEER_ENDED); a           *|
|*    collective called after that fails with COMMRT_ERROR_PEER_ENDED. Ranks  *|
|*    that end after the same collectives wait for each other, as             *|
|*    MPI_Finalize does, for as long as COMMRT_EXIT_TIMEOUT_S allows (default *|
|*    0: no limit; a rank may, say, write a checkpoint while the others end). *|
|*  - A process that exits while a call into the runtime runs on another of   *|
|*    its threads aborts the job (COMMRT_ERROR_PEER_ENDED): the other ranks   *|
|*    could not complete that call.                                           *|
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
  COMMRT_ERROR_MISMATCH = 2,         /* ranks disagree on count/dtype/op/root */
  COMMRT_ERROR_BACKEND = 3,          /* MPI / NCCL / CUDA reported an error */
  COMMRT_ERROR_NOT_INITIALIZED = 4,  /* used after commrt_finalize */
  COMMRT_ERROR_UNAVAILABLE = 5,      /* backend not built or no device */
  COMMRT_ERROR_PEER_ENDED = 6,       /* a rank ended before a collective */
  COMMRT_ERROR_TIMED_OUT = 7,        /* exit code of a job aborted on timeout */
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

/* The wire type argument of the fused collectives that sends the data in its
 * own dtype. Any other wire type (COMMRT_F16 or COMMRT_BF16) must be narrower
 * than the dtype. */
enum { COMMRT_WIRE_NONE = -1 };

/* The number of channels when the environment does not set COMMRT_CHANNELS
 * (to a number in 1..COMMRT_MAX_CHANNELS). All ranks must set the same. */
enum { COMMRT_DEFAULT_CHANNELS = 8, COMMRT_MAX_CHANNELS = 64 };

/* How commrt_sparse_allreduce selects the entries a rank sends. Values are
 * part of the ABI and match #comm.select<...>. */
typedef enum commrt_select {
  COMMRT_SELECT_TOPK = 0,
  COMMRT_SELECT_THRESHOLD = 1,
  COMMRT_SELECT_CHUNK = 2,
  /* Lossless: every row holding a nonzero entry, whole, for gradients that
   * are sparse by nature (an embedding's). */
  COMMRT_SELECT_ROWS = 3,
} commrt_select;

/* How commrt_sparse_allreduce exchanges the selected entries. Values are part
 * of the ABI and match #comm.exchange<...>. */
typedef enum commrt_exchange {
  COMMRT_EXCHANGE_ALLGATHER = 0,
  COMMRT_EXCHANGE_HASH = 1,
  COMMRT_EXCHANGE_CHUNK = 2,
} commrt_exchange;

/* How the group forms of the fused allreduce reduce (their `algorithm`
 * argument). Values are part of the ABI and match #comm.algorithm<...>.
 *  - DEFAULT: as COMMRT_ALLREDUCE says (see the top of this file).
 *  - RING: the pipelined ring, with more than one rank.
 *  - TREE: the latency-optimal algorithm of the transport: MPI_Allreduce,
 *    for which OpenMPI picks recursive doubling or a tree by size.
 *  - HIERARCHICAL: a reduce-scatter within each node, an allreduce of each
 *    rank's piece across the nodes, an allgather within each node, where
 *    the group's ranks form several nodes of more than one rank each (as
 *    COMMRT_ALLREDUCE=hierarchical, whose COMMRT_RANKS_PER_NODE it follows);
 *    the ring otherwise.
 * The NCCL backend runs HIERARCHICAL as ncclReduceScatter within the node,
 * ncclAllReduce among the peers and ncclAllGather within the node (the last
 * count % q elements by one ncclAllReduce); for RING and TREE it runs
 * ncclAllReduce, whose algorithm NCCL picks (NCCL_ALGO). Results are those of
 * the reduction, exact where it is. */
typedef enum commrt_algorithm {
  COMMRT_ALGORITHM_DEFAULT = 0,
  COMMRT_ALGORITHM_RING = 1,
  COMMRT_ALGORITHM_TREE = 2,
  COMMRT_ALGORITHM_HIERARCHICAL = 3,
} commrt_algorithm;

/* The transport of one collective: where commrt has both backends, the
 * `algorithm` argument of the group forms of the fused allreduce may also
 * name the backend that carries it, a commrt_backend shifted left by
 * COMMRT_TRANSPORT_SHIFT (`algorithm | COMMRT_BACKEND_MPI <<
 * COMMRT_TRANSPORT_SHIFT`; #comm.transport<...> lowers to it). AUTO (0) is
 * the backend in use. The other backend is created beside the one in use,
 * collectively, by commrt_use_transport, or by the first such collective
 * among all ranks (group 0); it takes the process groups as a replacement
 * does, and both stay until commrt_finalize. A group's collective on a
 * backend that does not exist yet fails with COMMRT_ERROR_INVALID_ARGUMENT
 * naming commrt_use_transport, on every rank of the group (the other
 * ranks are not in the call to create it). Each backend runs its own
 * channels: a collective started on channel c of one backend is not
 * ordered with those on channel c of the other. The value, transport
 * included, is among the arguments the consistency checks compare. */
enum { COMMRT_TRANSPORT_SHIFT = 8 };

/* The chunk size of chunk selection when the program names none: the default
 * of the `chunk_elements` attribute of comm.sparse_allreduce. */
enum { COMMRT_DEFAULT_CHUNK_ELEMENTS = 32768 };

/* Initialises the runtime (and MPI, with MPI_Init_thread asking for
 * MPI_THREAD_MULTIPLE, unless the program already did) with the backend
 * chosen as described above. Idempotent. Every other entry point
 * initialises lazily, so lowered code need not call this. */
int32_t commrt_init(void);

/* Like commrt_init, naming the backend. Asking for NCCL where it was not built
 * or no GPU is present fails with COMMRT_ERROR_UNAVAILABLE and a message.
 * Naming a backend other than the one in use replaces it (collectively); when
 * the new one cannot be created, the one in use stays. Collectives in flight
 * on the replaced backend are completed first; their handles stay valid. */
int32_t commrt_init_backend(int32_t backend);

/* Tears the backend down and finalises MPI if commrt_init initialised it. A
 * runtime initialised lazily is finalised at process exit. Every call after
 * it, this one included, fails with COMMRT_ERROR_NOT_INITIALIZED: MPI cannot
 * be initialised twice. Collectives still in flight are completed first, as
 * if waited (their results land in their buffers), and their handles become
 * invalid; when one of them failed, the runtime is finalised all the same and
 * that failure is returned. */
int32_t commrt_finalize(void);

/* This process's rank and the number of ranks (-1 if initialisation failed).
 * They initialise MPI only, not the backend, so any subset of ranks may call
 * them. */
int32_t commrt_rank(void);
int32_t commrt_size(void);

/* This process's rank among the ranks on its node (those sharing memory with
 * it: MPI_Comm_split_type with MPI_COMM_TYPE_SHARED, ordered by rank), and
 * their number; what a process uses to pick its GPU. -1 if initialisation
 * failed. They bring the backend up (as commrt_init does), which is
 * collective: every rank calls them, or commrt_init, first. */
int32_t commrt_local_rank(void);
int32_t commrt_local_size(void);

/* Checks that the job has `expected` ranks: COMMRT_SUCCESS if so, otherwise
 * COMMRT_ERROR_MISMATCH with both counts in commrt_last_error(). Lowered
 * code planned for a shard.grid of `expected` processes calls it on entry,
 * so that a job started with another rank count stops with that message
 * instead of reducing over the wrong ranks. Initialises MPI only. */
int32_t commrt_expect_size(int64_t expected);

/* The backend in use (a commrt_backend), initialising if needed; -1 if
 * initialisation failed. */
int32_t commrt_backend_in_use(void);

/* Makes `backend` (a commrt_backend other than AUTO) available to the
 * collectives that name it as their transport (COMMRT_TRANSPORT_SHIFT):
 * the backend in use, or one created beside it, collectively among all
 * ranks. Returns at once, without communicating, where it already is.
 * NCCL where it was not built or no GPU is present fails with
 * COMMRT_ERROR_UNAVAILABLE and a message, on every rank, and nothing
 * changes. Lowered code calls it on entry for every transport its
 * collectives name. */
int32_t commrt_use_transport(int32_t backend);

/* The number of channels (COMMRT_CHANNELS, or COMMRT_DEFAULT_CHANNELS),
 * initialising if needed; -1 if initialisation failed. Initialisation fails
 * when COMMRT_CHANNELS is not a number in 1..COMMRT_MAX_CHANNELS or differs
 * between ranks. */
int32_t commrt_channels(void);

/* Blocking in-place allreduce of `count` elements of `dtype` at `buffer`.
 * AVG divides the sum by the number of ranks. Every rank must pass the same
 * count, dtype and reduce; with consistency checks on (see below) a mismatch
 * is reported as COMMRT_ERROR_MISMATCH on every rank instead of hanging or
 * producing garbage. count == 0 is a no-op (buffer may then be null). With
 * MPI, f16 and bf16 elements are combined through f32 and rounded to nearest
 * even after every step. */
int32_t commrt_allreduce(void *buffer, int64_t count, int32_t dtype,
                         int32_t reduce);

/* Blocking in-place broadcast of `count` elements of `dtype` at `buffer` from
 * rank `root`: when it returns, every rank's `count` elements equal root's,
 * bit for bit (16-bit elements are copied, never converted), e.g. a model's
 * parameters sent from rank 0 before training starts. Collective over all
 * ranks: every rank must pass the same count, dtype and root; with
 * consistency checks on (see below) they are compared, and a mismatch is
 * reported as COMMRT_ERROR_MISMATCH on every rank instead of hanging or
 * producing garbage. `root` must be in [0, commrt_size()). A null buffer with
 * count > 0, a negative count, a dtype that is not a commrt_dtype or a root
 * out of range fail with COMMRT_ERROR_INVALID_ARGUMENT. count == 0 is a no-op
 * (buffer may then be null). Where it runs:
 *  - MPI backend: MPI_Bcast on the runtime's communicator, in pieces of at
 *    most INT32_MAX elements.
 *  - NCCL backend, device (or managed) memory: ncclBroadcast on the
 *    backend's stream; it returns once the GPU work is done.
 *  - NCCL backend, host memory: as under MPI, over the communicator NCCL was
 *    bootstrapped over.
 * Under NCCL the ranks first agree on where their buffers are (one small
 * MPI_Allreduce); ranks that disagree (device memory on some, host memory on
 * others) fail with COMMRT_ERROR_MISMATCH on every rank. On failure the
 * buffer's contents are unspecified. */
int32_t commrt_broadcast(void *buffer, int64_t count, int32_t dtype,
                         int32_t root);

/* Blocking allgather of different counts (MPI_Allgatherv): rank r sends the
 * `counts[r]` elements of `dtype` at its `send`, and every rank receives all
 * of them at `recv`, rank 0's first, then rank 1's, and so on (the sum of
 * `counts` elements, copied bit for bit), e.g. per-rank metrics or a
 * variable number of samples. `counts` has commrt_size() entries, the same on
 * every rank; with consistency checks on (see below) the ranks compare them,
 * and a mismatch is reported as COMMRT_ERROR_MISMATCH on every rank instead
 * of hanging. A null `counts`, a negative count, a null `send` with
 * counts[rank] > 0,
 * a null `recv` with a nonzero total or a dtype that is not a commrt_dtype
 * fail with COMMRT_ERROR_INVALID_ARGUMENT. Counts adding up to 0 are a
 * no-op. Where it runs:
 *  - MPI backend: MPI_Allgatherv on the runtime's communicator; at most
 *    INT32_MAX elements in all (COMMRT_ERROR_INVALID_ARGUMENT beyond).
 *  - NCCL backend, device (or managed) memory, `send` and `recv` alike: one
 *    ncclBroadcast per rank of its elements into their place, in a group on
 *    the backend's stream; it returns once the GPU work is done.
 *  - NCCL backend, host memory: as under MPI, over the communicator NCCL was
 *    bootstrapped over.
 * Under NCCL the ranks first agree on where their buffers are, as for
 * commrt_broadcast. On failure `recv`'s contents are unspecified. */
int32_t commrt_allgather(const void *send, void *recv, const int64_t *counts,
                         int32_t dtype);

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

/* Blocking in-place allreduce of `nbuffers` (at least 1) buffers with one
 * collective: buffer i holds `counts[i]` elements of `dtype` (a zero-length
 * buffer may be null).
 *  - Packing multiplies every element by `prescale` and rounds it (to
 *    nearest even) to the wire type, in one pass into one fusion buffer that
 *    the runtime keeps and grows across calls (device memory and the pack
 *    kernels with NCCL).
 *  - One allreduce reduces the fusion buffer; over a wire type AVG sums.
 *  - Unpacking widens every value back to `dtype` and multiplies it by
 *    1 / `prescale` (for AVG over a wire type, by 1 / (`prescale` * size)).
 * `wire` is COMMRT_WIRE_NONE, and the data travels as `dtype` and is reduced
 * as commrt_allreduce reduces it, or COMMRT_F16 / COMMRT_BF16, which must be
 * narrower than `dtype` (so f32 and f64 buffers only). Packing and unpacking
 * compute in double for f64 buffers (rounding them only once to the wire
 * type) and in float otherwise. With COMMRT_WIRE_NONE and `prescale` 1 they
 * copy the bits, and every element is reduced as commrt_allreduce reduces
 * it, up to the order in which MPI combines the ranks' values, which may
 * depend on the message size. `prescale` must be finite and nonzero; as for
 * commrt_allreduce_wire, it keeps values in the wire type's range. The
 * consistency checks compare nbuffers, the total count, the counts, dtype,
 * wire, reduce and prescale. */
int32_t commrt_fused_allreduce(void *const *buffers, const int64_t *counts,
                               int32_t nbuffers, int32_t dtype, int32_t reduce,
                               int32_t wire, float prescale);

/* Starts commrt_allreduce(buffer, count, dtype, reduce) on `channel` and
 * stores a handle for commrt_test and commrt_wait in `*handle` (0, never a
 * valid handle, when the start fails). The collective is the one
 * commrt_allreduce runs (over MPI, with the same results bit for bit). The
 * consistency checks also compare the channel; they run before the start
 * returns. count == 0 gives a handle that is already complete. */
int32_t commrt_allreduce_start(void *buffer, int64_t count, int32_t dtype,
                               int32_t reduce, int32_t channel,
                               int64_t *handle);

/* Starts commrt_fused_allreduce(buffers, ...) on `channel`, as
 * commrt_allreduce_start does. The arrays `buffers` and `counts` are read
 * before it returns; the buffers they point to belong to the runtime until
 * the wait. Each channel keeps a fusion buffer of its own. */
int32_t commrt_fused_allreduce_start(void *const *buffers,
                                     const int64_t *counts, int32_t nbuffers,
                                     int32_t dtype, int32_t reduce,
                                     int32_t wire, float prescale,
                                     int32_t channel, int64_t *handle);

/* Sets `*done` to 1 when the collective of `handle` has finished (its
 * results are in its buffers) and to 0 otherwise, without blocking and
 * without making progress itself (over MPI it does not enter MPI at all).
 * The handle stays valid: commrt_wait must still consume it, and then returns
 * at once with the collective's status. Fails with
 * COMMRT_ERROR_INVALID_ARGUMENT when `done` is null or the handle is not in
 * flight (never returned by a start, or already waited). */
int32_t commrt_test(int64_t handle, int32_t *done);

/* Blocks until the collective of `handle` has finished or `timeout_s`
 * seconds have passed, whichever comes first, and sets `*done` as commrt_test
 * does. The calling thread sleeps while it waits (no polling: over MPI the
 * channel's thread wakes it). The handle stays valid: commrt_wait must still
 * consume it. Fails with COMMRT_ERROR_INVALID_ARGUMENT when `done` is null,
 * `timeout_s` is negative or not a number, or the handle is not in flight. */
int32_t commrt_wait_for(int64_t handle, double timeout_s, int32_t *done);

/* Blocks until the collective of `handle` has finished, releases the handle
 * and returns the collective's status. Local: it involves no other rank.
 * Every handle must be waited exactly once; waiting a handle that is not in
 * flight (never returned by a start, or already waited) fails with
 * COMMRT_ERROR_INVALID_ARGUMENT. */
int32_t commrt_wait(int64_t handle);

/* Blocking sparse allreduce with residual of `count` f32 elements (the
 * semantics of comm.sparse_allreduce in buffer form). On every rank:
 *  1. acc = grad + residual, element-wise.
 *  2. Entries of acc are selected by magnitude, as `select` says, with
 *     k = ceil(density * count):
 *     - COMMRT_SELECT_TOPK: exactly the k entries of largest magnitude; among
 *       equal magnitudes the lower index wins.
 *     - COMMRT_SELECT_THRESHOLD: every entry whose magnitude reaches a
 *       threshold t > 0 found by a radix search over the bit patterns of the
 *       magnitudes: at most three histogram passes (digits of 11, 10 and 10
 *       bits), each refining the bin that holds the k-th largest magnitude,
 *       stopping as soon as at most k + k / 8 entries reach the bin's lower
 *       edge. Guarantee: the selection has at least min(k, nonzeros)
 *       entries, and at most max(k + k / 8, the number of entries at least
 *       as large as the k-th largest magnitude) (more only where magnitudes
 *       tie); zeros are never selected. The NCCL backend selects the same
 *       entries.
 *     - COMMRT_SELECT_CHUNK: acc is cut into chunks of `chunk_elements`
 *       (> 0) consecutive entries, the last one possibly shorter; the squared
 *       norms of the chunks (in double) are summed over the ranks and rank 0
 *       picks the ceil(density * chunks) chunks of largest sum (the lower
 *       index wins ties) and broadcasts them, so that every rank selects the
 *       same chunks. A chunk whose sum is NaN (a NaN or infinity in some
 *       rank's chunk) counts as the largest: it is sent, so the NaN reaches
 *       every rank's gradient, as a dense allreduce would carry it, and
 *       leaves the residuals. Goes with COMMRT_EXCHANGE_CHUNK only.
 *     - COMMRT_SELECT_ROWS: lossless, for a gradient that is sparse by
 *       nature. Steps 1 and 5 are skipped (`residual` is not read or written
 *       and may be null): acc is grad, seen as count / chunk_elements rows of
 *       `chunk_elements` (> 0, dividing count) entries, and every row with
 *       an entry other than zero (NaN included) is sent whole as a pair of
 *       its row index and its row, in one record (the 8-byte index, then
 *       the row), so that a row takes one message where entries take two.
 *       `density` (in (0, 1]) is only what the plan expected of the
 *       fraction of rows touched; the result does not depend on it.
 *       Goes with COMMRT_EXCHANGE_ALLGATHER or COMMRT_EXCHANGE_HASH (whose
 *       owners own rows). The result is the dense allreduce's up to the
 *       order of summation: exact where every row is touched by at most one
 *       rank, or for integer-valued data.
 *  3. The selected entries are exchanged, as `exchange` says:
 *     - COMMRT_EXCHANGE_ALLGATHER: every rank gathers every rank's (index,
 *       value) pairs (MPI_Allgather of the counts, MPI_Allgatherv of the
 *       pairs) and adds them up, in rank order.
 *     - COMMRT_EXCHANGE_HASH: index i belongs to rank
 *       (i * 0x9E3779B97F4A7C15 >> 32) % size (a multiplicative hash, which
 *       spreads clustered indices over the ranks); the pairs go to their
 *       owners by MPI_Alltoallv, each owner adds up what it receives in rank
 *       order, and the owners' reduced pairs are allgathered. The sums are
 *       the allgather exchange's, bit for bit.
 *     - COMMRT_EXCHANGE_CHUNK: the selected chunks, packed into one buffer,
 *       are allreduced with MPI_Allreduce. Goes with COMMRT_SELECT_CHUNK only.
 *  4. `grad` receives the reduced gradient, dense: the sum (COMMRT_SUM) or the
 *     sum divided by the number of ranks (COMMRT_AVG) of what the ranks
 *     selected at each index, zero where no rank selected anything.
 *  5. `residual` receives acc with the entries this rank sent set to zero,
 *     so that sent + residual == acc exactly.
 * `density` is in (0, 1]; `chunk_elements` is read only for chunk selection
 * (COMMRT_DEFAULT_CHUNK_ELEMENTS is the dialect's default). The buffers must
 * not overlap; count == 0 is a no-op (the buffers may then be null). Where
 * it runs:
 *  - MPI backend: on the host, over MPI on the runtime's communicator. More
 *    pairs (over all ranks) or selected chunk entries than INT32_MAX fail on
 *    every rank.
 *  - NCCL backend, grad and residual device (or managed) memory: on the GPU,
 *    with CUDA kernels and NCCL collectives on the backend's stream (the
 *    allgather exchange as ncclAllGather of the counts and one
 *    ncclBroadcast per rank, the hash exchange with ncclSend/ncclRecv, the
 *    chunk exchange as ncclReduce of the norms, ncclBroadcast of the chunks
 *    and ncclAllReduce). It selects exactly the entries the host path
 *    selects and adds in the same order, so grad and residual are the host
 *    path's bit for bit, except that the chunk exchange sums chunks in
 *    NCCL's order (chunk norms are summed in another order too, so where
 *    two norms are within rounding of each other the chosen chunks may
 *    differ). It returns once the GPU work is done.
 *  - NCCL backend, both host memory: on the host as under MPI, over the
 *    communicator NCCL was bootstrapped over.
 *  - NCCL backend, one device and one host buffer: fails with
 *    COMMRT_ERROR_INVALID_ARGUMENT (on every rank, as does any rank's
 *    disagreement on where the buffers are, with COMMRT_ERROR_MISMATCH).
 * On failure the buffers' contents are unspecified. The consistency checks
 * compare count, density (its bits), select, exchange, reduce and
 * chunk_elements. */
int32_t commrt_sparse_allreduce(float *grad, float *residual, int64_t count,
                                double density, int32_t select,
                                int32_t exchange, int32_t reduce,
                                int64_t chunk_elements);

/* The reduced rows of commrt_rows_allreduce: `count` rows of
 * `row_elements` f32 values, in ascending order of their index, row i of
 * index `indices[i]` at `values + i * row_elements`. The runtime allocates
 * both arrays (null when count is 0); commrt_rows_free frees them. */
typedef struct commrt_rows {
  int64_t *indices;
  float *values;
  int64_t count;
  int64_t row_elements;
} commrt_rows;

/* The lossless rows exchange of a gradient given by its rows, as a sparse
 * COO gradient of an embedding is (nn.Embedding(sparse=True)): `count` row
 * indices in [0, rows) at `indices`, duplicates allowed, and their rows of
 * `row_elements` f32 values at `values` (row-major), among the ranks of
 * `group` (0: all ranks). Each rank first adds up its duplicate rows; the
 * rows then travel as with COMMRT_SELECT_ROWS (`exchange`
 * COMMRT_EXCHANGE_ALLGATHER or COMMRT_EXCHANGE_HASH, whose owners own
 * rows), and `*result` receives every row that some rank passed, once, in
 * ascending index order, with the sum (COMMRT_SUM) or the sum divided by
 * the group's size (COMMRT_AVG) of what the ranks passed for it, in rank
 * order (the dense allreduce's result at those rows, up to the order of
 * summation; a row whose values sum to zero is kept). Nothing of size
 * `rows x row_elements` is touched, so the work and the memory follow the
 * rows passed, not the table. Host memory only; blocking. An index out of
 * range fails with COMMRT_ERROR_INVALID_ARGUMENT naming it (on every rank
 * with the consistency checks on). On failure `*result` is empty. The
 * consistency checks compare rows, row_elements, exchange and reduce. */
int32_t commrt_rows_allreduce(int32_t group, const int64_t *indices,
                              const float *values, int64_t count, int64_t rows,
                              int64_t row_elements, int32_t exchange,
                              int32_t reduce, commrt_rows *result);

/* Frees what commrt_rows_allreduce allocated in `*result` and empties it;
 * null or an empty result is a no-op. */
void commrt_rows_free(commrt_rows *result);

/* Process groups: the ranks that pass the same `color` to one split form a
 * group, ordered by `key` (ties by world rank). Collective over all ranks
 * (MPI_Comm_split of the runtime's communicator; under NCCL, ncclCommSplit
 * of the backend's communicator). `id` names the split (any value the
 * program chooses, the same on every rank): a later call with the same id
 * returns the same handle at once, without communicating, and must pass the
 * same color and key (else COMMRT_ERROR_INVALID_ARGUMENT). Stores the
 * group's handle (> 0) in `*group` (0 when the split fails). color must be
 * >= 0. With consistency checks on, ranks that pass different ids to the
 * same (first) split fail with COMMRT_ERROR_MISMATCH instead of hanging.
 * Handles are numbered in split order, so they are the same on every rank.
 * A group has channels of its own, each a communicator of its own: the
 * split duplicates the group's communicator once per channel under MPI
 * (each with its own thread from its first collective on); under NCCL a
 * channel's communicator is split from the group's by the group's first
 * collective on it. A group's channel runs its collectives in the order its
 * ranks started them, independently of other groups' and of group 0's
 * channels. The backend chosen later (commrt_init_backend) takes the groups
 * over. Collectives of a group other than 0 are not counted among the
 * collectives of the end notices (ranks of different groups run different
 * ones): a group collective waiting for a rank that ended is ended by
 * COMMRT_TIMEOUT_S only. */
int32_t commrt_group_split(int64_t id, int32_t color, int32_t key,
                           int32_t *group);

/* The calling rank's rank in `group`, and the number of ranks in it; group 0
 * is all ranks (commrt_rank, commrt_size). -1 for an unknown group. Local. */
int32_t commrt_group_rank(int32_t group);
int32_t commrt_group_size(int32_t group);

/* commrt_fused_allreduce among the ranks of `group` only (0: all ranks,
 * exactly commrt_fused_allreduce), reduced by `algorithm` (a
 * commrt_algorithm; COMMRT_ALGORITHM_DEFAULT is what commrt_fused_allreduce
 * runs); AVG divides by the group's size. The
 * consistency checks run among the group's ranks, over the group's
 * communicator, and also compare the group. A handle that no split returned
 * fails with COMMRT_ERROR_INVALID_ARGUMENT naming it, at once and on the
 * calling rank only (the other ranks it meant cannot be known). The same
 * holds for the other commrt_group_* collectives. */
int32_t commrt_group_fused_allreduce(int32_t group, void *const *buffers,
                                     const int64_t *counts, int32_t nbuffers,
                                     int32_t dtype, int32_t reduce,
                                     int32_t wire, float prescale,
                                     int32_t algorithm);

/* commrt_fused_allreduce_start among the ranks of `group`, on `channel` of
 * the group; waited with commrt_wait like any handle. */
int32_t commrt_group_fused_allreduce_start(int32_t group, void *const *buffers,
                                           const int64_t *counts,
                                           int32_t nbuffers, int32_t dtype,
                                           int32_t reduce, int32_t wire,
                                           float prescale, int32_t algorithm,
                                           int32_t channel, int64_t *handle);

/* Starts commrt_sparse_allreduce(grad, residual, ...) on `channel` (of all
 * ranks), as commrt_fused_allreduce_start does, and stores its handle at
 * `*handle` (0 when the start fails); commrt_wait completes it, after which
 * `grad` holds the reduced gradient and `residual` the new residual. Both
 * buffers belong to the runtime until then. The consistency checks also
 * compare the channel. Over MPI the channel's thread runs the whole sparse
 * allreduce (selection, exchange and residual) while the caller goes on.
 * Under NCCL its steps wait for the host between launches (counts and
 * thresholds decide the next one), so the channel gets a thread of its own
 * that issues them on the channel's stream and communicator while the caller
 * goes on; from then on the channel's other starts are issued by that thread
 * too, in the order they were started. Its NCCL calls then run beside the
 * caller's calls on other communicators of the same GPU, in an order the
 * caller no longer fixes, which NCCL's documentation does not promise to be
 * safe ("Using multiple NCCL communicators concurrently"): like the channels'
 * dense collectives, it relies on the GPU running the kernels of several
 * communicators at once. Plans made with comm-optimize sparse-overlap=false
 * keep sparse allreduces blocking. Where MPI was initialised with less
 * than MPI_THREAD_MULTIPLE, the start runs the sparse allreduce to completion
 * on the main stream instead and returns a handle that is already
 * complete. */
int32_t commrt_sparse_allreduce_start(float *grad, float *residual,
                                      int64_t count, double density,
                                      int32_t select, int32_t exchange,
                                      int32_t reduce, int64_t chunk_elements,
                                      int32_t channel, int64_t *handle);

/* commrt_sparse_allreduce_start among the ranks of `group`, on `channel` of
 * the group. */
int32_t commrt_group_sparse_allreduce_start(int32_t group, float *grad,
                                            float *residual, int64_t count,
                                            double density, int32_t select,
                                            int32_t exchange, int32_t reduce,
                                            int64_t chunk_elements,
                                            int32_t channel, int64_t *handle);

/* A mixed-wire allreduce: commrt_fused_allreduce where buffer i travels in
 * `wire` (COMMRT_F16 or COMMRT_BF16, narrower than `dtype`) when
 * `narrowed[i]` is 1 and in `dtype` itself when it is 0, in one collective,
 * among the ranks of `group` (0: all ranks).
 *  - Each buffer's result is the one commrt_fused_allreduce would give it in
 *    a bucket of its own kind: narrowed buffers are multiplied by `prescale`,
 *    rounded to `wire`, reduced in `wire` and unpacked as there (AVG sums
 *    and divides once by size * prescale); the others are reduced in
 *    `dtype`, unscaled (AVG divides the sum by the number of ranks).
 *  - MPI: the narrowed buffers are packed, as `wire`, at the front of one
 *    fusion buffer, padded to a whole `dtype` element, and the others after
 *    them, as `dtype`; one ring allreduce (whatever COMMRT_ALLREDUCE says)
 *    reduces each segment in its own type, so a bucket pays one collective's
 *    latency. On one rank nothing is sent.
 *  - NCCL: the two kinds are two allreduces, back to back on the channel's
 *    stream.
 * Where the nonempty buffers all have the same flag this is
 * commrt_fused_allreduce with `wire` (all 1) or COMMRT_WIRE_NONE and
 * prescale 1 (all 0). The consistency checks compare what
 * commrt_fused_allreduce's compare and the flags. */
int32_t commrt_mixed_allreduce(int32_t group, void *const *buffers,
                               const int64_t *counts, const int32_t *narrowed,
                               int32_t nbuffers, int32_t dtype, int32_t reduce,
                               int32_t wire, float prescale);

/* Starts commrt_mixed_allreduce on `channel` of `group`, as
 * commrt_fused_allreduce_start does; waited with commrt_wait. The arrays are
 * read before it returns. */
int32_t commrt_mixed_allreduce_start(int32_t group, void *const *buffers,
                                     const int64_t *counts,
                                     const int32_t *narrowed, int32_t nbuffers,
                                     int32_t dtype, int32_t reduce,
                                     int32_t wire, float prescale,
                                     int32_t channel, int64_t *handle);

/* Sharded data parallelism (ZeRO, FSDP): a reduce-scatter of a flat
 * gradient and an all-gather of a flat parameter among the ranks of `group`
 * (0: all ranks). The flat tensor is the concatenation of the `nbuffers`
 * buffers (`counts[i]` elements of `dtype` each; every rank passes the same
 * counts), N elements in all; with p ranks in the group, rank r's shard is
 * elements [r s, min(N, (r + 1) s)) of it, s = ceil(N / p), and `shard`
 * holds s elements: where p does not divide N the last shards are shorter
 * (or empty) and padded to s. `shard_count` is s, as the caller sized
 * `shard`: any other value fails with COMMRT_ERROR_INVALID_ARGUMENT naming
 * both (a rank that planned for another number of ranks). Over MPI both run one half of the ring
 * allreduce on the group's communicator, pipelined as the ring is (every
 * rank sends and receives (p - 1) / p of the flat tensor); on one rank they
 * copy.
 *  - commrt_reduce_scatter reduces the flat tensor with `reduce` and leaves
 *    rank r's shard of the result at `shard`, its padding zero. The buffers
 *    are the ring's working memory: their contents afterwards are
 *    unspecified. `wire` and `prescale` are those of
 *    commrt_fused_allreduce: the data travels, and is reduced, in `wire`
 *    after the multiplication by `prescale`, and unpacking undoes both (AVG
 *    divides by the group's size).
 *  - commrt_all_gather writes every rank's shard into its place in the
 *    buffers (the elements of `shard` past N are not read). With `wire`,
 *    each shard travels rounded to `wire` after the multiplication by
 *    `prescale`, and every rank, its owner included, unpacks the rounded
 *    values, so that all ranks hold the same flat tensor.
 * The consistency checks compare what commrt_fused_allreduce's compare and
 * which of the two collectives it is. The NCCL backend runs them as
 * ncclReduceScatter and ncclAllGather over the padded flat tensor in device
 * memory, staging host buffers and a host shard. */
int32_t commrt_reduce_scatter(int32_t group, void *const *buffers,
                              const int64_t *counts, int32_t nbuffers,
                              void *shard, int64_t shard_count, int32_t dtype,
                              int32_t reduce, int32_t wire, float prescale);
int32_t commrt_all_gather(int32_t group, const void *shard,
                          int64_t shard_count, void *const *buffers,
                          const int64_t *counts, int32_t nbuffers,
                          int32_t dtype, int32_t wire, float prescale);

/* Starts commrt_reduce_scatter or commrt_all_gather on `channel` of
 * `group`, as commrt_fused_allreduce_start does; waited with commrt_wait.
 * The buffers and the shard belong to the runtime until then. */
int32_t commrt_reduce_scatter_start(int32_t group, void *const *buffers,
                                    const int64_t *counts, int32_t nbuffers,
                                    void *shard, int64_t shard_count,
                                    int32_t dtype, int32_t reduce,
                                    int32_t wire, float prescale,
                                    int32_t channel, int64_t *handle);
int32_t commrt_all_gather_start(int32_t group, const void *shard,
                                int64_t shard_count, void *const *buffers,
                                const int64_t *counts, int32_t nbuffers,
                                int32_t dtype, int32_t wire, float prescale,
                                int32_t channel, int64_t *handle);

/* commrt_sparse_allreduce among the ranks of `group` (AVG divides by the
 * group's size; the hash exchange's owners are the group's ranks). */
int32_t commrt_group_sparse_allreduce(int32_t group, float *grad,
                                      float *residual, int64_t count,
                                      double density, int32_t select,
                                      int32_t exchange, int32_t reduce,
                                      int64_t chunk_elements);

/* Which collectives first compare their arguments across ranks (a check is
 * one small allreduce). Values are part of the ABI. */
typedef enum commrt_checks {
  COMMRT_CHECKS_OFF = 0,
  /* Every call: for debugging a plan. */
  COMMRT_CHECKS_EVERY_CALL = 1,
  /* The first call of each distinct collective (by the arguments the checks
   * compare), remembered per process: a training loop pays for its first
   * step only. The default. */
  COMMRT_CHECKS_FIRST_OF_EACH = 2,
} commrt_checks;

/* Sets which collectives check their arguments across ranks (a
 * commrt_checks). Default: COMMRT_CHECKS_FIRST_OF_EACH, or what the
 * environment's COMMRT_CHECK says ("0", "1" or "first"; another value fails
 * the first collective with COMMRT_ERROR_INVALID_ARGUMENT). Collective: all
 * ranks must set the same; ranks whose COMMRT_CHECK differs fail their first
 * collective with COMMRT_ERROR_MISMATCH.
 *  - A checked call with invalid arguments on some rank makes every rank
 *    return COMMRT_ERROR_INVALID_ARGUMENT; ranks that disagree all return
 *    COMMRT_ERROR_MISMATCH, naming the argument.
 *  - An unchecked call validates its arguments locally, and only the
 *    offending rank returns: the others wait in the collective for it, until
 *    COMMRT_TIMEOUT_S ends the job. With COMMRT_CHECKS_FIRST_OF_EACH that is
 *    a disagreement that first shows in a collective some rank has already
 *    checked (e.g. a buffer that changes size on one rank after the first
 *    step); COMMRT_CHECKS_EVERY_CALL catches it too. */
int32_t commrt_set_consistency_checks(int32_t checks);

/* A description of the last failure on this thread ("" if none). */
const char *commrt_last_error(void);

/* Sleeps for `microseconds` (nothing when it is not positive): the time of
 * a profiled compute step (comm.compute lowered with compute-delay), during
 * which the caller's thread, like a host thread while its GPU computes,
 * leaves the cores to the runtime's communication. A sleep that wakes late
 * shortens the calling thread's next ones by its lateness, so that a
 * sequence of steps ends within one sleep's lateness of their sum. */
void commrt_sleep_us(double microseconds);

/* commrt_sleep_us for what is left of `microseconds` after `since_us` (a
 * commrt_time_us reading on this thread): a compute step that began then
 * and has already spent the time since producing its results. */
void commrt_sleep_since_us(double microseconds, double since_us);

/* Fills `count` elements of `dtype` at `buffer` with synthetic gradient
 * values: normally distributed (mean 0, standard deviation 1), none zero,
 * deterministic, from another place in a thread's table of 65536 values at
 * every call, at about twice a memset's time. What a skeleton's compute
 * step writes into its results (comm.compute lowered by
 * convert-comm-to-runtime), so that the collectives that follow see values
 * like a gradient's (on zeros, every magnitude ties and a sparse
 * allreduce's selection takes about 3x as long). Local; needs no
 * initialisation. A null buffer with count > 0, a negative count or a
 * dtype that is not a commrt_dtype fail with COMMRT_ERROR_INVALID_ARGUMENT.
 */
int32_t commrt_fill_gradient(void *buffer, int64_t count, int32_t dtype);

/* Microseconds on a monotonic clock (std::chrono::steady_clock) from an
 * unspecified origin: only differences between two calls on one rank mean
 * anything. Local; needs no initialisation. Lowered drivers time steps with
 * it (bench/loop). */
double commrt_time_us(void);

/* Blocks until every rank has called it (MPI_Barrier on the runtime's
 * communicator), initialising the runtime if needed, so that the ranks start
 * what follows together. Collective; it does not wait for asynchronous
 * collectives in flight. */
int32_t commrt_barrier(void);

/* Reports a timed step: the largest `microseconds` over the ranks (the
 * slowest rank's time, by an MPI_Allreduce with MPI_MAX) is printed by
 * rank 0 to stdout as "commrt: step STEP: TIME us" and flushed. Collective;
 * every rank must pass the same `step`. */
int32_t commrt_report_step_us(int64_t step, double microseconds);

/*===-- Tracing ------------------------------------------------------------===
 *
 * While tracing is on, the MPI backend records the phases of every
 * collective it runs, so that a measured step can be set beside the cost
 * model's (python/commopt's COMMOPT_TIMELINE writes them as a Chrome trace).
 * Recording costs a clock reading and a short locked append per phase;
 * while tracing is off, a relaxed atomic load. The NCCL backend records no
 * phases (its GPU work is asynchronous to the host). */

/* The phases of a collective. */
typedef enum commrt_trace_phase {
  /* The whole collective, on the thread that runs it (the caller's for a
   * blocking call, the channel's for a started one). */
  COMMRT_PHASE_CALL = 0,
  /* A started collective from its start to the moment its channel's thread
   * takes it up (behind the channel's earlier collectives). */
  COMMRT_PHASE_QUEUED = 1,
  /* A sparse allreduce's acc = grad + residual. */
  COMMRT_PHASE_ACCUMULATE = 2,
  /* A sparse allreduce's selection: the radix passes and the collection of
   * the pairs (top-k, threshold), or the chunk norms (chunk). */
  COMMRT_PHASE_SELECT = 3,
  /* The messages: a dense allreduce's reduction over the ranks, a sparse
   * allreduce's exchange (its collectives, with the chunks' packing). */
  COMMRT_PHASE_EXCHANGE = 4,
  /* A sparse allreduce's result: zeros, the received pairs or chunks added
   * in, the sent entries cleared from the residual, AVG's division. */
  COMMRT_PHASE_SCATTER = 5,
  /* A dense allreduce's packing of its buffers into the wire type (casts
   * and prescale included). */
  COMMRT_PHASE_PACK = 6,
  /* A dense allreduce's unpacking into its buffers, and AVG's division. */
  COMMRT_PHASE_UNPACK = 7,
  /* Within a sparse allreduce's EXCHANGE phase (on MPI), the exchange's own
   * passes between its messages, one event per pass, so that the exchange's
   * local work can be told from its collectives' time: */
  /* the pairs bucketed by owner (Zen's exchange; `selected` pairs), or the
   * rows packed into the records of a message (`selected` rows); */
  COMMRT_PHASE_EXCHANGE_PACK = 8,
  /* the records a message brought unpacked into rows (`received` rows); */
  COMMRT_PHASE_EXCHANGE_UNPACK = 9,
  /* an owner's sum of the `received` pairs or rows sent to it, into
   * `selected` distinct ones (Zen's exchange). */
  COMMRT_PHASE_EXCHANGE_REDUCE = 10,
  /* Device buffers that the MPI backend stages through pinned host memory
   * whole (commrt.h, "How the MPI backend takes device buffers"): their
   * copies to the host, until the host has them; */
  COMMRT_PHASE_STAGE_IN = 11,
  /* and the results' copies back to the device, until they are there. */
  COMMRT_PHASE_STAGE_OUT = 12,
} commrt_trace_phase;

/* One recorded phase of one collective, on one rank. */
typedef struct commrt_trace_event {
  /* commrt_time_us() at the phase's begin and end. */
  double begin_us;
  double end_us;
  /* The calling thread's tag (commrt_trace_tag) when the collective was
   * called or started. */
  int64_t tag;
  /* The collective's elements (the sum of its buffers'). */
  int64_t elements;
  /* A sparse allreduce's pairs this rank sent (top-k, threshold), or the
   * elements of the chunks sent (chunk); 0 otherwise. */
  int64_t selected;
  /* A sparse allreduce's pairs this rank received and added in (0 for the
   * chunk exchange and for dense collectives). */
  int64_t received;
  /* A commrt_trace_phase. */
  int32_t phase;
  /* A sparse allreduce's commrt_select, with COMMRT_TRACE_SPARSE added; a
   * dense one's wire type (a commrt_dtype) or COMMRT_WIRE_NONE. */
  int32_t kind;
  /* The channel of a started collective, -1 for a blocking one. */
  int32_t channel;
  /* The ranks the collective ran among. */
  int32_t ranks;
  /* The CPU time the thread that ran the phase spent in it, in
   * microseconds (its own work, the MPI library's and the kernel's on its
   * behalf: packing, selection, merging, the transport's), to set beside
   * end_us - begin_us; -1 for COMMRT_PHASE_QUEUED, which no thread runs. */
  double cpu_us;
} commrt_trace_event;

/* Added to a sparse allreduce's commrt_select in commrt_trace_event.kind. */
#define COMMRT_TRACE_SPARSE 100

/* Starts recording, keeping at most `capacity` (> 0) events until they are
 * read; events beyond that are counted (commrt_trace_dropped) and lost.
 * Starting again keeps what is recorded and sets the capacity. Local. */
int32_t commrt_trace_start(int64_t capacity);

/* Stops recording; what was recorded stays to be read. Local. */
int32_t commrt_trace_stop(void);

/* Sets the tag of the collectives this thread calls or starts from now on
 * (0 until set), e.g. the index of the plan's collective, so that the
 * caller can tell its collectives' events apart. Local. */
int32_t commrt_trace_tag(int64_t tag);

/* Moves up to `capacity` of the recorded events, oldest first, into
 * `events` and sets `*count` to how many it moved; those left stay for the
 * next read. Local. */
int32_t commrt_trace_read(commrt_trace_event *events, int64_t capacity,
                          int64_t *count);

/* How many events this process lost because `capacity` were waiting to be
 * read. Local. */
int64_t commrt_trace_dropped(void);

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
