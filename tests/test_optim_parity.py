"""RMSprop, Adagrad, AdamW and the learning-rate schedulers against PyTorch's: the same initial
weights, data and options give the same loss at every one of 50 float64 steps, the same final
weights and optimizer state (to 1e-10 relative; PyTorch computes the expected values here, at
test time) and bit-equal learning rates; plus their API (state_dict, warnings, errors, repr)
and numgrad.compile of their steps."""
import math
import warnings

import numpy as np
import pytest
import torch

import numgrad

STEPS = 50
RTOL = 1e-10
RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 8))
CLASSES = RNG.integers(0, 3, 32)


@pytest.fixture(autouse=True, scope="module")
def _torch_on_one_thread():
    """PyTorch's intra-op threads only contend on these tiny tensors (on a busy 2-core machine
    its 50 steps took 30 times as long); the tensors are far below its parallel grain size,
    so its results do not change."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.Tanh(), lib.nn.Linear(16, 3)).to(
        lib.float64)


def _models():
    """A torch model and a numgrad model with the same (torch-initialised) weights."""
    torch.manual_seed(0)
    theirs = _mlp(torch)
    ours = _mlp(numgrad)
    ours.load_state_dict({k: numgrad.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _data(lib):
    return lib.tensor(X), lib.tensor(CLASSES)


def _train(lib, model, optimizer, scheduler=None, steps=STEPS):
    """(losses, learning rates) of ``steps`` steps of cross entropy on the fixed data."""
    x, y = _data(lib)
    criterion = lib.nn.CrossEntropyLoss()
    losses, lrs = [], []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if scheduler is not None:
            scheduler.step()
            lrs.append(scheduler.get_last_lr())
    return np.array(losses), lrs


def _groups(lib, model):
    """Two parameter groups (the layers), the second with its own rate."""
    return [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.03}]


OPTIMIZERS = {
    "rmsprop": lambda L, m: L.optim.RMSprop(m.parameters(), lr=1e-2),
    "rmsprop_centered_momentum_weight_decay": lambda L, m: L.optim.RMSprop(
        m.parameters(), lr=5e-3, alpha=0.9, momentum=0.8, centered=True, weight_decay=1e-2),
    # 1 - alpha >= 0.5: the other branch of lerp
    "rmsprop_centered_small_alpha": lambda L, m: L.optim.RMSprop(
        m.parameters(), lr=1e-3, alpha=0.4, eps=1e-3, centered=True),
    "rmsprop_momentum_groups": lambda L, m: L.optim.RMSprop(_groups(L, m), lr=1e-2, momentum=0.5),
    "adagrad": lambda L, m: L.optim.Adagrad(m.parameters(), lr=0.1),
    "adagrad_lr_decay_weight_decay": lambda L, m: L.optim.Adagrad(
        m.parameters(), lr=0.2, lr_decay=0.05, weight_decay=1e-2, initial_accumulator_value=0.1,
        eps=1e-8),
    "adagrad_maximize": lambda L, m: L.optim.Adagrad(m.parameters(), lr=1e-3, maximize=True),
    "adamw": lambda L, m: L.optim.AdamW(m.parameters(), lr=1e-2),
    "adamw_amsgrad": lambda L, m: L.optim.AdamW(m.parameters(), lr=1e-2, betas=(0.8, 0.99),
                                                weight_decay=0.1, amsgrad=True),
    "adamw_groups_maximize": lambda L, m: L.optim.AdamW(_groups(L, m), lr=1e-3, eps=1e-6,
                                                        maximize=True),
}

SCHEDULERS = {
    "step_lr_sgd": (lambda L, m: L.optim.SGD(m.parameters(), lr=0.2, momentum=0.9),
                    lambda L, o: L.optim.lr_scheduler.StepLR(o, step_size=7, gamma=0.5)),
    "step_lr_default_gamma_adam": (lambda L, m: L.optim.Adam(_groups(L, m), lr=1e-2),
                                   lambda L, o: L.optim.lr_scheduler.StepLR(o, 20)),
    "exponential_lr_adam": (lambda L, m: L.optim.Adam(m.parameters(), lr=2e-2),
                            lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, gamma=0.95)),
    # T_max = 20: the 50 steps go down, back up (through the restart branch) and down again
    "cosine_annealing_lr_sgd": (
        lambda L, m: L.optim.SGD(m.parameters(), lr=0.3, momentum=0.5),
        lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20, eta_min=1e-3)),
    "cosine_annealing_lr_adam": (
        lambda L, m: L.optim.Adam(_groups(L, m), lr=1e-2),
        lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 50)),
    "multi_step_lr_sgd": (  # (a milestone listed twice multiplies twice)
        lambda L, m: L.optim.SGD(m.parameters(), lr=0.2, momentum=0.9),
        lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, milestones=[5, 20, 20, 35], gamma=0.5)),
    "linear_lr_warmup_sgd": (lambda L, m: L.optim.SGD(m.parameters(), lr=0.1, momentum=0.5),
                             lambda L, o: L.optim.lr_scheduler.LinearLR(o, total_iters=30)),
    "linear_lr_decay_adam": (
        lambda L, m: L.optim.Adam(m.parameters(), lr=2e-2),
        lambda L, o: L.optim.lr_scheduler.LinearLR(o, 1.0, 0.1, total_iters=40)),
    "polynomial_lr_sgd": (lambda L, m: L.optim.SGD(_groups(L, m), lr=0.2),
                          lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, total_iters=40,
                                                                          power=2.0)),
    "lambda_lr_adam": (lambda L, m: L.optim.Adam(m.parameters(), lr=2e-2),
                       lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + 0.1 * e))),
    "lambda_lr_per_group_sgd": (
        lambda L, m: L.optim.SGD(_groups(L, m), lr=0.1),
        lambda L, o: L.optim.lr_scheduler.LambdaLR(
            o, [lambda e: 0.97**e, lambda e: math.cos(e / 30)])),
}


def _close_to_scale(a, b, what):
    """``a`` equals ``b`` to RTOL relative to the scale of ``b`` (its largest magnitude): an
    element near zero of a buffer (a momentum that crossed zero) carries the absolute rounding of
    the buffer's large elements, not a relative error of its own."""
    scale = float(np.abs(b).max()) if b.size else 0.0
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=max(RTOL * scale, 1e-15), err_msg=what)


