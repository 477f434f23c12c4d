"""The everyday PyTorch surface tutorials use: formatting, the legacy constructors and
``.type()``, ``autograd.Variable``, and random sampling (``normal``, ``randperm``, ``bernoulli``,
``multinomial``, the in-place fills, ``Generator``). Compared with PyTorch where the result is
not random; random draws are checked for their distribution and their reproducibility."""
import numpy as np
import pytest
import torch

import numgrad


def _both(fn):
    return fn(numgrad), fn(torch)


@pytest.mark.parametrize("spec", [".4f", "+.2f", "", ">10.3e", "g"])
def test_zero_dim_tensor_formats_as_its_value(spec):
    ours, theirs = _both(lambda m: format(m.tensor(3.14159), spec))
    assert ours == theirs


def test_format_of_a_non_scalar_tensor_is_its_str_and_a_spec_is_refused():
    assert f"{numgrad.ones(2)}" == str(numgrad.ones(2))
    with pytest.raises(TypeError):
        format(numgrad.ones(2), ".2f")
    with pytest.raises(TypeError):
        format(torch.ones(2), ".2f")


@pytest.mark.parametrize("call", [
    lambda m: m.Tensor(2, 3), lambda m: m.Tensor([1, 2]), lambda m: m.Tensor(),
    lambda m: m.FloatTensor([1.5, 2]), lambda m: m.LongTensor([1, 2]), lambda m: m.IntTensor(3),
    lambda m: m.DoubleTensor(2, 2), lambda m: m.BoolTensor([1, 0]),
    lambda m: m.Tensor(m.Size([2, 4])),
])
def test_legacy_constructors_give_pytorch_shapes_and_dtypes(call):
    ours, theirs = _both(call)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")


def test_legacy_constructor_values_and_isinstance():
    np.testing.assert_array_equal(numgrad.LongTensor([3, 4]).numpy(), [3, 4])
    for m in (numgrad, torch):
        assert isinstance(m.ones(2), m.FloatTensor)
        assert not isinstance(m.ones(2), m.LongTensor)
        assert isinstance(m.arange(3), m.LongTensor)


@pytest.mark.parametrize("arg", [None, "torch.LongTensor", "torch.DoubleTensor", "LongTensor",
                                 "float64"])
def test_type_names_and_casts_as_pytorch(arg):
    def call(m):
        x = m.tensor([1.5, -2.0])
        if arg is None:
            return x.type()
        if arg == "LongTensor":
            return x.type(m.LongTensor)
        if arg == "float64":
            return x.type(m.float64)
        return x.type(arg)

    ours, theirs = _both(call)
    if arg is None:
        assert ours == theirs.replace("torch", "numgrad")
    else:
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_variable_returns_a_tensor_as_pytorch():
    for m in (numgrad, torch):
        x = m.ones(2)
        v = m.autograd.Variable(x, requires_grad=True)
        assert type(v) is m.Tensor and v is not x
        assert v.requires_grad and not x.requires_grad and v.grad_fn is None
        assert isinstance(x, m.autograd.Variable)
        (v * 3).sum().backward()
        assert v.grad.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        numgrad.autograd.Variable([1, 2])


# ------------------------------------------------------------------ random
def test_normal_overloads_give_pytorch_shapes_and_dtypes():
    calls = [
        lambda m: m.normal(0.0, 1.0, (2, 3)),
        lambda m: m.normal(m.zeros(3), 1.0),
        lambda m: m.normal(2.0, m.ones(4, dtype=m.float64)),
        lambda m: m.normal(m.zeros(2, 1), m.ones(3)),
        lambda m: m.normal(0.0, 1.0, size=(5,)),
    ]
    for call in calls:
        ours, theirs = _both(call)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")


def test_samples_follow_their_distributions():
    numgrad.manual_seed(0)
    n = 20000
    x = numgrad.normal(2.0, 3.0, (n,)).numpy()
    assert abs(x.mean() - 2) < 0.1 and abs(x.std() - 3) < 0.1
    e = numgrad.empty(n).exponential_(2.0).numpy()
    assert abs(e.mean() - 0.5) < 0.02 and e.min() >= 0
    u = numgrad.empty(n, dtype=numgrad.float64).uniform_(-1, 3).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.05
    b = numgrad.empty(n).bernoulli_(0.25).numpy()
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.02
    r = numgrad.empty(n, dtype=numgrad.int64).random_(3, 7).numpy()
    assert set(np.unique(r)) == {3, 4, 5, 6}
    p = numgrad.bernoulli(numgrad.tensor([0.0, 1.0] * 100)).numpy()
    np.testing.assert_array_equal(p, [0.0, 1.0] * 100)


