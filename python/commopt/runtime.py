"""ctypes bindings of commrt, commopt's communication runtime (commrt.h).

Only what the training bridge needs is bound; every call that returns a
status raises CommoptError with the runtime's own message on failure.
"""

import ctypes
import os
import sys

from .errors import CommoptError

# Values of commrt.h's enums; part of its ABI.
SUCCESS = 0
DTYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3}
WIRE_NONE = -1
REDUCES = {"sum": 0, "avg": 1, "max": 2, "min": 3}
SELECTS = {"topk": 0, "threshold": 1, "chunk": 2, "rows": 3}
EXCHANGES = {"allgather": 0, "hash": 1, "chunk": 2}
# commrt_backend, and where a collective's transport goes in the group
# forms' `algorithm` argument (COMMRT_TRANSPORT_SHIFT).
BACKENDS = {"mpi": 1, "nccl": 2}
TRANSPORT_SHIFT = 8
ERROR_BACKEND = 3
# commrt_trace_phase, in order, and commrt_trace_event.kind's offset of a
# sparse allreduce's selection.
TRACE_PHASES = ("call", "queued", "accumulate", "select", "exchange",
                "scatter", "pack", "unpack", "exchange_pack",
                "exchange_unpack", "exchange_reduce", "stage_in", "stage_out")
TRACE_SPARSE = 100

_c_int32 = ctypes.c_int32
_c_int64 = ctypes.c_int64
_c_void_p = ctypes.c_void_p
_c_double = ctypes.c_double
_c_float = ctypes.c_float



class TraceEvent(ctypes.Structure):
    """commrt_trace_event."""
    _fields_ = [("begin_us", ctypes.c_double), ("end_us", ctypes.c_double),
                ("tag", ctypes.c_int64), ("elements", ctypes.c_int64),
                ("selected", ctypes.c_int64), ("received", ctypes.c_int64),
                ("phase", ctypes.c_int32), ("kind", ctypes.c_int32),
                ("channel", ctypes.c_int32), ("ranks", ctypes.c_int32),
                ("cpu_us", ctypes.c_double)]


class Rows(ctypes.Structure):
    """commrt_rows."""
    _fields_ = [("indices", ctypes.POINTER(ctypes.c_int64)),
                ("values", ctypes.POINTER(ctypes.c_float)),
                ("count", ctypes.c_int64), ("row_elements", ctypes.c_int64)]


