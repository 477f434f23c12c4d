"""PyTorch's operator database, torch 2.13's ``op_db`` (issue 35), run on numgrad as a user's code
would meet it: each OpInfo's sample inputs, on the float32, float64, int64 and bool dtypes it
lists (a few samples a dtype, derandomised), converted to numgrad tensors (with their strides, and
sharing memory where PyTorch's share it), run through the op resolved by its name in numgrad, and
compared with PyTorch's outputs and with the gradients of a fixed random cotangent. Each OpInfo's
``error_inputs`` must make numgrad raise PyTorch's exception class with a message matching
PyTorch's pattern.

Used by tests/test_op_db.py (with the expected failures of tests/op_db_expected_failures.py);
``python tests/_op_db.py`` prints the counts and every failure (``--complex``: and the complex128
pass's, every OpInfo that takes complex128 run on it alone; ``--narrow``: and the narrow pass's,
every OpInfo that takes float16, bfloat16, int32, int16, int8 or uint8 run on those;
``--compiled``: every OpInfo's first samples through ``numgrad.compile``, traced and replayed,
against eager numgrad; ``--vmap``: under ``numgrad.func.vmap``, against the op on each example;
``--jvp``: their tangents under ``numgrad.func.jvp`` against ``torch.func.jvp``'s, in float64
and complex128, and in float16 and bfloat16 (a pass of its own);
``--gradgrad``: their second derivatives against PyTorch's), ``--write`` rewrites the expected
failures file from what fails now, every pass's but the compiled one's (review its diff: the lists
must only shrink).
"""
from __future__ import annotations

import builtins
import re
import sys
import types
import warnings

import numpy as np

MAX_SAMPLES = 4  # samples a dtype (the first ones the OpInfo gives, torch seeded)
SEED = 35
DTYPE_NAMES = ("float32", "float64", "int64", "bool")
COMPLEX_DTYPE_NAMES = ("complex128",)  # (a pass of its own: ``complex_op_db``)
# the narrow dtypes, stored narrow and computed wider (``numgrad._lowp``), and int32: a pass of
# their own, ``narrow_op_db``
NARROW_DTYPE_NAMES = ("float16", "bfloat16", "int32", "int16", "int8", "uint8")
# the dtypes of the vmap, forward-mode (jvp) and double backward (gradgrad) passes
VMAP_DTYPE_NAMES = ("float64", "int64", "complex128")
JVP_DTYPE_NAMES = ("float64", "complex128")
# the forward-mode pass's half types (tangents compared to ``_close``'s half tolerances)
NARROW_JVP_DTYPE_NAMES = ("float16", "bfloat16")
GRADGRAD_DTYPE_NAMES = ("float64", "complex128")


class Missing(Exception):
    """Something the sample needs that numgrad does not have (a name, a dtype, a layout)."""


def _torch():
    import torch

    if not _SEEDS_QUIETED:
        _quiet_device_seeds(torch)
    return torch


_SEEDS_QUIETED = []


def _quiet_device_seeds(torch) -> None:
    """``torch.manual_seed`` without its calls to the devices this machine lacks: the OpInfos'
    sample functions reseed for every sample, and each of those calls queues a lazy seeding of
    CUDA, XPU and MTIA with its stack trace (a fifth of an op_db pass's time). A device that is
    there keeps its seeding; the CPU generator, the one the samples draw from, is seeded as
    before."""
    _SEEDS_QUIETED.append(True)
    for name in ("cuda", "xpu", "mtia"):
        device = getattr(torch, name, None)
        if device is not None and hasattr(device, "manual_seed_all") and \
                not device.is_available():
            device.manual_seed_all = lambda seed: None


def op_db():
    """The OpInfos with a float32, float64 or int64 dtype on the CPU."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db as db
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    # (PyTorch's sample iterators look for the running unittest test by reading the source of
    # every frame of the stack, for each sample: three quarters of the harness's time; there is
    # no such test here)
    common_utils.extract_test_fn = core.extract_test_fn = lambda: None
    torch = _torch()
    wanted = {torch.float32, torch.float64, torch.int64}
    return [op for op in db if wanted & set(op.supported_dtypes("cpu"))]


def complex_op_db():
    """The OpInfos of ``op_db()`` that take complex128 on the CPU (the complex pass)."""
    torch = _torch()
    return [op for op in op_db() if torch.complex128 in op.supported_dtypes("cpu")]


def narrow_op_db():
    """The OpInfos of ``op_db()`` that take a dtype of ``NARROW_DTYPE_NAMES`` on the CPU (the
    narrow pass)."""
    return [op for op in op_db() if dtypes_of(op, NARROW_DTYPE_NAMES)]


def op_id(op) -> str:
    return f"{op.name}[{op.variant_test_name}]" if op.variant_test_name else op.name


# ---------------------------------------------------------------------------------------------
# PyTorch values to numgrad values


class _Converter:
    """PyTorch's sample values as numgrad's: tensors keep their strides and share memory where
    PyTorch's do (one NumPy buffer a storage), so non-contiguous and aliased inputs stay so."""

    def __init__(self):
        self.buffers = {}
        self.tensors = {}
        self.pairs = []  # (torch tensor, numgrad tensor) of every tensor converted

    def __call__(self, x):
        import numgrad

        torch = _torch()
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if isinstance(x, torch.dtype):
            name = str(x).split(".")[-1]
            d = getattr(numgrad, name, None)
            if not isinstance(d, numgrad.dtype):
                raise Missing(f"dtype torch.{name}")
            return d
        if isinstance(x, torch.device):
            return numgrad.device(str(x))
        if isinstance(x, torch.memory_format):
            name = str(x).split(".")[-1]
            if not hasattr(numgrad, name):
                raise Missing(f"missing name: torch.{name}")
            return getattr(numgrad, name)
        if isinstance(x, torch.layout):
            name = str(x).split(".")[-1]
            if not hasattr(numgrad, name):
                raise Missing(f"missing name: torch.{name}")
            return getattr(numgrad, name)
        if isinstance(x, torch.Size):
            return numgrad.Size(tuple(x))
        if isinstance(x, torch.Generator):
            raise Missing("a torch.Generator argument")
        if isinstance(x, (list, tuple)):
            items = [self(v) for v in x]
            return type(x)(items) if type(x) in (list, tuple) else tuple(items)
        if isinstance(x, dict):
            return {k: self(v) for k, v in x.items()}
        if isinstance(x, torch.nn.Module):
            return self.module(x)
        if callable(x) and _is_torch_callable(x):
            return _numgrad_callable_for(x)
        return x

    def module(self, x):
        """numgrad's module of a parameterless PyTorch module (a loss's distance...): made with
        its defaults, then given the PyTorch module's attributes."""
        import numgrad

        name = type(x).__name__
        cls = getattr(numgrad.nn, name, None)
        if cls is None:
            raise Missing(f"missing name: torch.nn.{name}")
        if any(True for _ in x.parameters()) or any(True for _ in x.buffers()):
            raise Missing(f"a module with parameters ({name})")
        m = cls()
        for k, v in vars(x).items():
            if not k.startswith("_"):
                setattr(m, k, self(v))
        return m

    def tensor(self, x):
        import numgrad

        torch = _torch()
        if id(x) in self.tensors:
            return self.tensors[id(x)][1]
        if x.layout != torch.strided:
            raise Missing(f"layout {x.layout}")
        if x.device.type != "cpu":
            raise Missing(f"a tensor on device {x.device.type!r}")
        name = str(x.dtype).split(".")[-1]
        dtype = getattr(numgrad, name, None)
        if not isinstance(dtype, numgrad.dtype):
            raise Missing(f"dtype torch.{name}")
        if x.is_conj() or x.is_neg():
            raise Missing("a conjugate or negative view")
        storage = x.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes(), x.dtype)
        buf = self.buffers.get(key)
        if buf is None:
            whole = torch.empty(0, dtype=x.dtype).set_(storage)
            if x.dtype == torch.bfloat16:  # (numgrad's bfloat16: NumPy's opaque "V2" elements)
                buf = whole.detach().view(torch.int16).numpy().copy().view("V2")
            else:
                buf = whole.detach().numpy().copy()
            self.buffers[key] = buf
        try:
            arr = np.lib.stride_tricks.as_strided(buf[x.storage_offset():], tuple(x.shape),
                                                  tuple(s * buf.itemsize for s in x.stride()))
        except ValueError as e:  # (NumPy's limit of 64 dimensions)
            raise Missing(f"a tensor NumPy cannot hold ({e})") from None
        if x.is_contiguous() or x.numel() == 0:
            arr = np.ascontiguousarray(arr) if not arr.flags.c_contiguous else arr
        t = numgrad.from_numpy(arr)
        if x.requires_grad:
            t.requires_grad_(True)
        self.tensors[id(x)] = (x, t)
        self.pairs.append((x, t))
        return t


