"""Adadelta, Adamax, NAdam, RAdam, LBFGS and the schedulers ReduceLROnPlateau, OneCycleLR,
SequentialLR, ChainedScheduler and CosineAnnealingWarmRestarts against PyTorch's (issue 31):
the same initial weights, data and options give the same losses, weights and optimizer state
(float64, to 1e-10 relative; PyTorch computes the expected values at test time), bit-equal
learning rates (and momenta, for OneCycleLR) epoch by epoch; plus state_dict round trips,
PyTorch's error messages and reprs, and numgrad.compile of the new optimizers' steps."""
import copy
import inspect
import math
import warnings

import numpy as np
import pytest
import torch

import numgrad

STEPS = 15
RTOL = 1e-10
RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 8))
CLASSES = RNG.integers(0, 3, 32)


@pytest.fixture(autouse=True, scope="module")
def _torch_on_one_thread():
    """PyTorch's intra-op threads only contend on these tiny tensors (see test_optim_parity)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _mlp(lib, dtype="float64"):
    return lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.Tanh(), lib.nn.Linear(16, 3)).to(
        getattr(lib, dtype))


def _models(dtype="float64"):
    """A torch model and a numgrad model with the same (torch-initialised) weights."""
    torch.manual_seed(0)
    theirs = _mlp(torch, dtype)
    ours = _mlp(numgrad, dtype)
    ours.load_state_dict({k: numgrad.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _train(lib, model, optimizer, steps=STEPS, scheduler=None, dtype="float64"):
    """(losses, (lr, momentum) per step) of ``steps`` steps of cross entropy on fixed data."""
    x, y = lib.tensor(X.astype(dtype)), lib.tensor(CLASSES)
    criterion = lib.nn.CrossEntropyLoss()
    losses, schedule = [], []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if scheduler is not None:
            scheduler.step()
            group = optimizer.param_groups[0]
            schedule.append((scheduler.get_last_lr(), group.get("momentum"), group.get("betas")))
    return np.array(losses), schedule


def _groups(lib, model):
    """Two parameter groups (the layers), the second with its own rate."""
    return [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.03}]


def _close_to_scale(a, b, what, rtol=RTOL):
    """``a`` equals ``b`` to ``rtol`` relative to the scale of ``b`` (its largest magnitude)."""
    scale = float(np.abs(b).max()) if b.size else 0.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=max(rtol * scale, 1e-15), err_msg=what)


def _compare_state(opt_ours, opt_theirs, ours, theirs, rtol=RTOL):
    for po, pt in zip(ours, theirs):
        so, st = opt_ours.state[po], opt_theirs.state[pt]
        assert sorted(so) == sorted(st)
        for key in st:
            assert so[key].dtype.name == str(st[key].dtype).removeprefix("torch."), key
            _close_to_scale(so[key].numpy(), st[key].numpy(), key, rtol)


OPTIMIZERS = {
    "adadelta": lambda L, m: L.optim.Adadelta(m.parameters()),
    "adadelta_rho_weight_decay": lambda L, m: L.optim.Adadelta(
        m.parameters(), lr=0.5, rho=0.7, eps=1e-4, weight_decay=1e-2),
    "adadelta_groups_maximize": lambda L, m: L.optim.Adadelta(_groups(L, m), lr=2.0,
                                                              maximize=True),
    "adamax": lambda L, m: L.optim.Adamax(m.parameters(), lr=1e-2),
    # 1 - beta1 >= 0.5: the other branch of lerp
    "adamax_small_beta1_weight_decay": lambda L, m: L.optim.Adamax(
        m.parameters(), lr=2e-2, betas=(0.4, 0.9), weight_decay=0.1, foreach=False),
    "adamax_groups_maximize": lambda L, m: L.optim.Adamax(_groups(L, m), eps=1e-3,
                                                          maximize=True),
    "nadam": lambda L, m: L.optim.NAdam(m.parameters(), lr=1e-2),
    "nadam_momentum_decay_weight_decay": lambda L, m: L.optim.NAdam(
        m.parameters(), lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2, momentum_decay=0.05),
    "nadam_decoupled_weight_decay": lambda L, m: L.optim.NAdam(
        m.parameters(), lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True),
    "nadam_groups_maximize": lambda L, m: L.optim.NAdam(_groups(L, m), lr=1e-3, maximize=True),
    # rho_t passes 5 at step 6 with beta2 = 0.999: both branches of the update run
    "radam": lambda L, m: L.optim.RAdam(m.parameters(), lr=1e-2),
    "radam_weight_decay": lambda L, m: L.optim.RAdam(m.parameters(), lr=1e-2, betas=(0.5, 0.9),
                                                     weight_decay=1e-2),
    "radam_decoupled_weight_decay": lambda L, m: L.optim.RAdam(
        m.parameters(), lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True),
    "radam_groups_maximize": lambda L, m: L.optim.RAdam(_groups(L, m), eps=1e-6, maximize=True),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_pytorch_float64(name):
    ours, theirs = _models()
    opt_ours, opt_theirs = OPTIMIZERS[name](numgrad, ours), OPTIMIZERS[name](torch, theirs)
    lo, _ = _train(numgrad, ours, opt_ours)
    lt, _ = _train(torch, theirs, opt_theirs)
    assert np.isfinite(lt).all() and lt[-1] != lt[0]  # it trained
    np.testing.assert_allclose(lo, lt, rtol=RTOL, atol=0)
    sd = ours.state_dict()
    for k, v in theirs.state_dict().items():
        _close_to_scale(sd[k].numpy(), v.numpy(), k)
    _compare_state(opt_ours, opt_theirs, ours.parameters(), theirs.parameters())
    assert opt_ours.param_groups[0].keys() == opt_theirs.param_groups[0].keys()


@pytest.mark.parametrize("name", ["adadelta", "adamax", "nadam_decoupled_weight_decay", "radam"])
def test_optimizer_matches_pytorch_float32(name):
    """float32 weights and state (the state's dtypes PyTorch's: float32 ``step`` and
    ``mu_product``), to float32 rounding."""
    ours, theirs = _models("float32")
    opt_ours, opt_theirs = OPTIMIZERS[name](numgrad, ours), OPTIMIZERS[name](torch, theirs)
    lo, _ = _train(numgrad, ours, opt_ours, dtype="float32")
    lt, _ = _train(torch, theirs, opt_theirs, dtype="float32")
    np.testing.assert_allclose(lo, lt, rtol=1e-5)
    _compare_state(opt_ours, opt_theirs, ours.parameters(), theirs.parameters(), rtol=1e-4)


UPDATE_RULES = {
    "adadelta_weight_decay_maximize": lambda L, p: L.optim.Adadelta(
        p, lr=0.5, rho=0.8, weight_decay=0.1, maximize=True),
    "adamax_weight_decay_maximize": lambda L, p: L.optim.Adamax(p, lr=1e-2, weight_decay=0.1,
                                                                maximize=True),
    "nadam_weight_decay": lambda L, p: L.optim.NAdam(p, lr=1e-2, weight_decay=0.1),
    "nadam_decoupled_maximize": lambda L, p: L.optim.NAdam(
        p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01,
        maximize=True),
    "radam_weight_decay_maximize": lambda L, p: L.optim.RAdam(p, lr=1e-2, weight_decay=0.1,
                                                              maximize=True),
    "radam_decoupled_small_betas": lambda L, p: L.optim.RAdam(
        p, lr=1e-2, betas=(0.3, 0.8), weight_decay=0.1, decoupled_weight_decay=True),
}


@pytest.mark.parametrize("name", UPDATE_RULES)
def test_update_rule_matches_pytorch_on_given_gradients(name):
    """The update rule alone, on 50 given gradients (no forward or backward pass)."""
    rng = np.random.default_rng(1)
    start = rng.standard_normal((16, 8))
    grads = [rng.standard_normal((16, 8)) * (1 + 0.1 * i) + 0.5 for i in range(50)]
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
    _compare_state(opt_ours, opt_theirs, [ours], [theirs])


@pytest.mark.parametrize("name", ["adadelta_rho_weight_decay", "adamax", "nadam",
                                  "radam_decoupled_weight_decay"])
def test_state_dict_round_trip_resumes_training(name):
    """12 steps in one go equal 5, a save and load into a fresh model and optimizer, and 7
    more; the saved state's layout is PyTorch's."""
    straight, theirs = _models()
    expected, _ = _train(numgrad, straight, OPTIMIZERS[name](numgrad, straight), steps=12)
    resumed, _ = _models()
    opt = OPTIMIZERS[name](numgrad, resumed)
    head, _ = _train(numgrad, resumed, opt, steps=5)
    saved = copy.deepcopy(opt.state_dict())
    opt_theirs = OPTIMIZERS[name](torch, theirs)
    _train(torch, theirs, opt_theirs, steps=5)
    want = opt_theirs.state_dict()
    assert saved["param_groups"] == want["param_groups"]
    assert {k: sorted(v) for k, v in saved["state"].items()} == \
        {k: sorted(v) for k, v in want["state"].items()}
    fresh = _mlp(numgrad)
    fresh.load_state_dict(resumed.state_dict())
    opt2 = OPTIMIZERS[name](numgrad, fresh)
    opt2.load_state_dict(saved)
    tail, _ = _train(numgrad, fresh, opt2, steps=7)
    if name.startswith("nadam"):
        # load_state_dict casts mu_product to the parameters' dtype (float64 here), as
        # PyTorch's does: the resumed run's mu_product is rounded less than the straight one's.
        opt_theirs.load_state_dict(opt_theirs.state_dict())
        want_dtype = next(iter(opt_theirs.state.values()))["mu_product"].dtype
        assert want_dtype == torch.float64
        assert next(iter(opt2.state.values()))["mu_product"].dtype == numgrad.float64
        np.testing.assert_allclose(np.concatenate([head, tail]), expected, rtol=1e-10)
    else:
        np.testing.assert_array_equal(np.concatenate([head, tail]), expected)


def _to_numgrad(value):
    """A PyTorch state dict with its tensors turned into numgrad tensors (what numgrad.load of
    a torch.save file gives)."""
    if isinstance(value, torch.Tensor):
        return numgrad.tensor(value.numpy())
    if isinstance(value, dict):
        return {k: _to_numgrad(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_numgrad(v) for v in value)
    return value


@pytest.mark.parametrize("name", ["adadelta", "adamax_small_beta1_weight_decay", "nadam",
                                  "radam_decoupled_weight_decay"])
def test_pytorchs_state_dict_resumes_in_numgrad(name):
    """PyTorch trains 6 steps; its model and optimizer state dicts, loaded into numgrad, go on
    for 6 more as PyTorch's do, loaded back into PyTorch."""
    ours, theirs = _models()
    opt_theirs = OPTIMIZERS[name](torch, theirs)
    _train(torch, theirs, opt_theirs, steps=6)
    ours.load_state_dict(_to_numgrad(theirs.state_dict()))
    opt_ours = OPTIMIZERS[name](numgrad, ours)
    saved = opt_theirs.state_dict()
    opt_ours.load_state_dict(_to_numgrad(saved))
    opt_theirs.load_state_dict(saved)  # (PyTorch resumed too: NAdam's mu_product to float64)
    lo, _ = _train(numgrad, ours, opt_ours, steps=6)
    lt, _ = _train(torch, theirs, opt_theirs, steps=6)
    np.testing.assert_allclose(lo, lt, rtol=RTOL)
    _compare_state(opt_ours, opt_theirs, ours.parameters(), theirs.parameters())


