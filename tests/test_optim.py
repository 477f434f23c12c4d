"""numgrad.optim against torch.optim: the same initial weights, data and hyperparameters give the
same losses and weights, step for step; plus the Optimizer API (groups, zero_grad, state_dict,
errors, repr)."""
import numpy as np
import pytest
import torch

import numgrad
from numgrad import nn

STEPS = 50
RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 8))
CLASSES = RNG.integers(0, 3, 32)
TARGETS = RNG.standard_normal((32, 3))

OPTIMIZERS = {
    "sgd": lambda L, p: L.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda L, p: L.optim.SGD(p, lr=0.1, momentum=0.9),
    "sgd_nesterov": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
    "sgd_nesterov_weight_decay": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                                          weight_decay=1e-2),
    "sgd_dampening_weight_decay": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.3,
                                                           weight_decay=1e-2),
    "sgd_maximize": lambda L, p: L.optim.SGD(p, lr=1e-3, momentum=0.5, maximize=True),
    "adam": lambda L, p: L.optim.Adam(p, lr=1e-2),
    "adam_weight_decay": lambda L, p: L.optim.Adam(p, lr=1e-2, weight_decay=1e-2),
    "adam_amsgrad": lambda L, p: L.optim.Adam(p, lr=1e-2, betas=(0.8, 0.99), amsgrad=True),
    "adam_decoupled": lambda L, p: L.optim.Adam(p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True),
    "adam_eps_maximize": lambda L, p: L.optim.Adam(p, lr=1e-3, eps=1e-3, maximize=True),
}

TASKS = {
    # 8 -> 16 -> 3 with tanh and cross entropy on class indices
    "cross_entropy": (lambda L: L.nn.Tanh(), lambda L: L.nn.CrossEntropyLoss(), CLASSES),
    # 8 -> 16 -> 3 with relu and mean squared error on real targets
    "mse": (lambda L: L.nn.ReLU(), lambda L: L.nn.MSELoss(), TARGETS),
}


def _mlp(lib, activation, dtype):
    return lib.nn.Sequential(lib.nn.Linear(8, 16), activation(lib), lib.nn.Linear(16, 3)).to(
        getattr(lib, dtype))


