"""``numgrad.compile``: trace a function (a training step, forward and backward and the optimizer's
update) once per guard key, and replay the recorded kernel calls on later calls.

The first call with a new key runs the function eagerly while recording (``tracer.py``); its
results and effects are eager's. A later call whose guard holds (``program.py``: the arguments'
shapes, dtypes, layouts and requires_grad, grad mode, the tensors it reads from outside, the
optimizers' hyperparameters and state, the modules' training flags, the Python values it reads)
replays the record: the kernels alone, without the op registry, the autograd engine or any tensor
in between, and then leaves the same effects (``.grad``, parameters, optimizer state, version
counters) and returns the same kind of value.

A step whose tensors are all on CUDA is traced on the CUDA kernels (``registry._cuda_kernels``
swapped for the recording module, as ``registry.cpu_kernels`` is for the CPU); its elementwise
runs become generated ``numba.cuda`` kernels (``lower.segment_source``), the rest stays kernel
calls. Tensors of both devices run eagerly.

A key whose Python must run at every call (Python effects a replay would skip, values no guard
can follow, a value read from a tensor) takes the re-run path (``rerun.py``): its Python runs as
in eager, its kernel calls are recorded against the trace's and run fused. What a trace cannot
hold at all (the data leaving as an array, a write outside the kernels, hooks, an op that
computes outside the kernels): with ``fullgraph=True`` a ``GraphBreak`` naming it and the user's
line; otherwise one warning, and that key runs eagerly from then on. A call whose guard holds for
no recorded key traces again, up to ``cache_size_limit`` keys; then it runs eagerly, with one
warning.
"""
from __future__ import annotations

import functools
import threading
import warnings
from time import perf_counter

from .traced import GraphBreak, active_trace
from ..autograd import anomaly_mode, grad_mode
from ..tensor import Tensor
from .. import _lazy

__all__ = ["compile", "explain", "GraphBreak"]

cache_size_limit = 8  # keys traced per function before it runs eagerly (torch.compile's limit)
choose_faster = True  # a re-run key keeps whichever of re-run and eager is faster (False: re-run)
_TRACING = threading.Lock()  # one trace at a time: it swaps the registry's kernels


class _Eager:
    """The replay of a key that cannot be replayed: the function itself, eagerly."""

    def __init__(self, fn, reason: str):
        self.fn, self.reason = fn, reason

    def __call__(self, args, kwargs):
        return self.fn(*args, **kwargs)


class _Rerun:
    """The replay of a key whose Python must run at every call (``rerun.py``): the function
    itself, its kernel calls recorded against a trace's and run fused. ``plans``: one per trace,
    the latest first (a call whose recorded calls keep leaving the trace's traces again)."""

    STALE = object()  # (what a call answers that should trace again instead)
    SAMPLES = 3  # calls timed each way before the faster is kept

    def __init__(self, plan, reason: str):
        self.plans, self.reason = [plan], reason
        # Both ways give eager's results, so the faster one is kept: recording costs a few
        # microseconds per op, which a step of small tensors does not win back. The first calls
        # alternate (those that compiled a program are not timed), then the faster is kept.
        self.times: dict = {"re-run": [], "eager": []}
        self.eager = None  # (None: still timing; then whether the calls run eagerly)

    def __call__(self, args, kwargs, may_trace: bool = False):
        rerun = _lazy.module("compiler.rerun")
        times = self.times
        if not choose_faster:
            pass
        elif self.eager or (self.eager is None and len(times["eager"]) < len(times["re-run"])):
            start = perf_counter()
            result = self.plans[0].fn(*args, **kwargs)
            if self.eager is None:
                times["eager"].append(perf_counter() - start)
                self._choose()
            else:
                self.plans[0].counts["eager, faster"] += 1
            return result
        programs = sum(len(plan.programs) for plan in self.plans)
        start = perf_counter()
        with _TRACING:  # (the registry's kernels are swapped while it runs)
            result = rerun.run(self.plans, args, kwargs, may_trace)
        if result is rerun.STALE:
            return self.STALE
        if choose_faster and self.eager is None and \
                programs == sum(len(plan.programs) for plan in self.plans):
            times["re-run"].append(perf_counter() - start)
            self._choose()
        return result

    def _choose(self) -> None:
        times = self.times
        if min(len(times["re-run"]), len(times["eager"])) >= self.SAMPLES:
            median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
            self.eager = median["eager"] < median["re-run"]
            self.choice = (f"{'eagerly' if self.eager else 're-run'}, the faster here: "
                           f"{median['re-run'] * 1e3:.3g} ms re-run, "
                           f"{median['eager'] * 1e3:.3g} ms eagerly per call")

    def counts(self) -> dict:
        total: dict = {}
        for plan in self.plans:
            for how, n in plan.counts.items():
                total[how] = total.get(how, 0) + n
        return total


