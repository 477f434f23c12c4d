"""Where the time of a model's training step goes, op by op (issue 29): numgrad's profiler and
PyTorch's over the same steps of ``models.py``, each table sorted by self time.

    python benchmarks/profile_step.py [MODEL ...] [--steps N] [--rows N]

MODEL is a prefix of a name in ``models.MODELS`` (all of them by default). Each step is run
twice first (kernels compiled), then ``--steps`` steps are profiled.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("NUMGRAD_QUIET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MODELS  # noqa: E402

import numgrad  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is optional here
    torch = None


def profile(m, make, steps: int, rows: int) -> None:
    step = make(m)
    step()
    step()
    with m.autograd.profiler.profile() as prof:
        for _ in range(steps):
            step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rows", type=int, default=20)
    args = parser.parse_args()
    if torch:
        torch.set_num_threads(2)
    for name, make in MODELS.items():
        if args.models and not any(name.startswith(p) for p in args.models):
            continue
        for m in (numgrad, torch) if torch else (numgrad,):
            print(f"== {name}: {m.__name__} {m.__version__}, {args.steps} steps")
            profile(m, make, args.steps, args.rows)


if __name__ == "__main__":
    main()