def _is_torch_callable(f) -> bool:
    mod = getattr(f, "__module__", None) or ""
    return mod == "torch" or mod.startswith("torch.") and not mod.startswith("torch.testing")


_MODULES = {"torch._C._linalg": ("linalg", "linalg_"), "torch._C._special": ("special", "special_"),
            "torch._C._fft": ("fft", "fft_"), "torch._C._nn": ("nn.functional", ""),
            "torch.nn.functional": ("nn.functional", ""), "torch.functional": ("", ""),
            "torch": ("", ""), "torch.linalg": ("linalg", ""), "torch.special": ("special", "")}


def _numgrad_callable_for(f):
    """numgrad's function of a PyTorch function passed as an argument (a loss's distance...)."""
    mod = getattr(f, "__module__", None) or "torch"
    name = getattr(f, "__name__", "")
    space, prefix = _MODULES.get(mod, ("", ""))
    if prefix and name.startswith(prefix):
        name = name[len(prefix):]
    return resolve_name(f"{space}.{name}" if space else name)


def resolve_name(name: str):
    """numgrad's callable for an OpInfo name: a function of numgrad or its namespaces, else a
    Tensor method called on the first argument."""
    import numgrad

    obj = numgrad
    try:
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    except AttributeError:
        pass
    if "." not in name and hasattr(numgrad.Tensor, name):
        def method(self, *args, **kwargs):
            return getattr(self, name)(*args, **kwargs)
        return method
    raise Missing(f"missing name: torch.{name}")


def _wrapper_set_seed(op, *args, **kwargs):
    import numgrad

    numgrad.manual_seed(42)
    return op(*args, **kwargs)


_REBOUND = {}


def rebind(f):
    """A function of PyTorch's test modules (an OpInfo's lambda), with ``torch`` in it numgrad."""
    if f in _REBOUND:
        return _REBOUND[f]
    import numgrad

    g = dict(f.__globals__)
    g["torch"] = numgrad
    g["wrapper_set_seed"] = _wrapper_set_seed
    closure = f.__closure__
    if closure:
        cells = []
        for c in closure:
            v = c.cell_contents
            if isinstance(v, types.FunctionType) and v.__module__.startswith("torch.testing"):
                v = rebind(v)
            elif callable(v) and _is_torch_callable(v):
                try:
                    v = _numgrad_callable_for(v)
                except Missing:
                    pass
            cells.append(types.CellType(v))
        closure = tuple(cells)
    out = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, closure)
    out.__kwdefaults__ = f.__kwdefaults__
    _REBOUND[f] = out
    return out