def test_accepted_implementation_flags():
    """``foreach`` and ``capturable`` are accepted where PyTorch accepts them (and change
    nothing: the step count already stays beside the parameter); ``differentiable`` raises."""
    p = [numgrad.nn.Parameter(numgrad.ones(3))]
    for cls in (numgrad.optim.Adadelta, numgrad.optim.Adamax, numgrad.optim.NAdam,
                numgrad.optim.RAdam):
        opt = cls(p, foreach=True, capturable=True)
        assert opt.param_groups[0]["capturable"] is True
        p[0].grad = numgrad.ones(3)
        opt.step()
        assert opt.state[p[0]]["step"].item() == 1.0
        with pytest.raises(NotImplementedError, match="is not supported by numgrad's optimizers"):
            cls(p, differentiable=True)


@pytest.mark.parametrize("name", ["adadelta_rho_weight_decay", "adamax_small_beta1_weight_decay",
                                  "nadam_momentum_decay_weight_decay", "radam_weight_decay"])
def test_compiled_steps_equal_eager(name):
    """numgrad.compile traces the new optimizers' updates (no value read back to the host; the
    RAdam branch is a ``where``): 12 compiled steps equal 12 eager ones."""
    runs = []
    for compile_it in (False, True):
        model, _ = _models()
        opt = OPTIMIZERS[name](numgrad, model)
        x, y = numgrad.tensor(X), numgrad.tensor(CLASSES)
        loss_fn = numgrad.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = numgrad.compile(step, fullgraph=True) if compile_it else step
        losses = [run().item() for _ in range(12)]
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
        if compile_it:
            assert run.traces <= 2
    (l0, p0), (l1, p1) = runs
    np.testing.assert_allclose(l1, l0, rtol=0, atol=1e-12)
    for a, b in zip(p0, p1):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------------- LBFGS
