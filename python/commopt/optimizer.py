"""Executes a communication plan in a PyTorch training step.

Like Horovod's DistributedOptimizer, hooks on the parameters' gradient
accumulators fire as backward produces each gradient; unlike Horovod, no
rank negotiates with the others which gradient goes next: the plan fixes the
collectives and their order, so every rank issues collective i + 1 only
after collective i, once all of i's gradients are ready. Ranks whose hooks
fire in different orders therefore still issue identical sequences.
"""

import contextlib
import functools
import os
import threading
import time

import torch

from . import collectives as _collectives, runtime, state as _state
from .errors import CommoptError
from .plan import SparseWarmup, default_plan, dtype_name
from .timeline import Timeline

_ELEMENT_SIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2}


def _as_warmup(value):
    """`value` of DistributedOptimizer's sparse_warmup as a SparseWarmup
    ((steps, start_density): a positive step count and a density in
    (0, 1]), or None for a false one; CommoptError otherwise."""
    if not value:
        return None
    try:
        steps, start = value
    except (TypeError, ValueError):
        raise CommoptError(f"sparse_warmup={value!r}: expected (steps, "
                           "start_density)") from None
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise CommoptError(f"sparse_warmup: steps {steps!r} is not a "
                           "positive integer")
    if isinstance(start, bool) or not isinstance(start, (int, float)) or \
            not 0 < start <= 1:
        raise CommoptError(f"sparse_warmup: start density {start!r} is not "
                           "in (0, 1]")
    return SparseWarmup(steps, float(start))


def _wait_timeout_s():
    text = os.environ.get("COMMOPT_TIMEOUT_S", "300")
    try:
        value = float(text)
    except ValueError:
        raise CommoptError(f"COMMOPT_TIMEOUT_S={text!r} is not a number")
    if not value > 0:
        raise CommoptError(f"COMMOPT_TIMEOUT_S={text!r} is not positive")
    return value


class _Issued:
    """A collective issued in this step: its handle, or None once done, and
    what to do once it is (None: nothing)."""

    __slots__ = ("collective", "handle", "then")

    def __init__(self, collective, handle, then=None):
        self.collective = collective
        self.handle = handle
        self.then = then