def numgrad_op(op):
    f = op.op
    if isinstance(f, types.FunctionType) and f.__module__.startswith("torch.testing"):
        return rebind(f)
    torch = _torch()
    if isinstance(f, types.MethodDescriptorType) and issubclass(torch.Tensor, f.__objclass__):
        import numgrad  # (a Tensor method, ``Tensor.cfloat``: not ``torch.cfloat``, a dtype)

        name = f.__name__
        if not hasattr(numgrad.Tensor, name):
            raise Missing(f"missing name: torch.Tensor.{name}")
        return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)
    if isinstance(f, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        import numgrad

        name = f.__name__.split(".")[0]
        if hasattr(numgrad.ops, name):
            return getattr(numgrad.ops, name)
        raise Missing(f"missing name: torch.ops.aten.{name}")
    return resolve_name(op.name)


def _nondeterministic(op) -> bool:
    """Whether the op's values are random or uninitialised (compared in shape and dtype)."""
    f = op.op
    code_names = getattr(getattr(f, "__code__", None), "co_names", ())
    return bool(getattr(op, "has_nondeterministic_output", False)
                or "wrapper_set_seed" in code_names or "empty" in op.name
                or op.name in {"bernoulli", "multinomial", "normal", "uniform", "randn", "rand",
                               "randint", "randn_like", "rand_like", "randint_like",
                               "nn.functional.dropout", "nn.functional.rrelu"})


# ---------------------------------------------------------------------------------------------
# running and comparing


def _leaves(x, out):
    """The values of a (nested) result, in order."""
    if isinstance(x, (list, tuple)) and not _is_size(x):
        for v in x:
            _leaves(v, out)
    else:
        out.append(x)
    return out


def _is_size(x) -> bool:
    torch = _torch()
    import numgrad

    return isinstance(x, (torch.Size, numgrad.Size))


def _is_tensor(x) -> bool:
    import numgrad

    return isinstance(x, (_torch().Tensor, numgrad.Tensor))


def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _numpy(t):
    if isinstance(t, _torch().Tensor) and t._is_zerotensor():  # (PyTorch's lazy zeros)
        return np.zeros(tuple(t.shape), str(t.dtype).split(".")[-1])
    t = t.detach().cpu().resolve_conj().resolve_neg()
    return (t.float() if _dtype_name(t) == "bfloat16" else t).numpy()  # (NumPy has no bfloat16)


def _close(a: np.ndarray, b: np.ndarray, dtype: str) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return np.array_equal(a, b)
    # (complex values compared as their real dtype's: the modulus of the difference; float16
    # and bfloat16 results to a few of their units in the last place, since numgrad rounds a
    # composite's result once where PyTorch may round each step)
    rtol, atol = _TOLERANCES.get(dtype, (1e-7, 1e-7))
    scale = max(1.0, float(np.max(np.abs(b[np.isfinite(b)]), initial=0.0)))
    return bool(np.allclose(a, b, rtol=rtol, atol=atol * scale, equal_nan=True))


_TOLERANCES = {"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5), "float16": (2e-3, 2e-3),
               "bfloat16": (1.6e-2, 1.6e-2)}


def _compare_values(ours, theirs, values: bool) -> str | None:
    """Why two results differ (structure, shapes, dtypes, values), or None."""
    a, b = _leaves(ours, []), _leaves(theirs, [])
    if len(a) != len(b):
        return f"{len(a)} outputs, PyTorch {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if _is_tensor(y):
            if not _is_tensor(x):
                return f"output {i} is {type(x).__name__}, PyTorch's a tensor"
            if tuple(x.shape) != tuple(y.shape):
                return f"output {i} shape {tuple(x.shape)}, PyTorch {tuple(y.shape)}"
            if _dtype_name(x) != _dtype_name(y):
                return f"output {i} dtype {_dtype_name(x)}, PyTorch {_dtype_name(y)}"
            if values and not _close(_numpy(x), _numpy(y), _dtype_name(y)):
                return (f"output {i} values {_numpy(x).ravel()[:4]}, PyTorch "
                        f"{_numpy(y).ravel()[:4]}")
        elif _is_tensor(x):
            return f"output {i} is a tensor, PyTorch's {type(y).__name__}"
        elif _is_size(y) or isinstance(y, (int, float, bool, complex)) and not values:
            if _is_size(y) and tuple(x) != tuple(y):
                return f"output {i} {x}, PyTorch {y}"
        elif isinstance(y, (int, float, bool)):
            if type(x) is not type(y) and not (isinstance(x, (int, float))
                                               and isinstance(y, float)):
                return f"output {i} is {type(x).__name__}, PyTorch's {type(y).__name__}"
            if not _close(np.asarray(x, dtype=float), np.asarray(y, dtype=float), "float64"):
                return f"output {i} {x}, PyTorch {y}"
        elif y is None and x is not None:
            return f"output {i} {type(x).__name__}, PyTorch's None"
    return None


def _exception_text(e: BaseException) -> str:
    msg = str(e).strip().split("\n")[0][:120]
    if isinstance(e, Missing):
        return msg
    if isinstance(e, AttributeError) and "has no attribute" in msg:
        m = re.search(r"'([\w.]+)' (?:object )?has no attribute '(\w+)'", msg)
        if m and (m.group(1).startswith("numgrad") or m.group(1) == "Tensor"):
            owner = m.group(1).replace("numgrad", "torch")
            owner = "torch.Tensor" if owner in ("Tensor", "torch.tensor.Tensor") else owner
            return f"missing name: {owner}.{m.group(2)}"
    return f"raises {type(e).__name__}: {msg}"


def _builtin_class(cls) -> type:
    for c in cls.__mro__:
        if getattr(builtins, c.__name__, None) is c:
            return c
    return cls


def _default_process(sample) -> bool:
    """Whether the sample's output_process_fn_grad is SampleInput's default, the identity."""
    return sample.output_process_fn_grad.__qualname__.startswith("SampleInput.__init__")


def _differentiable(t) -> bool:
    return _is_tensor(t) and t.requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex)


# the ops whose indices are unique only up to ties: (the indices' place among the outputs, None
# for the whole result; the position of ``dim`` among the sample's args)
_TIES = {"sort": (1, 0), "argsort": (None, 0), "topk": (1, 1), "kthvalue": (1, 1)}


def _through_ties(op, sample, result):
    """``result`` with its indices replaced by the elements of the input they pick."""
    torch = _torch()
    where, dim_at = _TIES[op.name]
    idx = torch.from_numpy(np.array(_numpy(result if where is None else result[where])))
    x = sample.input.detach()
    args, kwargs = sample.args, sample.kwargs
    dim = args[dim_at] if len(args) > dim_at else kwargs.get("dim", -1)
    if x.ndim == 0:
        picked = x.expand(idx.shape)
    else:
        if op.name == "kthvalue" and not (args[2] if len(args) > 2
                                          else kwargs.get("keepdim", False)):
            idx = idx.unsqueeze(dim)
        picked = torch.take_along_dim(x, idx, dim)
    if where is None:
        return picked
    out = list(result)
    out[where] = picked
    return tuple(out)


def _numgrad_process(sample):
    """The sample's output_process_fn_grad for numgrad's outputs (PyTorch's lambda rebound)."""
    process = sample.output_process_fn_grad
    if isinstance(process, types.FunctionType) and process.__module__.startswith("torch."):
        process = rebind(process)
    return process


