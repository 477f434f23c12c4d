"""numgrad.distributed (on MPI), DistributedDataParallel, DistributedSampler and the launcher.

The two-process checks run as one job of tests/distributed_script.py under
``python -m numgrad.distributed.run --nproc-per-node 2`` (collectives against NumPy, DDP training
of an MLP and a CNN against single-process training on the whole batch, float64 to 1e-12,
``numgrad.compile`` of a DDP step against eager), started in the background as soon as
collection selects one of them (tests/_background.py), so that it overlaps with the rest of the
suite; the fault tests launch a short script each, and must end with the error within seconds.
Every launch has a hard timeout.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import _background
import pytest

import numgrad
import numgrad.distributed as dist
from numgrad.distributed import run as launcher
from numgrad.utils.data import DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))
LIMIT = 240  # seconds: the hard timeout of one launch (2 processes that compile kernels cold)


def launch(script, *args, options=()):
    """Runs ``script`` on 2 processes with the launcher (and its ``options``), as ``run_job``."""
    return run_job([sys.executable, "-m", "numgrad.distributed.run", "--nproc-per-node", "2",
                    *options, script, *args])


def run_job(line: list):
    """Runs the command ``line``: (returncode, stderr, seconds); past ``LIMIT`` it is killed
    with the processes it started (its session)."""
    start = time.monotonic()
    job = subprocess.Popen(line, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "NUMGRAD_QUIET": "1"}, start_new_session=True)
    try:
        _, err = job.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.communicate()
        pytest.fail(f"{line} still ran after {LIMIT} s")
    return job.returncode, err, time.monotonic() - start


def start_background_run():
    """The one 2-process job of tests/distributed_script.py (in Numba's CUDA simulator, so that
    CUDA tensors are checked without a GPU)."""
    return _background.start(
        "distributed",
        ["-m", "numgrad.distributed.run", "--nproc-per-node", "2",
         os.path.join(HERE, "distributed_script.py"), "{folder}"],
        {"NUMBA_ENABLE_CUDASIM": "1", "NUMGRAD_QUIET": "1"})


@pytest.fixture(scope="module")
def two_ranks():
    run = start_background_run()
    text = run.wait(timeout=LIMIT)
    if run.process.returncode != 0 or not (run.folder / "rank1.json").exists():
        pytest.fail(f"the 2-process job failed:\n{text[-6000:]}")
    return [json.loads((run.folder / f"rank{r}.json").read_text()) for r in range(2)]


@pytest.mark.parametrize("check", [
    "init_and_ranks", "all_reduce_against_numpy", "async_work", "broadcast_gather_scatter",
    "point_to_point_and_groups", "mismatched_collectives_raise",
    "ddp_mlp_and_cnn_equal_full_batch_training", "ddp_no_sync_accumulates_locally",
    "ddp_find_unused_parameters_and_buffers", "ddp_refuses_different_models",
    "sampler_and_loader_in_pytorch_order", "compiled_ddp_step_equals_eager",
    "cuda_tensors_staged_through_the_host",
])
def test_two_processes(two_ranks, check):
    for rank, results in enumerate(two_ranks):
        assert results.get(check) == "ok", f"rank {rank}: {results.get(check, 'did not run')}"


FAULTY = """
import os, sys, time
from datetime import timedelta
import numgrad, numgrad.distributed as dist
dist.init_process_group("gloo")
dist.barrier()  # (both have imported numgrad: from here on, 2 s without the other is a fault)
quick = dist.new_group(timeout=timedelta(seconds=2))
t = numgrad.ones(1000)
for step in range(1000):
    if step == 3 and dist.get_rank() == 1:
        if sys.argv[1] == "raise":
            raise ValueError("rank 1 fails at step 3")
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), 9)
        if sys.argv[1] == "hang":
            time.sleep(60)
    dist.all_reduce(t, group=quick)