class DistributedOptimizer:
    """Wraps `optimizer` so that `step()` applies gradients reduced over all
    ranks as `plan` (a commopt.Plan; None: the default plan) says.

    `named_parameters` are the model's (name, parameter) pairs, named as the
    profile that the plan was made from named them: the names of
    `model.named_parameters()`. Sparse collectives keep a residual per
    parameter across steps (`residuals`). Call `zero_grad()` (or set the
    gradients to None) between steps, as with any optimizer.

    `momentum_correction=True` is Deep Gradient Compression's momentum
    correction for the sparse parameters of an SGD optimizer with momentum
    (None, the default: as the plan says, which comm-optimize
    momentum-correction=true priced it with):
    each rank accumulates the momentum of its own gradient (`velocities`),
    sends the largest entries of its accumulated velocity, and clears the
    velocity where it sent (momentum factor masking); the optimizer then
    applies the reduced update without momentum of its own, so those
    parameters move to a param group of their own with `momentum` 0.

    Deep Gradient Compression's warm-up: where the plan has one
    (comm-optimize sparse-warmup-steps=N), or with `sparse_warmup=(N, D)`,
    step 0 sends each sparse gradient at density D and the density falls
    geometrically to the plan's over the first N steps (`steps` counts
    them, and a checkpoint keeps the count).

    Gradient accumulation, as Horovod's `backward_passes_per_step` and
    DDP's `no_sync()` do it: with `backward_passes_per_step=k`, the
    gradients of k backward passes add up in param.grad and the plan's
    collectives start during the k-th; within `with optimizer.no_sync():`
    backward passes only accumulate, and the first pass after it reduces.
    Either way each step reduces the accumulated gradient once (sparse
    residuals and momentum correction see it once), and the gradients are
    sums over the passes: scale the loss by 1 / k for their mean.

    Uneven data, as DDP's join() and Horovod's hvd.join() handle it: within
    `with optimizer.join():`, a rank whose loop ends before the others'
    takes part in their remaining steps with zero gradients (see join()).
    """

    def __init__(self, optimizer, named_parameters, plan=None,
                 momentum_correction=None, backward_passes_per_step=1,
                 sparse_warmup=None):
        if isinstance(backward_passes_per_step, bool) or \
                not isinstance(backward_passes_per_step, int) or \
                backward_passes_per_step < 1:
            raise CommoptError(
                "backward_passes_per_step must be a positive integer, not "
                f"{backward_passes_per_step!r}")
        runtime.init()
        self.backward_passes_per_step = backward_passes_per_step
        self.optimizer = optimizer
        all_named = list(named_parameters)
        named = [(n, p) for n, p in all_named if p.requires_grad]
        names = [n for n, _ in named]
        if len(set(names)) != len(names):
            raise CommoptError("named_parameters has duplicate names")
        self.plan = plan if plan is not None else default_plan(named)
        frozen = {n for n, p in all_named if not p.requires_grad}
        for name in self.plan.parameters():
            if name in frozen:
                raise CommoptError(
                    f"{self.plan.source} carries parameter '{name}', which "
                    "does not require a gradient (requires_grad=False)")
        self.plan.check_against(named, runtime.size(), runtime.channels())
        # Ranks that loaded another plan or built another model stop here,
        # all of them, before a collective could pair wrong buffers.
        self._plan_fingerprint = self.plan.fingerprint()
        self._model_fingerprint = _state.model_fingerprint(named)
        _state.agree("what they train", {
            "the plan": self._plan_fingerprint,
            "the model's parameters (names, shapes, dtypes)":
                self._model_fingerprint})
        # The backends the plan's collectives name, made available now on
        # every rank (a backend that cannot be made fails here, not in a
        # step).
        for transport in sorted({c.transport for c in self.plan.collectives
                                 if c.transport}):
            runtime.check(runtime.use_transport(transport),
                          f"{self.plan.source} runs collectives on {transport}")
        self._params = dict(named)
        optimized = {id(p) for group in optimizer.param_groups
                     for p in group["params"]}
        for name, param in named:
            if id(param) not in optimized:
                raise CommoptError(
                    f"parameter '{name}' is not optimized by the optimizer")
        # For each parameter, the collectives that carry (a piece of) it.
        self._carriers = {name: [] for name in self._params}
        for collective in self.plan.collectives:
            for g in collective.gradients:
                self._carriers[g.name].append(collective)
        self.residuals = {}
        # The dense buffers that sparse COO gradients are added into before
        # their collectives, by name, made at their first step.
        self._dense_rows = {}
        for collective in self.plan.collectives:
            if collective.kind == "sparse" and not collective.is_lossless:
                name = collective.gradients[0].name
                self.residuals[name] = torch.zeros_like(
                    self._params[name], memory_format=torch.contiguous_format)
        self.velocities = {}
        if sparse_warmup is not None:
            # Recorded in the plan: its fingerprint, which the ranks
            # compare, covers it.
            self.plan.sparse_warmup = _as_warmup(sparse_warmup)
        if momentum_correction is None:
            momentum_correction = self.plan.momentum_correction
        if momentum_correction:
            self._correct_momentum()
        self._timeout_s = _wait_timeout_s()
        # The measured timeline (COMMOPT_TIMELINE), or None.
        self.timeline = Timeline.from_environment(self.plan)
        # A log of issue order per step, for tests: lists of indices.
        self.issue_log = None
        self._hooks = []
        self._accumulators = []
        self._register_hooks()
        # Whether synchronize() has reduced this step's gradients and no
        # gradient became ready since: step() then does not reduce again.
        self._synchronized = False
        # Optimizer steps taken (and loaded from a checkpoint).
        self.steps = 0
        # Steps whose gradients synchronize() reduced but that step() did
        # not take (GradScaler skips those whose gradients overflowed).
        self.skipped_steps = 0
        # Within no_sync(): backward passes only accumulate.
        self._accumulating = False
        # Within join(): each step first counts the ranks still training.
        self._joining = False
        # The ranks that trained in the last step counted within join().
        self.training_ranks = None
        self._reset_step()

    def _correct_momentum(self):
        """Moves the sparse parameters to a param group without momentum
        and keeps their momentum here instead (see the class comment)."""
        sparse = {id(self._params[name]): name for name in self.residuals}
        moved = []
        for group in self.optimizer.param_groups:
            mine = [p for p in group["params"] if id(p) in sparse]
            if not mine:
                continue
            momentum = group.get("momentum", 0.0)
            if not momentum or group.get("nesterov") or \
                    group.get("dampening", 0.0):
                raise CommoptError(
                    "momentum_correction needs SGD with momentum, without "
                    f"nesterov or dampening, for '{sparse[id(mine[0])]}'")
            group["params"] = [p for p in group["params"]
                               if id(p) not in sparse]
            options = {k: v for k, v in group.items() if k != "params"}
            options["momentum"] = 0.0
            moved.append((mine, options, momentum))
        for params, options, momentum in moved:
            self.optimizer.add_param_group(dict(options, params=params))
            for param in params:
                name = sparse[id(param)]
                self.velocities[name] = (momentum, torch.zeros_like(
                    param, memory_format=torch.contiguous_format))

    # -- hooks ---------------------------------------------------------------

    def _register_hooks(self):
        for name, param in self._params.items():
            # The gradient accumulator's hook runs once the gradient is in
            # param.grad (Horovod does the same).
            accumulator = param.expand_as(param).grad_fn.next_functions[0][0]
            self._hooks.append(accumulator.register_hook(
                lambda *_, name=name: self._gradient_ready(name)))
            self._accumulators.append(accumulator)

    def _reset_step(self):
        self._ready = set()
        # Backward passes that produced each gradient in this step.
        self._passes = {}
        self._pending = [len(c.gradients) for c in self.plan.collectives]
        self._next = 0
        self._issued = []
        # Whether this step has counted the ranks still training (join()).
        self._counted = False

    def _gradient_ready(self, name):
        """The hook of `name`'s gradient accumulator: the gradient is in
        param.grad. It is ready for its collectives once the step's
        backward passes (backward_passes_per_step, outside no_sync()) are
        all in it."""
        self._forget_skipped_step()
        if self._accumulating:
            return
        passes = self._passes.get(name, 0) + 1
        if passes > self.backward_passes_per_step:
            if self.backward_passes_per_step == 1:
                raise CommoptError(
                    f"the gradient of '{name}' became ready twice in one "
                    "step: call step() (or synchronize()) after every "
                    "backward, or accumulate gradients with "
                    "backward_passes_per_step or no_sync()")
            raise CommoptError(
                f"the gradient of '{name}' became ready {passes} times in "
                "one step, more than backward_passes_per_step="
                f"{self.backward_passes_per_step}: call step() (or "
                "synchronize()) after that many backward passes")
        self._passes[name] = passes
        if passes == self.backward_passes_per_step:
            self._mark_ready(name)

    def _forget_skipped_step(self):
        """A new step begins (a gradient, or zero_grad()). When
        synchronize() reduced the last step's gradients but step() did not
        follow, that step was skipped, as GradScaler skips one whose
        gradients overflowed: what it left in the residuals and velocities
        that is not finite (overflowed entries this rank did not send)
        would spoil every later step, and is dropped."""
        if not self._synchronized:
            return
        self._synchronized = False
        self.skipped_steps += 1
        with torch.no_grad():
            for kept in list(self.residuals.values()) + \
                    [u for _, u in self.velocities.values()]:
                torch.nan_to_num_(kept, nan=0.0, posinf=0.0, neginf=0.0)

    def _mark_ready(self, name):
        """Counts `name`'s gradient in for the collectives that carry it
        and issues those whose gradients are all ready."""
        timeline = self.timeline
        began = timeline.now() if timeline else 0.0
        self._ready.add(name)
        for collective in self._carriers[name]:
            self._pending[collective.index] -= 1
        self._issue_ready()
        if timeline:
            timeline.instant(f"ready {name}", "ready", began, name=name)
            timeline.span(f"hook {name}", "hook", began, timeline.now(),
                          name=name)

    @contextlib.contextmanager
    def no_sync(self):
        """A context within which backward passes accumulate their
        gradients in param.grad without reducing them, as DDP's no_sync()
        does; the first backward pass after it (or step(), or
        synchronize()) reduces the sum. Enter it before any gradient of the
        step is ready for its collectives."""
        if self._ready:
            raise CommoptError(
                "no_sync() entered after this step's collectives started "
                f"(the gradient of '{sorted(self._ready)[0]}' is being "
                "reduced): enter it before the step's last backward pass")
        previous = self._accumulating
        self._accumulating = True
        try:
            yield
        finally:
            self._accumulating = previous

    @contextlib.contextmanager
    def join(self):
        """A context for training loops whose ranks may run out of data
        at different steps, as DDP's join() is. Within it, every step
        first counts the ranks still training (a small allreduce before the
        step's first collective: one latency per step); a rank whose loop
        ends, leaving the context, keeps taking part in the others' steps
        with zero gradients until every rank's loop has ended. Gradients
        are averaged over all ranks, the joined ones' zeros included (DDP's
        default, divide_by_initial_world_size=True), and every rank applies
        the reduced gradients, so that parameters stay identical everywhere.
        Every rank enters it before the same step."""
        if self._ready or self._passes:
            raise CommoptError(
                "join() entered during a step (after a backward pass): "
                "enter it before the training loop")
        previous = self._joining
        self._joining = True
        try:
            yield self
            self._shadow_until_all_joined()
        finally:
            self._joining = previous

    def _count_training_ranks(self, training=True):
        """Within join(): counts, collectively, the ranks that train in
        this step."""
        self._counted = True
        self.training_ranks = _state.count_ranks(training)
        return self.training_ranks

    def _shadow_until_all_joined(self):
        """A rank whose loop in join() ended: takes part in every step
        of the ranks still training, with zero gradients, until none is."""
        if self._ready or self._passes:
            # The collectives in flight write into the gradients: they
            # must end before the error lets anyone free them.
            for issued in self._issued:
                self._wait(issued)
            self._reset_step()
            raise CommoptError(
                "the training loop in join() ended after a backward pass "
                "without step(): call step() (or synchronize()) first")
        while self._count_training_ranks(training=False):
            for param in self._params.values():
                param.grad = torch.zeros_like(
                    param, memory_format=torch.contiguous_format)
            for name in self._params:
                self._mark_ready(name)
            self.step()
        self._counted = False
        self.optimizer.zero_grad(set_to_none=True)

    def _issue_ready(self):
        collectives = self.plan.collectives
        if self._joining and not self._counted and \
                self._next < len(collectives) and \
                self._pending[self._next] == 0:
            self._count_training_ranks()
        while self._next < len(collectives) and \
                self._pending[self._next] == 0:
            self._issue(collectives[self._next])
            self._next += 1

    # -- collectives -----------------------------------------------------------

    def _gradient(self, name, dtype):
        param = self._params[name]
        grad = param.grad
        if grad is None:
            raise CommoptError(f"parameter '{name}' has no gradient")
        if grad.is_sparse:
            grad = self._densify(name, grad)
        if not grad.is_contiguous():
            raise CommoptError(
                f"the gradient of '{name}' is not a dense contiguous tensor")
        if dtype_name(grad) != dtype:
            raise CommoptError(
                f"the gradient of '{name}' is {grad.dtype}, the plan "
                f"says {dtype}")
        return grad

    def _issue(self, collective):
        if self.issue_log is not None:
            self.issue_log.append(collective.index)
        timeline = self.timeline
        if not timeline:
            self._issue_collective(collective)
            return
        runtime.trace_tag(collective.index)
        began = timeline.now()
        self._issue_collective(collective)
        timeline.span(f"issue #{collective.index}", "issue", began,
                      timeline.now(), collective=collective.index,
                      kind=collective.kind)

    def _issue_collective(self, collective):
        if collective.kind == "sparse":
            self._sparse(collective)
            return
        dtype = collective.gradients[0].dtype
        element = _ELEMENT_SIZE[dtype]
        pointers, counts = [], []
        for g in collective.gradients:
            grad = self._gradient(g.name, dtype)
            pointers.append(grad.data_ptr() + g.offset * element)
            counts.append(g.count)
        wire = runtime.WIRE_NONE if collective.wire == "none" else \
            runtime.DTYPES[collective.wire]
        arguments = (pointers, counts, runtime.DTYPES[dtype],
                     runtime.REDUCES[collective.reduce], wire,
                     collective.prescale)
        blocking, start = runtime.fused_allreduce, \
            runtime.fused_allreduce_start
        if collective.transport:
            # On the backend the plan chose (made available in __init__).
            algorithm = runtime.on_transport(collective.transport)
            blocking = functools.partial(runtime.group_fused_allreduce,
                                         algorithm=algorithm)
            start = functools.partial(runtime.group_fused_allreduce_start,
                                      algorithm=algorithm)
        if collective.is_mixed_wire:
            # One message: the narrowed gradients in the wire type, the
            # others in their own.
            arguments = (pointers, counts,
                         [g.narrowed for g in collective.gradients]) + \
                arguments[2:]
            blocking, start = runtime.mixed_allreduce, \
                runtime.mixed_allreduce_start
        if collective.channel is None:
            self._bounded(collective, lambda: blocking(*arguments))
            return
        status, handle = start(*arguments, collective.channel)
        runtime.check(status, collective.describe())
        self._issued.append(_Issued(collective, handle))

    def _densify(self, name, grad):
        """A sparse COO gradient (nn.Embedding(sparse=True)) of `name`
        added, duplicate indices summed, into a dense buffer kept across
        steps, which becomes param.grad: the optimizer then updates with
        the reduced dense gradient, as every rank holds it whole after
        DDP's sparse allreduce."""
        dense = self._dense_rows.get(name)
        if dense is None or dense.shape != grad.shape or \
                dense.dtype != grad.dtype:
            dense = torch.empty(grad.shape, dtype=grad.dtype,
                                device=grad.device)
            self._dense_rows[name] = dense
        with torch.no_grad():
            dense.zero_()
            if grad._nnz():
                indices = grad._indices()
                if indices.shape[0] == 1:
                    # Rows: index_add_ sums duplicate rows.
                    dense.index_add_(0, indices[0], grad._values())
                else:
                    dense.add_(grad.coalesce().to_dense())
        self._params[name].grad = dense
        return dense

    def _coo_rows(self, collective, grad):
        """The rows exchange of a sparse COO gradient of rows
        (nn.Embedding(sparse=True)) as it is: commrt_rows_allreduce takes
        its indices and rows, duplicates included, and param.grad becomes
        the reduced rows, a coalesced COO tensor, so that nothing of the
        table's size is touched (as DDP's sparse allreduce leaves it).
        Blocking: it runs where the plan issues it."""
        g = collective.gradients[0]
        param = self._params[g.name]
        indices = grad._indices()[0].contiguous()
        values = grad._values().contiguous()
        rows = grad.shape[0]
        width = collective.sparse["chunk_elements"]
        reduced = []

        def call():
            status, out_indices, out_values = runtime.rows_allreduce(
                indices.data_ptr(), values.data_ptr(), indices.numel(), rows,
                width, runtime.EXCHANGES[collective.sparse["exchange"]],
                runtime.REDUCES[collective.reduce])
            reduced.append((out_indices, out_values))
            return status

        self._bounded(collective, call)
        out_indices, out_values = reduced[0]
        # Unique indices in ascending order: coalesced as it stands.
        param.grad = torch.sparse_coo_tensor(
            out_indices.unsqueeze(0), out_values.view(
                (out_values.shape[0],) + tuple(grad.shape[1:])),
            grad.shape)._coalesced_(True)

    def _rows(self, collective):
        """The lossless exchange of a gradient's touched rows: no residual,
        no warm-up (the density is only the plan's expectation) and no
        momentum correction."""
        g = collective.gradients[0]
        coo = self._params[g.name].grad
        if coo is not None and coo.is_sparse and coo.sparse_dim() == 1 and \
                coo.dtype == torch.float32 and coo.device.type == "cpu":
            self._coo_rows(collective, coo)
            return
        grad = self._gradient(g.name, "f32")
        sparse = collective.sparse
        arguments = (grad.data_ptr(), None, g.count, sparse["density"],
                     runtime.SELECTS["rows"],
                     runtime.EXCHANGES[sparse["exchange"]],
                     runtime.REDUCES[collective.reduce],
                     sparse["chunk_elements"])
        if collective.channel is None:
            self._bounded(collective,
                          lambda: runtime.sparse_allreduce(*arguments))
            return
        status, handle = runtime.sparse_allreduce_start(*arguments,
                                                        collective.channel)
        runtime.check(status, collective.describe())
        self._issued.append(_Issued(collective, handle))

    def _sparse(self, collective):
        if collective.is_lossless:
            self._rows(collective)
            return
        g = collective.gradients[0]
        grad = self._gradient(g.name, "f32")
        residual = self.residuals[g.name]
        velocity = self.velocities.get(g.name)
        timeline = self.timeline
        if velocity is not None:
            # Send from the accumulated velocity: u = m u + grad.
            began = timeline.now() if timeline else 0.0
            momentum, u = velocity
            with torch.no_grad():
                u.mul_(momentum).add_(grad)
                grad.copy_(u)
            if timeline:
                timeline.span(f"momentum {g.name}", "momentum", began,
                              timeline.now(), name=g.name,
                              elements=g.count)
        sparse = collective.sparse
        density = sparse["density"]
        if self.plan.sparse_warmup:
            density = self.plan.sparse_warmup.density(density, self.steps)
        arguments = (grad.data_ptr(), residual.data_ptr(), g.count,
                     density, runtime.SELECTS[sparse["select"]],
                     runtime.EXCHANGES[sparse["exchange"]],
                     runtime.REDUCES[collective.reduce],
                     sparse["chunk_elements"])

        def mask():
            # Momentum factor masking: what was sent leaves the velocity
            # too (the residual is zero exactly where this rank sent).
            if velocity is not None:
                began = timeline.now() if timeline else 0.0
                with torch.no_grad():
                    velocity[1].masked_fill_(residual == 0, 0.0)
                if timeline:
                    timeline.span(f"mask {g.name}", "mask", began,
                                  timeline.now(), name=g.name,
                                  elements=g.count)

        if collective.channel is None:
            self._bounded(collective,
                          lambda: runtime.sparse_allreduce(*arguments))
            mask()
            return
        # On a channel: it runs while backward goes on, and is waited, and
        # the velocity masked, in synchronize().
        status, handle = runtime.sparse_allreduce_start(*arguments,
                                                        collective.channel)
        runtime.check(status, collective.describe())
        self._issued.append(_Issued(collective, handle, mask))

    def _timed_out(self, collective):
        """The error of `collective` still running after the timeout."""
        return CommoptError(
            f"{collective.describe()} did not complete within "
            f"{self._timeout_s:g} s (COMMOPT_TIMEOUT_S): another rank has "
            "died or runs another plan")

    def _bounded(self, collective, call):
        """Runs the blocking runtime call `call` of `collective` and checks
        its status, raising CommoptError when it has not returned within the
        timeout. The call runs on a thread of its own while this one waits,
        so that calls into the runtime still come from one thread at a
        time; the thread is a daemon, which a hung collective does not keep
        the process alive with."""
        outcome = []
        tag = collective.index

        def run():
            # The runtime's trace tags are the calling thread's.
            if self.timeline:
                runtime.trace_tag(tag)
            status = call()
            # The runtime's last error is the calling thread's.
            outcome.append((status, runtime.last_error() if status else ""))

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(self._timeout_s)
        if worker.is_alive():
            raise self._timed_out(collective)
        if not outcome:
            raise CommoptError(f"{collective.describe()}: the runtime call "
                               "raised on its thread")
        status, message = outcome[0]
        runtime.check(status, collective.describe(), message)

    def _wait(self, issued):
        """Waits for `issued`, raising CommoptError after the timeout."""
        # The runtime wakes this thread when the collective is done: no
        # polling, the core is backward's meanwhile. Slices of a second
        # let Python see signals (Ctrl-C) while a wait lasts.
        deadline = time.monotonic() + self._timeout_s
        while not runtime.wait_for(
                issued.handle,
                min(1.0, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                raise self._timed_out(issued.collective)
        status = runtime.wait(issued.handle)
        issued.handle = None
        runtime.check(status, issued.collective.describe())

    def synchronize(self):
        """Issues what backward left (parameters that got no gradient are
        reduced as zeros, as Horovod does) and waits for every collective
        of the step. Every rank must call it, or step(), once per step;
        it does nothing when it already ran and no new step began since
        (a gradient became ready, or zero_grad()), so that
        `synchronize()`, then work on the reduced gradients (e.g.
        clipping, GradScaler's unscale_), then `step()` reduces them once;
        a step left without `step()` counts as skipped (skipped_steps)."""
        if self._synchronized:
            return
        if self._next < len(self.plan.collectives):
            for name, param in self._params.items():
                if name not in self._ready:
                    if param.grad is None:
                        param.grad = torch.zeros_like(
                            param, memory_format=torch.contiguous_format)
                    # What the passes so far accumulated.
                    self._mark_ready(name)
        if self._joining and not self._counted:
            # A plan without collectives still counts, as the others do.
            self._count_training_ranks()
        try:
            timeline = self.timeline
            for issued in self._issued:
                began = timeline.now() if timeline else 0.0
                self._wait(issued)
                if timeline:
                    index = issued.collective.index
                    timeline.span(f"wait #{index}", "wait", began,
                                  timeline.now(), collective=index)
                if issued.then is not None:
                    issued.then()
            self._synchronized = True
        finally:
            self._reset_step()

    # -- the optimizer's interface ---------------------------------------------

    def step(self, closure=None):
        """Reduces the gradients (unless synchronize() just did) and
        steps the wrapped optimizer."""
        self.synchronize()
        # The next step reduces again, with or without a backward (a rank
        # without data still takes part with zeros).
        self._synchronized = False
        self.steps += 1
        timeline = self.timeline
        if not timeline:
            return self.optimizer.step(closure)
        began = timeline.now()
        result = self.optimizer.step(closure)
        timeline.span("optimizer", "optimizer", began, timeline.now())
        timeline.end_step()
        return result

    def zero_grad(self, set_to_none=True):
        self._forget_skipped_step()
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def _rank_state(self):
        """This rank's part of a checkpoint (see state_dict)."""
        return {
            "format": _STATE_FORMAT, "version": 1,
            "rank": runtime.rank(), "world_size": runtime.size(),
            "steps": self.steps,
            "plan": self._plan_fingerprint,
            "model": self._model_fingerprint,
            "residuals": {n: t.detach().clone()
                          for n, t in self.residuals.items()},
            "velocities": {n: u.detach().clone()
                           for n, (_, u) in self.velocities.items()},
        }

    def state_dict(self, gather=False):
        """The training state a checkpoint must keep: {"optimizer": the
        wrapped optimizer's state_dict (the param groups as momentum
        correction laid them out), "commopt": this rank's residuals and
        momentum-correction velocities, the steps taken, the rank, the
        world size and the fingerprints of the plan and the model}.

        Residuals and velocities differ per rank. Either every rank saves
        its own state_dict() (a file per rank), or, with `gather=True`
        (collective: every rank calls it), rank 0 gets every rank's in
        "commopt" -> "ranks" and the other ranks get None, so that rank 0
        alone writes the checkpoint. docs/Checkpoints.md has both."""
        own = self._rank_state()
        if not gather:
            return {"optimizer": self.optimizer.state_dict(), "commopt": own}
        ranks = _state.gather_objects(own, root_rank=0)
        if ranks is None:
            return None
        return {"optimizer": self.optimizer.state_dict(),
                "commopt": {"format": _STATE_FORMAT, "version": 1,
                            "world_size": runtime.size(), "ranks": ranks}}

    def load_state_dict(self, state, root_rank=0):
        """Restores what state_dict() returned. Collective: every rank
        calls it, with its own file's state, or with a gathered state on
        `root_rank` (None elsewhere), which `root_rank` sends to every
        rank. Raises CommoptError on every rank, naming what differs,
        when the state was saved by another plan, model, world size or
        rank, or the ranks loaded different steps."""
        if isinstance(state, dict) and "param_groups" in state and \
                "commopt" not in state:
            # A plain optimizer's state_dict().
            state = {"optimizer": state}
        gathered = state is None or (
            isinstance(state, dict) and
            "ranks" in state.get("commopt", {}))
        if runtime.size() > 1:
            gathered = _state.any_rank(gathered)
        if gathered:
            state = _state.broadcast_object(
                state if runtime.rank() == root_rank else None, root_rank)
        error, own = self._check_state(state, gathered)
        _state.all_ranks_succeed(error)
        _state.agree("the checkpoint",
                     {"its step count": str(own["steps"])})
        self.optimizer.load_state_dict(state["optimizer"])
        with torch.no_grad():
            for name, tensor in own["residuals"].items():
                self.residuals[name].copy_(tensor)
            for name, tensor in own["velocities"].items():
                self.velocities[name][1].copy_(tensor)
        self.steps = own["steps"]
        self._synchronized = False
        self._reset_step()

    def _check_state(self, state, gathered):
        """(None, this rank's part of `state`) when it can load here, else
        (the reason, None)."""
        rank, size = runtime.rank(), runtime.size()
        if not isinstance(state, dict) or "optimizer" not in state:
            return "the state is not a DistributedOptimizer.state_dict()", None
        part = state.get("commopt")
        if part is None:
            if self.residuals or self.velocities:
                return ("the state holds no residuals or velocities (a plain "
                        "optimizer's state_dict?), which this plan's sparse "
                        "collectives need; save DistributedOptimizer."
                        "state_dict()"), None
            own = {"steps": 0, "residuals": {}, "velocities": {}}
            return None, own
        if part.get("format") != _STATE_FORMAT or part.get("version") != 1:
            return (f"the state's format is {part.get('format')!r} version "
                    f"{part.get('version')!r}, expected {_STATE_FORMAT!r} "
                    "version 1"), None
        if part.get("world_size") != size:
            return (f"the checkpoint was saved by {part.get('world_size')} "
                    f"ranks, this job has {size}: residuals and velocities "
                    "are per rank and do not move between world sizes; load "
                    "state['optimizer'] into the wrapped optimizer instead "
                    "(the residuals start again from zero)"), None
        if gathered:
            ranks = part.get("ranks", [])
            if len(ranks) != size:
                return (f"the gathered state holds {len(ranks)} ranks, this "
                        f"job has {size}"), None
            own = ranks[rank]
        else:
            own = part
        if own.get("rank") != rank:
            return (f"this is rank {own.get('rank')}'s state, loaded on rank "
                    f"{rank}: each rank loads its own"), None
        if own.get("plan") != self._plan_fingerprint:
            return ("the checkpoint was saved with another plan (fingerprint "
                    f"{str(own.get('plan'))[:12]}..., this plan's "
                    f"{self._plan_fingerprint[:12]}...)"), None
        if own.get("model") != self._model_fingerprint:
            return ("the checkpoint was saved for another model (its "
                    "parameters' names, shapes or dtypes differ)"), None
        for kind, mine in (("residuals", self.residuals),
                           ("velocities", {n: u for n, (_, u) in
                                           self.velocities.items()})):
            theirs = own.get(kind, {})
            if set(theirs) != set(mine):
                return (f"the checkpoint's {kind} are of "
                        f"{sorted(theirs)}, this plan's of "
                        f"{sorted(mine)}"), None
            for name, tensor in theirs.items():
                if tuple(tensor.shape) != tuple(mine[name].shape):
                    return (f"the checkpoint's {kind[:-1]} of '{name}' has "
                            f"shape {list(tensor.shape)}, expected "
                            f"{list(mine[name].shape)}"), None
        return None, own

    def remove_hooks(self):
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
        self._accumulators.clear()


_STATE_FORMAT = "commopt-optimizer-state"


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Gives every rank `root_rank`'s optimizer state (a torch optimizer,
    or a DistributedOptimizer's wrapped one and its step count), as
    Horovod's broadcast_optimizer_state does: after rank 0 alone loaded a
    checkpoint. Residuals and velocities, which are per rank, stay as
    they are. Collective."""
    runtime.init()
    distributed = isinstance(optimizer, DistributedOptimizer)
    inner = optimizer.optimizer if distributed else optimizer
    state = {"optimizer": inner.state_dict(),
             "steps": optimizer.steps if distributed else None}
    state = _state.broadcast_object(state, root_rank)
    if runtime.rank() != root_rank:
        inner.load_state_dict(state["optimizer"])
        if distributed:
            optimizer.steps = state["steps"]


def broadcast_parameters(params, root_rank=0):
    """Overwrites `params` (a state_dict, or (name, tensor) pairs) with
    `root_rank`'s values on every rank, in name order. Floating-point
    tensors of f32, f64, f16 and bf16 are broadcast; integer ones (e.g.
    batch norm's counters) as the bits of a float of their size, and
    8-bit ones and bools through f64, so that every value arrives exactly;
    other dtypes are an error."""
    runtime.init()
    items = params.items() if hasattr(params, "items") else params
    for name, tensor in sorted(items, key=lambda item: item[0]):
        _collectives.broadcast_(tensor, root_rank, name)