def run_sample(op, sample, dtype_name: str, index: int) -> str | None:
    """Why numgrad's result for one sample differs from PyTorch's, or None (also None when
    PyTorch itself refuses the sample)."""
    import numgrad

    torch = _torch()
    conv = _Converter()
    try:  # (before PyTorch runs: an in-place op changes its inputs)
        n_input = conv(sample.input)
        n_args = conv(tuple(sample.args))
        n_kwargs = conv(dict(sample.kwargs))
        fn = numgrad_op(op)
        process = _numgrad_process(sample)
    except Missing as e:
        return str(e)
    except Exception as e:  # noqa: BLE001
        return "converting the sample: " + _exception_text(e)
    try:
        theirs = op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001  (PyTorch refuses the sample: nothing to compare)
        return None
    try:
        ours = fn(n_input, *n_args, **n_kwargs)
    except Exception as e:  # noqa: BLE001
        return _exception_text(e)
    values = not _nondeterministic(op)
    why = _compare_values(ours, theirs, values)
    if why and not _default_process(sample):
        # Outputs that are unique only up to a choice (eigenvectors' signs...): the OpInfo's
        # output_process_fn_grad makes them unique, and they are compared so
        try:
            why = _compare_values(process(ours), sample.output_process_fn_grad(theirs), values)
        except Exception as e:  # noqa: BLE001
            why = "processing the output: " + _exception_text(e)
    if why and op.name in _TIES:
        # (tied values: PyTorch's CPU kernels pick their own order among them; the indices are
        # compared through the values they pick)
        try:
            why = _compare_values(_through_ties(op, sample, ours),
                                  _through_ties(op, sample, theirs), values)
        except Exception as e:  # noqa: BLE001
            why = "comparing indices through their values: " + _exception_text(e)
    if why:
        return why
    if not (values and dtype_name.startswith(("float", "complex")) and op.supports_autograd):
        return None
    # gradients of a fixed random cotangent
    try:
        t_outs = _leaves(sample.output_process_fn_grad(theirs), [])
        n_outs = _leaves(process(ours), [])
    except Exception as e:  # noqa: BLE001
        return "processing the output for the gradient: " + _exception_text(e)
    wanted = [i for i, t in enumerate(t_outs) if _differentiable(t)]
    inputs = [(t, n) for t, n in conv.pairs if t.requires_grad]
    if not wanted or not inputs:
        return None
    if len(n_outs) != len(t_outs):
        return "a different number of outputs after processing"
    rng = np.random.default_rng(SEED + index)
    t_seeds, n_seeds, n_diff = [], [], []
    for i in wanted:
        if not _differentiable(n_outs[i]):
            return f"output {i} does not require grad (PyTorch's does)"
        shape, dtype = tuple(t_outs[i].shape), _numpy(t_outs[i]).dtype
        cot = rng.standard_normal(shape)
        if dtype.kind == "c":  # (a complex output: a complex cotangent)
            cot = cot + 1j * rng.standard_normal(shape)
        cot = np.asarray(cot).astype(dtype)
        t_seeds.append(torch.from_numpy(cot.copy()))
        n_seeds.append(numgrad.from_numpy(cot.copy()))
        n_diff.append(n_outs[i])
    t_grads = torch.autograd.grad([t_outs[i] for i in wanted], [t for t, _ in inputs], t_seeds,
                                  allow_unused=True)
    try:
        n_grads = numgrad.autograd.grad(n_diff, [n for _, n in inputs], n_seeds,
                                        allow_unused=True)
    except Exception as e:  # noqa: BLE001
        return "backward " + _exception_text(e)
    for k, (g, h) in enumerate(zip(n_grads, t_grads)):
        shape = tuple(inputs[k][0].shape)
        g = np.zeros(shape) if g is None else _numpy(g)
        h = np.zeros(shape) if h is None else _numpy(h)
        if not _close(g.astype(h.dtype) if g.shape == h.shape else g, h, dtype_name):
            return f"gradient {k} {np.ravel(g)[:4]}, PyTorch {np.ravel(h)[:4]}"
    return None


class _Isolated:
    """Leaves no warn-once state behind (other test modules check those warnings): PyTorch's
    TORCH_WARN_ONCE warnings are not spent while ``set_warn_always`` is on, and numgrad's
    warned-once messages are restored; Python's warnings are caught and dropped; both random
    generators are left as they were."""

    def __enter__(self):
        import numgrad

        torch = _torch()
        self.always = torch.is_warn_always_enabled()
        torch.set_warn_always(True)
        self.once = set(numgrad._WARNED_ONCE)
        self.rng = (torch.get_rng_state(), numgrad.get_rng_state())
        self.caught = warnings.catch_warnings()
        self.caught.__enter__()
        warnings.simplefilter("ignore")
        return self

    def __exit__(self, *exc):
        import numgrad

        self.caught.__exit__(*exc)
        numgrad._WARNED_ONCE.clear()
        numgrad._WARNED_ONCE.update(self.once)
        _torch().set_rng_state(self.rng[0])
        numgrad.set_rng_state(self.rng[1])
        _torch().set_warn_always(self.always)
        return False


def dtypes_of(op, names=DTYPE_NAMES):
    torch = _torch()
    supported = op.supported_dtypes("cpu")
    return [d for d in (getattr(torch, n) for n in names) if d in supported]


def check_op(op, max_samples: int = MAX_SAMPLES,
             names=DTYPE_NAMES) -> tuple[str | None, int, int]:
    """(why the OpInfo fails: the first failing sample's reason, or None; cases run; passed),
    on the dtypes ``names`` the OpInfo supports."""
    first, run, passed = None, 0, 0
    backward = set(op.supported_backward_dtypes("cpu")) if op.supports_autograd else set()
    with _Isolated():
        for dtype in dtypes_of(op, names):
            name = str(dtype).split(".")[-1]
            rg = (dtype.is_floating_point or dtype.is_complex) and dtype in backward
            samples = _first_samples(op, dtype, max_samples, rg)
            cases = [(f"{name} sample {i}", i, s) for i, s in enumerate(samples)]
            if dtype == dtypes_of(op, names)[0]:  # (and each sample non-contiguous, one dtype)
                for i, s in enumerate(samples):
                    try:
                        cases.append((f"{name} sample {i} non-contiguous", i, s.noncontiguous()))
                    except Exception:  # noqa: BLE001  (sparse inputs have no such layout)
                        pass
            for label, i, sample in cases:
                run += 1
                try:
                    why = run_sample(op, sample, name, i)
                except Exception as e:  # noqa: BLE001
                    why = "harness: " + _exception_text(e)
                if why is None:
                    passed += 1
                elif first is None:
                    first = f"{label}: {why}"
    return first, run, passed