def test_randperm_and_multinomial():
    numgrad.manual_seed(1)
    perm = numgrad.randperm(50)
    assert perm.dtype is numgrad.int64 and sorted(perm.tolist()) == list(range(50))
    draws = numgrad.multinomial(numgrad.tensor([0.0, 1.0, 3.0, 0.0]), 2)
    assert draws.dtype is numgrad.int64 and sorted(draws.tolist()) == [1, 2]
    rows = numgrad.multinomial(numgrad.tensor([[1.0, 0.0], [0.0, 1.0]]), 5, replacement=True)
    assert rows.tolist() == [[0] * 5, [1] * 5]
    for m in (numgrad, torch):
        with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist"):
            m.multinomial(m.ones(3), 4)


def test_seeds_and_generators_reproduce_their_draws():
    numgrad.manual_seed(7)
    a = numgrad.randperm(10).tolist(), numgrad.empty(3).normal_().tolist()
    numgrad.manual_seed(7)
    assert (numgrad.randperm(10).tolist(), numgrad.empty(3).normal_().tolist()) == a
    g = numgrad.Generator().manual_seed(3)
    first = numgrad.normal(0.0, 1.0, (4,), generator=g).tolist()
    g.manual_seed(3)
    assert numgrad.normal(0.0, 1.0, (4,), generator=g).tolist() == first
    assert g.initial_seed() == 3


def test_in_place_fills_follow_pytorch_leaf_rules():
    for m in (numgrad, torch):
        w = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            w.uniform_()
        with m.no_grad():
            w.normal_()
        assert w.requires_grad and w.grad_fn is None
        y = w * 1
        y.uniform_()  # a non-leaf: recorded, no gradient reaches the old values
        (y * w).sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), y.detach().numpy(), rtol=1e-6)


# ------------------------------------------------------------------ defaults
DEFAULT_DTYPE_CALLS = [
    lambda m: m.tensor([1.5]), lambda m: m.zeros(2), lambda m: m.arange(3) / 2,
    lambda m: m.arange(0, 1, 0.5), lambda m: m.Tensor([1]), lambda m: m.rand(2),
    lambda m: m.nn.Linear(2, 2).weight, lambda m: m.ones(2, dtype=m.int64) * 0.5,
    lambda m: m.FloatTensor([1.0]),
]


@pytest.mark.parametrize("default", ["float64", "float32"])
def test_set_default_dtype_as_pytorch(default):
    def run(m):
        m.set_default_dtype(getattr(m, default))
        try:
            return [str(call(m).dtype).split(".")[-1] for call in DEFAULT_DTYPE_CALLS] + [
                str(m.get_default_dtype()).split(".")[-1]]
        finally:
            m.set_default_dtype(m.float32)

    ours, theirs = _both(run)
    assert ours == theirs
    for m in (numgrad, torch):
        with pytest.raises(TypeError, match="only floating-point types are supported"):
            m.set_default_dtype(m.int64)


def test_set_default_device_to_the_cpu_and_back():
    numgrad.set_default_device("cpu")
    try:
        assert numgrad.get_default_device() == numgrad.device("cpu")
        assert numgrad.zeros(2).device.type == "cpu"
    finally:
        numgrad.set_default_device(None)
    assert numgrad.get_default_device().type == "cpu"