def _rosenbrock(x):
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


def _quadratic(lib):
    a = lib.tensor(np.diag(np.linspace(1.0, 20.0, 6)) + 0.3)
    b = lib.tensor(np.linspace(-1.0, 2.0, 6))
    return lambda x: 0.5 * (x * (a @ x)).sum() - (b * x).sum()


PROBLEMS = {"rosenbrock": (lambda lib: _rosenbrock, np.array([-1.2, 1.0, -0.5, 0.8, 1.5])),
            "quadratic": (_quadratic, np.linspace(1.0, -1.0, 6))}

LBFGS_OPTIONS = {
    "default": {},
    "strong_wolfe": {"line_search_fn": "strong_wolfe"},
    "short_history": {"lr": 0.5, "history_size": 3, "max_iter": 7},
    "strong_wolfe_short_history": {"line_search_fn": "strong_wolfe", "history_size": 2,
                                   "max_iter": 5, "max_eval": 9},
}


def _lbfgs_run(lib, problem, options, steps=10):
    make_f, start = PROBLEMS[problem]
    f = make_f(lib)
    x = lib.nn.Parameter(lib.tensor(start))
    opt = lib.optim.LBFGS([x], **options)
    calls = []

    def closure():
        opt.zero_grad()
        loss = f(x)
        loss.backward()
        calls.append(loss.item())
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return np.array(losses), np.array(calls), x, opt