# ---------------------------------------------------------------------------------------------
# through numgrad.compile: each sample's call traced, then replayed, against eager numgrad


def _snapshot(x) -> list:
    """A result's leaves, bit for bit: (dtype, shape, bytes) of a tensor, else type and repr."""
    import numgrad

    out = []
    for v in _leaves(x, []):
        if isinstance(v, numgrad.Tensor):
            d = v.detach().numpy() if v.dtype != numgrad.bfloat16 else v.detach().float().numpy()
            if d.dtype.kind in "fc" and np.isnan(d).any():  # (one NaN for all)
                d = np.where(np.isnan(d), np.nan, d)
            out.append((str(v.dtype), d.shape, d.tobytes(), v.requires_grad))
        else:
            out.append((type(v).__name__, repr(v)))
    return out


def _run_for_compile(fn, sample, grads: bool):
    """(result, the inputs after the call, the inputs' gradients of a fixed cotangent) of one
    call of ``fn`` on the sample converted anew; an exception as ("raised", class, message)."""
    import numgrad

    conv = _Converter()
    args = (conv(sample.input), conv(tuple(sample.args)), conv(dict(sample.kwargs)))
    try:
        out = fn(args[0], *args[1], **args[2])
    except Exception as e:  # noqa: BLE001
        return ("raised", type(e).__name__, str(e)), None, None
    inputs = [t for _, t in conv.pairs]
    gradients = None
    if grads:
        outs = [o for o in _leaves(out, []) if isinstance(o, numgrad.Tensor) and o.requires_grad
                and o.dtype.is_floating_point]
        wrt = [t for t in inputs if t.requires_grad]
        if outs and wrt:
            rng = np.random.default_rng(SEED)
            seeds = [numgrad.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype)
                     for o in outs]
            try:
                gs = numgrad.autograd.grad(outs, wrt, seeds, allow_unused=True)
                gradients = _snapshot([g if g is not None else "unused" for g in gs])
            except Exception as e:  # noqa: BLE001
                gradients = ("raised", type(e).__name__, str(e))
    return _snapshot(out), _snapshot(inputs), gradients


def _deterministic_op(op):
    """numgrad's callable for the OpInfo, or None where its values are random or numgrad lacks
    its name (the compiled and vmap passes compare values only)."""
    if _nondeterministic(op):
        return None
    try:
        return numgrad_op(op)
    except Missing:
        return None


def _first_samples(op, dtype, max_samples: int, requires_grad: bool = False) -> list:
    """The OpInfo's first ``max_samples`` samples on ``dtype``, torch seeded (none where
    PyTorch's own sample function fails: nothing to compare)."""
    import itertools

    _torch().manual_seed(SEED)
    try:
        return list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=requires_grad),
                                     max_samples))
    except Exception:  # noqa: BLE001
        return []


def check_op_compiled(op, names=("float32",), max_samples: int = 1, calls: int = 2):
    """Why ``numgrad.compile`` of the op differs from eager numgrad on its first samples, or
    None: each sample called eagerly, then ``calls`` times compiled (a trace, then replays),
    comparing the results, the inputs after the call (in-place ops), the inputs' gradients and
    exceptions, bit for bit. Running eagerly where the compiler cannot prove a call sound is
    not a difference."""
    import numgrad

    fn = _deterministic_op(op)
    if fn is None:
        return None
    backward = set(op.supported_backward_dtypes("cpu")) if op.supports_autograd else set()
    with _Isolated():
        for dtype in dtypes_of(op, names):
            grads = dtype.is_floating_point and dtype in backward
            for i, sample in enumerate(_first_samples(op, dtype, max_samples, grads)):
                try:
                    eager = _run_for_compile(fn, sample, grads)
                except Missing:
                    continue
                compiled = numgrad.compile(lambda *a, **k: fn(*a, **k))
                for call in range(calls):
                    got = _run_for_compile(compiled, sample, grads)
                    for what, a, b in zip(("result", "inputs after", "gradients"), eager, got):
                        if a != b:
                            return (f"{dtype} sample {i}, compiled call {call}: {what} "
                                    f"{str(b)[:160]}, eager {str(a)[:160]}")
    return None


# ---------------------------------------------------------------------------------------------
# under numgrad.func.vmap: each sample's tensors batched, against the op on each example

_VMAP_SCALES = (1.0, 1.25, 0.75)  # (each example's floats: the sample's, scaled)


