"""numgrad.func against torch.func: issue 30's goals, side by side, in one process.

    python benchmarks/func_transforms.py [--repeat N]

1. Per-sample gradients of an MLP (784 -> 128 -> 128 -> 10, three Linear layers, float32, batch
   64) with ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` over ``functional_call``;
   also the two-layer 784 -> 128 -> 10.
2. The Jacobian of a function R^8 -> R^256 (``tanh(W2 tanh(W1 x))``) by ``jacfwd`` and by
   ``jacrev`` (forward mode should win on a wide output, as in PyTorch).
3. ``numgrad.compile`` of a function calling ``vmap(grad(...))`` and ``jacfwd``: compiled or
   run eagerly, its results eager's (bit for bit, three calls).

Each is timed as the median of ``--repeat`` calls, numgrad and PyTorch alternating, in wall
time and in the process's CPU time (steadier on a shared machine); PyTorch runs with two
threads, as the issues measure it.
The asv class ``FuncTransforms`` times the numgrad side alone.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402  (the checkout's numgrad)

import numgrad  # noqa: E402


def _mlp(m, widths):
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [m.nn.Linear(a, b), m.nn.ReLU()]
    return m.nn.Sequential(*layers[:-1])


def per_sample_grads(m, func, widths=(784, 128, 128, 10), batch=64, seed=0):
    """(the call to time, its model): per-sample gradients of cross entropy."""
    rng = np.random.default_rng(seed)
    model = _mlp(m, widths)
    x = m.tensor(rng.standard_normal((batch, widths[0])).astype(np.float32))
    y = m.tensor(rng.integers(0, widths[-1], batch))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        out = func.functional_call(model, p, (xi.unsqueeze(0),))
        return m.nn.functional.cross_entropy(out, yi.unsqueeze(0))

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))
    return lambda: per_sample(params, x, y)


def wide_jacobian(m, func, mode, n_in=8, hidden=64, n_out=256, seed=0):
    rng = np.random.default_rng(seed)
    w1 = m.tensor(rng.standard_normal((hidden, n_in)).astype(np.float32) / 3)
    w2 = m.tensor(rng.standard_normal((n_out, hidden)).astype(np.float32) / 8)
    x = m.tensor(rng.standard_normal(n_in).astype(np.float32))

    def f(x):
        return m.tanh(w2 @ m.tanh(w1 @ x))

    jac = (func.jacfwd if mode == "fwd" else func.jacrev)(f)
    return lambda: jac(x)


def _once(fn):
    """(wall, CPU) milliseconds of one call: the CPU time (of every thread of the process)
    is the steadier one on a machine shared with other work."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def _side_by_side(name, ours, theirs, repeat):
    ours(), theirs()  # (warm: compiled kernels, caches)
    a, b = [], []
    for _ in range(repeat):  # (alternating, so that load on the machine hits both alike)
        a.append(_once(ours))
        b.append(_once(theirs))
    wa, wb = (statistics.median(x[0] for x in a), statistics.median(x[0] for x in b))
    ca, cb = (statistics.median(x[1] for x in a), statistics.median(x[1] for x in b))
    print(f"{name:40s} wall: numgrad {wa:8.3f} ms torch {wb:8.3f} ms ratio {wa / wb:5.2f} | "
          f"CPU: {ca:8.3f} / {cb:8.3f} ms ratio {ca / cb:5.2f}")
    return wa, wb


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args(argv)
    import torch
    import torch.func

    torch.set_num_threads(2)
    torch.manual_seed(0)
    import numgrad.func

    for widths in ((784, 128, 128, 10), (784, 128, 10)):
        label = "per-sample grads " + "-".join(map(str, widths)) + ", batch 64"
        _side_by_side(label, per_sample_grads(numgrad, numgrad.func, widths),
                      per_sample_grads(torch, torch.func, widths), args.repeat)
    fwd = _side_by_side("jacfwd R^8 -> R^256", wide_jacobian(numgrad, numgrad.func, "fwd"),
                        wide_jacobian(torch, torch.func, "fwd"), args.repeat)
    rev = _side_by_side("jacrev R^8 -> R^256", wide_jacobian(numgrad, numgrad.func, "rev"),
                        wide_jacobian(torch, torch.func, "rev"), args.repeat)
    print(f"jacfwd / jacrev: numgrad {fwd[0] / rev[0]:.2f}, torch {fwd[1] / rev[1]:.2f}")
    _compile_contract()


def _compile_contract():
    """Goal 2 (issue 17's contract): ``numgrad.compile`` of a function that calls ``vmap``,
    ``grad`` and ``jacfwd`` compiles or runs eagerly, with eager's results."""
    import warnings

    import numgrad.func as F

    rng = np.random.default_rng(1)
    x = numgrad.tensor(rng.standard_normal((4, 5)))
    w = numgrad.tensor(rng.standard_normal((3, 5)))

    def step(x, w):
        per_example = F.vmap(F.grad(lambda xi, w: (numgrad.tanh(w @ xi) ** 2).sum(), argnums=1),
                             in_dims=(0, None))(x, w)
        return per_example.sum(0) + F.jacfwd(lambda v: v.sin() * v.sum())(x[0]).sum()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = numgrad.compile(step)
        runs = [compiled(x, w) for _ in range(3)]
    eager = step(x, w)
    same = all(bool((r == eager).all()) for r in runs)
    entries = getattr(compiled, "_entries", None)
    how = f"compiled ({compiled.traces} trace, replayed)" if entries else \
        f"run eagerly ({'; '.join(str(c.message)[:80] for c in caught)})"
    print(f"numgrad.compile of vmap(grad(...)) + jacfwd: {how}; eager's results on 3 calls: "
          f"{same}")


class FuncTransforms:
    """asv: the numgrad side of the goals above. The functions are built and called once per
    process (asv re-runs ``setup`` before every timed call)."""

    number = 5
    repeat = 1
    rounds = 3
    warmup_time = 0.0  # (setup has made the first call)
    _built: dict = {}
    timer = _common.CPU_TIMER

    def setup(self):
        _common.pin_threads()
        if not self._built:
            import numgrad.func

            built = {"per_sample": per_sample_grads(numgrad, numgrad.func),
                     "jacfwd": wide_jacobian(numgrad, numgrad.func, "fwd"),
                     "jacrev": wide_jacobian(numgrad, numgrad.func, "rev")}
            for fn in built.values():
                fn()  # (the first call compiles or loads the kernels)
            self._built.update(built)
        self.per_sample, self.jacfwd, self.jacrev = (
            self._built["per_sample"], self._built["jacfwd"], self._built["jacrev"])

    def time_per_sample_grads_mlp(self):
        self.per_sample()

    def time_jacfwd_wide(self):
        self.jacfwd()

    def time_jacrev_wide(self):
        self.jacrev()


if __name__ == "__main__":
    main()