# (name, result type, argument types)
_SIGNATURES = [
    ("commrt_init", _c_int32, []),
    ("commrt_finalize", _c_int32, []),
    ("commrt_rank", _c_int32, []),
    ("commrt_size", _c_int32, []),
    ("commrt_channels", _c_int32, []),
    ("commrt_local_rank", _c_int32, []),
    ("commrt_local_size", _c_int32, []),
    ("commrt_backend_in_use", _c_int32, []),
    ("commrt_fused_allreduce", _c_int32,
     [ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64), _c_int32, _c_int32,
      _c_int32, _c_int32, _c_float]),
    ("commrt_fused_allreduce_start", _c_int32,
     [ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64), _c_int32, _c_int32,
      _c_int32, _c_int32, _c_float, _c_int32, ctypes.POINTER(_c_int64)]),
    ("commrt_group_fused_allreduce", _c_int32,
     [_c_int32, ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64), _c_int32,
      _c_int32, _c_int32, _c_int32, _c_float, _c_int32]),
    ("commrt_group_fused_allreduce_start", _c_int32,
     [_c_int32, ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64), _c_int32,
      _c_int32, _c_int32, _c_int32, _c_float, _c_int32, _c_int32,
      ctypes.POINTER(_c_int64)]),
    ("commrt_use_transport", _c_int32, [_c_int32]),
    ("commrt_mixed_allreduce", _c_int32,
     [_c_int32, ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64),
      ctypes.POINTER(_c_int32), _c_int32, _c_int32, _c_int32, _c_int32,
      _c_float]),
    ("commrt_mixed_allreduce_start", _c_int32,
     [_c_int32, ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64),
      ctypes.POINTER(_c_int32), _c_int32, _c_int32, _c_int32, _c_int32,
      _c_float, _c_int32, ctypes.POINTER(_c_int64)]),
    ("commrt_reduce_scatter", _c_int32,
     [_c_int32, ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64), _c_int32,
      _c_void_p, _c_int64, _c_int32, _c_int32, _c_int32, _c_float]),
    ("commrt_reduce_scatter_start", _c_int32,
     [_c_int32, ctypes.POINTER(_c_void_p), ctypes.POINTER(_c_int64), _c_int32,
      _c_void_p, _c_int64, _c_int32, _c_int32, _c_int32, _c_float, _c_int32,
      ctypes.POINTER(_c_int64)]),
    ("commrt_all_gather", _c_int32,
     [_c_int32, _c_void_p, _c_int64, ctypes.POINTER(_c_void_p),
      ctypes.POINTER(_c_int64), _c_int32, _c_int32, _c_int32, _c_float]),
    ("commrt_all_gather_start", _c_int32,
     [_c_int32, _c_void_p, _c_int64, ctypes.POINTER(_c_void_p),
      ctypes.POINTER(_c_int64), _c_int32, _c_int32, _c_int32, _c_float,
      _c_int32, ctypes.POINTER(_c_int64)]),
    ("commrt_group_rank", _c_int32, [_c_int32]),
    ("commrt_group_size", _c_int32, [_c_int32]),
    ("commrt_test", _c_int32, [_c_int64, ctypes.POINTER(_c_int32)]),
    ("commrt_wait", _c_int32, [_c_int64]),
    ("commrt_wait_for", _c_int32,
     [_c_int64, ctypes.c_double, ctypes.POINTER(_c_int32)]),
    ("commrt_sparse_allreduce", _c_int32,
     [_c_void_p, _c_void_p, _c_int64, _c_double, _c_int32, _c_int32, _c_int32,
      _c_int64]),
    ("commrt_sparse_allreduce_start", _c_int32,
     [_c_void_p, _c_void_p, _c_int64, _c_double, _c_int32, _c_int32, _c_int32,
      _c_int64, _c_int32, ctypes.POINTER(_c_int64)]),
    ("commrt_rows_allreduce", _c_int32,
     [_c_int32, _c_void_p, _c_void_p, _c_int64, _c_int64, _c_int64, _c_int32,
      _c_int32, ctypes.POINTER(Rows)]),
    ("commrt_rows_free", None, [ctypes.POINTER(Rows)]),
    ("commrt_broadcast", _c_int32, [_c_void_p, _c_int64, _c_int32, _c_int32]),
    ("commrt_allgather", _c_int32,
     [_c_void_p, _c_void_p, ctypes.POINTER(_c_int64), _c_int32]),
    ("commrt_barrier", _c_int32, []),
    ("commrt_set_consistency_checks", _c_int32, [_c_int32]),
    ("commrt_last_error", ctypes.c_char_p, []),
    ("commrt_status_string", ctypes.c_char_p, [_c_int32]),
    ("commrt_abort_on_error", None, [_c_int32]),
    ("commrt_time_us", _c_double, []),
    ("commrt_trace_start", _c_int32, [_c_int64]),
    ("commrt_trace_stop", _c_int32, []),
    ("commrt_trace_tag", _c_int32, [_c_int64]),
    ("commrt_trace_read", _c_int32,
     [ctypes.POINTER(TraceEvent), _c_int64, ctypes.POINTER(_c_int64)]),
    ("commrt_trace_dropped", _c_int64, []),
]


def _candidate_paths():
    """Where libcommrt.so may be, most specific first."""
    if os.environ.get("COMMOPT_COMMRT_LIB"):
        yield os.environ["COMMOPT_COMMRT_LIB"]
        return
    here = os.path.dirname(os.path.abspath(__file__))
    # An install: <prefix>/lib/python3/dist-packages/commopt.
    yield os.path.join(here, "..", "..", "..", "libcommrt.so")
    # The source tree: <checkout>/python/commopt, built into
    # $COMMOPT_BUILD_DIR or <checkout>/build.
    checkout = os.path.join(here, "..", "..")
    build = os.environ.get("COMMOPT_BUILD_DIR",
                           os.path.join(checkout, "build"))
    yield os.path.join(build, "lib", "libcommrt.so")


