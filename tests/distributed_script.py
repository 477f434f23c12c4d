"""The checks of tests/test_distributed.py that need 2 processes, in one job (one launch costs
two numgrad imports): ``python -m numgrad.distributed.run --nproc-per-node 2
tests/distributed_script.py OUT_DIR``. Each rank writes ``OUT_DIR/rank<r>.json``: every check's
name with "ok" or its traceback. The expected values are NumPy's and PyTorch's, and
single-process numgrad training on the whole batch.
"""
import json
import os
import sys
import traceback
from datetime import timedelta

import numpy as np

import numgrad
import numgrad.distributed as dist
from numgrad import nn
from numgrad.nn.parallel import DistributedDataParallel as DDP

RESULTS: dict = {}
CHECKS: list = []


def check(fn):
    CHECKS.append(fn)
    return fn


def raises(kind, *texts):
    """A context that expects ``kind`` with every one of ``texts`` in its message."""
    class Expect:
        def __enter__(self):
            return self

        def __exit__(self, k, value, tb):
            assert k is not None, f"expected {kind.__name__}"
            assert issubclass(k, kind), f"expected {kind.__name__}, got {k.__name__}: {value}"
            for text in texts:
                assert text in str(value), f"{text!r} not in {value}"
            return True
    return Expect()


def data(rank: int, shape, dtype):
    rng = np.random.default_rng(100 + rank)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "i":
        return rng.integers(1, 9, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


R = W = None


@check
def init_and_ranks():
    global R, W
    with raises(ValueError, "Default process group has not been initialized"):
        dist.get_rank()
    with raises(ValueError, "Default process group has not been initialized"):
        dist.all_reduce(numgrad.ones(2))
    with raises(ValueError, "world_size 3", "--nproc-per-node 3"):
        dist.init_process_group("mpi", world_size=3)
    # (a safety net only: a collective that waits this long fails the job instead of hanging)
    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=120))
    with raises(ValueError, "trying to initialize the default process group twice!"):
        dist.init_process_group("mpi")
    R, W = dist.get_rank(), dist.get_world_size()
    assert (R, W) == (int(os.environ["RANK"]), 2) and dist.is_initialized()
    assert os.environ["LOCAL_RANK"] == str(R) and dist.is_torchelastic_launched()
    assert dist.get_backend() == "gloo"


@check
def all_reduce_against_numpy():
    reference = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod,
                 dist.ReduceOp.MIN: np.min, dist.ReduceOp.MAX: np.max}
    for dtype in (np.float32, np.float64, np.int64, np.int32):
        for op, fn in reference.items():
            t = numgrad.from_numpy(data(R, (3, 4), dtype).copy())
            dist.all_reduce(t, op=op)
            want = fn(np.stack([data(r, (3, 4), dtype) for r in range(W)]), axis=0)
            assert t.numpy().dtype == np.dtype(dtype)
            np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    t = numgrad.from_numpy(data(R, (5,), np.float64))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    np.testing.assert_allclose(t.numpy(), (data(0, (5,), np.float64) + data(1, (5,), np.float64))
                               / 2, rtol=1e-15)
    b = numgrad.from_numpy(data(R, (7,), np.bool_))
    dist.all_reduce(b)
    np.testing.assert_array_equal(b.numpy(), data(0, (7,), np.bool_) | data(1, (7,), np.bool_))
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        t = numgrad.from_numpy(data(R, (6,), np.int64))
        dist.all_reduce(t, op=op)
        fn = {dist.ReduceOp.BAND: np.bitwise_and, dist.ReduceOp.BOR: np.bitwise_or,
              dist.ReduceOp.BXOR: np.bitwise_xor}[op]
        np.testing.assert_array_equal(t.numpy(), fn(data(0, (6,), np.int64),
                                                    data(1, (6,), np.int64)))
    # no copy: the tensor's own memory is reduced, also through a view of a larger tensor
    base = numgrad.zeros(4, 3, dtype=numgrad.float64)
    row = base[1]
    row.fill_(R + 1.0)
    version = row._version
    dist.all_reduce(row)
    assert base[1].tolist() == [3.0] * 3 and base[0].tolist() == [0.0] * 3
    assert row._version == version + 1
    # a strided view (as gloo does): reduced through a contiguous copy, written back
    base = numgrad.from_numpy(data(R, (4, 6), np.float64))
    view = base[:, ::2].t()
    dist.all_reduce(view)
    both = data(0, (4, 6), np.float64) + data(1, (4, 6), np.float64)
    np.testing.assert_array_equal(base.numpy()[:, ::2], both[:, ::2])
    np.testing.assert_array_equal(base.numpy()[:, 1::2], data(R, (4, 6), np.float64)[:, 1::2])