def _compare(ours, theirs, opt_ours, opt_theirs, lo, lt):
    """Asserts that the losses (to RTOL), final weights and optimizer state (to RTOL of their
    scale) agree."""
    assert len(lo) == STEPS and np.isfinite(lt).all() and lt[-1] != lt[0]  # it trained
    np.testing.assert_allclose(lo, lt, rtol=RTOL, atol=0)
    sd = ours.state_dict()
    for k, v in theirs.state_dict().items():
        _close_to_scale(sd[k].numpy(), v.numpy(), k)
    for po, pt in zip(ours.parameters(), theirs.parameters()):
        so, st = opt_ours.state[po], opt_theirs.state[pt]
        assert sorted(so) == sorted(st)
        for key in st:
            assert so[key].dtype.name == str(st[key].dtype).removeprefix("torch."), key
            _close_to_scale(so[key].numpy(), st[key].numpy(), key)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_pytorch_float64(name):
    ours, theirs = _models()
    opt_ours, opt_theirs = OPTIMIZERS[name](numgrad, ours), OPTIMIZERS[name](torch, theirs)
    lo, _ = _train(numgrad, ours, opt_ours)
    lt, _ = _train(torch, theirs, opt_theirs)
    _compare(ours, theirs, opt_ours, opt_theirs, lo, lt)
    assert opt_ours.param_groups[0].keys() == opt_theirs.param_groups[0].keys()


UPDATE_RULES = {
    "rmsprop_centered_small_alpha_maximize": lambda L, p: L.optim.RMSprop(
        p, lr=1e-3, alpha=0.3, eps=1e-6, centered=True, maximize=True),
    "rmsprop_momentum_weight_decay_maximize": lambda L, p: L.optim.RMSprop(
        p, lr=1e-2, momentum=0.9, weight_decay=0.1, maximize=True),
    "adagrad_lr_decay_maximize": lambda L, p: L.optim.Adagrad(p, lr=0.1, lr_decay=0.3,
                                                              maximize=True),
    "adamw_amsgrad_maximize": lambda L, p: L.optim.AdamW(p, lr=1e-2, weight_decay=0.5,
                                                         amsgrad=True, maximize=True),
}
UPDATE_RULES.update((k, lambda L, p, make=v: make(L, _Params(p)))
                    for k, v in OPTIMIZERS.items() if "groups" not in k)


class _Params:
    """Stands in for a model in OPTIMIZERS' makers: one parameter."""

    def __init__(self, params):
        self.params = params

    def parameters(self):
        return self.params


