"""DistributedDataParallel and the all-reduce, on MPI, in one run:

    python benchmarks/distributed.py [--steps N] [--batch B] [--width W]

1. A training step (zero_grad, forward, loss, backward, SGD step) of an MLP (256 → W → W → 10,
   float32) under DistributedDataParallel on 2 processes, each with half of a batch of B,
   against the same step of the plain model in 1 process on half the batch: the same
   arithmetic per process, so the difference is what DDP adds (its hooks, packing the buckets,
   the all-reduce, unpacking) and what 2 busy processes cost each other; the plain model's
   step on both processes at once (no communication), then with one mpi4py ``Allreduce`` of
   all its gradients after backward, tell the parts apart.
2. ``numgrad.distributed.all_reduce`` of a float32 tensor against mpi4py's own
   ``comm.Allreduce(MPI.IN_PLACE, array)`` on a NumPy buffer of the same size, 2 processes: the
   median time and the bandwidth (bytes reduced per second), from 4 KiB to 64 MiB.

Each process runs single-threaded (NUMBA_NUM_THREADS=1 and the BLAS thread counts), so that the
2 processes get a core each; the medians are of wall time. The 2-process part runs under
``python -m numgrad.distributed.run`` (this file again, with ``--job``).

Measured on the 2-core development machine, shared with other jobs (load average 6 to 7: the
figures are noisy, and 2 busy processes slow each other down), MPICH 5.0.2 over shared memory:

    1 process, batch 64                                  20.45 ms/step
    2 processes, batch 64 each, no communication         25.06 ms/step
      + one mpi4py Allreduce of all the gradients        48.14 ms/step
    DDP, 2 processes, batch 64 each                      48.57 ms/step  (+0.43 ms over the above)

    all_reduce    numgrad   mpi4py   ratio
      4 KiB        26 us     7.7 us   3.4   (numgrad's fingerprint check is a second exchange)
     64 KiB        84 us      48 us   1.8
      1 MiB       0.7 ms    0.3 to 2.9 ms  (runs of the same size vary that much here)
     16 MiB        13 ms      14 ms   0.9
     64 MiB        79 ms      75 ms   1.05
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SIZES = [2**10, 2**14, 2**18, 2**22, 2**24]  # float32 elements: 4 KiB .. 64 MiB


def _model(width: int):
    import numgrad
    from numgrad import nn

    numgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 10))


def _step_times(model, batch: int, steps: int, seed: int, after_backward=None) -> list:
    """Wall seconds of each training step after 3 warm-up steps (``after_backward(model)``
    between backward and the optimizer's step)."""
    import numpy as np

    import numgrad

    rng = np.random.default_rng(seed)
    x = numgrad.tensor(rng.standard_normal((batch, 256)).astype(np.float32))
    y = numgrad.tensor(rng.integers(0, 10, batch))
    opt = numgrad.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for k in range(steps + 3):
        start = time.perf_counter()
        opt.zero_grad()
        numgrad.nn.functional.cross_entropy(model(x), y).backward()
        if after_backward is not None:
            after_backward(model)
        opt.step()
        if k >= 3:
            times.append(time.perf_counter() - start)
    return times


def _allreduce_flat(model) -> None:
    """The least a data-parallel step communicates: every gradient in one NumPy buffer, one
    mpi4py ``Allreduce``, the averages written back."""
    import numpy as np
    from mpi4py import MPI

    params = list(model.parameters())
    flat = np.concatenate([p.grad.numpy().ravel() for p in params])
    MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, flat)
    flat /= MPI.COMM_WORLD.Get_size()
    start = 0
    for p in params:
        p.grad.numpy()[...] = flat[start:start + p.numel()].reshape(p.shape)
        start += p.numel()