# ------------------------------------------------------------------ out=
OUT_CALLS = [
    ("matmul", lambda m, out: m.matmul(m.ones(2, 3), m.ones(3, 2), out=out), (2, 2), "float32"),
    ("mul", lambda m, out: m.mul(m.arange(4.0), 3, out=out), (4,), "float32"),
    ("add", lambda m, out: m.add(m.ones(2), 1, out=out), (0,), "float32"),
    ("sum", lambda m, out: m.sum(m.ones(2, 3), 1, out=out), (2,), "float64"),
    ("exp", lambda m, out: m.exp(m.zeros(3), out=out), (3,), "float32"),
    ("cat", lambda m, out: m.cat([m.ones(2), m.zeros(1)], out=out), (3,), "float32"),
    ("cumsum", lambda m, out: m.cumsum(m.arange(4.0), 0, out=out), (4,), "float32"),
    ("gather", lambda m, out: m.gather(m.arange(6.0).reshape(2, 3), 1, m.tensor([[2], [0]]),
                                       out=out), (2, 1), "float32"),
    ("index_select", lambda m, out: m.index_select(m.arange(6.0).reshape(3, 2), 0,
                                                   m.tensor([2, 0]), out=out), (2, 2), "float64"),
    ("atan2", lambda m, out: m.atan2(m.ones(2), m.arange(2.0), out=out), (2,), "float32"),
    ("softmax", lambda m, out: m.softmax(m.arange(3.0), 0, out=out), (3,), "float32"),
    ("softmax, another dtype", lambda m, out: m.softmax(m.arange(3.0), 0, out=out), (3,),
     "float64"),
    ("gather, another dtype", lambda m, out: m.gather(m.ones(2, 2), 1, m.tensor([[1], [0]]),
                                                      out=out), (2, 1), "float64"),
    ("cumsum, cast", lambda m, out: m.cumsum(m.arange(3.0), 0, out=out), (3,), "float64"),
    ("lt", lambda m, out: m.lt(m.arange(3.0), 1.5, out=out), (3,), "bool"),
    ("resized", lambda m, out: m.add(m.ones(2, 2), 1, out=out), (3,), "float32"),
    ("cast refused", lambda m, out: m.add(m.ones(2), 1.5, out=out), (2,), "int64"),
    ("requires grad", lambda m, out: m.mul(m.ones(2, requires_grad=True), 2, out=out), (2,),
     "float32"),
]


@pytest.mark.parametrize("name, call, shape, dtype", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_out_keyword_as_pytorch(name, call, shape, dtype):
    import warnings

    def run(m):
        out = m.zeros(shape, dtype=getattr(m, dtype))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = call(m, out)
            except Exception as e:  # noqa: BLE001 (compared)
                return type(e).__name__, str(e)
        return (result is out, tuple(out.shape), str(out.dtype).split(".")[-1],
                out.tolist(), [str(w.message).split(" (Triggered")[0] for w in caught])

    ours, theirs = _both(run)
    assert ours == theirs


def test_tensor_methods_take_no_out_keyword_as_pytorch():
    for m in (numgrad, torch):
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            m.ones(2).add(1, out=m.zeros(2))


def test_inference_mode_forms_as_pytorch():
    def run(m):
        x = m.ones(2, requires_grad=True)
        seen = []
        with m.inference_mode():
            seen.append(((x * 2).requires_grad, m.is_grad_enabled(),
                         m.is_inference_mode_enabled()))
        with m.inference_mode(False):
            seen.append(((x * 2).requires_grad, m.is_inference_mode_enabled()))

        @m.inference_mode()
        def f(t):
            return (t * 2).requires_grad

        @m.inference_mode
        def g(t):
            return (t * 2).requires_grad

        seen.append((f(x), g(x), m.is_grad_enabled(), m.is_inference_mode_enabled()))
        return seen

    ours, theirs = _both(run)
    assert ours == theirs


def test_the_zero_dim_transpose_warning_is_given_once_per_process():
    import subprocess
    import sys

    script = ("import warnings, numgrad\n"
              "with warnings.catch_warnings(record=True) as w:\n"
              "    warnings.simplefilter('always')\n"
              "    x = numgrad.tensor(1.0); x.T; x.T; x.mT; x.mT\n"
              "print([str(m.message)[:10] for m in w])\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "['Tensor.T i', 'Tensor.mT ']"


# ------------------------------------------------------------------ threads
def test_set_num_threads_sets_numbas_and_blass_threads():
    from threadpoolctl import threadpool_info  # (installed with scikit-learn, a test extra)

    before = numgrad.get_num_threads()
    try:
        numgrad.set_num_threads(1)
        assert numgrad.get_num_threads() == 1
        import numba

        assert numba.get_num_threads() == 1
        # (NumPy's OpenBLAS; PyTorch's MKL, loaded by the tests too, is PyTorch's to set)
        assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"
                and "numpy" in i["filepath"]] == [1]
    finally:
        numgrad.set_num_threads(before)


def test_an_lstm_layer_runs_its_steps_on_one_blas_thread_and_leaves_the_setting_as_it_was():
    from threadpoolctl import threadpool_info

    from numgrad.kernels.cpu import rnn

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"
                and "numpy" in i["filepath"]]

    seen = []
    # (the steps run in _forward_rows / _backward_rows, which call BLAS from Numba, or, where
    # NumPy's BLAS cannot be called from there, in Python around _cell)
    names = ("_forward_rows", "_backward_rows") if rnn.IN_NUMBA else ("_cell",)
    real = {name: getattr(rnn, name) for name in names}

    def watching(function):
        def run(*args):  # (the BLAS setting while the steps run)
            seen.append(blas_threads())
            return function(*args)
        return run

    model = numgrad.nn.LSTM(3, 4)
    before = numgrad.get_num_threads()
    try:
        for threads in (2, 1):
            numgrad.set_num_threads(threads)
            for name in names:
                setattr(rnn, name, watching(real[name]))
            model(numgrad.ones(2, 1, 3))[0].sum().backward()
            for name in names:
                setattr(rnn, name, real[name])
            assert len(seen) == (2 if rnn.IN_NUMBA else 4) and all(s == [1] for s in seen)
            assert blas_threads() == [threads]
            seen.clear()
    finally:
        for name in names:
            setattr(rnn, name, real[name])
        numgrad.set_num_threads(before)


