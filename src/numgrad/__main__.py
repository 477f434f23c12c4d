"""``python -m numgrad``: versions, whether a CUDA GPU is usable, and the seed walkthroughs.
``python -m numgrad warmup [--all] [--jobs N] [NAME ...]``: compiles the kernels of all but the
rarely used ops ahead of use (``--all``: every kernel; NAME ...: those ops only) and prints where
the cache is (``--help`` says more).
``python -m numgrad run script.py [args]``: runs a PyTorch script with ``import torch`` giving
numgrad."""
from __future__ import annotations

import sys

import numpy
import numba
import numgrad
import numgrad as torch
from ._warmup import main as warmup
from ._as_torch import run


def _versions() -> None:
    print(f"numgrad {numgrad.__version__}  numba {numba.__version__}  numpy {numpy.__version__}")
    print(f"CUDA GPU available: {numgrad.cuda.is_available()}")


def walkthrough_basic() -> None:
    """y = x + 2, z = y * y * 3, out = z.mean(), out.backward()."""
    x = torch.ones(2, 2, requires_grad=True)
    print(">>> x = torch.ones(2, 2, requires_grad=True)\n", x, sep="")
    y = x + 2
    print(">>> y = x + 2\n", y, sep="")
    print(">>> y.grad_fn\n", y.grad_fn, sep="")
    z = y * y * 3
    out = z.mean()
    print(">>> z = y * y * 3; out = z.mean()\n", z, "\n", out, sep="")
    out.backward()
    print(">>> out.backward(); x.grad\n", x.grad, sep="")


def walkthrough_requires_grad() -> None:
    """requires_grad_ flips a leaf's flag in place."""
    a = torch.randn(2, 2)
    a = (a * 3) / (a - 1)
    print(">>> a = torch.randn(2, 2); a = (a * 3) / (a - 1); a.requires_grad\n", a.requires_grad,
          sep="")
    a.requires_grad_(True)
    print(">>> a.requires_grad_(True); a.requires_grad\n", a.requires_grad, sep="")
    b = (a * a).sum()
    print(">>> b = (a * a).sum(); b.grad_fn\n", b.grad_fn, sep="")


def walkthrough_vjp() -> None:
    """A graph whose length depends on the data, and a vector-Jacobian product."""
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    turns = 0
    while y.data.norm() < 1000:
        y = y * 2
        turns += 1
    print(f">>> x = torch.randn(3, requires_grad=True); y = x * 2\n"
          f">>> while y.data.norm() < 1000: y = y * 2   # ran {turns} times\n", y, sep="")
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float32)
    y.backward(v)
    print(">>> y.backward(torch.tensor([0.1, 1.0, 0.0001])); x.grad\n", x.grad, sep="")
    print(f"(v * 2**{turns + 1} = {(v * 2 ** (turns + 1)).tolist()})")


def main(argv: list[str]) -> int:
    if argv[:1] == ["warmup"]:
        return warmup(argv[1:])
    if argv[:1] == ["run"]:
        return run(argv[1:])
    if argv:
        print("usage: python -m numgrad [warmup [--all] [--jobs N] [NAME ...] | "
              "run script.py [args]]", file=sys.stderr)
        return 2
    _versions()
    for walk in (walkthrough_basic, walkthrough_requires_grad, walkthrough_vjp):
        print(f"\n# {walk.__doc__}")
        walk()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
