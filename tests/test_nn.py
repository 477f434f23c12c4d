"""numgrad.nn against torch.nn: the Module API and reprs, Parameter, Linear, init, and the
functional API's values, gradients and errors. The ops behind nll_loss and mse_loss are also in the
registry, so test_ops.py gradchecks them; here they are exercised through their public forms."""
import copy
import math
import pickle
import sys
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import numgrad
import numgrad.nn.functional as F
from numgrad import nn

TF = torch.nn.functional


def _copy_weights(theirs, ours):
    """Loads a torch module's weights into the numgrad module of the same structure."""
    ours.load_state_dict({k: numgrad.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


def _close(ours, theirs, **tol):
    tol = tol or dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tol)


def _same_error(ours, theirs, replace=()):
    """Both calls raise the same exception class with the same message (after ``replace``)."""
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    expected = str(want.value)
    for a, b in replace:
        expected = expected.replace(a, b)
    assert str(got.value) == expected


class _Block:
    """Builds the same custom module class in either library."""

    @staticmethod
    def make(lib):
        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh())
                self.heads = lib.nn.ModuleList([lib.nn.Linear(8, 2), lib.nn.Linear(8, 2)])
                self.scale = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
                self.register_buffer("offset", lib.zeros(2))
                self.plain = lib.zeros(3)  # a plain tensor attribute: not registered

            def forward(self, x):
                h = self.encoder(x)
                return sum(head(h) for head in self.heads) * self.scale

            def extra_repr(self):
                return "custom=1"

        return Block()


# ------------------------------------------------------------------ reprs
REPR_CASES = {
    "mlp": lambda L: L.nn.Sequential(L.nn.Linear(784, 256), L.nn.ReLU()),
    "nested": lambda L: L.nn.Sequential(
        L.nn.Linear(2, 3), L.nn.Sequential(L.nn.Tanh(), L.nn.Linear(3, 1, bias=False))),
    "named": lambda L: L.nn.Sequential(OrderedDict(fc=L.nn.Linear(3, 2), act=L.nn.Sigmoid())),
    "relu_inplace": lambda L: L.nn.ReLU(inplace=True),
    "softmax": lambda L: L.nn.Softmax(dim=1),
    "log_softmax": lambda L: L.nn.LogSoftmax(-1),
    "flatten": lambda L: L.nn.Flatten(),
    "identity": lambda L: L.nn.Identity(),
    "losses": lambda L: L.nn.Sequential(
        L.nn.MSELoss(reduction="sum"), L.nn.CrossEntropyLoss(), L.nn.NLLLoss()),
    "module_list": lambda L: L.nn.ModuleList(
        [L.nn.Linear(2, 2), L.nn.Linear(2, 2), L.nn.ReLU(), L.nn.Linear(2, 2)]),
    "empty": lambda L: L.nn.Sequential(),
    "custom": _Block.make,
}


@pytest.mark.parametrize("build", REPR_CASES.values(), ids=REPR_CASES.keys())
def test_module_repr_matches_pytorch(build):
    assert repr(build(numgrad)) == repr(build(torch))