@check
def async_work():
    t = numgrad.full((1000,), float(R + 1))
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert t.tolist() == [3.0] * 1000
    works = [dist.broadcast(numgrad.full((4,), float(R)), src=1, async_op=True)
             for _ in range(3)]
    assert all(w.wait() for w in works)
    assert dist.barrier(async_op=True).wait()


@check
def broadcast_gather_scatter():
    t = numgrad.from_numpy(data(R, (2, 3), np.float32))
    dist.broadcast(t, src=1)
    np.testing.assert_array_equal(t.numpy(), data(1, (2, 3), np.float32))
    outs = [numgrad.zeros(2, 3, dtype=numgrad.int64) for _ in range(W)]
    dist.all_gather(outs, numgrad.from_numpy(data(R, (2, 3), np.int64)))
    for r in range(W):
        np.testing.assert_array_equal(outs[r].numpy(), data(r, (2, 3), np.int64))
    full = numgrad.zeros(2 * W, 3, dtype=numgrad.float64)
    dist.all_gather_into_tensor(full, numgrad.from_numpy(data(R, (2, 3), np.float64)))
    np.testing.assert_array_equal(full.numpy(), np.concatenate([data(r, (2, 3), np.float64)
                                                                for r in range(W)]))
    stacked = numgrad.zeros(W, 2, 3, dtype=numgrad.float64)
    dist.all_gather_into_tensor(stacked, numgrad.from_numpy(data(R, (2, 3), np.float64)))
    np.testing.assert_array_equal(stacked.numpy(), np.stack([data(r, (2, 3), np.float64)
                                                             for r in range(W)]))
    for op, fn in ((dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.MAX, np.max)):
        out = numgrad.zeros(3, dtype=numgrad.float64)
        dist.reduce_scatter_tensor(out, numgrad.from_numpy(data(R, (W * 3,), np.float64)), op=op)
        want = fn(np.stack([data(r, (W * 3,), np.float64) for r in range(W)]), axis=0)
        np.testing.assert_allclose(out.numpy(), want[3 * R:3 * R + 3], rtol=1e-15)
    out = numgrad.zeros(2, 3, dtype=numgrad.float64)
    dist.reduce_scatter(out, [numgrad.from_numpy(data(R, (W, 2, 3), np.float64)[k].copy())
                              for k in range(W)])
    np.testing.assert_allclose(out.numpy(), (data(0, (W, 2, 3), np.float64)
                                             + data(1, (W, 2, 3), np.float64))[R], rtol=1e-15)
    # all_to_all_single: equal parts, then rank r sends r + 1 rows to rank 0 and 2 to rank 1
    out = numgrad.zeros(4, 3, dtype=numgrad.int64)
    dist.all_to_all_single(out, numgrad.from_numpy(data(R, (4, 3), np.int64)))
    np.testing.assert_array_equal(out.numpy(), np.concatenate(
        [data(r, (4, 3), np.int64)[2 * R:2 * R + 2] for r in range(W)]))
    sent = [R + 1, 2]
    got = [r + 1 if R == 0 else 2 for r in range(W)]
    out = numgrad.zeros(sum(got), 3, dtype=numgrad.int64)
    dist.all_to_all_single(out, numgrad.from_numpy(data(R, (sum(sent), 3), np.int64)), got, sent)
    parts = [np.split(data(r, (r + 3, 3), np.int64), [r + 1])[R] for r in range(W)]
    np.testing.assert_array_equal(out.numpy(), np.concatenate(parts))
    outs = [numgrad.zeros(r + 1) for r in range(W)]  # (rank r sends R + 1 values to each)
    dist.all_to_all(outs, [numgrad.full((R + 1,), 10.0 * R + k) for k in range(W)])
    assert [o.tolist() for o in outs] == [[10.0 * r + R] * (r + 1) for r in range(W)]
    t = numgrad.from_numpy(data(R, (4,), np.float64))
    dist.reduce(t, dst=1)
    if R == 1:
        np.testing.assert_allclose(t.numpy(), data(0, (4,), np.float64) + data(1, (4,),
                                                                                np.float64))
    gathered = [numgrad.zeros(4) for _ in range(W)] if R == 0 else None
    dist.gather(numgrad.from_numpy(data(R, (4,), np.float32)), gathered, dst=0)
    if R == 0:
        for r in range(W):
            np.testing.assert_array_equal(gathered[r].numpy(), data(r, (4,), np.float32))
    mine = numgrad.zeros(5)
    pieces = [numgrad.full((5,), 10.0 + r) for r in range(W)] if R == 1 else None
    dist.scatter(mine, pieces, src=1)
    assert mine.tolist() == [10.0 + R] * 5
    with raises(ValueError, "``gather_list`` must be specified on destination rank"):
        dist.gather(numgrad.zeros(2), None, dst=R)
    with raises(RuntimeError, "invalid output tensor list"):
        dist.all_gather([numgrad.zeros(2)], numgrad.zeros(2))
    with raises(ValueError, "output tensor size must be equal to world_size times input"):
        dist.all_gather_into_tensor(numgrad.zeros(3), numgrad.zeros(2))