def _tensors_in(x, out: list) -> list:
    """The tensors (numgrad's or PyTorch's) of a sample's nested arguments, in order."""
    if _is_tensor(x):
        out.append(x)
    elif isinstance(x, (list, tuple)) and not _is_size(x):
        for v in x:
            _tensors_in(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _tensors_in(v, out)
    return out


def _with_tensors(x, it):
    """``x`` with its tensors replaced by the next ones of ``it`` (``_tensors_in``'s order)."""
    if _is_tensor(x):
        return next(it)
    if isinstance(x, (list, tuple)) and not _is_size(x):
        items = [_with_tensors(v, it) for v in x]
        return type(x)(items) if type(x) in (list, tuple) else tuple(items)
    if isinstance(x, dict):
        return {k: _with_tensors(v, it) for k, v in x.items()}
    return x


def check_op_vmap(op, names=("float64",), max_samples: int = 2) -> str | None:
    """Why ``numgrad.func.vmap`` of the op differs from the op run on each example of a batch
    of three, or None: every non-empty tensor argument of a sample batched (floats scaled per
    example, the others repeated), values to 1e-9. An op vmap refuses (as PyTorch's refuses a
    data-dependent shape) is not a difference. (torch 2.13's own vmap differs from its loop the
    same way for ``addmv`` of int64 with a float ``beta``, a float result, and refuses
    ``to(memory_format=channels_last)`` of a 4-D example: numgrad's does as PyTorch's.)"""
    import numgrad

    fn = _deterministic_op(op)
    if fn is None:
        return None
    with _Isolated():
        for dtype in dtypes_of(op, names):
            for i, s in enumerate(_first_samples(op, dtype, max_samples)):
                try:
                    conv = _Converter()
                    struct = (conv(s.input), conv(tuple(s.args)), conv(dict(s.kwargs)))
                except Exception:  # noqa: BLE001
                    continue
                ts = _tensors_in(struct, [])
                batched = [k for k, t in enumerate(ts) if t.numel()]
                scaled = {k for k in batched if ts[k].dtype.is_floating_point}
                if not batched:
                    continue

                def call(tensors):
                    a, args, kwargs = _with_tensors(struct, iter(tensors))
                    return fn(a, *args, **kwargs)

                def example(c):
                    return [t * c if k in scaled else t.clone() for k, t in enumerate(ts)]

                try:
                    each = [_leaves(call(example(c)), []) for c in _VMAP_SCALES]
                except Exception:  # noqa: BLE001  (an op that refuses a scaled example)
                    continue
                stacked = [numgrad.stack([t * c if k in scaled else t for c in _VMAP_SCALES])
                           if k in batched else t for k, t in enumerate(ts)]
                dims = tuple(0 if k in batched else None for k in range(len(ts)))
                try:
                    got = _leaves(numgrad.func.vmap(lambda *t: call(list(t)), in_dims=dims)(
                        *stacked), [])
                except Exception as e:  # noqa: BLE001
                    if "vmap" in str(e) or "atching rule" in str(e):
                        continue  # (refused, as PyTorch's vmap refuses: a data-dependent
                        #            shape, a function without a batching rule)
                    return f"{dtype} sample {i}: under vmap {_exception_text(e)}"
                for j, v in enumerate(got):
                    if not isinstance(v, numgrad.Tensor):
                        continue
                    want = numgrad.stack([e[j] for e in each])
                    if tuple(v.shape) != tuple(want.shape) or v.dtype != want.dtype:
                        return (f"{dtype} sample {i}: output {j} {tuple(v.shape)} {v.dtype}, "
                                f"each example's {tuple(want.shape)} {want.dtype}")
                    a, b = (_numpy(x.float() if x.dtype == numgrad.bfloat16 else x)
                            for x in (v, want))
                    if not _close(a, b, "float64"):
                        return f"{dtype} sample {i}: output {j} {a.ravel()[:3]}, each {b.ravel()[:3]}"
    return None


# ---------------------------------------------------------------------------------------------
# forward mode and double backward: each sample's derivatives against PyTorch's


def _random_like(rng, t) -> np.ndarray:
    """A standard normal array of the tensor's shape and dtype (complex: both parts random)."""
    shape, dtype = tuple(t.shape), _numpy(t).dtype
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x).astype(dtype)


def _floating(t) -> bool:
    return _is_tensor(t) and (t.dtype.is_floating_point or t.dtype.is_complex)


def _compare_derivatives(ours, theirs, what: str, dtype_name: str, shapes=None) -> str | None:
    """Why numgrad's derivatives differ from PyTorch's (dtype, shape, values to ``_close``), or
    None; a None derivative (unused) is zeros of ``shapes``' shape."""
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a is None and b is None:
            continue
        if a is not None and b is not None and _dtype_name(a) != _dtype_name(b):
            return f"{what} {k} dtype {_dtype_name(a)}, PyTorch {_dtype_name(b)}"
        a = np.zeros(shapes[k], _numpy(b).dtype) if a is None else _numpy(a)
        b = np.zeros(shapes[k], a.dtype) if b is None else _numpy(b)
        if a.shape != b.shape:
            return f"{what} {k} shape {a.shape}, PyTorch {b.shape}"
        if not _close(a, b, dtype_name):
            return f"{what} {k} {a.ravel()[:4]}, PyTorch {b.ravel()[:4]}"
    return None


def check_op_jvp(op, names=JVP_DTYPE_NAMES, max_samples: int = 3) -> str | None:
    """Why ``numgrad.func.jvp`` of the op differs from ``torch.func.jvp``'s, or None: every
    floating or complex tensor of a sample a primal, with a random tangent (complex for a complex
    primal), the floating and complex outputs' tangents (after the sample's
    output_process_fn_grad, which makes eigenvectors unique) compared in dtype, shape and value.
    A sample PyTorch's jvp refuses is not compared."""
    import numgrad

    torch = _torch()
    fn = _deterministic_op(op) if op.supports_forward_ad else None
    if fn is None:
        return None
    with _Isolated():
        for dtype in dtypes_of(op, names):
            name = str(dtype).split(".")[-1]
            for i, s in enumerate(_first_samples(op, dtype, max_samples)):
                t_struct = (s.input, tuple(s.args), dict(s.kwargs))
                try:
                    conv = _Converter()
                    n_struct = (conv(s.input), conv(tuple(s.args)), conv(dict(s.kwargs)))
                except Exception:  # noqa: BLE001  (what the main pass reports)
                    continue
                t_ts, n_ts = _tensors_in(t_struct, []), _tensors_in(n_struct, [])
                primal = [k for k, t in enumerate(t_ts) if _floating(t)]
                if len(t_ts) != len(n_ts):
                    return (f"{name} sample {i}: harness: {len(n_ts)} of {len(t_ts)} tensors "
                            "converted")
                if not primal:
                    continue
                rng = np.random.default_rng(SEED + i)
                tangents = [_random_like(rng, t_ts[k]) for k in primal]
                # (a tangent has its primal's dtype: bfloat16's, which NumPy lacks, made from
                # the float32 values, rounded alike on both sides)
                kinds = [_dtype_name(t_ts[k]) for k in primal]

                def tangents_of(m):
                    return tuple(m.from_numpy(t.copy()) if kind != "bfloat16" else
                                 m.from_numpy(t.copy()).to(m.bfloat16)
                                 for t, kind in zip(tangents, kinds))

                def outputs_of(f, struct, ts, process):
                    def call(*primals):
                        it = iter(primals)
                        tensors = [next(it) if k in primal else t for k, t in enumerate(ts)]
                        a, args, kwargs = _with_tensors(struct, iter(tensors))
                        return tuple(o for o in _leaves(process(f(a, *args, **kwargs)), [])
                                     if _floating(o))
                    return call

                try:
                    _, theirs = torch.func.jvp(
                        outputs_of(op.op, t_struct, t_ts, s.output_process_fn_grad),
                        tuple(t_ts[k].detach() for k in primal),
                        tangents_of(torch))
                except Exception:  # noqa: BLE001  (PyTorch refuses it: nothing to compare)
                    continue
                try:
                    _, ours = numgrad.func.jvp(
                        outputs_of(fn, n_struct, n_ts, _numgrad_process(s)),
                        tuple(n_ts[k].detach() for k in primal),
                        tangents_of(numgrad))
                except Exception as e:  # noqa: BLE001
                    return f"{name} sample {i}: under jvp {_exception_text(e)}"
                if len(ours) != len(theirs):
                    return f"{name} sample {i}: {len(ours)} tangents, PyTorch {len(theirs)}"
                why = _compare_derivatives(ours, theirs, "tangent", name)
                if why:
                    return f"{name} sample {i}: {why}"
    return None