@pytest.mark.parametrize("options", LBFGS_OPTIONS)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_lbfgs_matches_pytorch(problem, options):
    """Ten steps (each up to max_iter iterations): the same losses at every evaluation of the
    closure (so the same line-search decisions), the same point, history and counters."""
    lo, co, xo, oo = _lbfgs_run(numgrad, problem, LBFGS_OPTIONS[options])
    lt, ct, xt, ot = _lbfgs_run(torch, problem, LBFGS_OPTIONS[options])
    assert len(co) == len(ct) and lt[-1] < lt[0]
    # (the dot products sum in another order: near the optimum, losses of 1e-3 agree to 1e-10)
    np.testing.assert_allclose(co, ct, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(lo, lt, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(xo.detach().numpy(), xt.detach().numpy(), rtol=1e-8, atol=1e-10)
    so, st = oo.state[xo], ot.state[xt]
    assert sorted(so) == sorted(st)
    assert (so["func_evals"], so["n_iter"]) == (st["func_evals"], st["n_iter"])
    assert len(so["old_dirs"]) == len(st["old_dirs"])
    for key in ("d", "prev_flat_grad"):
        _close_to_scale(so[key].numpy(), st[key].numpy(), key, 1e-6)
    assert float(so["t"]) == pytest.approx(float(st["t"]), rel=1e-6)


def test_lbfgs_trains_a_model_like_pytorch():
    """Full-batch L-BFGS with the strong-Wolfe search on the MLP: five steps."""
    ours, theirs = _models()
    results = []
    for lib, model in ((numgrad, ours), (torch, theirs)):
        opt = lib.optim.LBFGS(model.parameters(), lr=1, max_iter=8, history_size=5,
                              line_search_fn="strong_wolfe")
        x, y = lib.tensor(X), lib.tensor(CLASSES)
        criterion = lib.nn.CrossEntropyLoss()

        def closure():
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            return loss

        losses = [opt.step(closure).item() for _ in range(5)]
        results.append((np.array(losses), opt.state[next(iter(model.parameters()))]))
    (lo, so), (lt, st) = results
    np.testing.assert_allclose(lo, lt, rtol=1e-7)
    assert so["func_evals"] == st["func_evals"] and lt[-1] < 0.8 * lt[0]
    for k, v in theirs.state_dict().items():
        _close_to_scale(ours.state_dict()[k].numpy(), v.numpy(), k, 1e-5)


def test_lbfgs_state_dict_round_trip_resumes():
    """Four steps equal two, a save and load into a fresh optimizer (the history lists cast
    and copied), and two more."""
    expected, _, x_straight, _ = _lbfgs_run(numgrad, "rosenbrock", {"history_size": 4}, steps=4)
    make_f, start = PROBLEMS["rosenbrock"]
    x = numgrad.nn.Parameter(numgrad.tensor(start))
    opt = numgrad.optim.LBFGS([x], history_size=4)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    head = [opt.step(closure).item() for _ in range(2)]
    saved = opt.state_dict()
    assert set(saved["state"][0]) == {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps",
                                      "ro", "H_diag", "prev_flat_grad", "prev_loss", "al"}
    opt = numgrad.optim.LBFGS([x], history_size=4)
    opt.load_state_dict(saved)
    assert opt.state[x]["old_dirs"][0] is not saved["state"][0]["old_dirs"][0]
    tail = [opt.step(closure).item() for _ in range(2)]
    np.testing.assert_array_equal(head + tail, expected)
    np.testing.assert_array_equal(x.detach().numpy(), x_straight.detach().numpy())


def test_pytorchs_lbfgs_state_resumes_in_numgrad():
    """PyTorch's L-BFGS history (lists of tensors, a float or tensor step), loaded into
    numgrad, gives PyTorch's next steps."""
    _, _, x_theirs, opt_theirs = _lbfgs_run(torch, "rosenbrock", {"history_size": 5}, steps=2)
    x = numgrad.nn.Parameter(numgrad.tensor(x_theirs.detach().numpy()))
    opt = numgrad.optim.LBFGS([x], history_size=5)
    opt.load_state_dict(_to_numgrad(opt_theirs.state_dict()))
    assert len(opt.state[x]["old_dirs"]) == len(opt_theirs.state[x_theirs]["old_dirs"])
    results = []
    for lib, param, optimizer in ((numgrad, x, opt), (torch, x_theirs, opt_theirs)):
        def closure():
            optimizer.zero_grad()
            loss = _rosenbrock(param)
            loss.backward()
            return loss

        results.append([optimizer.step(closure).item() for _ in range(3)])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-8)
    np.testing.assert_allclose(x.detach().numpy(), x_theirs.detach().numpy(), rtol=1e-8)


def test_lbfgs_stops_at_an_optimum_and_returns_the_first_loss():
    for lib in (numgrad, torch):
        x = lib.nn.Parameter(lib.tensor([1.0, 1.0], dtype=lib.float64))
        opt = lib.optim.LBFGS([x])
        calls = []

        def closure():
            opt.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            calls.append(1)
            return loss

        assert opt.step(closure).item() == 0.0 and len(calls) == 1
        assert opt.state[x] == {"func_evals": 1, "n_iter": 0}


# ------------------------------------------------------------------------------ schedulers
def _p(L):
    return [L.nn.Parameter(L.ones(1))]


METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.9, 0.9, 0.9,
           0.9, 0.9, 0.9, 0.9, 0.9, 0.7, 0.7, 0.70001, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]


def _sgd(L):
    return L.optim.SGD(_p(L), lr=0.1, momentum=0.9)


def _two_groups(L):
    return L.optim.Adam([{"params": _p(L)}, {"params": _p(L), "lr": 0.02}], lr=0.1)