@pytest.mark.parametrize("value", [0, -2, 1.5, "2"], ids=repr)
def test_set_num_threads_refuses_as_pytorch(value):
    def run(m):
        try:
            m.set_num_threads(value)
        except Exception as e:  # noqa: BLE001 (compared)
            return type(e).__name__, str(e)
        return "ok"

    ours, theirs = _both(run)
    assert ours == theirs


# ------------------------------------------------------------------ Tensor methods people reach for
_VIEWS = {
    "contiguous": lambda x: x, "transposed": lambda x: x.t(), "row": lambda x: x[1],
    "column slice": lambda x: x[:, 1:3], "new dims": lambda x: x.unsqueeze(0)[:, :, None],
    "new dim of a transpose": lambda x: x.t()[:, None], "expanded": lambda x: x.expand(2, 3, 4),
    "every other": lambda x: x[::2, 1:], "empty": lambda x: x[:, :0], "0-d": lambda x: x[1, 2],
}


@pytest.mark.parametrize("make", list(_VIEWS.values()), ids=list(_VIEWS))
def test_stride_storage_offset_and_sizes_match_pytorch(make):
    ours = make(numgrad.arange(12.0).view(3, 4))
    theirs = make(torch.arange(12.0).view(3, 4))
    assert ours.stride() == theirs.stride()
    for d in range(-ours.dim(), ours.dim()):
        assert ours.stride(d) == theirs.stride(d)
    assert ours.storage_offset() == theirs.storage_offset()
    assert (ours.nelement(), ours.nbytes, ours.itemsize, ours.element_size()) == (
        theirs.nelement(), theirs.nbytes, theirs.itemsize, theirs.element_size())


def test_stride_of_fresh_empty_tensors_and_a_bad_dim_match_pytorch():
    for shape in [(0, 3), (2, 0, 3), (0,)]:
        assert numgrad.zeros(shape).stride() == torch.zeros(shape).stride()
    with pytest.raises(IndexError) as theirs:
        torch.zeros(2, 3).stride(2)
    with pytest.raises(IndexError) as ours:
        numgrad.zeros(2, 3).stride(2)
    assert str(ours.value) == str(theirs.value)


def test_data_ptr_says_which_tensors_share_memory():
    x = numgrad.arange(6.0)
    assert x.view(2, 3).data_ptr() == x.data_ptr() == x.detach().data_ptr()
    assert x[2:].data_ptr() == x.data_ptr() + 2 * x.element_size()
    assert x.clone().data_ptr() != x.data_ptr()


@pytest.mark.parametrize("call", [
    lambda m, x: x.new_zeros(2, 3), lambda m, x: x.new_zeros((2,)),
    lambda m, x: x.new_zeros(m.Size([1, 2])), lambda m, x: x.new_ones([2], dtype=m.int64),
    lambda m, x: x.new_full((2,), 7), lambda m, x: x.new_full((2,), True),
    lambda m, x: x.long().new_full((2,), 2.5), lambda m, x: x.new_empty(0, 2),
    lambda m, x: x.new_tensor([1, 2]), lambda m, x: x.new_tensor(3.0),
    lambda m, x: x.long().new_tensor([1.5, -2.5]), lambda m, x: x.new_tensor([[1, 2]], dtype=m.int32),
    lambda m, x: x.new_zeros(2, requires_grad=True), lambda m, x: x.new_ones(1, 2).requires_grad,
])
def test_new_creation_methods_take_the_tensors_dtype_as_pytorch(call):
    ours = call(numgrad, numgrad.ones(2, 3, dtype=numgrad.float64, requires_grad=True))
    theirs = call(torch, torch.ones(2, 3, dtype=torch.float64, requires_grad=True))
    if isinstance(theirs, bool):
        assert ours == theirs
        return
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.requires_grad == theirs.requires_grad
    if theirs.numel():  # (new_empty: none, so nothing uninitialised is compared)
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize("call", [lambda m: m.full(2, 7), lambda m: m.ones(2).new_full(3, 1.5),
                                  lambda m: m.full((2, 2.0), 7), lambda m: m.full(2.0, 7)])