@pytest.mark.parametrize("name", UPDATE_RULES)
def test_update_rule_matches_pytorch_on_given_gradients(name):
    """The update rule alone: the same 50 gradients given to both libraries (no forward or
    backward pass, whose roundings differ between the libraries and feed back through the
    weights). Not bit for bit: PyTorch's CPU kernels fuse add(alpha=), addcmul and lerp into
    FMA instructions, numgrad's round the product first; one rounding per operation."""
    rng = np.random.default_rng(1)
    start = rng.standard_normal((16, 8))
    grads = [rng.standard_normal((16, 8)) * (1 + 0.1 * i) + 0.5 for i in range(STEPS)]
    ours = numgrad.nn.Parameter(numgrad.tensor(start))
    theirs = torch.nn.Parameter(torch.tensor(start))
    opt_ours, opt_theirs = UPDATE_RULES[name](numgrad, [ours]), UPDATE_RULES[name](torch, [theirs])
    for g in grads:
        ours.grad, theirs.grad = numgrad.tensor(g), torch.tensor(g)
        opt_ours.step()
        opt_theirs.step()
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=RTOL,
                                   atol=1e-14)
    assert not np.allclose(theirs.detach().numpy(), start, rtol=1e-3)
    for key, value in opt_theirs.state[theirs].items():
        np.testing.assert_allclose(opt_ours.state[ours][key].numpy(), value.numpy(), rtol=RTOL,
                                   atol=1e-14, err_msg=key)


@pytest.mark.parametrize("name", SCHEDULERS)
def test_scheduler_matches_pytorch_float64(name):
    make_opt, make_sched = SCHEDULERS[name]
    ours, theirs = _models()
    opt_ours, opt_theirs = make_opt(numgrad, ours), make_opt(torch, theirs)
    sched_ours, sched_theirs = make_sched(numgrad, opt_ours), make_sched(torch, opt_theirs)
    assert sched_ours.get_last_lr() == sched_theirs.get_last_lr()
    lo, lrs_ours = _train(numgrad, ours, opt_ours, sched_ours)
    lt, lrs_theirs = _train(torch, theirs, opt_theirs, sched_theirs)
    assert lrs_ours == lrs_theirs  # the same Python float operations: equal to the bit
    assert len({tuple(lr) for lr in lrs_ours}) > 2  # the schedule moved
    assert [g["lr"] for g in opt_ours.param_groups] == [g["lr"] for g in opt_theirs.param_groups]
    assert sched_ours.last_epoch == sched_theirs.last_epoch == STEPS
    _compare(ours, theirs, opt_ours, opt_theirs, lo, lt)
    assert _plain(sched_ours.state_dict()) == _plain(sched_theirs.state_dict())


def _plain(state):
    return {k: v for k, v in state.items() if k != "lr_lambdas"}


def test_scheduler_state_dict_round_trip_resumes():
    """30 steps in one go equal 12, a save and load into fresh objects, and 18 more."""
    def make(model):
        opt = numgrad.optim.SGD(model.parameters(), lr=0.3, momentum=0.5)
        return opt, numgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=1e-3)

    straight, _ = _models()
    expected, lrs = _train(numgrad, straight, *make(straight), steps=30)
    resumed, _ = _models()
    opt, sched = make(resumed)
    head, lrs_head = _train(numgrad, resumed, opt, sched, steps=12)
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    assert sched_state["last_epoch"] == 12 and sched_state["_step_count"] == 13
    fresh = _mlp(numgrad)
    fresh.load_state_dict(resumed.state_dict())
    opt2, sched2 = make(fresh)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    tail, lrs_tail = _train(numgrad, fresh, opt2, sched2, steps=18)
    np.testing.assert_array_equal(np.concatenate([head, tail]), expected)
    assert lrs_head + lrs_tail == lrs


def test_lambda_lr_state_dict_keeps_callable_objects_state():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate**epoch

    for lib in (numgrad, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        sched = lib.optim.lr_scheduler.LambdaLR(opt, Decay(0.5))
        state = sched.state_dict()
        assert state["lr_lambdas"] == [{"rate": 0.5}]
        other = lib.optim.lr_scheduler.LambdaLR(
            lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0), Decay(0.9))
        other.load_state_dict(state)
        assert other.lr_lambdas[0].rate == 0.5 and "lr_lambdas" in state
        fn = lib.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0)
        assert fn.state_dict()["lr_lambdas"] == [None]


