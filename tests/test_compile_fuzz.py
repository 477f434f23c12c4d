"""A compiled-vs-eager fuzzer (issue 28): random programs, each run eagerly and compiled from the
same seed for four calls, with fresh inputs, Python values changed and tensors aliased between
calls; everything a call leaves must be equal (``test_compile_soundness.run``): results or
exception classes, values bit for bit, dtypes, ``.grad``, ``requires_grad``, versions, optimizer
and scheduler state, the random generator's state and the Python values. The programs mix
elementwise ops, reductions, softmax, losses, matrix products, views and indexing, in-place ops,
casts, random draws (dropout, ``rand_like``), in float32, float64, int64 and bool, on hard
values (NaN, ±inf, ±0, integers at their limits, empty, 0-d, transposed arguments), through
float16, int8 and uint8 casts, with the backward inside, outside or none, and SGD, Adam, AdamW,
RMSprop or Adagrad with a scheduler stepped inside.

CI runs ``NUMGRAD_FUZZ_PROGRAMS`` programs (default 1,000) drawn from fixed seeds, so a failure
names its seed and repeats; ``NUMGRAD_FUZZ_RANDOM=1`` draws fresh seeds.
"""
import os
import random

import pytest

import numgrad
from test_compile_soundness import run

@pytest.fixture(autouse=True)
def _rerun_always(monkeypatch):
    """A key whose Python must run (a scheduler stepped inside) takes the re-run path at every
    call, not the faster of it and eager: the path is what is fuzzed."""
    monkeypatch.setattr(numgrad.compiler, "choose_faster", False)


PROGRAMS = int(os.environ.get("NUMGRAD_FUZZ_PROGRAMS", "1000"))
FIRST = random.randrange(1 << 30) if os.environ.get("NUMGRAD_FUZZ_RANDOM") else 0
CALLS = 4

UNARY = [
    lambda x, c: x.exp(), lambda x, c: x.tanh(), lambda x, c: x.sigmoid(), lambda x, c: x.relu(),
    lambda x, c: x.abs(), lambda x, c: -x, lambda x, c: x * c["scale"],
    lambda x, c: x + c["shift"], lambda x, c: x.clamp(-1.0, 1.0), lambda x, c: x.sum(),
    lambda x, c: x.mean(), lambda x, c: x.sum(-1, keepdim=True), lambda x, c: x.amax(-1),
    lambda x, c: numgrad.softmax(x, -1), lambda x, c: numgrad.log_softmax(x, -1),
    lambda x, c: x.t() if x.ndim == 2 else x, lambda x, c: x[..., ::2],
    lambda x, c: x.reshape(-1), lambda x, c: x.unsqueeze(0), lambda x, c: x.double(),
    lambda x, c: x.float(), lambda x, c: (x > c["shift"]).float(), lambda x, c: x ** 2,
    lambda x, c: x * c["scale"] if c["flag"] else x - 1, lambda x, c: x.sqrt(),
    lambda x, c: x.log(), lambda x, c: numgrad.where(x > 0, x, x * c["scale"]),
    lambda x, c: x.floor(), lambda x, c: x.clone(), lambda x, c: x.detach(),
    lambda x, c: numgrad.dropout(x, 0.3, True), lambda x, c: x + numgrad.rand_like(x),
    lambda x, c: x * numgrad.randn_like(x), lambda x, c: x.masked_fill(x > 0, c["shift"]),
    lambda x, c: x[0] if x.ndim else x, lambda x, c: x[..., :1],
    lambda x, c: numgrad.nn.functional.mse_loss(x, x.detach() * 0.5),
    lambda x, c: numgrad.nn.functional.cross_entropy(x, x.argmax(-1).detach())
    if x.ndim == 2 and x.shape[0] else x.sum(),
    lambda x, c: x.t().contiguous() if x.ndim == 2 else x, lambda x, c: x.logsumexp(-1),
    # (through the narrow dtypes, which the kernels compute widened and the generated loops
    # leave to them)
    lambda x, c: x.half().float() * c["scale"], lambda x, c: (x * 4).to(numgrad.int8).float(),
]
BINARY = [
    lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - y, lambda x, y: x / y,
    lambda x, y: numgrad.maximum(x, y), lambda x, y: x @ y.t() if x.ndim == 2 else x + y,
]
# For int64 and bool programs (no gradients): integer arithmetic that wraps at the limits,
# floor division and remainder (a zero divisor raises in both), comparisons, casts both ways.
INTEGER = [
    lambda x, c: x.abs(), lambda x, c: -x if x.dtype != numgrad.bool else ~x,
    lambda x, c: x * c["factor"], lambda x, c: x + c["step"], lambda x, c: x.clamp(-3, 3),
    lambda x, c: x.sum(), lambda x, c: x.sum(-1, keepdim=True), lambda x, c: x.amax(-1),
    lambda x, c: (x > c["step"]).long(), lambda x, c: x.double(), lambda x, c: x.float(),
    lambda x, c: x.long(), lambda x, c: x // c["factor"], lambda x, c: x % 3,
    lambda x, c: x.t() if x.ndim == 2 else x, lambda x, c: x[..., ::2],
    lambda x, c: x.reshape(-1), lambda x, c: numgrad.where(x > 0, x, x * 2),
    lambda x, c: x.masked_fill(x > 0, c["step"]), lambda x, c: x.bool(),
    lambda x, c: (x == 0).sum(), lambda x, c: x * c["scale"] if c["flag"] else x - 1,
    lambda x, c: x.cumsum(-1) if x.ndim else x, lambda x, c: numgrad.maximum(x, x.flip(-1))
    if x.ndim else x,
    lambda x, c: (x.to(numgrad.int8) + 100).long(), lambda x, c: x.to(numgrad.uint8) // 3,
]
INTEGER_IN_PLACE = [
    lambda x, c: x.mul_(c["factor"]), lambda x, c: x.add_(c["step"]),
    lambda x, c: x.clamp_(max=c["step"]), lambda x, c: x.masked_fill_(x > 0, 0),
    lambda x, c: x.fill_(True) if x.dtype == numgrad.bool else x.sub_(1),
]
IN_PLACE = [
    lambda x, c: x.mul_(c["scale"]), lambda x, c: x.add_(1.0), lambda x, c: x.relu_(),
    lambda x, c: x.clamp_(max=c["shift"]),
]
HARD = [0.0, -0.0, 1.0, -2.5, float("nan"), float("inf"), -float("inf"), 1e-30, 3.0]
HARD_INTEGERS = [0, 1, -1, 2 ** 62, 2 ** 63 - 1, -2 ** 63, -7]