def _models(activation, dtype="float64"):
    """A torch model and a numgrad model with the same (torch-initialised) weights, drawn from a
    fixed seed: with weights drawn afresh, about 2% of draws left a momentum-buffer element that
    cancels to ~1e-6, where the two libraries' summation orders differ by more than the 1e-12
    relative tolerance the comparisons use (a flaky failure, not a numgrad error)."""
    torch.manual_seed(0)
    theirs = _mlp(torch, activation, dtype)
    ours = _mlp(numgrad, activation, dtype)
    ours.load_state_dict({k: numgrad.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _train(lib, model, optimizer, criterion, x, y, steps=STEPS):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses)


def _data(lib, target, dtype):
    y = lib.tensor(target) if target.dtype.kind == "i" else lib.tensor(target.astype(dtype))
    return lib.tensor(X.astype(dtype)), y


def _run_both(task, make_optimizer, dtype="float64", steps=STEPS):
    activation, criterion, target = TASKS[task]
    ours, theirs = _models(activation, dtype)
    opt_ours = make_optimizer(numgrad, ours.parameters())
    opt_theirs = make_optimizer(torch, theirs.parameters())
    ours_losses = _train(numgrad, ours, opt_ours, criterion(numgrad), *_data(numgrad, target, dtype), steps)
    theirs_losses = _train(torch, theirs, opt_theirs, criterion(torch), *_data(torch, target, dtype), steps)
    return (ours, opt_ours, ours_losses), (theirs, opt_theirs, theirs_losses)


def _max_weight_difference(ours, theirs) -> float:
    sd = ours.state_dict()
    return max(float(np.abs(sd[k].numpy() - v.numpy()).max()) for k, v in theirs.state_dict().items())


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_training_matches_pytorch_float64(task, name):
    """The acceptance check: 50 steps, the same losses (and final weights) to 1e-5 in float64."""
    (ours, opt_ours, lo), (theirs, opt_theirs, lt) = _run_both(task, OPTIMIZERS[name])
    assert len(lo) == STEPS
    assert np.abs(lo - lt).max() < 1e-5, np.abs(lo - lt).max()
    assert _max_weight_difference(ours, theirs) < 1e-5
    assert np.isfinite(lt).all() and lt[-1] != lt[0]  # it trained, and did not diverge
    # The optimizer state agrees too (momentum buffers, moments, step counts).
    for po, pt in zip(ours.parameters(), theirs.parameters()):
        so, st = opt_ours.state[po], opt_theirs.state[pt]
        assert sorted(so) == sorted(st)
        for key in st:
            assert so[key].dtype.name == str(st[key].dtype).removeprefix("torch."), key
            np.testing.assert_allclose(so[key].numpy(), st[key].numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adam_amsgrad"])
def test_training_matches_pytorch_float32(name):
    (ours, _, lo), (theirs, _, lt) = _run_both("cross_entropy", OPTIMIZERS[name], dtype="float32")
    assert np.abs(lo - lt).max() < 1e-5
    assert _max_weight_difference(ours, theirs) < 1e-5


def test_parameter_groups_with_their_own_options():
    ours, theirs = _models(lambda L: L.nn.Tanh())

    def groups(model, L):
        return [{"params": model[0].parameters(), "lr": 0.2, "momentum": 0.5},
                {"params": model[2].parameters(), "weight_decay": 0.1}]

    opt_ours = numgrad.optim.SGD(groups(ours, numgrad), lr=0.05, momentum=0.9)
    opt_theirs = torch.optim.SGD(groups(theirs, torch), lr=0.05, momentum=0.9)
    assert [g["lr"] for g in opt_ours.param_groups] == [0.2, 0.05]
    assert [g["momentum"] for g in opt_ours.param_groups] == [0.5, 0.9]
    assert repr(opt_ours) == repr(opt_theirs)
    lo = _train(numgrad, ours, opt_ours, numgrad.nn.CrossEntropyLoss(), *_data(numgrad, CLASSES, "float64"), 20)
    lt = _train(torch, theirs, opt_theirs, torch.nn.CrossEntropyLoss(), *_data(torch, CLASSES, "float64"), 20)
    assert np.abs(lo - lt).max() < 1e-12
    # A group added later joins the next steps.
    extra = nn.Parameter(numgrad.ones(2))
    opt_ours.add_param_group({"params": extra, "lr": 1.0})
    assert opt_ours.param_groups[-1]["momentum"] == 0.9 and opt_ours.param_groups[-1]["params"] == [extra]
    (extra * extra).sum().backward()
    opt_ours.step()
    assert extra.tolist() == [-1.0, -1.0]


def test_parameters_without_grad_are_skipped():
    used, unused = nn.Parameter(numgrad.ones(2)), nn.Parameter(numgrad.ones(2))
    for opt in (numgrad.optim.SGD([used, unused], lr=0.1, momentum=0.9),
                numgrad.optim.Adam([used, unused], lr=0.1)):
        (used * 3).sum().backward()
        version = unused._version
        opt.step()
        assert unused.tolist() == [1.0, 1.0] and unused._version == version
        assert unused not in opt.state and used in opt.state
        opt.zero_grad()


def test_step_is_in_place_and_not_recorded():
    model = nn.Linear(3, 2)
    params = list(model.parameters())
    opt = numgrad.optim.Adam(params, lr=0.1)
    model(numgrad.ones(4, 3)).sum().backward()
    data = [p.detach().numpy() for p in params]  # views of the storage
    versions = [p._version for p in params]
    before = [d.copy() for d in data]
    opt.step()
    for p, d, b, v in zip(params, data, before, versions):
        assert p.is_leaf and p.grad_fn is None and p.requires_grad
        assert p._version > v  # bumped, as an in-place op does
        assert np.shares_memory(p.detach().numpy(), d) and not (d == b).all()
    assert numgrad.is_grad_enabled()


def test_step_invalidates_tensors_saved_for_backward():
    """As in PyTorch, stepping between forward and backward is caught by the version counter."""
    for lib in (numgrad, torch):
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([w], lr=0.1)
        w.grad = lib.ones(2)
        loss = (w * w).sum()
        opt.step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_zero_grad():
    w = nn.Parameter(numgrad.ones(3))
    opt = numgrad.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None
    opt.zero_grad()  # nothing to do


def test_closure():
    results = []
    for lib in (numgrad, torch):
        w = lib.nn.Parameter(lib.tensor([1.0, -2.0], dtype=lib.float64))
        opt = lib.optim.Adam([w], lr=0.1)

        def closure():
            assert lib.is_grad_enabled()
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        losses = [opt.step(closure).item() for _ in range(3)]
        results.append((losses, w.detach().numpy().copy()))
    (lo, wo), (lt, wt) = results
    np.testing.assert_allclose(lo, lt, rtol=1e-14)
    np.testing.assert_allclose(wo, wt, rtol=1e-14)


def test_named_parameters_and_state_dict_layout_match_pytorch():
    ours, theirs = _models(lambda L: L.nn.Tanh())
    opt_ours = numgrad.optim.SGD(ours.named_parameters(), lr=0.1, momentum=0.9)
    opt_theirs = torch.optim.SGD(theirs.named_parameters(), lr=0.1, momentum=0.9)
    _train(numgrad, ours, opt_ours, numgrad.nn.CrossEntropyLoss(), *_data(numgrad, CLASSES, "float64"), 2)
    _train(torch, theirs, opt_theirs, torch.nn.CrossEntropyLoss(), *_data(torch, CLASSES, "float64"), 2)
    so, st = opt_ours.state_dict(), opt_theirs.state_dict()
    assert so["param_groups"] == st["param_groups"]
    assert so["param_groups"][0]["param_names"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert sorted(so["state"]) == sorted(st["state"]) == [0, 1, 2, 3]
    for k in st["state"]:
        np.testing.assert_allclose(so["state"][k]["momentum_buffer"].numpy(),
                                   st["state"][k]["momentum_buffer"].numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["sgd_momentum", "adam_amsgrad"])
def test_state_dict_round_trip_resumes_training(name):
    """20 steps in one go equal 10 steps, a save and load into fresh objects, and 10 more."""
    activation, criterion, target = TASKS["cross_entropy"]
    make = OPTIMIZERS[name]
    x, y = _data(numgrad, target, "float64")
    straight, _ = _models(activation)
    resumed = _mlp(numgrad, activation, "float64")
    resumed.load_state_dict(straight.state_dict())
    expected = _train(numgrad, straight, make(numgrad, straight.parameters()), criterion(numgrad), x, y, 20)

    first = make(numgrad, resumed.parameters())
    head = _train(numgrad, resumed, first, criterion(numgrad), x, y, 10)
    model_state, opt_state = resumed.state_dict(), first.state_dict()
    fresh = _mlp(numgrad, activation, "float64")
    fresh.load_state_dict(model_state)
    second = make(numgrad, fresh.parameters())
    second.load_state_dict(opt_state)
    tail = _train(numgrad, fresh, second, criterion(numgrad), x, y, 10)
    np.testing.assert_array_equal(np.concatenate([head, tail]), expected)
    # Loading copies the state: the two optimizers no longer share tensors.
    for p_first, p_second in zip(first.state.values(), second.state.values()):
        for key in p_first:
            assert not np.shares_memory(p_first[key].numpy(), p_second[key].numpy())


def test_load_state_dict_casts_to_the_parameter_dtype():
    w32 = nn.Parameter(numgrad.ones(2))
    w64 = nn.Parameter(numgrad.ones(2, dtype=numgrad.float64))
    opt64 = numgrad.optim.Adam([w64])
    w64.grad = numgrad.ones(2, dtype=numgrad.float64)
    opt64.step()
    opt32 = numgrad.optim.Adam([w32])
    opt32.load_state_dict(opt64.state_dict())
    state = opt32.state[w32]
    assert state["exp_avg"].dtype is numgrad.float32 and state["step"].dtype is numgrad.float32
    assert state["step"].item() == 1.0


def test_load_state_dict_errors_match_pytorch():
    def make(L):
        a, b = L.nn.Parameter(L.ones(1)), L.nn.Parameter(L.ones(1))
        return (L.optim.SGD([a, b], lr=0.1),
                L.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1),
                L.optim.SGD([a], lr=0.1))

    for i, j in [(0, 1), (0, 2)]:
        with pytest.raises(ValueError) as want:
            make(torch)[i].load_state_dict(make(torch)[j].state_dict())
        with pytest.raises(ValueError) as got:
            make(numgrad)[i].load_state_dict(make(numgrad)[j].state_dict())
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("make", [
    lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.01),
    lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1, momentum=0.9, nesterov=True,
                          weight_decay=1e-4),
    lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))]),
    lambda L: L.optim.Adam([{"params": [L.nn.Parameter(L.ones(1))], "lr": 0.1},
                            {"params": [L.nn.Parameter(L.ones(1))]}], betas=(0.5, 0.9), amsgrad=True),
])
def test_repr_matches_pytorch(make):
    assert repr(make(numgrad)) == repr(make(torch))