SCHEDULES = {
    "plateau_min_rel_cooldown_min_lr": (_sgd, lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=2, factor=0.5, cooldown=1, min_lr=0.01)),
    "plateau_min_abs_groups": (_two_groups, lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=1, threshold=0.02, threshold_mode="abs", min_lr=[0.001, 0.015])),
    "plateau_max_rel": (_sgd, lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(
        o, mode="max", patience=1, factor=0.7)),
    "plateau_max_abs_eps": (_sgd, lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(
        o, mode="max", patience=0, threshold=0.1, threshold_mode="abs", eps=0.005)),
    "one_cycle_cos_sgd": (_sgd, lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, max_lr=1.0, total_steps=30)),
    "one_cycle_linear_three_phase_adam": (
        _two_groups, lambda L, o: L.optim.lr_scheduler.OneCycleLR(
            o, max_lr=[0.5, 0.05], epochs=5, steps_per_epoch=6, anneal_strategy="linear",
            three_phase=True, pct_start=0.25, base_momentum=[0.8, 0.7],
            max_momentum=0.9)),
    "one_cycle_no_momentum": (lambda L: L.optim.Adagrad(_p(L), lr=0.1),
                              lambda L, o: L.optim.lr_scheduler.OneCycleLR(
                                  o, max_lr=0.5, total_steps=31, cycle_momentum=False,
                                  div_factor=10.0, final_div_factor=100.0)),
    "sequential_warmup_cosine_step": (_sgd, lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=5),
            L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.01),
            L.optim.lr_scheduler.StepLR(o, 3, 0.5)], milestones=[5, 15])),
    "sequential_constant_exponential": (_two_groups, lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=4),
            L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)], milestones=[7])),
    "chained_linear_exponential": (_sgd, lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=5),
         L.optim.lr_scheduler.ExponentialLR(o, 0.9)])),
    "chained_step_multistep_with_optimizer": (
        _two_groups, lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
            [L.optim.lr_scheduler.StepLR(o, 4, 0.8),
             L.optim.lr_scheduler.MultiStepLR(o, [10, 20], 0.5)], optimizer=o)),
    "warm_restarts_t_mult_2": (_sgd, lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001)),
    "warm_restarts_t_mult_1": (
        _two_groups, lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=4)),
    "multiplicative_groups": (_two_groups, lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(
        o, [lambda e: 0.95, lambda e: 1.0 - 0.01 * e])),
    "cyclic_triangular_sgd_momentum": (_sgd, lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=4, step_size_down=3)),
    "cyclic_triangular2_adam_beta1": (_two_groups, lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, [0.01, 0.001], [0.1, 0.05], step_size_up=5, mode="triangular2")),
    "cyclic_exp_range_no_momentum": (lambda L: L.optim.Adagrad(_p(L), lr=0.1),
                                     lambda L, o: L.optim.lr_scheduler.CyclicLR(
                                         o, 0.01, 0.2, 3, mode="exp_range", gamma=0.97,
                                         cycle_momentum=False)),
    "cyclic_scale_fn_iterations": (_sgd, lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.02, 0.3, 4, scale_fn=lambda x: 1 / (1 + 0.1 * x), scale_mode="iterations")),
}


def _schedule(lib, name, epochs=30, epoch_arg=None):
    make_opt, make_sched = SCHEDULES[name]
    opt = make_opt(lib)
    sched = make_sched(lib, opt)
    seq = [sched.get_last_lr()]
    for e in range(epochs):
        opt.step()
        if name.startswith("plateau"):
            metric = METRICS[e]
            sched.step(lib.tensor(metric) if e % 2 else metric)
        elif epoch_arg is not None:
            sched.step(epoch_arg(e))
        else:
            sched.step()
        group = opt.param_groups[-1]
        seq.append((sched.get_last_lr(), [g["lr"] for g in opt.param_groups],
                    group.get("momentum"), group.get("betas")))
    return seq, sched, opt


def _plain(state):
    """A scheduler's state dict with the inner schedulers' states made plain too."""
    state = dict(state)
    if "_schedulers" in state:
        state["_schedulers"] = [_plain(s) for s in state["_schedulers"]]
    return state


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_pytorch(name):
    """30 epochs: the rates (and OneCycleLR's momenta or beta1) equal PyTorch's to the bit,
    and so do the state dicts."""
    ours, sched_ours, opt_ours = _schedule(numgrad, name)
    theirs, sched_theirs, opt_theirs = _schedule(torch, name)
    assert ours == theirs
    assert len({str(row[0]) for row in theirs[1:]}) > 2  # the schedule moved
    assert _plain(sched_ours.state_dict()) == _plain(sched_theirs.state_dict())
    assert [sorted(g) for g in opt_ours.param_groups] == \
        [sorted(g) for g in opt_theirs.param_groups]


@pytest.mark.parametrize("name, epoch", [
    ("warm_restarts_t_mult_2", lambda e: e * 0.7),  # a step per batch: fractional epochs
    ("warm_restarts_t_mult_1", lambda e: e * 0.4),
    ("warm_restarts_t_mult_2", lambda e: (e * 7) % 23 + 0.25),  # jumping about
])
def test_warm_restarts_fractional_epochs_match_pytorch(name, epoch):
    ours, sched_ours, _ = _schedule(numgrad, name, epoch_arg=epoch)
    theirs, sched_theirs, _ = _schedule(torch, name, epoch_arg=epoch)
    assert ours == theirs
    assert sched_ours.state_dict() == sched_theirs.state_dict()