@check
def point_to_point_and_groups():
    if R == 0:
        dist.send(numgrad.arange(6, dtype=numgrad.float64).reshape(2, 3), dst=1)
        back = numgrad.zeros(3, dtype=numgrad.int64)
        assert dist.recv(back) == 1 and back.tolist() == [7, 8, 9]
        work = dist.isend(numgrad.ones(4), dst=1, tag=3)
        work.wait()
        dist.send(numgrad.ones(5), dst=1)  # (the wrong shape for rank 1's recv)
    else:
        got = numgrad.zeros(2, 3, dtype=numgrad.float64)
        assert dist.recv(got, src=0) == 0
        assert got.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        dist.send(numgrad.tensor([7, 8, 9]), dst=0)
        four = numgrad.zeros(4)
        dist.irecv(four, src=0, tag=3).wait()
        assert four.tolist() == [1.0] * 4
        with raises(RuntimeError, "shape [5]", "shape [4]"):
            dist.recv(numgrad.zeros(4), src=0)
    solo = dist.new_group([1])
    both = dist.new_group([0, 1])
    if R == 1:
        assert dist.get_rank(solo) == 0 and dist.get_world_size(solo) == 1
        t = numgrad.ones(2)
        dist.all_reduce(t, group=solo)
        assert t.tolist() == [1.0, 1.0]
    else:
        assert solo is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(solo) == -1
        assert dist.all_reduce(numgrad.ones(2), group=solo) is None
    t = numgrad.full((3,), float(R))
    dist.all_reduce(t, group=both)
    assert t.tolist() == [1.0] * 3 and dist.get_process_group_ranks(both) == [0, 1]
    objects = [None, None]
    dist.all_gather_object(objects, {"rank": R})
    assert objects == [{"rank": 0}, {"rank": 1}]
    box = [f"from {R}", R]
    dist.broadcast_object_list(box, src=1)
    assert box == ["from 1", 1]
    mine = [None]
    dist.scatter_object_list(mine, [{"to": r} for r in range(W)] if R == 0 else None, src=0)
    assert mine == [{"to": R}]
    if R == 1:
        collected = [None, None]
        dist.gather_object(("rank", R), collected, dst=1)
        assert collected == [("rank", 0), ("rank", 1)]
    else:
        dist.gather_object(("rank", R), dst=1)


@check
def mismatched_collectives_raise():
    with raises(RuntimeError, "Detected mismatch between collectives on ranks",
                "Tensor Tensor shapes: [3]vs [4]" if R == 0 else "[4]vs [3]"):
        dist.all_reduce(numgrad.zeros(3 + R))
    with raises(RuntimeError, "Detected mismatch between collectives",
                "Tensor Tensor dtypes: Floatvs Double" if R == 0 else "Doublevs Float"):
        dist.all_reduce(numgrad.zeros(3, dtype=numgrad.float32 if R == 0 else numgrad.float64))
    with raises(RuntimeError, "Detected mismatch between collectives",
                "Op type: BROADCASTvs ALLREDUCE" if R == 0 else "ALLREDUCEvs BROADCAST"):
        if R == 0:
            dist.broadcast(numgrad.zeros(3), src=0)
        else:
            dist.all_reduce(numgrad.zeros(3))
    t = numgrad.ones(3)  # (and the ranks go on in step)
    dist.all_reduce(t)
    assert t.tolist() == [2.0] * 3


# ------------------------------------------------------------------------------------------ DDP
def mlp():
    numgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).double()