class CompiledFunction:
    """``fn`` compiled: called like it, with the same results and effects."""

    def __init__(self, fn, fullgraph: bool = False):
        self._fn = fn
        self._fullgraph = fullgraph
        self._entries: list = []  # [(guard, replay or _Eager)]
        self._warned = False
        self.traces = 0  # how many keys have been traced
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if active_trace() is not None:  # (called by a function being traced or re-run: its
            return self._fn(*args, **kwargs)  # kernel calls are that function's)
        for guard, replay in self._entries:
            if guard(args, kwargs):
                if type(replay) is _Rerun:
                    result = replay(args, kwargs, self.traces < cache_size_limit)
                    if result is not _Rerun.STALE:
                        return result
                    return self._trace(args, kwargs, into=replay)  # (its plans keep missing)
                if type(replay) is _Eager:
                    return replay(args, kwargs)
                try:
                    return replay(args, kwargs)
                except Exception:
                    # (a kernel raised before the replay changed anything: ``program.py``
                    # keeps no replay that may raise after a write. Eager raises as it raises,
                    # with eager's effects up to there)
                    return self._fn(*args, **kwargs)
        if anomaly_mode.state.enabled:
            self._warn("anomaly mode is on (it needs every op's Python frames)")
            return self._fn(*args, **kwargs)
        if self.traces >= cache_size_limit:
            self._warn(f"it was traced for {cache_size_limit} keys already "
                       "(numgrad.compiler.cache_size_limit)")
            return self._fn(*args, **kwargs)
        return self._trace(args, kwargs)

    def _warn(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            name = getattr(self._fn, "__qualname__", repr(self._fn))
            warnings.warn(f"numgrad.compile runs {name} eagerly: {why}", RuntimeWarning,
                          stacklevel=3)

    def _trace(self, args, kwargs, into=None):
        aot, program, soundness, tracer = (_lazy.module("compiler." + name) for name in (
            "aot", "program", "soundness", "tracer"))
        with _TRACING:
            found = tracer.discover(self._fn, args, kwargs)
            device = tracer.device_of(found)
            guard, refs, namespace = program.guard_for(self._fn, found, args, kwargs)
            if device is None:
                # (a step on tensors of both devices: it runs eagerly, its guard kept, so that
                # later calls do not trace again)
                why = "a step on both CPU and CUDA tensors"
                self.traces += 1
                if self._fullgraph:
                    raise GraphBreak(why)
                self._warn(f"it cannot trace {why}")
                self._entries.append((guard, _Eager(self._fn, why)))
                return self._fn(*args, **kwargs)
            watch = soundness.Watch(found, args, kwargs)
            audit = watch.audit(tracer._user_code)
            trace, before = tracer.begin(found, device)
            trace.fullgraph = self._fullgraph
            try:
                with audit:
                    result = self._fn(*args, **kwargs)
                aot_info = None
                if trace.broken is None and grad_mode.state.enabled:
                    outs = aot.live_outputs(result)
                    if outs and trace.device != "cpu":
                        aot_info = ("it returns a tensor whose graph is still alive, on CUDA "
                                    "(its backward is traced on the CPU only, for now)")
                    elif outs:  # (its backward will run outside: traced now, replayed then)
                        try:
                            aot_info = aot.trace_backward(trace, found, outs)
                        except Exception as error:  # (eager raises it at backward(), if ever)
                            aot_info = (f"its result's backward raises {type(error).__name__} "
                                        "(eager raises it only when backward() is called)")
            except BaseException:
                tracer.end(trace)
                _finish(found, None, before)  # (the tensors get their plain arrays back)
                raise
            tracer.end(trace)
            self.traces += 1
            try:
                if trace.broken is not None:
                    raise program.NotReplayable(str(trace.broken))
                if isinstance(aot_info, str):
                    raise program.NotReplayable(aot_info)
                # (a first step made state: trace again next; a float setting that changed, a
                # learning rate a scheduler stepped in the call, is the re-run path's number)
                floats_changed = not tracer.stable(trace, found)
                if floats_changed and not tracer.stable(trace, found, floats=False):
                    return _finish(found, result, before)
                problem, extra = watch.problem(audit, tracer._global_names)
                if floats_changed and problem is None:  # (no effect found: not kept)
                    return _finish(found, result, before)
                if problem is None and "unguardable" in found:
                    problem = found["unguardable"]
                if problem is not None or trace.reads is not None:
                    # Its Python must run at every call: on the re-run path where it can, else
                    # eagerly. Python effects or values no guard can follow: whatever a later
                    # call's Python values, it is not traced again. A value read (logging a
                    # loss): the guard picks the key as for a replay.
                    if problem is not None:
                        guard = _always
                    elif extra:
                        guard = _with_checks(guard, extra)
                    why = problem or f"its Python reads a value: {trace.reads}"
                    entry = _rerun_entry(self._fn, trace, refs, namespace, why, aot_info)
                    if type(entry) is _Eager:
                        raise program.NotReplayable(entry.reason)
                    if into is not None:  # (a new plan for the key whose plans kept missing)
                        into.plans.insert(0, entry.plans[0])
                    else:
                        self._entries.append((guard, entry))
                    return _finish(found, result, before)
                if extra:
                    guard = _with_checks(guard, extra)
                replay, _ = program.replay_for(self._fn, trace, found, before, refs, namespace,
                                               result, aot_info)
                self._entries.append((guard, replay))
            except program.NotReplayable as why:
                if self._fullgraph:
                    raise GraphBreak(str(why)) from None
                self._warn(str(why))
                self._entries.append((guard, _Eager(self._fn, str(why))))
            return _finish(found, result, before)


def explain(fn) -> str:
    """How ``numgrad.compile`` runs ``fn`` (a compiled function or module), one line per key
    traced so far: "replayed" (the fused program, its guard checked at each call) or "eager"
    with the reason (something a replay could not reproduce exactly: the call then runs the
    function itself, so its results and effects are eager's)."""
    compiled = getattr(fn, "_compiled_forward", None) or getattr(fn, "_compiled_call", None) \
        or fn
    if not isinstance(compiled, CompiledFunction):
        raise TypeError(f"explain() takes a function or module made by numgrad.compile, not "
                        f"{type(fn).__name__}")
    name = getattr(compiled._fn, "__qualname__", repr(compiled._fn))
    lines = [f"{name}: {compiled.traces} key(s) traced, {len(compiled._entries)} kept"]
    for k, (_, replay) in enumerate(compiled._entries):
        if type(replay) is _Eager:
            lines.append(f"  key {k}: eager, because {replay.reason}")
        elif type(replay) is _Rerun:
            counts = ", ".join(f"{n} {how}" for how, n in replay.counts().items() if n)
            lines.append(f"  key {k}: re-run (its Python at every call, its kernels recorded and "
                         f"run fused; calls so far: {counts or 'none'}), because "
                         f"{replay.reason}")
            if replay.eager is not None:
                lines.append(f"    runs {replay.choice}")
        else:
            lines.append(f"  key {k}: replayed as a fused program")
    return "\n".join(lines)


def _rerun_entry(fn, trace, refs, namespace, problem: str, aot_info):
    """The entry of a function whose Python must run at every call: the re-run path's, or the
    function eagerly where the trace holds what that path cannot record."""
    rerun = _lazy.module("compiler.rerun")
    if aot_info is not None:
        return _Eager(fn, problem + "; and it returns a tensor whose graph is alive, which the "
                      "re-run path does not record yet")
    try:
        return _Rerun(rerun.Plan(fn, trace, refs, namespace), problem)
    except rerun.Unsupported as why:
        return _Eager(fn, f"{problem}; and {why}")


def _always(args, kwargs) -> bool:
    return True


def _with_checks(guard, checks):
    """``guard``, and the Python values ``checks`` reads as they were (user code that the scan
    before the trace did not reach read them)."""

    def checked(args, kwargs):
        return guard(args, kwargs) and all(get() == value for get, value in checks)

    return checked


def _finish(found, result, before):
    """The tensors the trace touched get plain arrays back (their own, where unchanged); so
    does the result."""
    tracer = _lazy.module("compiler.tracer")
    for t in found["tensors"].values():
        tracer.untrace(t, before.get(id(t)))
    for extra in tracer.discover_state(found):
        tracer.untrace(extra)
    return _plain_result(result)


def _plain_result(result):
    tracer = _lazy.module("compiler.tracer")
    if isinstance(result, Tensor):
        tracer.untrace(result)
    elif isinstance(result, (tuple, list)):
        for r in result:
            _plain_result(r)
    elif isinstance(result, dict):
        for r in result.values():
            _plain_result(r)
    return result


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="numgrad", mode=None,
            options=None, disable: bool = False):
    """Compiles ``model`` (a function or a module) as ``torch.compile`` does: traced on its
    first call per guard key, its kernel calls replayed after. Usable as ``numgrad.compile(fn)``,
    ``@numgrad.compile`` and ``@numgrad.compile(fullgraph=True)``. ``dynamic``, ``backend``,
    ``mode`` and ``options`` are accepted for PyTorch's signature; ``disable=True`` returns
    ``model`` itself."""
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if disable:
        return model
    if isinstance(model, _lazy.module("nn.modules.module").Module):
        optimized_module = _lazy.module("compiler.optimized_module")
        return optimized_module.OptimizedModule(model, CompiledFunction(model.__call__,
                                                                        fullgraph=fullgraph))
    return CompiledFunction(model, fullgraph=fullgraph)