def _load():
    tried = []
    for path in _candidate_paths():
        path = os.path.normpath(path)
        tried.append(path)
        if os.path.exists(path):
            # RTLD_GLOBAL: MPI's components resolve symbols of libmpi, which
            # the runtime pulls in.
            library = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            for name, result, arguments in _SIGNATURES:
                function = getattr(library, name)
                function.restype = result
                function.argtypes = arguments
            return library
    raise CommoptError(
        "cannot find libcommrt.so (looked at " + ", ".join(tried) +
        "); build commopt (scripts/build.sh) or set COMMOPT_COMMRT_LIB")


_library = None


def library():
    """The loaded runtime, loaded on first use."""
    global _library
    if _library is None:
        _library = _load()
    return _library


def last_error():
    message = library().commrt_last_error()
    return message.decode(errors="replace") if message else ""


def check(status, what, message=None):
    """Raises CommoptError naming `what` unless `status` is success, with
    `message`, or else this thread's last error, as the reason."""
    if status != SUCCESS:
        name = library().commrt_status_string(status).decode()
        reason = last_error() if message is None else message
        raise CommoptError(f"{what}: {name}: {reason}")


def abort(message):
    """Stops every rank of the job with `message` (MPI_Abort)."""
    sys.stderr.write(f"commopt: rank {rank()}: {message}\n")
    sys.stderr.flush()
    library().commrt_abort_on_error(ERROR_BACKEND)


_previous_excepthook = None


def _abort_on_uncaught(kind, value, traceback):
    """An exception that ends one rank stops the whole job: the other ranks
    would otherwise wait in their next collective for it."""
    _previous_excepthook(kind, value, traceback)
    if size() > 1:
        abort(f"uncaught {kind.__name__}; stopping every rank")


def init():
    """Initialises the runtime (and MPI) and makes an uncaught exception on
    any rank stop every rank. Idempotent."""
    global _previous_excepthook
    check(library().commrt_init(), "commrt_init")
    if _previous_excepthook is None:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def rank():
    return library().commrt_rank()


def size():
    return library().commrt_size()


def group_rank(group):
    """This rank's index in the process group `group` (0: all ranks)."""
    value = library().commrt_group_rank(group)
    if value < 0:
        raise CommoptError(f"commrt_group_rank: {last_error()}")
    return value


def group_size(group):
    """The ranks of the process group `group` (0: all ranks)."""
    value = library().commrt_group_size(group)
    if value < 0:
        raise CommoptError(f"commrt_group_size: {last_error()}")
    return value


def _query(function):
    value = getattr(library(), function)()
    if value < 0:
        raise CommoptError(f"{function}: {last_error()}")
    return value


def channels():
    return _query("commrt_channels")


def local_rank():
    return _query("commrt_local_rank")


def local_size():
    return _query("commrt_local_size")


def barrier():
    check(library().commrt_barrier(), "commrt_barrier")


def set_consistency_checks(enabled):
    check(library().commrt_set_consistency_checks(1 if enabled else 0),
          "commrt_set_consistency_checks")


def time_us():
    return library().commrt_time_us()


def _arrays(pointers, counts):
    n = len(pointers)
    return (_c_void_p * n)(*pointers), (_c_int64 * n)(*counts)


def fused_allreduce(pointers, counts, dtype, reduce, wire, prescale):
    buffers, lengths = _arrays(pointers, counts)
    return library().commrt_fused_allreduce(buffers, lengths, len(pointers),
                                            dtype, reduce, wire, prescale)