def check_op_gradgrad(op, names=GRADGRAD_DTYPE_NAMES, max_samples: int = 3) -> str | None:
    """Why numgrad's second derivatives of the op differ from PyTorch's, or None: the gradients
    of a random cotangent of the sample's differentiable outputs (after its
    output_process_fn_grad), taken with ``create_graph=True``, then the gradients of a second
    random cotangent of those, with respect to the inputs, compared in dtype, shape and value
    (an unused one as zeros). A sample PyTorch refuses is not compared."""
    import numgrad

    torch = _torch()
    fn = _deterministic_op(op) if op.supports_autograd and op.supports_gradgrad else None
    if fn is None:
        return None
    backward = set(op.supported_backward_dtypes("cpu"))
    with _Isolated():
        for dtype in dtypes_of(op, names):
            if dtype not in backward:
                continue
            name = str(dtype).split(".")[-1]
            for i, s in enumerate(_first_samples(op, dtype, max_samples, True)):
                try:
                    conv = _Converter()
                    n_input, n_args, n_kwargs = (conv(s.input), conv(tuple(s.args)),
                                                 conv(dict(s.kwargs)))
                except Exception:  # noqa: BLE001  (what the main pass reports)
                    continue
                pairs = [(t, n) for t, n in conv.pairs if t.requires_grad]
                t_in, n_in = [t for t, _ in pairs], [n for _, n in pairs]
                rng = np.random.default_rng(SEED + i)
                try:
                    t_outs = _leaves(s.output_process_fn_grad(op.op(s.input, *s.args,
                                                                    **s.kwargs)), [])
                    wanted = [j for j, o in enumerate(t_outs) if _differentiable(o)]
                    if not wanted or not t_in:
                        continue
                    cot = [_random_like(rng, t_outs[j]) for j in wanted]
                    t_g = torch.autograd.grad([t_outs[j] for j in wanted], t_in,
                                              [torch.from_numpy(c.copy()) for c in cot],
                                              create_graph=True, allow_unused=True)
                    second = [k for k, g in enumerate(t_g) if g is not None and g.requires_grad]
                    if not second:
                        continue
                    cot2 = [_random_like(rng, t_g[k]) for k in second]
                    theirs = torch.autograd.grad([t_g[k] for k in second], t_in,
                                                 [torch.from_numpy(c.copy()) for c in cot2],
                                                 allow_unused=True)
                except Exception:  # noqa: BLE001  (PyTorch refuses it: nothing to compare)
                    continue
                try:
                    n_outs = _leaves(_numgrad_process(s)(fn(n_input, *n_args, **n_kwargs)), [])
                    if len(n_outs) != len(t_outs) or not all(_differentiable(n_outs[j])
                                                             for j in wanted):
                        return (f"{name} sample {i}: differentiable outputs "
                                f"{[_differentiable(o) for o in n_outs]}, PyTorch's "
                                f"{[_differentiable(o) for o in t_outs]}")
                    n_g = numgrad.autograd.grad([n_outs[j] for j in wanted], n_in,
                                                [numgrad.from_numpy(c.copy()) for c in cot],
                                                create_graph=True, allow_unused=True)
                    # (a first gradient outside the graph is constant: its part is zeros)
                    keep = [(n_g[k], c) for k, c in zip(second, cot2)
                            if n_g[k] is not None and n_g[k].requires_grad]
                    ours = (numgrad.autograd.grad([g for g, _ in keep], n_in,
                                                  [numgrad.from_numpy(c.copy()) for _, c in keep],
                                                  allow_unused=True)
                            if keep else [None] * len(n_in))
                except Exception as e:  # noqa: BLE001
                    return f"{name} sample {i}: double backward {_exception_text(e)}"
                why = _compare_derivatives(ours, theirs, "second gradient", name,
                                           [tuple(t.shape) for t in t_in])
                if why:
                    return f"{name} sample {i}: {why}"
    return None


def check_error_inputs(op) -> list[tuple[str, str | None]]:
    """(key, why numgrad's error differs or None) of each runnable error input (one PyTorch
    raises as the OpInfo says)."""
    out = []
    torch = _torch()
    with _Isolated():
        torch.manual_seed(SEED)
        try:
            errors = list(op.error_inputs("cpu"))
        except Exception:  # noqa: BLE001
            return out
        for i, ei in enumerate(errors):
            key = f"{op_id(op)}#{i}"
            s = ei.sample_input
            conv = _Converter()
            try:
                args = (conv(s.input), conv(tuple(s.args)), conv(dict(s.kwargs)))
                fn = numgrad_op(op)
            except Missing as e:
                missing = str(e)
            except Exception as e:  # noqa: BLE001
                missing = "converting the sample: " + _exception_text(e)
            else:
                missing = None
            try:
                op.op(s.input, *s.args, **s.kwargs)
            except Exception as e:  # noqa: BLE001
                if not (isinstance(e, ei.error_type) and re.search(ei.error_regex, str(e))):
                    continue  # (PyTorch 2.13 no longer raises as the OpInfo says)
            else:
                continue
            if missing:
                out.append((key, missing))
                continue
            try:
                fn(args[0], *args[1], **args[2])
            except Exception as e:  # noqa: BLE001
                if isinstance(e, Missing) or (isinstance(e, AttributeError)
                                              and "has no attribute" in str(e)):
                    out.append((key, _exception_text(e)))
                elif not isinstance(e, _builtin_class(ei.error_type)):
                    out.append((key, f"raises {type(e).__name__}, PyTorch "
                                     f"{_builtin_class(ei.error_type).__name__} "
                                     f"({str(e).splitlines()[0][:80] if str(e) else ''})"))
                elif not re.search(ei.error_regex, str(e)):
                    out.append((key, f"message {str(e)[:80]!r} does not match PyTorch's "
                                     f"{ei.error_regex!r}"))
                else:
                    out.append((key, None))
            else:
                out.append((key, f"accepted silently (PyTorch: {ei.error_type.__name__} "
                                 f"{ei.error_regex!r})"))
    return out