def test_schedulers_drive_training_like_pytorch():
    """OneCycleLR cycling NAdam's beta1 per batch, and a warm-up then cosine SequentialLR on
    RAdam: the losses and weights of 15 steps match PyTorch's."""
    cases = [
        (lambda L, m: L.optim.NAdam(m.parameters(), lr=1e-2),
         lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=STEPS)),
        (lambda L, m: L.optim.RAdam(m.parameters(), lr=2e-2),
         lambda L, o: L.optim.lr_scheduler.SequentialLR(
             o, [L.optim.lr_scheduler.LinearLR(o, 0.2, total_iters=4),
                 L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=11)], milestones=[4])),
    ]
    for make_opt, make_sched in cases:
        ours, theirs = _models()
        opt_ours, opt_theirs = make_opt(numgrad, ours), make_opt(torch, theirs)
        lo, so = _train(numgrad, ours, opt_ours, scheduler=make_sched(numgrad, opt_ours))
        lt, st = _train(torch, theirs, opt_theirs, scheduler=make_sched(torch, opt_theirs))
        assert so == st
        np.testing.assert_allclose(lo, lt, rtol=RTOL)
        _compare_state(opt_ours, opt_theirs, ours.parameters(), theirs.parameters())


@pytest.mark.parametrize("name", ["plateau_min_rel_cooldown_min_lr", "one_cycle_cos_sgd",
                                  "sequential_warmup_cosine_step", "chained_linear_exponential",
                                  "warm_restarts_t_mult_2", "multiplicative_groups",
                                  "cyclic_triangular2_adam_beta1"])
def test_scheduler_state_dict_round_trip_resumes(name):
    """30 epochs in one go equal 12, a save, a load into a fresh optimizer and scheduler, and
    18 more (the composite schedulers save their schedulers' states)."""
    expected, _, _ = _schedule(numgrad, name)
    head, sched, opt = _schedule(numgrad, name, epochs=12)
    opt_state, sched_state = copy.deepcopy(opt.state_dict()), copy.deepcopy(sched.state_dict())
    make_opt, make_sched = SCHEDULES[name]
    opt2 = make_opt(numgrad)
    sched2 = make_sched(numgrad, opt2)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    assert _plain(sched2.state_dict()) == _plain(sched_state)
    tail = []
    for e in range(12, 30):
        opt2.step()
        if name.startswith("plateau"):
            sched2.step(METRICS[e])
        else:
            sched2.step()
        group = opt2.param_groups[-1]
        tail.append((sched2.get_last_lr(), [g["lr"] for g in opt2.param_groups],
                     group.get("momentum"), group.get("betas")))
    assert [row[0] for row in head[1:] + tail] == [row[0] for row in expected[1:]]
    assert head + tail == expected


def test_plateau_reads_a_tensor_metric_and_warns_on_an_epoch():
    for lib in (numgrad, torch):
        opt = _sgd(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
        sched.step(lib.tensor(2.0))
        sched.step(lib.tensor(3.0))
        assert sched.get_last_lr() == [0.010000000000000002] and sched.best == 2.0
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step"):
            sched.step(1.0, epoch=7)
        assert sched.last_epoch == 7


def test_plateau_min_lrs_follow_a_group_added_later():
    got = []
    for lib in (numgrad, torch):
        opt = _sgd(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=0.05)
        opt.add_param_group({"params": _p(lib), "lr": 0.2})
        for metric in (1.0, 2.0, 3.0):
            sched.step(metric)
        got.append((sched.get_last_lr(), sched.min_lrs))
        opt = _sgd(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.05])
        opt.add_param_group({"params": _p(lib), "lr": 0.2})
        sched.step(1.0)
        with pytest.raises(RuntimeError) as info:
            sched.step(2.0)
        got.append(str(info.value))
    assert got[:2] == got[2:]


def test_one_cycle_past_its_steps_raises_like_pytorch():
    messages = []
    for lib in (numgrad, torch):
        opt = _sgd(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
        for _ in range(3):
            opt.step()
            sched.step()
        with pytest.raises(ValueError) as info:
            sched.step()
        messages.append(str(info.value))
    assert messages[0] == messages[1] == ("Tried to step 4 times. The specified number of total "
                                          "steps is 3")


def test_warm_restarts_state_and_step_count_match_pytorch():
    """CosineAnnealingWarmRestarts replaces ``step``: no order warning, ``_step_count`` stays 0,
    and ``T_cur`` becomes a float after fractional epochs, as PyTorch's."""
    for lib in (numgrad, torch):
        opt = _sgd(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sched.step()
            sched.step(12.5)
        state = sched.state_dict()
        assert state["_step_count"] == 0 and state["T_cur"] == 2.5 and state["T_i"] == 20
        assert state["last_epoch"] == 12
        with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
            sched.step(-1)


def test_sequential_lr_restarts_at_a_milestone_and_undoes_the_initial_steps():
    got = []
    for lib in (numgrad, torch):
        opt = lib.optim.SGD(_p(lib), lr=1.0)
        warm = lib.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=10)
        decay = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        sched = lib.optim.lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[2])
        row = [(sched.last_epoch, warm.last_epoch, decay.last_epoch, sched.get_last_lr())]
        for _ in range(4):
            opt.step()
            sched.step()
            row.append((sched.last_epoch, warm.last_epoch, decay.last_epoch,
                        sched.get_last_lr()))
        got.append(row)
    assert got[0] == got[1]
    assert [lr for *_, (lr,) in got[0]] == [0.5, 0.5, 1.0, 0.5, 0.25]