def fused_allreduce_start(pointers, counts, dtype, reduce, wire, prescale,
                          channel):
    """Returns (status, handle)."""
    buffers, lengths = _arrays(pointers, counts)
    handle = _c_int64(0)
    status = library().commrt_fused_allreduce_start(
        buffers, lengths, len(pointers), dtype, reduce, wire, prescale,
        channel, ctypes.byref(handle))
    return status, handle.value


def use_transport(transport):
    """commrt_use_transport of `transport` ("nccl" or "mpi"): collective."""
    return library().commrt_use_transport(BACKENDS[transport])


def on_transport(transport):
    """The group forms' `algorithm` argument of the runtime's default
    algorithm on `transport` ("nccl" or "mpi")."""
    return BACKENDS[transport] << TRANSPORT_SHIFT


def group_fused_allreduce(pointers, counts, dtype, reduce, wire, prescale, *,
                          algorithm):
    """commrt_group_fused_allreduce among all ranks, `algorithm` with its
    transport (on_transport)."""
    buffers, lengths = _arrays(pointers, counts)
    return library().commrt_group_fused_allreduce(
        0, buffers, lengths, len(pointers), dtype, reduce, wire, prescale,
        algorithm)


def group_fused_allreduce_start(pointers, counts, dtype, reduce, wire,
                                prescale, channel, *, algorithm):
    """Returns (status, handle)."""
    buffers, lengths = _arrays(pointers, counts)
    handle = _c_int64(0)
    status = library().commrt_group_fused_allreduce_start(
        0, buffers, lengths, len(pointers), dtype, reduce, wire, prescale,
        algorithm, channel, ctypes.byref(handle))
    return status, handle.value