def main(argv):
    import time

    t0 = time.time()
    ops = op_db()
    only = [a for a in argv if not a.startswith("-")]
    if only:
        ops = [op for op in ops if op_id(op) in only or op.name in only]
    fails, errors = {}, {}
    cases = passed_cases = 0
    for op in ops:
        why, run, passed = check_op(op)
        cases += run
        passed_cases += passed
        if why:
            fails[op_id(op)] = why
        for key, w in check_error_inputs(op):
            errors[key] = w
        if "-v" in argv:
            print(op_id(op), "|", why, f"{time.time() - t0:.1f}s", flush=True)
    narrow_fails = complex_fails = {}
    if "--narrow" in argv or "--write" in argv:
        narrow_fails = _run_pass(ops, narrow_op_db(), NARROW_DTYPE_NAMES, "NARROW")
    if "--complex" in argv or "--write" in argv:
        complex_fails = _run_pass(ops, complex_op_db(), COMPLEX_DTYPE_NAMES, "COMPLEX")
    vmap_fails = jvp_fails = narrow_jvp_fails = gradgrad_fails = {}
    if "--vmap" in argv or "--write" in argv:
        vmap_fails = _run_check(ops, lambda op: check_op_vmap(op, names=VMAP_DTYPE_NAMES),
                                "VMAP", "under vmap")
    if "--jvp" in argv or "--write" in argv:
        jvp_fails = _run_check(ops, check_op_jvp, "JVP", "under jvp")
        narrow_jvp_fails = _run_check(
            ops, lambda op: check_op_jvp(op, names=NARROW_JVP_DTYPE_NAMES), "NARROW-JVP",
            "under jvp in float16 and bfloat16")
    if "--gradgrad" in argv or "--write" in argv:
        gradgrad_fails = _run_check(ops, check_op_gradgrad, "GRADGRAD", "in double backward")
    if "--compiled" in argv:  # (every OpInfo through numgrad.compile: slow, not in CI)
        for op in ops:
            why = check_op_compiled(op, names=("float32", "float64", "int64", "bool"),
                                    max_samples=2, calls=3)
            if why:
                print("FAIL-COMPILED", op_id(op), "|", why, flush=True)
    bad_err = {k: w for k, w in errors.items() if w}
    for k, w in fails.items():
        print("FAIL", k, "|", w)
    for k, w in bad_err.items():
        print("ERROR-INPUT", k, "|", w)
    absent = [k for k, w in bad_err.items() if w.startswith(("missing name", "dtype ", "layout ",
                                                              "a tensor "))]
    print(f"{len(ops) - len(fails)} of {len(ops)} OpInfos pass every sample "
          f"({passed_cases} of {cases} cases); {len(errors) - len(bad_err)} of {len(errors)} "
          f"runnable error inputs raise PyTorch's class and message ({len(absent)} of them need "
          f"a name, dtype or layout numgrad lacks); {time.time() - t0:.0f} s")
    if "--write" in argv and not only:
        write_expected(fails, bad_err, complex_fails, narrow_fails, vmap_fails, jvp_fails,
                       narrow_jvp_fails, gradgrad_fails)


def _run_pass(ops, of, names, label: str) -> dict:
    """{OpInfo: why} of the OpInfos among ``ops`` and ``of`` that fail on the dtypes ``names``
    (a pass of their own), printed with the count."""
    ids = {op_id(op) for op in of} & {op_id(op) for op in ops}
    fails = {}
    for op in ops:
        if op_id(op) in ids:
            why, _, _ = check_op(op, names=names)
            if why:
                fails[op_id(op)] = why
    for k, w in fails.items():
        print(f"FAIL-{label}", k, "|", w)
    print(f"{', '.join(names)}: {len(ids) - len(fails)} of {len(ids)} OpInfos pass every sample")
    return fails


def _run_check(ops, check, label: str, where: str) -> dict:
    """{OpInfo: why} of the OpInfos among ``ops`` that ``check`` (``check_op_vmap``...) fails,
    printed (FAIL-``label``) with the count."""
    fails = {}
    for op in ops:
        why = check(op)
        if why:
            fails[op_id(op)] = why
            print(f"FAIL-{label}", op_id(op), "|", why, flush=True)
    print(f"{len(ops) - len(fails)} of {len(ops)} OpInfos pass {where}")
    return fails


def write_expected(fails, errors, complex_fails, narrow_fails, vmap_fails, jvp_fails,
                   narrow_jvp_fails, gradgrad_fails):
    """Writes the expected failures; an entry still failing keeps the reason written there (a
    reason may be edited by hand, to say why rather than what)."""
    import os
    import pprint

    import op_db_expected_failures as listed

    dicts = (
        ("SAMPLES", fails, None),
        ("ERROR_INPUTS", errors, "error inputs (OpInfo#index in its error_inputs)"),
        ("COMPLEX_SAMPLES", complex_fails, "the complex128 pass (OpInfos that take complex128)"),
        ("NARROW_SAMPLES", narrow_fails,
         "the narrow pass (float16, bfloat16, int32, int16, int8, uint8)"),
        ("VMAP_SAMPLES", vmap_fails,
         "under vmap (``check_op_vmap``): what torch 2.13's own vmap does alike"),
        ("JVP_SAMPLES", jvp_fails, "forward mode (``check_op_jvp``): torch.func.jvp's tangents"),
        ("NARROW_JVP_SAMPLES", narrow_jvp_fails,
         "forward mode in float16 and bfloat16 (``check_op_jvp`` on ``NARROW_JVP_DTYPE_NAMES``)"),
        ("GRADGRAD_SAMPLES", gradgrad_fails,
         "double backward (``check_op_gradgrad``): second derivatives of random cotangents"),
    )

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_db_expected_failures.py")
    with open(path, "w") as f:
        f.write('"""The OpInfos of torch 2.13\'s op_db that numgrad fails today (issue 35), each with '
                'its reason:\nthe first failing sample\'s dtype, index and what differs. '
                'tests/test_op_db.py fails on an\nOpInfo that fails and is not listed, and on a '
                'listed one that passes: the lists only shrink.\n(``python tests/_op_db.py '
                '--write`` rewrites this file from what fails now.)\n"""\n\n')
        for i, (name, now, comment) in enumerate(dicts):
            # (an entry still failing keeps its reason as written there)
            now = {k: getattr(listed, name, {}).get(k, w) for k, w in now.items()}
            f.write("\n" if i else "")
            f.write(f"# {comment}\n" if comment else "")
            f.write(f"{name} = " + pprint.pformat(dict(sorted(now.items())), width=100) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