ERRORS = {
    "empty": lambda L: L.optim.SGD([], lr=0.1),
    "tensor_not_iterable": lambda L: L.optim.SGD(L.nn.Parameter(L.ones(1)), lr=0.1),
    "non_leaf": lambda L: L.optim.SGD([L.ones(1, requires_grad=True) * 2], lr=0.1),
    "not_a_tensor": lambda L: L.optim.Adam([1.0]),
    "set_of_params": lambda L: L.optim.SGD([{"params": {L.nn.Parameter(L.ones(1))}}], lr=0.1),
    "twice": lambda L: (lambda p: L.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(
        L.nn.Parameter(L.ones(1))),
    "negative_lr": lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=-1),
    "negative_momentum": lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1, momentum=-0.5),
    "nesterov_without_momentum": lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1, nesterov=True),
    "nesterov_with_dampening": lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1, momentum=0.9,
                                                      dampening=0.1, nesterov=True),
    "negative_weight_decay": lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1, weight_decay=-1),
    "adam_beta": lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], betas=(1.0, 0.999)),
    "adam_beta2": lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], betas=(0.9, -0.1)),
    "adam_eps": lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], eps=-1e-8),
    "adam_lr": lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], lr=-1e-3),
    "adam_weight_decay": lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], weight_decay=-1),
    "names_mixed": lambda L: L.optim.SGD(
        [("a", L.nn.Parameter(L.ones(1))), L.nn.Parameter(L.ones(1))], lr=0.1),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(name):
    with pytest.raises(Exception) as want:
        ERRORS[name](torch)
    with pytest.raises(type(want.value)) as got:
        ERRORS[name](numgrad)
    assert str(got.value) == str(want.value).replace("torch.", "numgrad.")