def test_the_spec_repr_verbatim():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU())
    assert repr(model) == (
        "Sequential(\n  (0): Linear(in_features=784, out_features=256, bias=True)\n  (1): ReLU()\n)"
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameter_repr_matches_pytorch(dtype, requires_grad):
    data = np.array([[1.5, -2.0], [0.25, 3.0]], dtype=dtype)
    ours = nn.Parameter(numgrad.tensor(data), requires_grad=requires_grad)
    theirs = torch.nn.Parameter(torch.tensor(data), requires_grad=requires_grad)
    assert repr(ours) == repr(theirs).replace("torch.", "numgrad.")
    assert repr(ours).startswith("Parameter containing:\ntensor(")


# ------------------------------------------------------------------ Parameter
def test_parameter_is_a_leaf_tensor_sharing_storage():
    data = numgrad.ones(3)
    p = nn.Parameter(data)
    assert isinstance(p, numgrad.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert np.shares_memory(p.detach().numpy(), data.numpy())
    out = p * 2
    assert type(out) is numgrad.Tensor and out.grad_fn.name() == "MulBackward0"
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_parameter_of_a_non_leaf_is_detached():
    x = numgrad.ones(2, requires_grad=True)
    p = nn.Parameter(x * 3)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    (p * p).sum().backward()
    assert x.grad is None and p.grad.tolist() == [6.0, 6.0]


def test_parameter_errors_match_pytorch():
    _same_error(lambda: nn.Parameter(numgrad.tensor([1, 2])),
                lambda: torch.nn.Parameter(torch.tensor([1, 2])))


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(numgrad.tensor([1.0, 2.0]))
    (p * p).sum().backward()
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == [1.0, 2.0]
        assert not np.shares_memory(q.detach().numpy(), p.detach().numpy())
        (q * 3).sum().backward()
        assert q.grad.tolist() == [3.0, 3.0] and p.grad.tolist() == [2.0, 4.0]


# ------------------------------------------------------------------ traversal and registration
def test_traversal_matches_pytorch():
    ours, theirs = _Block.make(numgrad), _Block.make(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    assert [n for n, _ in ours.named_parameters(recurse=False)] == ["scale"]
    assert len(list(ours.parameters(recurse=False))) == 1
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in theirs.modules()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()] == ["offset"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters(prefix="model")] == [
        n for n, _ in theirs.named_parameters(prefix="model")]


def test_shared_modules_and_parameters_are_listed_once():
    for lib in (numgrad, torch):
        shared = lib.nn.Linear(3, 3)
        model = lib.nn.Sequential(shared, lib.nn.ReLU(), shared)
        assert len(list(model.parameters())) == 2
        assert [n for n, _ in model.named_modules()] == ["", "0", "1"]
        assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_attributes_register_and_unregister():
    m = nn.Module()
    m.w = nn.Parameter(numgrad.ones(2))
    m.sub = nn.Linear(2, 2)
    m.t = numgrad.zeros(1)
    assert list(m._parameters) == ["w"] and list(m._modules) == ["sub"]
    assert "t" not in m.state_dict() and m.t.shape == (1,)
    assert [n for n, _ in m.named_parameters()] == ["w", "sub.weight", "sub.bias"]
    m.w = None  # a declared but absent parameter
    assert m.w is None and [n for n, _ in m.named_parameters()] == ["sub.weight", "sub.bias"]
    del m.sub
    assert list(m.parameters()) == [] and not hasattr(m, "sub")
    m.sub = nn.Parameter(numgrad.ones(1))  # a name can change kind
    assert list(m._parameters) == ["w", "sub"]
    m.add_module("act", nn.ReLU())
    m.register_module("act2", None)
    assert list(m._modules) == ["act", "act2"] and m.act2 is None
    assert "act" in dir(m) and "sub" in dir(m)


def test_registration_errors_match_pytorch():
    def pair(fn):
        return (lambda: fn(numgrad)), (lambda: fn(torch))

    replace = [("torch.nn.Parameter", "numgrad.nn.Parameter"), ("torch.nn.Module", "numgrad.nn.Module"),
               ("torch.FloatTensor", "numgrad.FloatTensor")]

    def assign_tensor_to_parameter(L):
        m = L.nn.Linear(2, 2)
        m.weight = L.ones(2, 2)

    def assign_tensor_to_module(L):
        m = L.nn.Sequential(L.nn.ReLU())
        setattr(m, "0", L.ones(1))

    def dotted_name(L):
        L.nn.Module().register_parameter("a.b", None)

    def existing_attribute(L):
        m = L.nn.Module()
        m.x = 1
        m.register_parameter("x", None)

    def before_init(L):
        class Bad(L.nn.Module):
            def __init__(self):
                self.w = L.nn.Parameter(L.ones(1))

        Bad()

    def missing_attribute(L):
        return L.nn.Linear(2, 2).nope

    def no_forward(L):
        return L.nn.Module()(L.ones(1))

    for fn in (assign_tensor_to_parameter, assign_tensor_to_module, dotted_name, existing_attribute,
               before_init, missing_attribute, no_forward):
        _same_error(*pair(fn), replace=replace)
    with pytest.raises(TypeError, match="cannot assign 'numgrad.FloatTensor' object to parameter"):
        nn.Module().register_parameter("w", numgrad.ones(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        nn.Module().add_module("m", 3)


def test_train_eval_propagate():
    model = _Block.make(numgrad)
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    assert model.train() is model and all(m.training for m in model.modules())
    model.heads.train(False)
    assert model.training and not model.heads[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")


def test_zero_grad_and_requires_grad():
    model = nn.Sequential(nn.Linear(3, 2))
    model(numgrad.ones(4, 3)).sum().backward()
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=False)
    assert [p.grad for p in model.parameters()] == grads  # the same tensors, zeroed
    assert all(not g.numpy().any() for g in grads)
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())


def test_apply_visits_children_first():
    seen = []
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]


# ------------------------------------------------------------------ state_dict
def test_state_dict_is_detached_and_shares_storage():
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1))
    sd = model.state_dict()
    assert isinstance(sd, OrderedDict) and list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for (name, p), value in zip(model.named_parameters(), sd.values()):
        assert type(value) is numgrad.Tensor and not value.requires_grad and value.grad_fn is None
        assert np.shares_memory(value.numpy(), p.detach().numpy())
    kept = model.state_dict(keep_vars=True)
    assert all(v is p for v, p in zip(kept.values(), model.parameters()))
    assert list(model.state_dict(prefix="net.")) == ["net." + k for k in sd]