def _value(rng, dtype):
    if dtype == numgrad.bool:
        return rng.random() < 0.5
    if dtype == numgrad.int64:
        return rng.choice(HARD_INTEGERS) if rng.random() < 0.2 else rng.randint(-5, 5)
    return rng.choice(HARD) if rng.random() < 0.2 else rng.uniform(-2, 2)


def _tensor(rng, shape, dtype, grad):
    values = [_value(rng, dtype)
              for _ in range(max(1, int(numgrad.tensor(shape).prod().item())) if shape else 1)]
    n = 1
    for s in shape:
        n *= s
    t = numgrad.tensor(values[:n], dtype=dtype).reshape(shape)
    return t.requires_grad_(grad) if grad else t


def program(seed: int):
    """A random program as a ``build()`` for ``run``."""
    rng = random.Random(seed)
    shape = rng.choice([(3,), (2, 3), (3, 3), (), (0,), (2, 1)])
    dtype = rng.choice([numgrad.float32, numgrad.float64] * 3 + [numgrad.int64, numgrad.bool])
    integer = dtype in (numgrad.int64, numgrad.bool)
    grad = rng.random() < 0.6 and shape != (0,) and not integer
    ops = [(rng.choice(["unary", "unary", "binary", "in place"]), rng.randrange(100))
           for _ in range(rng.randint(1, 5))]
    backward = rng.choice(["inside", "none", "outside"]) if grad else "none"
    optimizer = rng.choice([None, "sgd", "adam", "adamw", "rmsprop", "adagrad"]) \
        if backward == "inside" else None
    scheduler = optimizer is not None and rng.random() < 0.2
    strided = rng.random() < 0.3 and len(shape) == 2 and shape[0] == shape[1]
    changes = rng.random() < 0.5
    alias = rng.random() < 0.3

    def build():
        r = random.Random(seed + 1)
        cfg = {"scale": 2.0, "shift": 0.5, "flag": True, "factor": 2, "step": 1}
        inputs = [[_tensor(r, shape, dtype, grad) for _ in range(2)] for _ in range(CALLS)]
        w = _tensor(r, shape, dtype, True) if grad else _tensor(r, shape, dtype, False)
        opt = None
        if optimizer == "sgd":
            opt = numgrad.optim.SGD([w], lr=0.1, momentum=0.9)
        elif optimizer == "adam":
            opt = numgrad.optim.Adam([w], lr=0.1)
        elif optimizer == "adamw":
            opt = numgrad.optim.AdamW([w], lr=0.1, amsgrad=True)
        elif optimizer == "rmsprop":
            opt = numgrad.optim.RMSprop([w], lr=0.01, momentum=0.5)
        elif optimizer == "adagrad":
            opt = numgrad.optim.Adagrad([w], lr=0.1, lr_decay=0.01)
        sched = numgrad.optim.lr_scheduler.StepLR(opt, 2, 0.5) if scheduler else None
        if strided:  # (non-contiguous arguments: transposed views)
            inputs = [[t.detach().t().requires_grad_(t.requires_grad) for t in pair]
                      for pair in inputs]

        def f(a, b):
            if opt is not None:
                opt.zero_grad()
            x, y = a * w, b
            for kind, k in ops:
                if kind == "unary":
                    table = INTEGER if integer else UNARY
                    x = table[k % len(table)](x, cfg)
                elif kind == "binary":
                    x = BINARY[k % len(BINARY)](x, y if y.shape == x.shape else x)
                elif not x.requires_grad or not x.is_leaf:
                    table = INTEGER_IN_PLACE if x.dtype in (numgrad.int64, numgrad.bool) \
                        else IN_PLACE
                    x = table[k % len(table)](x.clone(), cfg)
            if backward == "inside":
                x.sum().backward()
                if opt is not None:
                    opt.step()
                if sched is not None:
                    sched.step()
                return x.detach()
            if backward == "outside":
                return x.sum()
            return x

        def before(i):
            if changes and i >= 2:
                cfg["scale"], cfg["flag"] = 3.0, i % 2 == 0
                cfg["factor"], cfg["step"] = (0 if i == 3 else -3), 2

        def args(i):
            a, b = inputs[i]
            return (a, a) if alias and i >= 2 else (a, b)

        def state():
            return (w, inputs, dict(cfg), None if opt is None else opt.state_dict(),
                    numgrad.get_rng_state())

        def after(result):
            if backward == "outside":
                result.backward()

        return dict(fn=f, args=args, before=before, state=state, after=after)

    return build


@pytest.mark.parametrize("seed", range(FIRST, FIRST + PROGRAMS))
def test_random_programs_compiled_equal_eager(seed):
    build = program(seed)
    eager, compiled = run(build, CALLS, False), run(build, CALLS, True)
    for k, (a, b) in enumerate(zip(eager, compiled)):
        assert a == b, f"program {seed}, call {k // 2}: the compiled {a[0]} differs from eager's"