def test_duplicate_parameters_warn():
    p = nn.Parameter(numgrad.ones(1))
    with pytest.warns(UserWarning, match="duplicate parameters"):
        numgrad.optim.SGD([p, p], lr=0.1)


def test_unsupported_implementations_raise():
    p = [nn.Parameter(numgrad.ones(1))]
    for make in (lambda: numgrad.optim.SGD(p, lr=0.1, fused=True),
                 lambda: numgrad.optim.Adam(p, capturable=True),
                 lambda: numgrad.optim.Adam(p, differentiable=True)):
        with pytest.raises(NotImplementedError, match="is not supported by numgrad's optimizers"):
            make()
    numgrad.optim.SGD(p, lr=0.1, foreach=True)  # accepted: the same arithmetic


def test_base_class_step_is_abstract():
    opt = numgrad.optim.Optimizer([nn.Parameter(numgrad.ones(1))], {"lr": 0.1})
    with pytest.raises(NotImplementedError):
        opt.step()
    assert opt.param_groups[0]["lr"] == 0.1 and not opt.state


def _random_grads(params, shapes, dtype, rng, specials):
    """Gradients of magnitudes 1e-8 to 1e3 (the (3, 4) one not contiguous), with NaN, the
    infinities and -0.0 in those of more than 4 elements where ``specials``."""
    for p, shape in zip(params, shapes):
        g = np.array(rng.standard_normal(shape[::-1]) * 10.0 ** rng.integers(-8, 4), dtype)
        if specials and g.size > 4:
            g.reshape(-1)[:4] = [np.nan, np.inf, -0.0, -np.inf]
        p.grad = numgrad.tensor(g).T if len(shape) == 2 and shape[0] == 3 else \
            numgrad.tensor(g.reshape(shape))