def test_load_state_dict_copies_in_place():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    params = list(model.parameters())
    versions = [p._version for p in params]
    source = {k: numgrad.full(tuple(v.shape), 0.5, dtype=numgrad.float64)
              for k, v in model.state_dict().items()}
    result = model.load_state_dict(source)
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert list(model.parameters()) == params  # the same Parameter objects
    for p, v in zip(params, versions):
        assert p.dtype is numgrad.float32 and p.requires_grad and p.is_leaf
        assert p._version > v
        assert (p.detach().numpy() == 0.5).all()
    assert not np.shares_memory(params[0].detach().numpy(), source["0.weight"].numpy())


def test_load_state_dict_from_pytorch_and_arrays():
    theirs = torch.nn.Linear(4, 3)
    ours = nn.Linear(4, 3)
    ours.load_state_dict(theirs.state_dict())  # torch CPU tensors are array-likes
    _close(ours.weight, theirs.weight)
    ours.load_state_dict({"weight": np.zeros((3, 4)), "bias": np.ones(3)})
    assert ours.weight.detach().numpy().sum() == 0 and ours.bias.tolist() == [1, 1, 1]


def test_load_state_dict_errors_match_pytorch_and_change_nothing():
    def bad(L):
        return L.nn.Sequential(L.nn.Linear(2, 3), L.nn.Sequential(L.nn.Tanh(), L.nn.Linear(3, 1)))

    ours, theirs = bad(numgrad), bad(torch)
    before = [p.detach().numpy().copy() for p in ours.parameters()]
    state = {"a": np.ones(1), "0.weight": np.ones((3, 3)), "1.1.bias": np.ones(1)}
    _same_error(lambda: ours.load_state_dict({k: numgrad.tensor(v) for k, v in state.items()}),
                lambda: theirs.load_state_dict({k: torch.tensor(v) for k, v in state.items()}),
                replace=[("torch.Size", "numgrad.Size")])
    assert all((p.detach().numpy() == b).all() for p, b in zip(ours.parameters(), before))

    result = ours.load_state_dict({"a": numgrad.ones(1), "1.1.bias": numgrad.zeros(1)}, strict=False)
    expected = theirs.load_state_dict({"a": torch.ones(1), "1.1.bias": torch.zeros(1)}, strict=False)
    assert repr(result) == repr(expected)
    assert ours[1][1].bias.tolist() == [0.0]
    with pytest.raises(RuntimeError, match='expected numgrad Tensor or Tensor-like object'):
        ours.load_state_dict({**ours.state_dict(), "0.bias": "nope"})


def test_load_state_dict_assign_replaces_parameters():
    model = nn.Linear(2, 1)
    old = model.weight
    model.load_state_dict({"weight": numgrad.ones(1, 2, dtype=numgrad.float64), "bias": numgrad.zeros(1)},
                          assign=True)
    assert model.weight is not old and isinstance(model.weight, nn.Parameter)
    assert model.weight.dtype is numgrad.float64 and model.weight.requires_grad


def test_buffers_are_saved_and_converted():
    ours = nn.CrossEntropyLoss(weight=numgrad.tensor([1.0, 2.0, 3.0]))
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    ours.double()
    assert ours.weight.dtype is numgrad.float64
    m = nn.Module()
    m.register_buffer("kept", numgrad.ones(1))
    m.register_buffer("scratch", numgrad.ones(1), persistent=False)
    assert list(m.state_dict()) == ["kept"] and [n for n, _ in m.named_buffers()] == ["kept", "scratch"]
    m.kept = numgrad.zeros(1)  # assigning to a buffer's name replaces the buffer
    assert m.state_dict()["kept"].tolist() == [0.0]
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'kept'"):
        m.kept = 3


# ------------------------------------------------------------------ conversion
def test_to_double_converts_in_place_keeping_identity():
    model = nn.Sequential(nn.Linear(3, 2))
    model(numgrad.ones(1, 3)).sum().backward()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    assert model.to(numgrad.float64) is model
    assert list(model.parameters()) == params
    assert [p.grad for p in params] == grads
    assert all(p.dtype is numgrad.float64 and p.grad.dtype is numgrad.float64 for p in params)
    assert all(p.requires_grad and p.is_leaf for p in params)
    out = model(numgrad.ones(1, 3, dtype=numgrad.float64))
    assert out.dtype is numgrad.float64
    model.float()
    assert all(p.dtype is numgrad.float32 for p in params)
    model.double()
    assert all(p.dtype is numgrad.float64 for p in params)
    model.to(numgrad.zeros(1))  # to(tensor) takes its dtype
    assert all(p.dtype is numgrad.float32 for p in params)
    assert model.to("cpu") is model and model.cpu() is model


def test_to_errors():
    _same_error(lambda: nn.Linear(2, 2).to(numgrad.int64), lambda: torch.nn.Linear(2, 2).to(torch.int64),
                replace=[("torch.", "numgrad.")])
    if not numgrad.cuda.is_available():
        with pytest.raises(RuntimeError):
            nn.Linear(2, 2).cuda()