def _median(values: list) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def _allreduce_times(size: int, reps: int) -> tuple:
    """Median seconds of numgrad's all_reduce and of mpi4py's Allreduce, on ``size`` floats."""
    import numpy as np
    from mpi4py import MPI

    import numgrad
    import numgrad.distributed as dist

    comm = MPI.COMM_WORLD
    tensor = numgrad.ones(size)
    array = np.ones(size, np.float32)
    ours, theirs = [], []
    for _ in range(reps):  # (alternating, so that both see the same machine load)
        comm.Barrier()
        start = time.perf_counter()
        dist.all_reduce(tensor)
        ours.append(time.perf_counter() - start)
        comm.Barrier()
        start = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, array)
        theirs.append(time.perf_counter() - start)
    return _median(ours), _median(theirs)


def job(out: str, steps: int, batch: int, width: int) -> None:
    """The 2-process part (under the launcher): rank 0 writes the figures to ``out``."""
    import numgrad.distributed as dist
    from numgrad.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank = dist.get_rank()
    dist.barrier()  # (both processes at once, each on its own half, without communication)
    side_by_side = _step_times(_model(width), batch // dist.get_world_size(), steps, seed=rank)
    dist.barrier()
    by_hand = _step_times(_model(width), batch // dist.get_world_size(), steps, seed=rank,
                          after_backward=_allreduce_flat)
    ddp = DistributedDataParallel(_model(width))
    dist.barrier()
    step = _step_times(ddp, batch // dist.get_world_size(), steps, seed=rank)
    reduce = {size: _allreduce_times(size, 50 if size <= 2**18 else 10) for size in SIZES}
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"step": step, "side_by_side": side_by_side, "by_hand": by_hand,
                       "allreduce": reduce}, f)
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--job", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "MKL_NUM_THREADS"):  # (before numgrad, Numba and NumPy's BLAS are imported)
        os.environ.setdefault(name, "1")
    if args.job is not None:
        return job(args.job, args.steps, args.batch, args.width)
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "figures.json")
        subprocess.run([sys.executable, "-m", "numgrad.distributed.run", "--nproc-per-node",
                        "2", os.path.abspath(__file__), "--job", out, "--steps",
                        str(args.steps), "--batch", str(args.batch), "--width",
                        str(args.width)], check=True, env={**os.environ, "NUMGRAD_QUIET": "1"})
        with open(out) as f:
            figures = json.load(f)
    alone = _step_times(_model(args.width), args.batch // 2, args.steps, seed=0)
    params = sum(p.numel() for p in _model(args.width).parameters())
    ddp, one = _median(figures["step"]), _median(alone)
    two, by_hand = _median(figures["side_by_side"]), _median(figures["by_hand"])
    print(f"MLP 256-{args.width}-{args.width}-10 float32, {params:,} parameters "
          f"({params * 4 / 2**20:.1f} MiB of gradients), batch {args.batch}, median of "
          f"{args.steps} steps")
    half = args.batch // 2
    rows = [(f"1 process, batch {half}", one, ""),
            (f"2 processes, batch {half} each, no communication", two,
             "what sharing the machine costs"),
            ("  + one mpi4py Allreduce of all the gradients", by_hand,
             "the least a data-parallel step communicates"),
            (f"DDP, 2 processes, batch {half} each", ddp,
             f"{(ddp - by_hand) * 1e3:+.2f} ms over the line above")]
    for label, seconds, note in rows:
        print(f"  {label:<50} {seconds * 1e3:7.2f} ms/step" + (f"  ({note})" if note else ""))
    print("all_reduce (SUM, float32, 2 processes): numgrad vs mpi4py on a NumPy buffer")
    print(f"  {'size':>8}  {'numgrad':>10}  {'mpi4py':>10}  {'numgrad GB/s':>12}  "
          f"{'mpi4py GB/s':>11}  ratio")
    for size, (ours, theirs) in figures["allreduce"].items():
        nbytes = int(size) * 4
        label = f"{nbytes // 2**20} MiB" if nbytes >= 2**20 else f"{nbytes // 2**10} KiB"
        print(f"  {label:>8}  {ours * 1e6:8.1f}us  {theirs * 1e6:8.1f}us  "
              f"{nbytes / ours / 1e9:12.2f}  {nbytes / theirs / 1e9:11.2f}  "
              f"{ours / theirs:5.2f}")


if __name__ == "__main__":
    main()
