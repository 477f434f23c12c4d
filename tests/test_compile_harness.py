"""Every registered op's samples, compiled (issue 13): forward and backward under
``numgrad.compile`` give eager's values, dtypes and input gradients, in float64 and float32.

The samples of one op are traced into one program (one compile per op and dtype, to keep CI's
time), called on fresh values each time: the first call traces, the later ones replay, and each is
compared with eager on the same values. The samples that cannot be lowered are listed in
``NOT_LOWERED``, with why; they must fall back to eager (with the warning; or, where a value
read is all, run on the re-run path: ``RERUN``) and still give eager's
results, and every other sample must replay without falling back.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import numgrad
from numgrad.ops import REGISTRY

# (op, sample index): why its trace cannot be replayed.
NOT_LOWERED = {
    ("as_strided_view", 0): "a view's positions in its base are read off its data (NumPy)",
    ("as_strided_view", 1): "a view's positions in its base are read off its data (NumPy)",
    ("as_strided_view", 2): "a view's positions in its base are read off its data (NumPy)",
    ("index", 6): "an index given as a Python list becomes an array outside the kernels",
    ("index", 7): "a boolean scalar index becomes an array outside the kernels",
    ("index_put", 6): "its values' tensor is built from Python data inside the function",
    ("masked_select", 0): "its result's shape depends on the mask's values (a read: re-run)",
    ("masked_scatter", 0): "the mask's count of True is read to check the source's size",
    ("masked_scatter", 1): "the mask's count of True is read to check the source's size",
    ("bincount", 0): "its result's length depends on the largest value (a read: a break)",
    ("bincount", 1): "its result's length depends on the largest value (a read: a break)",
    ("histc", 0): "min=max=0: the range is read off the data (a read: a break)",
    ("one_hot", 0): "the classes are read to check them (and to count them)",
    ("one_hot", 1): "the classes are read to check them against num_classes",
    ("masked_select", 1): "its result's shape depends on the mask's values (a read: re-run)",
    ("nll_loss_backward", 0): "the backward op's sample builds its target from Python data",
    ("nll_loss_backward", 1): "the backward op's sample builds its target from Python data",
    ("nll_loss_backward", 2): "the backward op's sample builds its target from Python data",
    ("setitem", 4): "a write at an index list: the positions are computed by NumPy",
    ("setitem", 5): "a write at a mask: the positions are computed by NumPy",
}
# Those whose only obstacle is a value read (a result's shape read off the data): their Python
# runs at every call, on the re-run path, without a warning.
RERUN = {("masked_select", 0), ("masked_select", 1)}
CALLS = 3  # a trace, then replays


def _program(samples, labels=None):
    """One function running every sample on its slice of the arguments, with a backward of a
    weighted sum of the float outputs; it returns the outputs, detached. ``labels`` (a list),
    if given, gets the label of each sample's outputs (``samples`` may be (label, sample)
    pairs)."""
    samples = [s if type(s) is tuple else ("", s) for s in samples]
    sizes = [len(s.shapes) for _, s in samples]

    def fn(*xs):
        outs, k, loss = [], 0, None
        for (label, sample), n in zip(samples, sizes):
            out = sample.call(numgrad, *xs[k:k + n])
            k += n
            for j, o in enumerate(out if isinstance(out, tuple) else (out,)):
                if labels is not None and len(labels) < len(outs) + 1:
                    labels.append(label)
                outs.append(o.detach())
                if o.requires_grad:
                    term = (o * (1.5 + j)).sum()
                    loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        return tuple(outs)

    return fn


def _inputs(samples, dtype, seed):
    """Inputs for ``samples`` in ``dtype``; "both": in float64, then again in float32."""
    if dtype == "both":
        return _inputs(samples, "float64", seed) + _inputs(samples, "float32", seed)
    rng = np.random.default_rng(seed)
    return [numgrad.tensor(rng.uniform(s.low, s.high, size=shape).astype(dtype),
                           requires_grad=s.grad)
            for s in samples for shape in s.shapes]


def _results(fn, xs):
    outs = fn(*xs)
    return [(o.dtype, o.numpy()) for o in outs], [None if x.grad is None else x.grad.numpy()
                                                  for x in xs]


def _assert_same(compiled, eager, what, labels=None):
    (c_outs, c_grads), (e_outs, e_grads) = compiled, eager
    assert len(c_outs) == len(e_outs)
    for k, ((cd, cv), (ed, ev)) in enumerate(zip(c_outs, e_outs)):
        where = f"{what}, output {k}" + (f" ({labels[k]})" if labels else "")
        assert cd is ed, where
        np.testing.assert_array_equal(cv, ev, err_msg=where)
    for cg, eg in zip(c_grads, e_grads):
        assert (cg is None) == (eg is None), what
        if cg is not None:
            np.testing.assert_allclose(cg, eg, rtol=1e-12, atol=0, err_msg=f"{what}: gradients")


OPS = sorted(REGISTRY)
# The ops in groups, one program per group: compiling a program costs about a second, more than
# its size adds, so a few larger programs keep CI's time.
GROUP = 10
GROUPS = [OPS[i:i + GROUP] for i in range(0, len(OPS), GROUP)]


def _lowered(names):
    return [(name, s) for name in names for i, s in enumerate(REGISTRY[name].samples)
            if (name, i) not in NOT_LOWERED]


@pytest.mark.parametrize("names", GROUPS, ids=[f"{g[0]}..{g[-1]}" for g in GROUPS])
def test_compiled_samples_match_eager(names):
    """The samples of a group of ops, in float64 and in float32, in one program."""
    named = _lowered(names)
    lowered = [s for _, s in named]
    both = [(f"{n} float64", s) for n, s in named] + [(f"{n} float32", s) for n, s in named]
    labels = []
    compiled = numgrad.compile(_program(both))
    for call in range(CALLS):
        seed = 7000 + 10 * call
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback
            got = _results(compiled, _inputs(lowered, "both", seed))
        want = _results(_program(both, labels), _inputs(lowered, "both", seed))
        _assert_same(got, want, f"call {call}", labels)
    assert compiled.traces == 1  # (replays after the trace: no re-trace)


@pytest.mark.parametrize("name, index", sorted(NOT_LOWERED))
def test_samples_that_cannot_be_lowered_fall_back_with_eager_results(name, index):
    sample = REGISTRY[name].samples[index]
    compiled = numgrad.compile(_program([sample, sample]))
    if (name, index) in RERUN:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            got = _results(compiled, _inputs([sample], "both", 7100))
        assert "key 0: re-run" in numgrad.compiler.explain(compiled)
    else:
        with pytest.warns(RuntimeWarning, match="runs .* eagerly"):
            got = _results(compiled, _inputs([sample], "both", 7100))
    _assert_same(got, _results(_program([sample, sample]), _inputs([sample], "both", 7100)),
                 f"{name}[{index}], eager fallback")


def test_not_lowered_list_names_real_samples():
    assert all(name in REGISTRY and i < len(REGISTRY[name].samples) for name, i in NOT_LOWERED)
    assert len(NOT_LOWERED) <= 0.05 * sum(len(op.samples) for op in REGISTRY.values())


WARM_PROBE = """
import sys
import numpy as np
import numgrad
sys.path.insert(0, sys.argv[1])
import test_compile_harness as h
out = []
for name in ("add", "mul", "tanh", "sum_dim", "mm", "log_softmax"):
    samples = [s for i, s in enumerate(numgrad.ops.REGISTRY[name].samples)
               if (name, i) not in h.NOT_LOWERED]
    fn = numgrad.compile(h._program(samples))
    for call in range(3):
        outs, grads = h._results(fn, h._inputs(samples, "float64", 11 + call))
    out.append(repr([o[1].tolist() for o in outs] + [g.tolist() for g in grads if g is not None]))