def test_deepcopy_and_pickle_a_model():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert repr(clone) == repr(model)
        for (n1, p1), (n2, p2) in zip(model.named_parameters(), clone.named_parameters()):
            assert n1 == n2 and p1 is not p2 and (p1.detach().numpy() == p2.detach().numpy()).all()
        x = numgrad.ones(2, 3)
        _close(clone(x), model(x))


# ------------------------------------------------------------------ Sequential and ModuleList
def test_sequential_indexing_like_pytorch():
    def build(L):
        return L.nn.Sequential(L.nn.Linear(2, 3), L.nn.ReLU(), L.nn.Linear(3, 1), L.nn.Sigmoid())

    ours, theirs = build(numgrad), build(torch)
    assert len(ours) == 4
    assert [type(m).__name__ for m in ours] == [type(m).__name__ for m in theirs]
    assert ours[0] is ours._modules["0"] and ours[-1] is ours._modules["3"]
    assert repr(ours[1:3]) == repr(theirs[1:3])  # keys kept: (1), (2)
    assert repr(ours[::-2]) == repr(theirs[::-2])
    _same_error(lambda: ours[4], lambda: theirs[4])
    _same_error(lambda: ours[-5], lambda: theirs[-5])
    ours[1] = nn.Tanh()
    theirs[1] = torch.nn.Tanh()
    del ours[0]
    del theirs[0]
    ours.append(nn.Identity())
    theirs.append(torch.nn.Identity())
    assert repr(ours) == repr(theirs)


def test_sequential_forward_chains():
    model = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
    x = numgrad.randn(5, 2)
    _close(model(x), model[1](model[0](x)))


def test_module_list():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    assert layers[-1] is layers[2] and isinstance(layers[:2], nn.ModuleList) and len(layers[:2]) == 2
    layers.append(nn.ReLU()).extend([nn.Tanh()])
    del layers[0]
    assert [type(m).__name__ for m in layers] == ["Linear", "Linear", "ReLU", "Tanh"]
    assert list(layers._modules) == ["0", "1", "2", "3"]


# ------------------------------------------------------------------ Linear and init
def test_linear_initialisation_bounds():
    numgrad.manual_seed(0)
    layer = nn.Linear(784, 256)
    bound = 1 / math.sqrt(784)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (256, 784) and b.shape == (256,)
    assert w.dtype == np.float32 and b.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.99 * bound and np.abs(b).max() > 0.9 * bound
    assert abs(w.mean()) < 0.01 * bound and abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound


def test_linear_initialisation_is_reproducible():
    numgrad.manual_seed(7)
    a = nn.Linear(5, 3)
    numgrad.manual_seed(7)
    b = nn.Linear(5, 3)
    c = nn.Linear(5, 3)
    assert (a.weight.detach().numpy() == b.weight.detach().numpy()).all()
    assert (a.bias.detach().numpy() == b.bias.detach().numpy()).all()
    assert not (a.weight.detach().numpy() == c.weight.detach().numpy()).all()


def test_linear_dtype_and_no_bias():
    layer = nn.Linear(3, 2, bias=False, dtype=numgrad.float64)
    assert layer.weight.dtype is numgrad.float64 and layer.bias is None
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    assert list(layer.state_dict()) == ["weight"]