"""


@pytest.mark.parametrize("fault, texts", [
    # (rank 1's output hidden by the filter: its failure is still in the summary)
    ("raise --local-ranks-filter 0", ["FAILED", "rank      : 1",
                                      "ValueError: rank 1 fails at step 3"]),
    ("kill", ["FAILED", "rank      : 1", "killed by signal 9"]),
    ("hang", ["[rank0]: Traceback", "[rank0]: numgrad.distributed.DistBackendError: Watchdog "
              "caught collective operation timeout",
              "OpType=ALLREDUCE", "Timeout(ms)=2000", "rank      : 0"]),
])
def test_a_failing_rank_ends_the_job_with_its_error(tmp_path, fault, texts):
    script = tmp_path / "faulty.py"
    script.write_text(textwrap.dedent(FAULTY))
    fault, *options = fault.split()
    code, err, seconds = launch(str(script), fault, options=options)
    assert code == 1
    for text in texts:
        assert text in err, err[-3000:]
    if fault == "raise":
        assert "[rank1]:" not in err and "[rank0]:" not in err
    assert seconds < 60  # (the hung rank would sleep for 60 s: the job ends before)


def test_a_rank_that_fails_before_init_under_plain_mpiexec(tmp_path):
    # (without the launcher, MPI's start-up in init_process_group waits for the rank that never
    # comes: its watchdog ends the wait at the timeout, with the stack of where it waited)
    script = tmp_path / "early.py"
    script.write_text(textwrap.dedent("""
        import os
        from datetime import timedelta
        import numgrad.distributed as dist
        if os.environ["PMI_RANK"] == "1":
            raise ValueError("rank 1 fails before init_process_group")
        dist.init_process_group(timeout=timedelta(seconds=2))
        """))
    code, err, seconds = run_job([launcher._mpiexec(), "-n", "2", sys.executable, str(script)])
    assert code != 0 and "ValueError: rank 1 fails before init_process_group" in err
    assert "Timeout (0:00:02)!" in err and "in init_process_group" in err
    assert "in _mpi_start_up_waits_for_every_process_of_the_job" in err and seconds < 60


def test_before_init_and_imports():
    with pytest.raises(ValueError, match="Default process group has not been initialized, "
                                         "please make sure to call init_process_group."):
        dist.all_reduce(numgrad.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_world_size()
    assert not dist.is_initialized() and dist.is_available()
    # importing numgrad's distributed parts does not import MPI; env:// outside a launched job
    # without RANK raises PyTorch's error; without env://, one process is a world of 1
    code = textwrap.dedent("""
        import os, sys, numgrad, numgrad.distributed as dist, numgrad.nn.parallel
        import numgrad.utils.data
        print('mpi4py' in sys.modules)
        os.environ.pop('RANK', None)
        try:
            dist.init_process_group(init_method='env://')
        except ValueError as error:
            print(error)
        dist.init_process_group()
        print(dist.get_rank(), dist.get_world_size())
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={k: v for k, v in os.environ.items()
                                            if k not in ("RANK", "WORLD_SIZE")})
    assert done.stdout.splitlines() == [
        "False", "Error initializing torch.distributed using env:// rendezvous: environment "
        "variable RANK expected, but not set", "0 1"], done.stderr


@pytest.mark.parametrize("n, replicas, shuffle, drop_last, seed", [
    (23, 2, True, False, 0), (23, 3, True, True, 7), (10, 4, False, False, 0),
    (3, 5, True, False, 1), (100, 3, True, False, 2**33 + 5),
])
def test_distributed_sampler_order_is_pytorchs(n, replicas, shuffle, drop_last, seed):
    import torch.utils.data as tdata

    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=seed,
                                  drop_last=drop_last)
        theirs = tdata.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=seed,
                                          drop_last=drop_last)
        for epoch in (0, 5):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        DistributedSampler(range(4), 2, 2)


def test_launcher_command_line():
    line, env = launcher.command(launcher.parse_args(
        ["--nnodes", "2", "--nproc_per_node", "4", "--hostfile", "hosts", "--master-port",
         "1234", "train.py", "--lr", "0.1"]))
    assert line[1:3] == ["-n", "8"] and line[3:7] == ["-f", "hosts", "-ppn", "4"]
    assert line[-3:] == ["train.py", "--lr", "0.1"] and env["MASTER_PORT"] == "1234"
    with pytest.raises(ValueError, match="--hostfile"):
        launcher.command(launcher.parse_args(["--nnodes", "2", "train.py"]))
    line, _ = launcher.command(launcher.parse_args(["-m", "pkg.train"]))
    assert line[-2:] == ["module", "pkg.train"]
    _, env = launcher.command(launcher.parse_args(["--rdzv-endpoint", "node1:2950", "t.py"]))
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("node1", "2950")
    with pytest.raises(ValueError, match="--redirects needs --log-dir"):
        launcher.command(launcher.parse_args(["--redirects", "3", "train.py"]))