print(len(out), hash(tuple(out)))
"""


def test_a_fresh_process_loads_the_generated_code_and_computes_the_same(tmp_path):
    """With an empty cache a process compiles the programs; a second process with that cache
    loads them (no compilation) and computes the same results."""
    env = dict(os.environ, NUMGRAD_CACHE_DIR=str(tmp_path / "cache"), NUMGRAD_QUIET="1",
               PYTHONHASHSEED="0")
    here = os.path.dirname(os.path.abspath(__file__))
    runs = [subprocess.run([sys.executable, "-c", WARM_PROBE, here], capture_output=True,
                           text=True, env=env, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout == runs[1].stdout
    generated = list((tmp_path / "cache").rglob("*.py"))
    assert generated  # the programs were written there, as content-addressed modules


def _forward_program(samples):
    """Like ``_program``, but the weighted sum is returned with its graph alive: its backward
    runs outside the compiled function (through its ``CompiledFunctionBackward`` node)."""
    sizes = [len(s.shapes) for s in samples]

    def fn(*xs):
        outs, k, loss = [], 0, None
        for sample, n in zip(samples, sizes):
            out = sample.call(numgrad, *xs[k:k + n])
            k += n
            for j, o in enumerate(out if isinstance(out, tuple) else (out,)):
                outs.append(o.detach())
                if o.requires_grad:
                    term = (o * (1.5 + j)).sum()
                    loss = term if loss is None else loss + term
        return (loss, *outs)

    return fn


def _backward_outside(fn, xs):
    loss, *outs = fn(*xs)
    if loss is not None:
        loss.backward()
    return [(o.dtype, o.numpy()) for o in outs], [None if x.grad is None else x.grad.numpy()
                                                  for x in xs]


# The split of a program into a forward and a backward replay does not depend on what each op
# lowers to (the groups above check that): a few groups of ops of every kind keep CI's time
# (float64 only, GROUP ops a program: a program's compile time grows with its size).
AOT_OPS = ["add", "mul", "div", "pow", "tanh", "sigmoid", "relu", "exp", "gelu", "maximum",
           "clamp", "where", "log_softmax", "softmax", "sum_dim", "mean_dim", "cumsum", "sort",
           "mm", "addmm", "addmv", "bmm", "linalg_det", "index", "gather", "cat", "stack",
           "transpose", "permute", "expand", "repeat", "roll", "diag_embed", "pixel_shuffle",
           "nll_loss", "mse_loss", "binary_cross_entropy", "native_batch_norm", "convolution",
           "max_pool2d_with_indices", "avg_pool2d", "upsample_bilinear2d"]
AOT_GROUPS = [AOT_OPS[i:i + GROUP] for i in range(0, len(AOT_OPS), GROUP)]


@pytest.mark.parametrize("names", AOT_GROUPS, ids=[f"{g[0]}..{g[-1]}" for g in AOT_GROUPS])
def test_compiled_forward_with_backward_outside_matches_eager(names):
    """The samples compiled as a forward that returns a loss with a live graph, whose backward
    the caller runs (float64): values and gradients are eager's, and the loss's node is the
    compiled backward's."""
    lowered = [s for _, s in _lowered(names)]
    compiled = numgrad.compile(_forward_program(lowered))
    for call in range(CALLS):
        seed = 7300 + 10 * call
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback
            got = _backward_outside(compiled, _inputs(lowered, "float64", seed))
        want = _backward_outside(_forward_program(lowered), _inputs(lowered, "float64", seed))
        _assert_same(got, want, f"call {call}")
    assert compiled.traces == 1
    loss = compiled(*_inputs(lowered, "float64", 7400))[0]
    assert loss.grad_fn.name() == "CompiledFunctionBackward"
