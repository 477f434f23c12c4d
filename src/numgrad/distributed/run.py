"""``python -m numgrad.distributed.run``: PyTorch's ``torchrun``, on MPI's ``mpiexec``.

    python -m numgrad.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m numgrad.distributed.run --nnodes 2 --nproc-per-node 4 --hostfile hosts train.py

starts ``nnodes * nproc_per_node`` processes of ``train.py`` with ``mpiexec`` (MPICH's, from
``pip install 'numgrad[distributed]'``; several machines through a host file, one launcher for the
whole job), each with torchrun's environment: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``.
A rank that raises (or dies) ends the job: the others are stopped and the launcher prints
torchrun's failure summary, naming the rank and its traceback, and exits with status 1.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from .. import cuda

__all__ = ["main", "parse_args", "get_args_parser"]


def get_args_parser() -> argparse.ArgumentParser:
    """torchrun's arguments (each with its dashed and underscored spelling), and
    ``--hostfile``: MPI's host file, for several machines."""
    parser = argparse.ArgumentParser(
        prog="python -m numgrad.distributed.run",
        description="numgrad's torchrun: start a script on several processes with mpiexec")

    def option(name: str, **kwargs):
        names = [f"--{name}"]
        if "-" in name:
            names.append(f"--{name.replace('-', '_')}")
        parser.add_argument(*names, dest=name.replace("-", "_"), **kwargs)

    option("nnodes", default="1", help="number of machines, or MIN:MAX (MIN must be MAX here)")
    option("nproc-per-node", default="1", help="processes per machine: a number, 'cpu', 'gpu' "
                                               "or 'auto'")
    option("node-rank", type=int, default=0, help="accepted for torchrun's sake: mpiexec "
                                                  "places the ranks")
    option("master-addr", default="127.0.0.1", help="MASTER_ADDR given to the processes")
    option("master-port", type=int, default=29500, help="MASTER_PORT given to the processes")
    option("rdzv-backend", default="static")
    option("rdzv-endpoint", default="")
    option("rdzv-id", default="none")
    option("rdzv-conf", default="")
    option("standalone", action="store_true")
    option("max-restarts", type=int, default=0)
    option("monitor-interval", type=float, default=0.1)
    option("start-method", default="spawn")
    option("role", default="default")
    option("log-dir", default=None, help="with --redirects: the folder of the processes' logs "
                                          "(<log-dir>/<run id>/attempt_0/<rank>/stdout.log)")
    option("redirects", default="0", help="send the processes' output to files: 1 stdout, 2 "
                                          "stderr, 3 both")
    option("tee", default="0")
    option("local-ranks-filter", default="", help="show the output of these local ranks only "
                                                  "(comma-separated)")
    option("local-addr", default=None)
    option("run-path", action="store_true")
    option("no-python", action="store_true", help="run the script as a program, not Python")
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the script as a module (python -m)")
    option("hostfile", default=None, help="MPI host file: one machine a line (host or "
                                          "host:slots)")
    parser.add_argument("training_script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def parse_args(args=None) -> argparse.Namespace:
    return get_args_parser().parse_args(args)


def _mpiexec() -> str:
    """MPICH's ``mpiexec`` beside this Python (the ``mpich`` wheel's), else one on the PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.access(here, os.X_OK) else shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("numgrad.distributed.run starts processes with MPI's mpiexec, which "
                           "is not installed: pip install 'numgrad[distributed]'")
    return found


def _processes_per_node(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if value == "gpu":
        if not cuda.is_available():
            raise ValueError("Cuda is not available.")
        return cuda.device_count()
    return int(value)


def _nodes(value: str) -> int:
    low, _, high = value.partition(":")
    if high and int(high) != int(low):
        raise ValueError(f"--nnodes {value}: numgrad's launcher is not elastic; give one number")
    return int(low)


def command(args: argparse.Namespace) -> tuple:
    """The ``mpiexec`` command line and the environment it runs with."""
    nodes, per_node = _nodes(args.nnodes), _processes_per_node(args.nproc_per_node)
    if args.max_restarts:
        raise ValueError("--max-restarts: numgrad's launcher does not restart failed workers")
    if nodes > 1 and args.hostfile is None:
        raise ValueError(f"--nnodes {nodes}: MPI starts the processes of every machine from "
                         "here, and needs their names: give --hostfile FILE (one host a line)")
    line = [_mpiexec(), "-n", str(nodes * per_node)]
    if args.hostfile is not None:
        line += ["-f", args.hostfile, "-ppn", str(per_node)]
    how = "program" if args.no_python else "module" if args.module else "script"
    line += [sys.executable, "-m", "numgrad.distributed._worker", how, args.training_script,
             *args.training_script_args]
    if args.tee != "0":
        raise ValueError("--tee: numgrad's launcher shows the output or (--redirects with "
                         "--log-dir) writes it to files, not both")
    env = dict(os.environ)
    run_id = args.rdzv_id if args.rdzv_id != "none" else uuid.uuid4().hex
    if args.redirects != "0":
        if args.log_dir is None:
            raise ValueError("--redirects needs --log-dir (where the files go)")
        env["NUMGRAD_REDIRECTS"] = os.path.join(os.path.abspath(args.log_dir), run_id,
                                                "attempt_0") + ":" + args.redirects
    if args.local_ranks_filter:
        env["NUMGRAD_LOCAL_RANKS_FILTER"] = args.local_ranks_filter
    address, port = args.master_addr, str(args.master_port)
    if args.rdzv_endpoint:  # (torchrun's multi-machine form: host:port)
        address, _, given = args.rdzv_endpoint.partition(":")
        port = given or port
    env.update(MASTER_ADDR=address, MASTER_PORT=port,
               TORCHELASTIC_RUN_ID=run_id,
               TORCHELASTIC_RESTART_COUNT="0", TORCHELASTIC_MAX_RESTARTS="0",
               NUMGRAD_NPROC_PER_NODE=str(per_node), NUMGRAD_ROLE=args.role)
    return line, env


def _rank_of(reports: str, pid) -> int | None:
    for name in os.listdir(reports):
        if name.startswith("rank") and name.endswith(".pid"):
            with open(os.path.join(reports, name)) as f:
                if f.read().strip() == str(pid):
                    return int(name[4:-4])
    return None


def _summary(script: str, reports: str, code: int, culprit=None) -> str:
    """torchrun's failure summary: the first rank that reported an error is the root cause."""
    failures = []
    for name in os.listdir(reports):
        if name.startswith("rank") and name.endswith(".err"):
            path = os.path.join(reports, name)
            failures.append((os.path.getmtime(path), int(name[4:-4]), path))
    failures.sort()
    line = "=" * 60
    host = socket.gethostname()
    out = [line, f"{script} FAILED", "-" * 60, "Failures:"]
    blocks = []
    for when, rank, path in failures:
        with open(path) as f:
            trace = f.read().rstrip()
        blocks.append([f"  time      : {time.strftime('%Y-%m-%d_%H:%M:%S', time.localtime(when))}",
                       f"  host      : {host}", f"  rank      : {rank}",
                       f"  exitcode  : 1", f"  error_file: {path}",
                       "  traceback : " + trace.replace("\n", "\n              ")])
    for k, block in enumerate(blocks[1:], 1):
        out += [f"[{k}]:", *block]
    if len(blocks) < 2:
        out.append("  <NO_OTHER_FAILURES>")
    out += ["-" * 60, "Root Cause (first observed failure):", "[0]:"]
    if blocks:
        out += blocks[0]
    else:
        signal = f" (killed by signal {code - 128 if code > 128 else code})" \
            if code in (9, 15) or code > 128 else ""
        rank = _rank_of(reports, culprit) if culprit is not None else None
        out += [f"  host      : {host}"]
        if rank is not None:
            out.append(f"  rank      : {rank}")
        out += [f"  exitcode  : {code}{signal}" + (f" (pid: {culprit})" if culprit else ""),
                "  error_file: <N/A>",
                "  traceback : the rank ended without a Python traceback (killed, or it exited "
                "with an error status); mpiexec stopped the others"]
    out.append(line)
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    """Runs the job; its exit status (0, or 1 after a failure, as torchrun's)."""
    line, env = command(args)
    with tempfile.TemporaryDirectory(prefix="numgrad-run-") as reports:
        env["NUMGRAD_ERROR_DIR"] = reports
        job = subprocess.Popen(line, env=env, stdout=subprocess.PIPE)
        # (stopping the launcher stops the job: mpiexec stops its processes on SIGINT, Ctrl-C,
        # and forces them on a second one; it does not on SIGTERM)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda number, frame: job.send_signal(signal.SIGINT))
        code, culprit = _forward(job)
        if code == 0:
            return 0
        print(_summary(args.training_script, reports, code, culprit), file=sys.stderr)
        return 1


def _forward(process) -> tuple:
    """Passes mpiexec's output through as it comes; its exit status, and the PID its message
    names where a process ended badly (None if none)."""
    out = sys.stdout.buffer
    tail = b""
    while True:
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            break
        out.write(chunk)
        out.flush()
        tail = (tail + chunk)[-8192:]
    found = re.findall(rb"PID (\d+) RUNNING AT", tail)
    return process.wait(), int(found[0]) if found else None


def main(args=None) -> None:
    sys.exit(run(parse_args(args)))


if __name__ == "__main__":
    main()