SCHEDULER_ERRORS = {
    "plateau_factor": lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(_sgd(L), factor=1.0),
    "plateau_not_an_optimizer": lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(object()),
    "plateau_min_lrs": lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(_sgd(L), min_lr=[0, 1]),
    "plateau_mode": lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(_sgd(L), mode="low"),
    "plateau_threshold_mode": lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(
        _sgd(L), threshold_mode="relative"),
    "one_cycle_not_an_optimizer": lambda L: L.optim.lr_scheduler.OneCycleLR(None, 1.0, 10),
    "one_cycle_total_steps": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), 1.0, 0),
    "one_cycle_total_steps_float": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), 1.0, 10.0),
    "one_cycle_epochs": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), 1.0, epochs=-1,
                                                                  steps_per_epoch=3),
    "one_cycle_steps_per_epoch": lambda L: L.optim.lr_scheduler.OneCycleLR(
        _sgd(L), 1.0, epochs=2, steps_per_epoch=0),
    "one_cycle_no_length": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), 1.0, epochs=2),
    "one_cycle_pct_start": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), 1.0, 10,
                                                                     pct_start=1.5),
    "one_cycle_pct_start_int": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), 1.0, 10,
                                                                         pct_start=0),
    "one_cycle_anneal": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), 1.0, 10,
                                                                  anneal_strategy="exp"),
    "one_cycle_max_lr_count": lambda L: L.optim.lr_scheduler.OneCycleLR(_sgd(L), [1.0, 2.0], 10),
    "one_cycle_no_momentum": lambda L: L.optim.lr_scheduler.OneCycleLR(
        L.optim.Adagrad(_p(L)), 1.0, 10),
    "one_cycle_momentum_count": lambda L: L.optim.lr_scheduler.OneCycleLR(
        _sgd(L), 1.0, 10, base_momentum=[0.8, 0.8]),
    "sequential_empty": lambda L: L.optim.lr_scheduler.SequentialLR(_sgd(L), [], []),
    "sequential_milestones": lambda L: (lambda o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.StepLR(o, 2), L.optim.lr_scheduler.StepLR(o, 3)], [1, 2]))(
            _sgd(L)),
    "sequential_no_optimizer": lambda L: L.optim.lr_scheduler.SequentialLR(_sgd(L), [object()],
                                                                           []),
    "sequential_plateau": lambda L: (lambda o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.ReduceLROnPlateau(o)], []))(_sgd(L)),
    "sequential_other_optimizer": lambda L: L.optim.lr_scheduler.SequentialLR(
        _sgd(L), [L.optim.lr_scheduler.StepLR(_sgd(L), 2)], []),
    "chained_empty": lambda L: L.optim.lr_scheduler.ChainedScheduler([]),
    "chained_plateau": lambda L: (lambda o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.StepLR(o, 2), L.optim.lr_scheduler.ReduceLROnPlateau(o)]))(
            _sgd(L)),
    "chained_other_optimizer": lambda L: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.StepLR(_sgd(L), 2), L.optim.lr_scheduler.StepLR(_sgd(L), 3)]),
    "warm_restarts_t_0": lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(_sgd(L), 0),
    "warm_restarts_t_0_float": lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sgd(L), 2.0),
    "warm_restarts_t_mult": lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sgd(L), 2, T_mult=0),
    "warm_restarts_t_mult_float": lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sgd(L), 2, T_mult=1.5),
    "warm_restarts_eta_min": lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sgd(L), 2, eta_min="0"),
    "multiplicative_count": lambda L: L.optim.lr_scheduler.MultiplicativeLR(
        _sgd(L), [lambda e: 0.9, lambda e: 0.9]),
    "multiplicative_not_callable": lambda L: L.optim.lr_scheduler.MultiplicativeLR(_sgd(L), 0.9),
    "cyclic_not_an_optimizer": lambda L: L.optim.lr_scheduler.CyclicLR(None, 0.1, 1.0),
    "cyclic_mode": lambda L: L.optim.lr_scheduler.CyclicLR(_sgd(L), 0.1, 1.0, mode="sine"),
    "cyclic_no_momentum": lambda L: L.optim.lr_scheduler.CyclicLR(
        L.optim.Adagrad(_p(L)), 0.1, 1.0),
    "cyclic_max_lr_count": lambda L: L.optim.lr_scheduler.CyclicLR(_sgd(L), 0.1, [1.0, 2.0]),
}