def test_constant_lr_warm_up_and_state_dict_match_pytorch():
    """(A schedule of two rates, which the training table above asks more of.)"""
    got = []
    for lib in (numgrad, torch):
        opt = lib.optim.Adam([lib.nn.Parameter(lib.ones(1))], lr=1e-2)
        sched = lib.optim.lr_scheduler.ConstantLR(opt, factor=0.25, total_iters=4)
        lrs = [sched.get_last_lr()]
        for _ in range(6):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        got.append((lrs, sched.state_dict()))
    assert got[0] == got[1]
    assert got[0][0][0] == [0.0025] and got[0][0][-1] == [0.01]


def test_step_with_epoch_uses_the_closed_form():
    got = []
    for lib in (numgrad, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        scheds = [lib.optim.lr_scheduler.StepLR(opt, 3, gamma=0.5),
                  lib.optim.lr_scheduler.MultiStepLR(opt, [2, 6, 6], gamma=0.5),
                  lib.optim.lr_scheduler.ConstantLR(opt, 0.5, total_iters=9),
                  lib.optim.lr_scheduler.LinearLR(opt, 0.2, total_iters=10),
                  lib.optim.lr_scheduler.PolynomialLR(opt, 10, power=0.5),
                  lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9),
                  lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)]
        opt.step()
        row = []
        for sched in scheds:
            with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step"):
                sched.step(7)
            row.append((sched.last_epoch, sched.get_last_lr()))
        got.append(row)
    assert got[0] == got[1]


def test_scheduler_warnings_match_pytorch():
    for lib in (numgrad, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        sched = lib.optim.lr_scheduler.StepLR(opt, 3)
        with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before"):
            sched.step()
        with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
            sched.get_lr()
        # Stepping the optimizer first: no warning.
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        sched = lib.optim.lr_scheduler.ExponentialLR(opt, 0.5)
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sched.step()
        assert sched.get_last_lr() == [0.25] and opt.param_groups[0]["initial_lr"] == 0.5
        # A second scheduler on the same optimizer does not wrap its step again.
        step = opt.step
        lib.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0)
        assert opt.step is step


def test_resuming_a_scheduler_needs_initial_lr():
    for lib in (numgrad, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        with pytest.raises(KeyError) as info:
            lib.optim.lr_scheduler.StepLR(opt, 3, last_epoch=4)
        assert "param 'initial_lr' is not specified in param_groups[0]" in str(info.value)
        opt.param_groups[0]["initial_lr"] = 1.0
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, last_epoch=4)
        assert sched.last_epoch == 5 and sched.base_lrs == [1.0]


def _p(L):
    return [L.nn.Parameter(L.ones(1))]