def _adam_run(make, dtype, fused, monkeypatch):
    """Six steps of ``make(params)`` on float ``dtype`` parameters (one large enough,
    ``optim.THREADED``, to be cut into parts and shared among threads, a 1-element one, a 0-d
    one, and one whose gradient is not contiguous), with NaN, infinities and -0.0 in a
    gradient; the parameters', states' and version counters' values afterwards."""
    if not fused:
        monkeypatch.setattr(numgrad.optim.Adam, "_fused_arguments", lambda *a: False)
    rng = np.random.default_rng(0)
    shapes = [(1100, 1000), (1,), (), (3, 4)]
    params = [nn.Parameter(numgrad.tensor(rng.standard_normal(s).astype(dtype))) for s in shapes]
    opt = make(params)
    for k in range(6):
        _random_grads(params, shapes, dtype, rng, k == 3)
        opt.step()
    monkeypatch.undo()
    states = [{k: v.numpy().tobytes() for k, v in opt.state[p].items()} for p in params]
    versions = [p._version for p in params] + [
        v._version for p in params for v in opt.state[p].values()]
    return [p.detach().numpy().tobytes() for p in params], states, versions


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("make", [
    lambda p: numgrad.optim.Adam(p, lr=1e-2),
    lambda p: numgrad.optim.Adam(p, lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1,
                                 amsgrad=True, maximize=True),
    lambda p: numgrad.optim.AdamW(p, lr=3e-3, eps=1e-6, amsgrad=True, weight_decay=0.5),
], ids=["adam", "l2_amsgrad_maximize", "adamw_amsgrad"])
def test_fused_adam_equals_the_op_by_op_update_bit_for_bit(make, dtype, monkeypatch):
    """Adam's fused CPU kernel and its op-by-op update (the traced one) give the same bits,
    NaN included, the same state and the same version counts."""
    assert _adam_run(make, dtype, True, monkeypatch) == _adam_run(make, dtype, False, monkeypatch)