def shard_elements(total, ranks):
    """The elements of each rank's shard of a flat tensor of `total`
    elements on `ranks` ranks, padding included: ceil(total / ranks)."""
    return -(-total // ranks)


def reduce_scatter(pointers, counts, shard, shard_count, dtype, reduce, wire,
                   prescale, group=0, channel=None):
    """commrt_reduce_scatter of the flat tensor made of the buffers at
    `pointers` (`counts` elements each) into this rank's `shard` (a pointer
    to `shard_count` elements: shard_elements(sum(counts), ranks)); the
    buffers' contents are unspecified afterwards. With a `channel`, its
    start: returns (status, handle); else the status."""
    buffers, lengths = _arrays(pointers, counts)
    if channel is None:
        return library().commrt_reduce_scatter(
            group, buffers, lengths, len(pointers), shard, shard_count, dtype,
            reduce, wire, prescale)
    handle = _c_int64(0)
    status = library().commrt_reduce_scatter_start(
        group, buffers, lengths, len(pointers), shard, shard_count, dtype,
        reduce, wire, prescale, channel, ctypes.byref(handle))
    return status, handle.value


def all_gather(shard, shard_count, pointers, counts, dtype, wire, prescale,
               group=0, channel=None):
    """commrt_all_gather of every rank's `shard` (`shard_count` elements)
    into the flat tensor made of the buffers at `pointers`. With a
    `channel`, its start: returns (status, handle); else the status."""
    buffers, lengths = _arrays(pointers, counts)
    if channel is None:
        return library().commrt_all_gather(group, shard, shard_count, buffers,
                                           lengths, len(pointers), dtype,
                                           wire, prescale)
    handle = _c_int64(0)
    status = library().commrt_all_gather_start(
        group, shard, shard_count, buffers, lengths, len(pointers), dtype,
        wire, prescale, channel, ctypes.byref(handle))
    return status, handle.value


def mixed_allreduce(pointers, counts, narrowed, dtype, reduce, wire,
                    prescale):
    """A mixed-wire bucket among all ranks: buffer i travels in `wire` where
    narrowed[i] is true, in `dtype` otherwise."""
    buffers, lengths = _arrays(pointers, counts)
    flags = (_c_int32 * len(narrowed))(*(int(n) for n in narrowed))
    return library().commrt_mixed_allreduce(0, buffers, lengths, flags,
                                            len(pointers), dtype, reduce,
                                            wire, prescale)


def mixed_allreduce_start(pointers, counts, narrowed, dtype, reduce, wire,
                          prescale, channel):
    """Returns (status, handle)."""
    buffers, lengths = _arrays(pointers, counts)
    flags = (_c_int32 * len(narrowed))(*(int(n) for n in narrowed))
    handle = _c_int64(0)
    status = library().commrt_mixed_allreduce_start(
        0, buffers, lengths, flags, len(pointers), dtype, reduce, wire,
        prescale, channel, ctypes.byref(handle))
    return status, handle.value


def test(handle):
    done = _c_int32(0)
    check(library().commrt_test(handle, ctypes.byref(done)), "commrt_test")
    return bool(done.value)


def wait_for(handle, timeout_s):
    """Sleeps until the collective of `handle` is done or `timeout_s` passed
    (the GIL released); returns whether it is done. The handle stays
    valid: wait() consumes it."""
    done = _c_int32(0)
    check(library().commrt_wait_for(handle, timeout_s, ctypes.byref(done)),
          "commrt_wait_for")
    return bool(done.value)


def wait(handle):
    return library().commrt_wait(handle)


def sparse_allreduce(grad, residual, count, density, select, exchange, reduce,
                     chunk_elements):
    return library().commrt_sparse_allreduce(grad, residual, count, density,
                                             select, exchange, reduce,
                                             chunk_elements)


def sparse_allreduce_start(grad, residual, count, density, select, exchange,
                           reduce, chunk_elements, channel):
    """Returns (status, handle)."""
    handle = _c_int64(0)
    status = library().commrt_sparse_allreduce_start(
        grad, residual, count, density, select, exchange, reduce,
        chunk_elements, channel, ctypes.byref(handle))
    return status, handle.value


def rows_allreduce(indices, values, count, rows, row_elements, exchange,
                   reduce):
    """commrt_rows_allreduce among all ranks: `indices` and `values` are
    pointers to `count` int64 row indices and their f32 rows. Returns
    (status, reduced indices, reduced rows), the last two as torch tensors
    (copies; None on failure)."""
    import torch

    result = Rows()
    status = library().commrt_rows_allreduce(
        0, indices, values, count, rows, row_elements, exchange, reduce,
        ctypes.byref(result))
    if status != SUCCESS:
        return status, None, None
    try:
        reduced = torch.empty(result.count, dtype=torch.int64)
        values_out = torch.empty((result.count, row_elements),
                                 dtype=torch.float32)
        if result.count:
            ctypes.memmove(reduced.data_ptr(), result.indices,
                           result.count * 8)
            ctypes.memmove(values_out.data_ptr(), result.values,
                           result.count * row_elements * 4)
    finally:
        library().commrt_rows_free(ctypes.byref(result))
    return status, reduced, values_out


def broadcast(pointer, count, dtype, root):
    return library().commrt_broadcast(pointer, count, dtype, root)


def allgather(send, recv, counts, dtype):
    """commrt_allgather: `counts` has an element count per rank."""
    return library().commrt_allgather(send, recv,
                                      (_c_int64 * len(counts))(*counts), dtype)


def trace_start(capacity):
    """Starts recording the runtime's phases (commrt_trace_start)."""
    check(library().commrt_trace_start(capacity), "commrt_trace_start")


def trace_stop():
    check(library().commrt_trace_stop(), "commrt_trace_stop")


def trace_tag(tag):
    """Tags the collectives this thread calls or starts from now on."""
    check(library().commrt_trace_tag(tag), "commrt_trace_tag")


def trace_read(batch=4096):
    """The recorded events, oldest first, as TraceEvents (all of them)."""
    events = []
    buffer = (TraceEvent * batch)()
    count = _c_int64(0)
    while True:
        check(library().commrt_trace_read(buffer, batch, ctypes.byref(count)),
              "commrt_trace_read")
        events.extend(TraceEvent.from_buffer_copy(buffer[i])
                      for i in range(count.value))
        if count.value < batch:
            return events


def trace_dropped():
    return library().commrt_trace_dropped()