OPTIMIZER_ERRORS = {
    "adadelta_lr": lambda L: L.optim.Adadelta(_p(L), lr=-1.0),
    "adadelta_tensor_lr": lambda L: L.optim.Adadelta(_p(L), lr=L.ones(2)),
    "adadelta_rho": lambda L: L.optim.Adadelta(_p(L), rho=1.5),
    "adadelta_eps": lambda L: L.optim.Adadelta(_p(L), eps=-1e-6),
    "adadelta_weight_decay": lambda L: L.optim.Adadelta(_p(L), weight_decay=-1),
    "adamax_lr": lambda L: L.optim.Adamax(_p(L), lr=-1.0),
    "adamax_eps": lambda L: L.optim.Adamax(_p(L), eps=-1.0),
    "adamax_beta1": lambda L: L.optim.Adamax(_p(L), betas=(1.0, 0.9)),
    "adamax_beta2": lambda L: L.optim.Adamax(_p(L), betas=(0.9, -0.1)),
    "adamax_weight_decay": lambda L: L.optim.Adamax(_p(L), weight_decay=-0.5),
    "nadam_lr": lambda L: L.optim.NAdam(_p(L), lr=-1e-3),
    "nadam_eps": lambda L: L.optim.NAdam(_p(L), eps=-1e-3),
    "nadam_beta1": lambda L: L.optim.NAdam(_p(L), betas=(-0.1, 0.9)),
    "nadam_beta2": lambda L: L.optim.NAdam(_p(L), betas=(0.9, 1.0)),
    "nadam_weight_decay": lambda L: L.optim.NAdam(_p(L), weight_decay=-1e-2),
    "nadam_momentum_decay": lambda L: L.optim.NAdam(_p(L), momentum_decay=-4e-3),
    "radam_lr": lambda L: L.optim.RAdam(_p(L), lr=-1e-3),
    "radam_eps": lambda L: L.optim.RAdam(_p(L), eps=-1e-8),
    "radam_beta1": lambda L: L.optim.RAdam(_p(L), betas=(1.5, 0.9)),
    "radam_beta2": lambda L: L.optim.RAdam(_p(L), betas=(0.9, 1.0)),
    "radam_weight_decay": lambda L: L.optim.RAdam(_p(L), weight_decay=-1),
    "lbfgs_lr": lambda L: L.optim.LBFGS(_p(L), lr=-1),
    "lbfgs_tensor_lr": lambda L: L.optim.LBFGS(_p(L), lr=L.ones(3)),
    "lbfgs_groups": lambda L: L.optim.LBFGS([{"params": _p(L)}, {"params": _p(L)}]),
    "lbfgs_line_search": lambda L: (lambda p: (lambda o: o.step(
        lambda: (o.zero_grad(), (p[0] * p[0]).sum().backward())[0] or (p[0] * p[0]).sum()))(
            L.optim.LBFGS(p, line_search_fn="backtracking")))(_p(L)),
}


@pytest.mark.parametrize("name", list(SCHEDULER_ERRORS) + list(OPTIMIZER_ERRORS))
def test_errors_match_pytorch(name):
    make = SCHEDULER_ERRORS.get(name) or OPTIMIZER_ERRORS[name]
    with pytest.raises(Exception) as want:
        make(torch)
    with pytest.raises(type(want.value)) as got:
        make(numgrad)
    assert str(got.value) == str(want.value).replace("torch.", "numgrad.")


@pytest.mark.parametrize("make", [
    lambda L: L.optim.Adadelta(_p(L)),
    lambda L: L.optim.Adadelta(_p(L), lr=0.5, rho=0.8, weight_decay=0.1, maximize=True),
    lambda L: L.optim.Adamax(_p(L)),
    lambda L: L.optim.Adamax(_p(L), betas=(0.8, 0.9), foreach=False),
    lambda L: L.optim.NAdam(_p(L)),
    lambda L: L.optim.NAdam(_p(L), momentum_decay=0.1, decoupled_weight_decay=True,
                            weight_decay=0.1),
    lambda L: L.optim.RAdam(_p(L)),
    lambda L: L.optim.RAdam(_p(L), decoupled_weight_decay=True, weight_decay=0.1),
    lambda L: L.optim.LBFGS(_p(L)),
    lambda L: L.optim.LBFGS(_p(L), lr=0.5, max_iter=5, history_size=10,
                            line_search_fn="strong_wolfe"),
])
def test_repr_matches_pytorch(make):
    assert repr(make(numgrad)) == repr(make(torch))


def test_names_are_exported():
    for name in ("Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS"):
        assert getattr(numgrad.optim, name) is not None and name in numgrad.optim.__all__
    for name in ("ReduceLROnPlateau", "OneCycleLR", "SequentialLR", "ChainedScheduler",
                 "CosineAnnealingWarmRestarts"):
        assert name in numgrad.optim.lr_scheduler.__all__
        assert issubclass(getattr(numgrad.optim.lr_scheduler, name),
                          numgrad.optim.lr_scheduler.LRScheduler)
    assert math.isinf(numgrad.optim.lr_scheduler.ReduceLROnPlateau(_sgd(numgrad)).best)


@pytest.mark.parametrize("path", ["Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS",
                                  "lr_scheduler.ReduceLROnPlateau", "lr_scheduler.OneCycleLR",
                                  "lr_scheduler.SequentialLR", "lr_scheduler.ChainedScheduler",
                                  "lr_scheduler.CosineAnnealingWarmRestarts"])
def test_signatures_match_pytorch(path):
    """The same parameter names, kinds (positional or keyword-only) and defaults, for the
    constructor and ``step``."""
    def resolve(lib):
        obj = lib.optim
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    ours, theirs = resolve(numgrad), resolve(torch)
    assert params(ours) == params(theirs)
    assert [p[:2] for p in params(ours.step)] == [p[:2] for p in params(theirs.step)]