def _sgd_run(make, dtype, fused, monkeypatch):
    """Four steps of ``make(params)`` as ``_adam_run`` (the large parameter's parts shared among
    threads), a gradient left None on the second step; the parameters', momentum buffers' and
    version counters' values afterwards, and which parameters have a state."""
    from numgrad.kernels.cpu import optim as kernels

    sgd, calls = kernels.sgd, []
    if fused:
        monkeypatch.setattr(kernels, "THREADED", 1)
        monkeypatch.setattr(kernels, "sgd", lambda *a: calls.append(kernels._sgd) or sgd(*a))
    else:
        monkeypatch.setattr(numgrad.optim.SGD, "_fused_arguments", lambda *a: False)
    rng = np.random.default_rng(0)
    shapes = [(600, 500), (1,), (), (3, 4)]
    params = [nn.Parameter(numgrad.tensor(rng.standard_normal(s).astype(dtype))) for s in shapes]
    opt = make(params)
    for k in range(4):
        _random_grads(params, shapes, dtype, rng, k == 2)
        if k == 1:
            params[1].grad = None
        opt.step()
    monkeypatch.undo()
    assert len(calls) == (4 if fused else 0)
    states = [{k: (v.numpy().tobytes(), v._version, v.requires_grad)
               for k, v in opt.state[p].items()} if p in opt.state else None for p in params]
    return [p.detach().numpy().tobytes() for p in params], states, [p._version for p in params]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("make", [
    lambda p: numgrad.optim.SGD(p, lr=0.1),
    lambda p: numgrad.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    lambda p: numgrad.optim.SGD(p, lr=3e-3, momentum=0.5, dampening=0.3, weight_decay=1e-3,
                                maximize=True),
], ids=["plain", "nesterov_weight_decay", "dampening_maximize"])
def test_fused_sgd_equals_the_op_by_op_update_bit_for_bit(make, dtype, monkeypatch):
    """SGD's fused CPU kernel and its op-by-op update (the traced one) give the same bits, NaN
    included, the same momentum buffers and the same version counts."""
    assert _sgd_run(make, dtype, True, monkeypatch) == _sgd_run(make, dtype, False, monkeypatch)


def test_fused_sgd_updates_the_parameters_before_an_error_as_op_by_op():
    """A parameter the fused kernel takes is still updated when a later one's op-by-op update
    fails (as the op-by-op update leaves it), and the error is PyTorch's."""
    fused = nn.Parameter(numgrad.ones(3))
    broken = nn.Parameter(numgrad.ones(2))
    fused.grad, broken.grad = numgrad.ones(3), numgrad.ones(2)
    opt = numgrad.optim.SGD([fused, broken], lr=0.5, momentum=0.9)
    opt.state[broken]["momentum_buffer"] = numgrad.ones(3)  # (a wrong state: op by op)
    with pytest.raises(RuntimeError, match="must match the size"):
        opt.step()
    assert fused.tolist() == [0.5, 0.5, 0.5] and broken.tolist() == [1.0, 1.0]
    assert opt.state[fused]["momentum_buffer"].tolist() == [1.0, 1.0, 1.0]


def test_many_small_parameters_share_the_threads_with_the_same_bits(monkeypatch):
    """A model of many parameters below ``PART`` each, ``THREADED`` elements in all (the tiny
    GPT's shape: 818K elements in 53 parameters), is updated on two threads, one item per
    parameter, with the bits of one thread (AdamW's fused step, NaN and -0.0 in a gradient)."""
    from numgrad.kernels.cpu import _workers
    from numgrad.kernels.cpu import optim as kernels

    shapes = [(128, 512)] * 3 + [(128, 128)] * 4 + [(128,)] * 8
    assert kernels.THREADED <= sum(int(np.prod(s)) for s in shapes) < 1 << 20
    run, used = _workers.run, []
    monkeypatch.setattr(_workers, "run", lambda items, work, threads, blas=True: (
        used.append((len(items), threads)), run(items, work, threads, blas)))
    before = numgrad.get_num_threads()
    results = []
    try:
        for n in (1, 2):
            numgrad.set_num_threads(n)
            rng = np.random.default_rng(0)
            params = [nn.Parameter(numgrad.tensor(rng.standard_normal(s).astype(np.float32)))
                      for s in shapes]
            opt = numgrad.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
            for k in range(3):
                _random_grads(params, shapes, "float32", rng, k == 1)
                opt.step()
            results.append([p.detach().numpy().tobytes() for p in params])
    finally:
        numgrad.set_num_threads(before)
    assert used[0] == (len(shapes), 1) and used[-1] == (len(shapes), 2)
    assert results[0] == results[1]