def test_full_and_new_full_refuse_a_bare_or_float_size_as_pytorch(call):
    with pytest.raises(TypeError) as theirs:
        call(torch)
    with pytest.raises(TypeError) as ours:
        call(numgrad)
    assert str(ours.value) == str(theirs.value)


def test_new_tensor_from_a_tensor_copies_and_warns_as_pytorch():
    for m in (numgrad, torch):
        x = m.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match=r"sourceTensor\.detach\(\)\.clone\(\)"):
            y = x.new_tensor(x * 2)
        assert not y.requires_grad and y.grad_fn is None
        y.add_(1)
        assert x.tolist() == [1.0, 1.0] and y.tolist() == [3.0, 3.0]


def test_view_as_reshape_as_type_as_and_bool_match_pytorch():
    for m in (numgrad, torch):
        x = m.arange(6.0, requires_grad=True)
        v = x.view_as(m.zeros(2, 3))
        assert type(v.grad_fn).__name__ == "ViewBackward0" and v._base is x
        r = x.view(2, 3).t().reshape_as(m.zeros(6))
        assert type(r.grad_fn).__name__ == "UnsafeViewBackward0"
        d = x.type_as(m.zeros(1, dtype=m.float64))
        assert d.dtype == m.float64 and type(d.grad_fn).__name__ == "ToCopyBackward0"
        assert x.type_as(m.zeros(1)) is x
        assert x.long().type_as(x).dtype == m.float32
        b = m.tensor([0.0, -0.5, 2.0]).bool()
        assert b.dtype == m.bool and b.tolist() == [False, True, True]
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(6).view_as(torch.zeros(4))
    with pytest.raises(RuntimeError) as ours:
        numgrad.zeros(6).view_as(numgrad.zeros(4))
    assert str(ours.value) == str(theirs.value)


# ------------------------------------------------------------------ the setup lines of programs
def test_accelerator_backends_and_version_answer_as_pytorch_on_a_cpu_machine():
    for m in (numgrad, torch):
        device = m.accelerator.current_accelerator() or "cpu"  # (the modern first line)
        assert str(device) == "cpu" and m.accelerator.is_available() is False
        assert m.accelerator.device_count() == 0
        assert m.backends.mps.is_available() is False and m.backends.mps.is_built() is False
        assert (m.backends.cudnn.enabled, m.backends.cudnn.benchmark,
                m.backends.cudnn.deterministic) == (True, False, False)
        assert m.backends.cuda.matmul.allow_tf32 is False
        assert m.version.cuda is None and isinstance(m.version.__version__, str)
    assert numgrad.version.__version__ == numgrad.__version__


def test_determinism_and_matmul_precision_settings_round_trip_as_pytorch():
    import warnings

    for m in (numgrad, torch):
        try:
            m.use_deterministic_algorithms(True, warn_only=True)
            assert m.are_deterministic_algorithms_enabled()
            assert m.is_deterministic_algorithms_warn_only_enabled()
            assert m.get_deterministic_debug_mode() == 1
            m.set_deterministic_debug_mode("error")
            assert m.get_deterministic_debug_mode() == 2
            m.set_float32_matmul_precision("high")
            assert m.get_float32_matmul_precision() == "high"
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                m.set_float32_matmul_precision("low")
            assert m.get_float32_matmul_precision() == "high"
            assert "low is not one of 'highest', 'high', or 'medium'" in str(caught[0].message)
            with pytest.raises(TypeError, match="argument 'mode' .* must be bool, not str"):
                m.use_deterministic_algorithms("yes")
        finally:
            m.use_deterministic_algorithms(False)
            m.set_float32_matmul_precision("highest")
        assert not m.are_deterministic_algorithms_enabled()


def test_cudnn_flags_keep_what_a_program_sets_and_onnx_export_says_it_cannot():
    import numgrad.backends.cudnn as cudnn

    cudnn.benchmark = True
    try:
        assert numgrad.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = False
    import numgrad.onnx as onnx

    assert onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="cannot export models to ONNX"):
        onnx.export(numgrad.nn.Linear(2, 2), numgrad.zeros(1, 2), "model.onnx")