ERRORS = {
    "rmsprop_lr": lambda L: L.optim.RMSprop(_p(L), lr=-1.0),
    "rmsprop_eps": lambda L: L.optim.RMSprop(_p(L), eps=-1e-8),
    "rmsprop_momentum": lambda L: L.optim.RMSprop(_p(L), momentum=-0.1),
    "rmsprop_weight_decay": lambda L: L.optim.RMSprop(_p(L), weight_decay=-1),
    "rmsprop_alpha": lambda L: L.optim.RMSprop(_p(L), alpha=-0.5),
    "adagrad_lr": lambda L: L.optim.Adagrad(_p(L), lr=-1.0),
    "adagrad_lr_decay": lambda L: L.optim.Adagrad(_p(L), lr_decay=-0.1),
    "adagrad_weight_decay": lambda L: L.optim.Adagrad(_p(L), weight_decay=-1e-3),
    "adagrad_initial_accumulator_value": lambda L: L.optim.Adagrad(
        _p(L), initial_accumulator_value=-1),
    "adagrad_eps": lambda L: L.optim.Adagrad(_p(L), eps=-1e-10),
    "adamw_lr": lambda L: L.optim.AdamW(_p(L), lr=-1.0),
    "adamw_beta": lambda L: L.optim.AdamW(_p(L), betas=(0.9, 1.0)),
    "adamw_eps": lambda L: L.optim.AdamW(_p(L), eps=-1.0),
    "adamw_weight_decay": lambda L: L.optim.AdamW(_p(L), weight_decay=-0.01),
    "scheduler_not_an_optimizer": lambda L: L.optim.lr_scheduler.StepLR(object(), 3),
    "lambda_lr_count": lambda L: L.optim.lr_scheduler.LambdaLR(
        L.optim.SGD(_p(L), lr=0.1), [lambda e: 1.0, lambda e: 2.0]),
    "base_get_lr": lambda L: L.optim.lr_scheduler.LRScheduler(L.optim.SGD(_p(L), lr=0.1)),
    "constant_lr_factor": lambda L: L.optim.lr_scheduler.ConstantLR(L.optim.SGD(_p(L)), 1.5),
    "linear_lr_start": lambda L: L.optim.lr_scheduler.LinearLR(L.optim.SGD(_p(L)), 0.0),
    "linear_lr_end": lambda L: L.optim.lr_scheduler.LinearLR(L.optim.SGD(_p(L)), 0.5, -0.1),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(name):
    with pytest.raises(Exception) as want:
        ERRORS[name](torch)
    with pytest.raises(type(want.value)) as got:
        ERRORS[name](numgrad)
    assert str(got.value) == str(want.value).replace("torch.", "numgrad.")


@pytest.mark.parametrize("make", [
    lambda L: L.optim.RMSprop(_p(L)),
    lambda L: L.optim.RMSprop(_p(L), lr=0.1, alpha=0.9, momentum=0.5, centered=True),
    lambda L: L.optim.Adagrad(_p(L)),
    lambda L: L.optim.Adagrad(_p(L), lr_decay=0.1, initial_accumulator_value=0.5),
    lambda L: L.optim.AdamW(_p(L)),
    lambda L: L.optim.AdamW(_p(L), lr=0.1, amsgrad=True, weight_decay=0.5),
])
def test_repr_matches_pytorch(make):
    assert repr(make(numgrad)) == repr(make(torch))


def test_adagrad_makes_its_state_up_front_and_state_dict_matches_pytorch():
    ours, theirs = _models()
    dicts = []
    for lib, model in ((numgrad, ours), (torch, theirs)):
        opt = lib.optim.Adagrad(model.parameters(), lr=0.1, initial_accumulator_value=0.25)
        assert len(opt.state) == 4  # before any step
        _train(lib, model, opt, steps=3)
        dicts.append(opt.state_dict())
    so, st = dicts
    assert so["param_groups"] == st["param_groups"]
    for k in st["state"]:
        assert so["state"][k]["step"].item() == st["state"][k]["step"].item() == 3.0
        np.testing.assert_allclose(so["state"][k]["sum"].numpy(), st["state"][k]["sum"].numpy(),
                                   rtol=RTOL)


def test_adamw_load_state_dict_keeps_decoupled_weight_decay():
    opt = numgrad.optim.AdamW(_p(numgrad))
    state = opt.state_dict()
    state["param_groups"][0]["decoupled_weight_decay"] = False
    opt.load_state_dict(state)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True
    assert isinstance(opt, numgrad.optim.Adam)


@pytest.mark.parametrize("name", ["adamw_amsgrad", "rmsprop_centered_momentum_weight_decay",
                                  "adagrad_lr_decay_weight_decay"])
def test_compiled_steps_equal_eager(name):
    """numgrad.compile traces the new optimizers' updates (no value read back to the host):
    30 compiled steps equal 30 eager ones."""
    runs = []
    for compile_it in (False, True):
        model, _ = _models()
        opt = OPTIMIZERS[name](numgrad, model)
        x, y = _data(numgrad)
        loss_fn = numgrad.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = numgrad.compile(step, fullgraph=True) if compile_it else step
        losses = [run().item() for _ in range(30)]
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
        if compile_it:
            assert run.traces <= 2
            assert all(not hasattr(replay, "reason") for _, replay in run._entries)
    (l0, p0), (l1, p1) = runs
    np.testing.assert_allclose(l1, l0, rtol=0, atol=1e-12)
    for a, b in zip(p0, p1):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12)


def test_compiled_step_follows_a_schedule():
    """A scheduler changes a hyperparameter: the compiled step traces again for each new rate
    and equals the eager one."""
    runs = []
    for compile_it in (False, True):
        model, _ = _models()
        opt = numgrad.optim.AdamW(model.parameters(), lr=2e-2)
        sched = numgrad.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
        x, y = _data(numgrad)
        loss_fn = numgrad.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = numgrad.compile(step, fullgraph=True) if compile_it else step
        losses = []
        for _ in range(30):
            losses.append(run().item())
            sched.step()
        runs.append((losses, sched.get_last_lr(),
                     [p.detach().numpy().copy() for p in model.parameters()]))
        if compile_it:
            assert run.traces == 4  # the first step makes the state; then one per rate
    (l0, lr0, p0), (l1, lr1, p1) = runs
    assert lr0 == lr1 == [2e-2 * 0.5**3]
    np.testing.assert_allclose(l1, l0, rtol=0, atol=1e-12)
    for a, b in zip(p0, p1):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12)