def cnn():
    numgrad.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 3 * 3, 5)).double()


def batch(kind: str):
    rng = np.random.default_rng(7)
    if kind == "mlp":
        x, y = rng.standard_normal((8, 6)), rng.standard_normal((8, 3))
        return numgrad.tensor(x), numgrad.tensor(y), nn.functional.mse_loss
    x, y = rng.standard_normal((8, 1, 8, 8)), rng.integers(0, 5, 8)
    return numgrad.tensor(x), numgrad.tensor(y), nn.functional.cross_entropy


def train(model, x, y, loss_fn, steps=4, optim="adam"):
    opt = (numgrad.optim.Adam(model.parameters(), lr=0.05) if optim == "adam"
           else numgrad.optim.SGD(model.parameters(), lr=0.1,
                                  momentum=0.9 if optim == "momentum" else 0.0))
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def shard(t):
    n = t.shape[0] // W
    return t[R * n:(R + 1) * n]


def assert_same(got, want, tol=1e-12):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=tol)


@check
def ddp_mlp_and_cnn_equal_full_batch_training():
    for kind, make in (("mlp", mlp), ("cnn", cnn)):
        x, y, loss_fn = batch(kind)
        want = train(make(), x, y, loss_fn)
        model = make()
        if R == 1:  # (rank 0's parameters win at construction)
            with numgrad.no_grad():
                for p in model.parameters():
                    p.mul_(3.0)
        ddp = DDP(model)
        got = train(ddp, shard(x), shard(y), loss_fn)
        assert_same(got, want)
        assert list(ddp.state_dict()) == ["module." + k for k in make().state_dict()]
    x, y, loss_fn = batch("mlp")  # (momentum SGD and buckets of one parameter each)
    want = train(mlp(), x, y, loss_fn, optim="momentum")
    assert_same(train(DDP(mlp(), bucket_cap_mb=1e-6), shard(x), shard(y), loss_fn,
                      optim="momentum"), want)


@check
def ddp_no_sync_accumulates_locally():
    x, y, loss_fn = batch("mlp")
    ref = mlp()
    loss_fn(ref(x), y).backward()
    want = [p.grad.numpy() for p in ref.parameters()]
    ddp = DDP(mlp())
    xs, ys = shard(x), shard(y)
    with ddp.no_sync():  # first half of this rank's batch: local only
        (loss_fn(ddp(xs[:2]), ys[:2]) / 2).backward()
    local = [p.grad.numpy().copy() for p in ddp.parameters()]
    (loss_fn(ddp(xs[2:]), ys[2:]) / 2).backward()  # second half: all of it is reduced
    assert_same([p.grad.numpy() for p in ddp.parameters()], want)
    assert not all(np.allclose(a, b) for a, b in zip(local, want))


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        numgrad.manual_seed(1)
        self.body = nn.Linear(4, 4).double()
        self.a = nn.Linear(4, 2).double()
        self.b = nn.Linear(4, 2).double()
        self.never = nn.Linear(4, 2).double()
        self.register_buffer("seen", numgrad.zeros(2, dtype=numgrad.float64))

    def forward(self, x, use_b):
        h = self.body(x).tanh()
        return self.a(h) + self.b(h) if use_b else self.a(h)


@check
def ddp_find_unused_parameters_and_buffers():
    x = numgrad.tensor(np.random.default_rng(3).standard_normal((4, 4)))
    # rank 0 uses head b, rank 1 does not: b's gradient is rank 0's over 2; "never" keeps None
    model = TwoHeads()
    model.seen.fill_(float(R + 5))
    ddp = DDP(model, find_unused_parameters=True)
    ddp(shard(x), R == 0).sum().backward()
    assert all(p.grad is None for p in model.never.parameters())
    # the averaged gradients: the sum over ranks of each rank's own gradient, over 2
    own = TwoHeads()
    own(shard(x), R == 0).sum().backward()
    for name, p in own.named_parameters():
        if name.startswith("never"):
            continue
        g = p.grad if p.grad is not None else numgrad.zeros_like(p)
        g = g.detach().clone()
        dist.all_reduce(g)
        np.testing.assert_allclose(dict(model.named_parameters())[name].grad.numpy(),
                                   g.numpy() / 2,
                                   rtol=0, atol=1e-15)
    assert model.seen.tolist() == [5.0, 5.0]  # (rank 0's buffer, broadcast at forward)
    # without find_unused_parameters, an unused parameter ("never") stops the next iteration
    strict = DDP(TwoHeads())
    strict(shard(x), True).sum().backward()
    with raises(RuntimeError, "Expected to have finished reduction in the prior iteration",
                "find_unused_parameters=True", f"did not receive grad for rank {R}: 6 7"):
        strict(shard(x), True)