@pytest.mark.parametrize("shape", [(5, 4), (4,), (2, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_pytorch(shape, bias):
    theirs = torch.nn.Linear(4, 3, bias=bias).double()
    ours = nn.Linear(4, 3, bias=bias, dtype=numgrad.float64)
    _copy_weights(theirs, ours)
    x = np.random.default_rng(0).standard_normal(shape)
    xo, xt = numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    _close(yo, yt)
    if len(shape) == 2 and not bias:
        assert yo.grad_fn.name() == yt.grad_fn.name() == "MmBackward0"
    seed = np.random.default_rng(1).standard_normal(yt.shape)
    yo.backward(numgrad.tensor(seed))
    yt.backward(torch.tensor(seed))
    _close(xo.grad, xt.grad)
    for (_, po), (_, pt) in zip(ours.named_parameters(), theirs.named_parameters()):
        _close(po.grad, pt.grad)


def test_init_fills_in_place_without_recording():
    w = nn.Parameter(numgrad.empty(64, 32))
    version = w._version
    for fill in (lambda t: nn.init.uniform_(t, -0.5, 0.5), lambda t: nn.init.normal_(t, 1.0, 0.1),
                 nn.init.zeros_, nn.init.ones_, lambda t: nn.init.constant_(t, 0.3), nn.init.eye_,
                 nn.init.xavier_uniform_, nn.init.xavier_normal_, nn.init.kaiming_uniform_,
                 nn.init.kaiming_normal_):
        assert fill(w) is w
        assert w.is_leaf and w.requires_grad and w.grad_fn is None and w._version > version
        version = w._version


def test_init_distributions():
    numgrad.manual_seed(0)
    t = numgrad.empty(200, 300)
    d = nn.init.uniform_(t, -2, 3).numpy()
    assert d.min() >= -2 and d.max() < 3 and abs(d.mean() - 0.5) < 0.05
    d = nn.init.normal_(t, 1.5, 0.5).numpy()
    assert abs(d.mean() - 1.5) < 0.01 and abs(d.std() - 0.5) < 0.01
    assert (nn.init.constant_(t, 0.25).numpy() == 0.25).all()
    assert (nn.init.zeros_(t).numpy() == 0).all() and (nn.init.ones_(t).numpy() == 1).all()
    assert (nn.init.eye_(t).numpy() == np.eye(200, 300)).all()
    fan_in, fan_out = 300, 200
    bound = math.sqrt(6 / (fan_in + fan_out))
    d = nn.init.xavier_uniform_(t, gain=2.0).numpy()
    assert np.abs(d).max() <= 2 * bound and np.abs(d).max() > 0.99 * 2 * bound
    d = nn.init.xavier_normal_(t).numpy()
    assert abs(d.std() - math.sqrt(2 / (fan_in + fan_out))) < 0.002
    d = nn.init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu").numpy()
    bound = math.sqrt(2) * math.sqrt(3 / fan_out)
    assert np.abs(d).max() <= bound and np.abs(d).max() > 0.99 * bound
    d = nn.init.kaiming_normal_(t, nonlinearity="relu").numpy()
    assert abs(d.std() - math.sqrt(2 / fan_in)) < 0.002
    t64 = nn.init.uniform_(numgrad.empty(3, dtype=numgrad.float64))
    assert t64.dtype is numgrad.float64


def test_init_generator_and_manual_seed():
    numgrad.manual_seed(3)
    a = nn.init.normal_(numgrad.empty(5)).numpy().copy()
    numgrad.manual_seed(3)
    b = nn.init.normal_(numgrad.empty(5)).numpy().copy()
    assert (a == b).all()
    c = nn.init.normal_(numgrad.empty(5), generator=np.random.default_rng(3)).numpy()
    d = nn.init.normal_(numgrad.empty(5), generator=np.random.default_rng(3)).numpy()
    assert (c == d).all()


@pytest.mark.parametrize("args", [("linear",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
                                  ("leaky_relu", 0.2), ("selu",), ("conv2d",)])
def test_calculate_gain_matches_pytorch(args):
    assert nn.init.calculate_gain(*args) == pytest.approx(torch.nn.init.calculate_gain(*args), rel=1e-15)


def test_init_errors_match_pytorch():
    _same_error(lambda: nn.init.xavier_uniform_(numgrad.empty(3)),
                lambda: torch.nn.init.xavier_uniform_(torch.empty(3)))
    _same_error(lambda: nn.init.kaiming_uniform_(numgrad.empty(3, 2), mode="fan"),
                lambda: torch.nn.init.kaiming_uniform_(torch.empty(3, 2), mode="fan"))
    _same_error(lambda: nn.init.calculate_gain("gelu"), lambda: torch.nn.init.calculate_gain("gelu"))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        nn.init.kaiming_uniform_(numgrad.empty(0, 3))


# ------------------------------------------------------------------ functional: values and gradients
def _pair(x):
    return numgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _check(fn_ours, fn_theirs, *arrays, tol=None):
    """Same values, dtype, node name and input gradients (for a random output gradient)."""
    pairs = [_pair(a) for a in arrays]
    yo = fn_ours(*[p[0] for p in pairs])
    yt = fn_theirs(*[p[1] for p in pairs])
    assert tuple(yo.shape) == tuple(yt.shape)
    assert yo.dtype.name == str(yt.dtype).removeprefix("torch.")
    _close(yo, yt, **(tol or {}))
    seed = np.random.default_rng(5).standard_normal(tuple(yt.shape)).astype(arrays[0].dtype)
    yo.backward(numgrad.tensor(seed))
    yt.backward(torch.tensor(seed))
    for (o, t) in pairs:
        _close(o.grad, t.grad, **(tol or {}))
    return yo, yt


RNG = np.random.default_rng(42)
X = RNG.standard_normal((6, 5))
Y = RNG.standard_normal((6, 5))
T = np.array([0, 4, 2, 2, 1, 3])
W = np.array([0.5, 1.0, 2.0, 1.5, 0.25])
P = np.exp(Y) / np.exp(Y).sum(1, keepdims=True)


def _both(fn):
    """``fn(lib, *tensors)`` as a pair of callables, one per library."""
    return (lambda *xs: fn(numgrad, F, *xs)), (lambda *xs: fn(torch, TF, *xs))


FUNCTIONAL = {
    "relu": (lambda L, f, x: f.relu(x), (X,)),
    "sigmoid": (lambda L, f, x: f.sigmoid(x), (X,)),
    "tanh": (lambda L, f, x: f.tanh(x), (X,)),
    "softmax": (lambda L, f, x: f.softmax(x, dim=1), (X,)),
    "softmax0": (lambda L, f, x: f.softmax(x, 0), (X,)),
    "log_softmax": (lambda L, f, x: f.log_softmax(x, dim=-1), (X,)),
    "linear": (lambda L, f, x, w: f.linear(x, w), (X, Y[:3])),
    "linear_bias": (lambda L, f, x, w, b: f.linear(x, w, b), (X, Y[:3], W[:3])),
    "mse": (lambda L, f, x, y: f.mse_loss(x, y), (X, Y)),
    "mse_sum": (lambda L, f, x, y: f.mse_loss(x, y, reduction="sum"), (X, Y)),
    "mse_none": (lambda L, f, x, y: f.mse_loss(x, y, reduction="none"), (X, Y)),
    "mse_weight": (lambda L, f, x, y: f.mse_loss(x, y, weight=L.tensor(P)), (X, Y)),
    "mse_weight_none": (lambda L, f, x, y: f.mse_loss(x, y, reduction="none", weight=L.tensor(P)), (X, Y)),
    "mse_module": (lambda L, f, x, y: L.nn.MSELoss(reduction="sum")(x, y), (X, Y)),
    "nll": (lambda L, f, x: f.nll_loss(f.log_softmax(x, 1), L.tensor(T)), (X,)),
    "nll_weight_ignore": (lambda L, f, x: f.nll_loss(x, L.tensor(T), weight=L.tensor(W), ignore_index=2), (X,)),
    "nll_module": (lambda L, f, x: L.nn.NLLLoss(reduction="sum")(x, L.tensor(T)), (X,)),
    "ce": (lambda L, f, x: f.cross_entropy(x, L.tensor(T)), (X,)),
    "ce_sum": (lambda L, f, x: f.cross_entropy(x, L.tensor(T), reduction="sum"), (X,)),
    "ce_none": (lambda L, f, x: f.cross_entropy(x, L.tensor(T), reduction="none"), (X,)),
    "ce_weight": (lambda L, f, x: f.cross_entropy(x, L.tensor(T), weight=L.tensor(W)), (X,)),
    "ce_ignore": (lambda L, f, x: f.cross_entropy(x, L.tensor(T), ignore_index=4), (X,)),
    "ce_weight_ignore_none": (lambda L, f, x: f.cross_entropy(
        x, L.tensor(T), weight=L.tensor(W), ignore_index=2, reduction="none"), (X,)),
    "ce_1d": (lambda L, f, x: f.cross_entropy(x[0], L.tensor(3)), (X,)),
    "ce_probabilities": (lambda L, f, x, p: f.cross_entropy(x, p), (X, P)),
    "ce_probabilities_weight_none": (lambda L, f, x, p: f.cross_entropy(
        x, p, weight=L.tensor(W), reduction="none"), (X, P)),
    "ce_probabilities_smoothing": (lambda L, f, x, p: f.cross_entropy(x, p, label_smoothing=0.2), (X, P)),
    "ce_smoothing": (lambda L, f, x: f.cross_entropy(x, L.tensor(T), label_smoothing=0.1), (X,)),
    "ce_smoothing_weight_ignore": (lambda L, f, x: f.cross_entropy(
        x, L.tensor(T), weight=L.tensor(W), ignore_index=1, label_smoothing=0.3), (X,)),
    "ce_smoothing_sum_none": (lambda L, f, x: (
        f.cross_entropy(x, L.tensor(T), reduction="none", label_smoothing=0.3) * 2
        + f.cross_entropy(x, L.tensor(T), reduction="sum", label_smoothing=0.3)), (X,)),
    "ce_module": (lambda L, f, x: L.nn.CrossEntropyLoss(weight=L.tensor(W))(x, L.tensor(T)), (X,)),
}


@pytest.mark.parametrize("name", FUNCTIONAL)
def test_functional_matches_pytorch(name):
    fn, arrays = FUNCTIONAL[name]
    _check(*_both(fn), *arrays)


def test_loss_nodes_match_pytorch():
    yo, yt = _check(*_both(lambda L, f, x: f.cross_entropy(x, L.tensor(T))), X)
    assert yo.grad_fn.name() == yt.grad_fn.name() == "NllLossBackward0"
    yo, yt = _check(*_both(lambda L, f, x, y: f.mse_loss(x, y)), X, Y)
    assert yo.grad_fn.name() == yt.grad_fn.name() == "MseLossBackward0"


@pytest.mark.parametrize(
    "name", ["ce", "ce_weight_ignore_none", "ce_smoothing", "ce_probabilities", "mse", "nll"])
def test_functional_second_derivatives_match_pytorch(name):
    """Hessian-vector products through the losses: grad with create_graph, then backward."""
    fn, arrays = FUNCTIONAL[name]
    ours, theirs = _both(fn)
    v = np.random.default_rng(9).standard_normal(X.shape)
    pairs = [_pair(a) for a in arrays]
    for call, lib, xs in ((ours, numgrad, [p[0] for p in pairs]), (theirs, torch, [p[1] for p in pairs])):
        out = call(*xs).sum()
        (g,) = lib.autograd.grad(out, xs[0], create_graph=True)
        (g * lib.tensor(v)).sum().backward()
    for o, t in pairs:
        _close(o.grad, t.grad)


def test_loss_gradchecks():
    x = numgrad.tensor(X[:3, :4], requires_grad=True)
    t = numgrad.tensor([3, 0, 1])
    w = numgrad.tensor(W[:4])
    for fn in (lambda x: F.cross_entropy(x, t, weight=w, label_smoothing=0.2),
               lambda x: F.cross_entropy(x, t, weight=w, ignore_index=0, reduction="none"),
               lambda x: F.mse_loss(x, numgrad.tensor(Y[:3, :4])),
               lambda x: F.nll_loss(F.log_softmax(x, 1), t, reduction="sum")):
        assert numgrad.autograd.gradcheck(fn, (x,))
        assert numgrad.autograd.gradgradcheck(fn, (x,))


def test_mse_loss_broadcasting_warns_like_pytorch():
    def call(L, f, x, y):
        return f.mse_loss(x, y[0])

    with pytest.warns(UserWarning, match="Using a target size") as ours_warning:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pairs = [_pair(a) for a in (X, Y)]
            yo = call(numgrad, F, *[p[0] for p in pairs])
    with pytest.warns(UserWarning, match="Using a target size"):
        yt = call(torch, TF, *[p[1] for p in pairs])
    _close(yo, yt)
    yo.backward()
    yt.backward()
    for o, t in pairs:
        _close(o.grad, t.grad)
    assert str(ours_warning[0].message) == (
        "Using a target size (numgrad.Size([5])) that is different to the input size "
        "(numgrad.Size([6, 5])). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.")


def test_legacy_reduction_arguments():
    for kwargs in (dict(size_average=False), dict(reduce=False), dict(size_average=True, reduce=True)):
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            yo = F.mse_loss(numgrad.tensor(X), numgrad.tensor(Y), **kwargs)
        with pytest.warns(UserWarning):
            yt = TF.mse_loss(torch.tensor(X), torch.tensor(Y), **kwargs)
        _close(yo, yt)
        with pytest.warns(UserWarning):
            assert nn.CrossEntropyLoss(**kwargs).reduction == torch.nn.CrossEntropyLoss(**kwargs).reduction


def test_softmax_implicit_dim_warns_and_chooses_like_pytorch():
    for shape in [(4,), (3, 4), (2, 3, 4), (2, 3, 4, 5)]:
        x = RNG.standard_normal(shape)
        for name in ("softmax", "log_softmax"):
            with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
                yo = getattr(F, name)(numgrad.tensor(x))
            with pytest.warns(UserWarning):
                yt = getattr(TF, name)(torch.tensor(x))
            _close(yo, yt)
        with pytest.warns(UserWarning):
            _close(nn.Softmax()(numgrad.tensor(x)), torch.nn.Softmax()(torch.tensor(x)))


def test_softmax_implicit_dim_warning_points_at_the_callers_line():
    # (as PyTorch's: the line that called F.softmax, not numgrad's dispatching wrapper)
    x = numgrad.tensor(RNG.standard_normal((2, 3)))
    for f in (F.softmax, F.log_softmax, F.softmin):
        with pytest.warns(UserWarning, match="Implicit dimension choice") as record:
            line = sys._getframe().f_lineno + 1
            f(x)
        assert [(w.filename, w.lineno) for w in record] == [(__file__, line)]


def test_relu_inplace():
    x = numgrad.tensor([-1.0, 2.0, -3.0])
    assert F.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0, 0.0]
    a = numgrad.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    h = a * 2
    out = nn.ReLU(inplace=True)(h)
    assert out is h
    out.sum().backward()
    assert a.grad.tolist() == [0.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        F.relu(a, inplace=True)


def test_nll_loss_all_ignored_is_nan_like_pytorch():
    everything_ignored = _both(
        lambda L, f, x: f.cross_entropy(x, L.tensor([1, 1, 1, 1, 1, 1]), ignore_index=1))
    yo, yt = _check(*everything_ignored, X)
    assert np.isnan(yo.item()) and np.isnan(yt.item())


def test_float32_losses_match_pytorch():
    tol = dict(rtol=2e-6, atol=2e-6)
    x32, y32, p32 = X.astype(np.float32), Y.astype(np.float32), P.astype(np.float32)
    _check(*_both(lambda L, f, x: f.cross_entropy(x, L.tensor(T), weight=L.tensor(W, dtype=L.float32))),
           x32, tol=tol)
    _check(*_both(lambda L, f, x, y: f.mse_loss(x, y)), x32, y32, tol=tol)
    _check(*_both(lambda L, f, x, p: f.cross_entropy(x, p, label_smoothing=0.1)), x32, p32, tol=tol)


# ------------------------------------------------------------------ functional: errors
ERRORS = {
    "target_out_of_bounds": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([0, 1, 4])),
    "negative_target": lambda L, f: f.cross_entropy(L.zeros(3, 4), L.tensor([0, -1, 2])),
    "batch_mismatch": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([0, 1])),
    "batch_mismatch_2d_target": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([[0, 1, 2]])),
    "int32_target": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([0, 1, 2], dtype=L.int32)),
    "float_target": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([0.0, 1.0, 2.0])),
    "1d_input_target": lambda L, f: f.nll_loss(L.zeros(4), L.tensor([0, 1, 2])),
    "weight_size": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([0, 1, 2]), weight=L.ones(3)),
    "weight_dtype": lambda L, f: f.nll_loss(L.zeros(3, 4, dtype=L.float64), L.tensor([0, 1, 2]),
                                            weight=L.ones(4)),
    "weight_requires_grad": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([0, 1, 2]),
                                                    weight=L.ones(4, requires_grad=True)),
    "bad_reduction": lambda L, f: f.nll_loss(L.zeros(3, 4), L.tensor([0, 1, 2]), reduction="avg"),
    "bad_reduction_mse": lambda L, f: f.mse_loss(L.zeros(3), L.zeros(3), reduction="avg"),
    "mse_weight_shape": lambda L, f: f.mse_loss(L.zeros(3), L.zeros(3), weight=L.ones(2)),
    "probability_target_dtype": lambda L, f: f.cross_entropy(L.zeros(3, 4), L.zeros(3, 4, dtype=L.int64)),
    "smoothing_range": lambda L, f: f.cross_entropy(L.zeros(3, 4), L.tensor([0, 1, 2]), label_smoothing=1.5),
    "linear_shapes": lambda L, f: f.linear(L.zeros(3, 4), L.zeros(2, 5)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_functional_errors_match_pytorch(name):
    fn = ERRORS[name]
    _same_error(lambda: fn(numgrad, F), lambda: fn(torch, TF))


def test_nll_loss_higher_dimensional_input_is_supported():
    """(N, C, d1) inputs (issue 35; compared with PyTorch in tests/test_op_db_defects.py)."""
    loss = F.cross_entropy(numgrad.zeros(2, 3, 4), numgrad.zeros(2, 4, dtype=numgrad.int64))
    assert abs(loss.item() - math.log(3)) < 1e-6


def test_nll_loss_backward_checks_targets_before_scattering():
    """The ATen-style backward is public: a bad target raises instead of writing out of bounds."""
    x = numgrad.zeros(3, 4)
    for reduction, grad in ((0, numgrad.ones(3)), (1, numgrad.tensor(1.0)), (2, numgrad.tensor(1.0))):
        with pytest.raises(IndexError, match="Target 5 is out of bounds."):
            numgrad.ops.nll_loss_backward(grad, x, numgrad.tensor([0, 5, 1]), None, reduction, -100,
                                          numgrad.tensor(2.0))


def test_get_submodule_parameter_buffer_and_set_submodule_as_pytorchs():
    """Dotted-path access to a model's parts (PyTorch's ``get_submodule``, ``get_parameter``,
    ``get_buffer``, ``set_submodule``; numgrad lacked them): the same objects, and PyTorch's
    errors for a missing name, a name of the wrong kind and an empty target."""
    def build(m):
        return m.nn.Sequential(m.nn.Linear(2, 3), m.nn.Sequential(m.nn.BatchNorm1d(3)))

    def outcome(m, fn):
        model = build(m)
        try:
            got = fn(m, model)
        except (AttributeError, ValueError) as e:
            return type(e).__name__, str(e)
        return type(got).__name__, tuple(got.shape) if hasattr(got, "shape") else None

    cases = [
        lambda m, x: x.get_submodule("1.0"), lambda m, x: x.get_submodule(""),
        lambda m, x: x.get_submodule("1.5"), lambda m, x: x.get_submodule("0.weight"),
        lambda m, x: x.get_parameter("0.weight"), lambda m, x: x.get_parameter("1.0.running_mean"),
        lambda m, x: x.get_parameter("0.nope"), lambda m, x: x.get_buffer("1.0.running_var"),
        lambda m, x: x.get_buffer("0.bias"),
        lambda m, x: (x.set_submodule("1.0", m.nn.Identity()), x.get_submodule("1.0"))[1],
        lambda m, x: x.set_submodule("", m.nn.Identity()),
        lambda m, x: x.set_submodule("2", m.nn.Identity(), strict=True),
        lambda m, x: x.set_submodule("0.weight", m.nn.Identity()),
    ]
    for fn in cases:
        assert outcome(numgrad, fn) == outcome(torch, fn)
    model = build(numgrad)
    assert model.get_parameter("0.weight") is model[0].weight