@check
def ddp_refuses_different_models():
    with raises(RuntimeError, "DDP expects same model across all ranks",
                f"has inconsistent {4 if R == 0 else 2} params"):
        DDP(nn.Linear(3, 3) if R == 0 else nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3)))
    with raises(RuntimeError, "appears not to match sizes of the same param in process"):
        DDP(nn.Linear(3, 3 + R))


@check
def sampler_and_loader_in_pytorch_order():
    import torch.utils.data as tdata

    from numgrad.utils.data import DataLoader, DistributedSampler, TensorDataset

    data_ = TensorDataset(numgrad.arange(23))
    sampler = DistributedSampler(data_, shuffle=True, seed=4)
    seen = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        theirs = tdata.DistributedSampler(range(23), W, R, shuffle=True, seed=4)
        theirs.set_epoch(epoch)
        assert list(sampler) == list(theirs)
        seen.append([int(v) for (b,) in DataLoader(data_, batch_size=4, sampler=sampler)
                     for v in b])
    everyone = [None] * W
    dist.all_gather_object(everyone, seen[0])
    assert sorted(set(everyone[0] + everyone[1])) == list(range(23))
    assert seen[0] != seen[1]


@check
def compiled_ddp_step_equals_eager():
    from numgrad.compiler import GraphBreak, explain

    x, y, loss_fn = batch("mlp")
    xs, ys = shard(x), shard(y)
    eager_model = DDP(mlp())
    compiled_model = DDP(mlp())

    def stepper(model):
        opt = numgrad.optim.SGD(model.parameters(), lr=0.1)

        def step(a, b):
            opt.zero_grad()
            loss = loss_fn(model(a), b)
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = stepper(eager_model), numgrad.compile(stepper(compiled_model))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            assert float(compiled(xs, ys)) == float(eager(xs, ys))
    assert_same([p.detach().numpy() for p in compiled_model.parameters()],
                [p.detach().numpy() for p in eager_model.parameters()], 0.0)
    assert_same([p.detach().numpy() for p in compiled_model.parameters()],
                train(mlp(), x, y, loss_fn, steps=4, optim="sgd"))
    text = explain(compiled)
    assert "eager" in text and "collective" in text, text
    with raises(GraphBreak, "collective"):
        numgrad.compile(stepper(DDP(mlp())), fullgraph=True)(xs, ys)

    # a compiled function whose only effect is a collective runs it at every call
    def double_all(t):
        dist.all_reduce(t)
        return t * 1

    twice = numgrad.compile(double_all)
    t = numgrad.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(4):
            assert twice(t).tolist() == [2.0 ** (k + 1)] * 3


@check
def cuda_tensors_staged_through_the_host():
    # (the job runs in Numba's CUDA simulator, NUMBA_ENABLE_CUDASIM=1: numgrad's CUDA tensors,
    # without a GPU)
    assert numgrad.cuda.is_available()
    t = numgrad.from_numpy(data(R, (3, 4), np.float32)).cuda()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), np.maximum(data(0, (3, 4), np.float32),
                                                              data(1, (3, 4), np.float32)))
    outs = [numgrad.zeros(2).cuda() for _ in range(W)]
    dist.all_gather(outs, numgrad.full((2,), float(R)).cuda())
    assert [o.cpu().tolist() for o in outs] == [[0.0, 0.0], [1.0, 1.0]]
    model = nn.Linear(3, 2).double().cuda()
    ddp = DDP(model)
    ddp(numgrad.ones(2, 3, dtype=numgrad.float64).cuda() * (R + 1)).sum().backward()
    assert model.weight.grad.is_cuda and model.weight.grad.cpu().tolist() == [[3.0] * 3] * 2


def main(out_dir: str) -> None:
    for fn in CHECKS:
        try:
            fn()
            RESULTS[fn.__name__] = "ok"
        except Exception:
            RESULTS[fn.__name__] = traceback.format_exc()
        if fn is CHECKS[0] and RESULTS[fn.__name__] != "ok":
            break
        dist.barrier() if dist.is_initialized() else None
    rank = int(os.environ["RANK"])
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(RESULTS, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
