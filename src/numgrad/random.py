"""Random sampling with PyTorch's names: ``Generator`` objects, ``normal`` (its overloads),
``randperm``, ``bernoulli``, ``multinomial``, the in-place fills ``uniform_``, ``normal_``,
``random_``, ``bernoulli_``, ``exponential_``, ``rand``/``randn``/``randint`` and their ``*_like``
forms (all with ``generator=``), and the default generator's ``manual_seed``, ``seed``,
``initial_seed``, ``get_rng_state`` / ``set_rng_state`` (a tensor of the state's bytes, numgrad's
own format: a round trip reproduces the stream).

Every draw comes from a counter-based Philox4x32-10 generator (``kernels/cpu/philox.py``):
uniform, normal and Bernoulli values (``rand``, ``randn``, their ``*_like``, ``normal``,
``uniform_``, ``normal_``, ``bernoulli_``, ``bernoulli``, so dropout), integers (``randint``,
``randint_like``, ``random_``: exactly uniform, by Lemire's multiply-shift with rejection),
permutations (``randperm``: Fisher-Yates), ``multinomial`` (with replacement by inverting the
cumulative weights, without by exponential keys) and ``exponential_`` (``-log(1 - u) / lambd``),
and ``nn.init``'s fills. The generator's state is an int64 tensor ``[seed, offset]`` that each
draw reads and advances through a kernel, so ``numgrad.compile`` records a draw as any other
kernel call and a replay draws eager's numbers and advances the state as eager does (a CUDA
tensor's uniform and normal values are drawn on the device, ``kernels/cuda/philox.py``: the
CPU's uniforms bit for bit, so the same dropout masks; its other draws on the host, uploaded). Each generator still holds a
NumPy PCG64 generator, which numgrad no longer draws from (it is there for code that reaches it
through a generator's NumPy methods); ``manual_seed`` seeds both, and the state's bytes hold both
(a stable format). A seed reproduces numgrad's own draws, not PyTorch's stream (a PyTorch
program's random numbers differ from numgrad's for the same seed).
"""
from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from .ops._names import Out, export
from . import _lowp, creation, cuda, dispatch
from ._dtype import torch_name
from .autograd import grad_mode
from .ops import inplace, registry
from .tensor import Tensor

_PCG_BYTES = 37  # PCG64: state (16 bytes), increment (16), has_uint32 (1), uinteger (4)
_STATE_BYTES = _PCG_BYTES + 16  # and Philox's seed and offset (8 bytes each)


def _philox_tensor(seed: int) -> Tensor:
    """A Philox state ``[seed, 0]`` (int64; the seed's 64 bits as they are)."""
    return Tensor._wrap(np.array([int(seed) % 2 ** 64, 0], np.uint64).view(np.int64))


def _seed_philox(state: Tensor, seed: int) -> None:
    """Seeds a Philox state in place (compiled functions hold the tensor itself)."""
    state._data[...] = np.array([int(seed) % 2 ** 64, 0], np.uint64).view(np.int64)
    state._version_counter.value += 1


def _fresh_seed() -> int:
    return int(np.random.SeedSequence().entropy % (2 ** 63))


def _encode_state(rng: np.random.Generator, philox: Tensor) -> Tensor:
    """NumPy's PCG64 state and the Philox state as a tensor of bytes (numgrad's own format;
    int64 elements, numgrad having no uint8), which ``_decode_state`` turns back into the same
    streams."""
    st = rng.bit_generator.state
    raw = (int(st["state"]["state"]).to_bytes(16, "little")
           + int(st["state"]["inc"]).to_bytes(16, "little")
           + bytes([int(st["has_uint32"])]) + int(st["uinteger"]).to_bytes(4, "little")
           + np.ascontiguousarray(philox._data).tobytes())
    return Tensor._wrap(np.frombuffer(raw, np.uint8).astype(np.int64))


def _decode_state(new_state) -> tuple:
    """(PCG64's state dict, Philox's two int64) from ``_encode_state``'s tensor."""
    if not isinstance(new_state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
    values = new_state._host().reshape(-1)
    if values.size != _STATE_BYTES:
        raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found "
                           f"the input RNG state size to be {values.size}")
    raw = bytes(int(v) & 0xFF for v in values.tolist())
    return ({"bit_generator": "PCG64",
             "state": {"state": int.from_bytes(raw[0:16], "little"),
                       "inc": int.from_bytes(raw[16:32], "little")},
             "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")},
            np.frombuffer(raw[_PCG_BYTES:], np.int64).copy())


@export
class Generator:
    """A random number generator: ``Generator().manual_seed(0)``, passed as ``generator=``."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = _fresh_seed()
        self._rng = np.random.default_rng(self._seed)
        self._philox = _philox_tensor(self._seed)

    def manual_seed(self, seed) -> Generator:
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        _seed_philox(self._philox, self._seed)
        return self

    def seed(self) -> int:
        """Seeds from fresh entropy; returns the seed."""
        return self.manual_seed(_fresh_seed())._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state as a tensor of bytes (``set_state`` restores it)."""
        return _encode_state(self._rng, self._philox)

    def set_state(self, new_state) -> Generator:
        if isinstance(new_state, dict):  # (a PCG64 state of NumPy's)
            self._rng.bit_generator.state = new_state
            return self
        pcg, philox = _decode_state(new_state)
        self._rng.bit_generator.state = pcg
        self._philox._data[...] = philox
        self._philox._version_counter.value += 1
        return self

    def __getattr__(self, name):
        # NumPy's sampling methods (normal, uniform, permutation ...) of the PCG64 generator
        # behind, for code that draws from a generator= directly as from NumPy's (numgrad's own
        # draws are Philox's).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._rng, name)


class _DefaultGenerator(Generator):
    """``numgrad.default_generator``: the generator behind ``rand``, ``randn`` and the rest when
    no ``generator=`` is given (NumPy's generator in ``creation``, which ``manual_seed``
    replaces)."""

    def __init__(self):
        self.device = "cpu"
        self._seed = _fresh_seed()
        creation._rng = np.random.default_rng(self._seed)
        self._philox = _philox_tensor(self._seed)

    @property
    def _rng(self):
        return creation._rng

    @_rng.setter
    def _rng(self, rng):
        creation._rng = rng


default_generator = export(_DefaultGenerator(), "default_generator")


@export
def manual_seed(seed) -> Generator:
    """Seeds the default generator (behind ``rand``, ``randn``, ``randperm`` ...)."""
    return default_generator.manual_seed(seed)


@export
def seed() -> int:
    """Seeds the default generator from fresh entropy; returns the seed."""
    return default_generator.seed()


@export
def initial_seed() -> int:
    """The default generator's seed (the last ``manual_seed``, or the one drawn at start)."""
    return default_generator.initial_seed()


@export
def get_rng_state() -> Tensor:
    """The default generator's state as a tensor of bytes (numgrad's own format)."""
    return default_generator.get_state()


@export
def set_rng_state(new_state) -> None:
    """Restores the default generator's state from ``get_rng_state()``'s tensor."""
    default_generator.set_state(new_state)


def _philox(generator) -> Tensor:
    """The Philox state of ``generator`` (None: the default generator's)."""
    if generator is None:
        return default_generator._philox
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a numgrad.Generator, but got {type(generator).__name__}")
    return generator._philox


def _kernel_draw(generator, kernel: str, *args, device=None):
    """Values drawn on ``device`` (None: the default device) by the Philox kernel ``kernel``
    (``philox_uniform``, ``philox_integers`` ... of ``kernels/cpu/philox.py`` and
    ``kernels/cuda/philox.py``) from ``generator``'s state, called through the kernels the ops
    use: a compiled function's trace records the call, and its replay draws the next values and
    advances the state as eager does. Array arguments are host arrays; the result is an array
    of ``device``."""
    if device is None:
        device = creation._default_device
    if device is not None and creation._is_cuda(device):
        K = creation._cuda_kernels()
    else:
        K = registry.cpu()
        if K is registry._cpu_module and dispatch.current() is not None:
            # (a step on CUDA: its dispatch mode leaves the CPU kernels unrecorded)
            dispatch.graph_break("random numbers for a CPU tensor in a step on CUDA")
    return getattr(K, kernel)(_philox(generator)._data, *args)


def _philox_draw(generator, shape: tuple, np_dtype, normal: bool = False, device=None):
    """Uniform (or standard normal) values of ``shape`` and ``np_dtype`` from the Philox
    stream, on ``device`` (``_kernel_draw``)."""
    return _kernel_draw(generator, "philox_normal" if normal else "philox_uniform",
                        tuple(shape), np.dtype(np_dtype), device=device)


def _float_dtype(*values, dtype=None) -> np.dtype:
    if dtype is not None:
        return creation._float_dtype(dtype)
    for v in values:
        if isinstance(v, Tensor):
            if v._data.dtype.kind not in "fV":  # ("V": bfloat16)
                raise NotImplementedError(
                    f'"normal_kernel_cpu" not implemented for \'{_kind(v)}\'')
            return v._data.dtype
    return creation._float_dtype(None)


def _drawable(np_dtype, kernel: str) -> np.dtype:
    """``np_dtype`` where ``rand``/``randn`` draw it (a float or complex dtype), else PyTorch's
    error naming its kernel (``"check_uniform_bounds" not implemented for 'Long'``)."""
    if np.dtype(np_dtype).kind in "iub":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{torch_name(np_dtype)}\'')
    return np_dtype


def _kind(t: Tensor) -> str:
    return torch_name(t._data.dtype)


def _device_of(*values):
    for v in values:
        if isinstance(v, Tensor):
            return v.device
    return None


@export
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, layout=None,
           device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Samples of N(mean, std²): ``mean`` and ``std`` tensors (broadcast together) or numbers
    (then ``size`` is needed, as in PyTorch)."""
    tensors = isinstance(mean, Tensor) or isinstance(std, Tensor)
    if not tensors and size is None:
        raise TypeError("normal() received an invalid combination of arguments: with a float "
                        "mean and std, size is required")
    np_dtype = _float_dtype(mean, std, dtype=dtype)
    m = _lowp.to_float(mean._host()) if isinstance(mean, Tensor) else mean  # (bfloat16: float32)
    s = _lowp.to_float(std._host()) if isinstance(std, Tensor) else std
    if not isinstance(std, Tensor) and std < 0:  # (a tensor's: checked by the kernel)
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    shape = creation._shape((size,)) if size is not None else np.broadcast_shapes(
        np.shape(m), np.shape(s))
    device = device if device is not None else _device_of(mean, std)
    out = _kernel_draw(generator, "philox_normal", shape, np_dtype, m, s, device=device)
    return creation._finish(out, requires_grad, device)


@export
def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``)."""
    if n < 0:
        creation.negative((int(n),))  # (PyTorch 2.13's words)
    np_dtype = np.dtype("int64") if dtype is None else np.dtype(dtype.name)
    return creation._finish(_kernel_draw(generator, "philox_permutation", int(n), np_dtype,
                                         device=device), requires_grad, device)


def _probabilities(input: Tensor, what: str, kernel: str | None = None) -> np.ndarray:
    if not isinstance(input, Tensor):
        raise TypeError(f"{what}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._data.dtype.kind not in "fV":  # ("V": bfloat16, read as float32)
        raise NotImplementedError(f'"{kernel or what}" not implemented for '
                                  f"'{_kind(input)}'")
    return _lowp.to_float(input._host())


@export(method=True, out=Out(any_dtype=True))
def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """1 with probability ``input`` (or ``p``) elementwise, else 0, in ``input``'s dtype (any
    dtype with a number ``p``, as PyTorch's)."""
    if p is None or not isinstance(input, Tensor):  # (the latter: its TypeError)
        probs = _probabilities(input, "bernoulli", "bernoulli_tensor_cpu_p_")
    if p is not None:
        probs = float(p)
    dtype = input._data.dtype
    drawn = dtype if dtype.kind in "fV" else np.dtype(np.float32)  # (integers: 0 and 1 cast)
    out = _kernel_draw(generator, "philox_bernoulli", probs, tuple(input._data.shape), drawn,
                       device=input.device)
    if drawn != dtype:
        out = (creation._cuda_kernels() if not isinstance(out, np.ndarray) else
               registry.cpu()).cast(out, dtype)
    return creation._finish(out, False, input.device)


@export(method=True,
        out=Out(dtype_first=("int64", "multinomial expects Long tensor out, got: {out}")))
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator=None) -> Tensor:
    """``num_samples`` indices drawn per row of ``input`` (weights, not necessarily
    normalised), with or without replacement; int64."""
    if isinstance(input, Tensor) and input._data.dtype.kind not in "fV":  # ("V": bfloat16)
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{_kind(input)}")
    weights = _probabilities(input, "multinomial")
    if weights.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if weights.shape[-1] > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > weights.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    out = _kernel_draw(generator, "philox_multinomial", weights, int(num_samples),
                       bool(replacement), device=input.device)  # (which checks the weights)
    return creation._finish(out, False, input.device)


# ------------------------------------------------------------------ in-place fills
@export(function=False, method=True)
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    """Fills with samples of U(a, b), in place."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a} > to={b}")
    drawn = _philox_draw(generator, self._data.shape, _drawn_dtype(self), device=self.device)
    return _fill_drawn(self, drawn, lambda u: u * (b - a) + a if (a, b) != (0.0, 1.0) else u)


def _drawn_dtype(t: Tensor) -> np.dtype:
    """The dtype of the values drawn for a fill of ``t``: its own if floating or complex (a
    complex draw has random imaginary parts too), else float64."""
    return t._data.dtype if t._data.dtype.kind in "fc" else np.dtype(np.float64)


def _fill_drawn(t: Tensor, drawn, finish=None) -> Tensor:
    """Fills ``t`` with (``finish`` of) Philox draws made on its device, through tensor ops
    (recorded by a trace)."""
    values = Tensor._wrap(drawn)
    return _fill_tensor(t, values if finish is None else finish(values))


def _fill_tensor(t: Tensor, values: Tensor) -> Tensor:
    """Writes fresh samples ``values`` (a tensor drawn by the kernels, so recorded in a trace)
    into ``t`` (a leaf that requires grad only under no_grad, as PyTorch's in-place rules
    say)."""
    inplace._check_leaf(t)
    if grad_mode.state.enabled and (t._requires_grad or
                                    (t._base is not None and t._base._requires_grad)):
        return inplace.copy_(t, values)  # (no gradient reaches the old values)
    with grad_mode.no_grad():
        return inplace.copy_(t, values)


@export(function=False, method=True)
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fills with samples of N(mean, std²), in place."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    drawn = _philox_draw(generator, self._data.shape, _drawn_dtype(self), True, self.device)
    if self._data.dtype.kind == "c":  # (PyTorch's: ``mean`` for both parts, as a real view's)
        mean = complex(mean, mean)
    return _fill_drawn(self, drawn, lambda z: z * std + mean if (mean, std) != (0.0, 1.0) else z)


@export(function=False, method=True)
def random_(self: Tensor, from_=None, to=None, *, generator=None) -> Tensor:
    """Fills with integers drawn uniformly from ``[from, to)`` (``random_(to)``: ``[0, to)``;
    no bounds: ``[0, 2**mantissa]`` for floats, the dtype's range for integers), in place."""
    if to is None and from_ is not None:
        from_, to = 0, from_
    low = 0 if from_ is None else int(from_)
    if to is None:
        kind = self._data.dtype
        to = (1 << (np.finfo(kind).nmant + 1)) + 1 if kind.kind == "f" else (
            2 if kind.kind == "b" else int(np.iinfo(kind).max) + 1)
    return _fill_drawn(self, _integers(generator, low, int(to), self._data.shape,
                                       self._data.dtype, self.device))


@export(function=False, method=True)
def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fills with 1 with probability ``p`` (a number or a tensor of probabilities that
    broadcasts to ``self``), else 0."""
    if isinstance(p, Tensor):  # (its values are checked by the kernel)
        return _fill_drawn(self, _kernel_draw(generator, "philox_bernoulli", p._host(),
                                              self._data.shape, _drawn_dtype(self),
                                              device=self.device))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    drawn = _philox_draw(generator, self._data.shape, _drawn_dtype(self), device=self.device)
    return _fill_drawn(self, drawn, lambda u: u < p)


@export(function=False, method=True)
def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fills with samples of the exponential distribution of rate ``lambd``, in place."""
    if not isinstance(lambd, numbers.Real) or lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill_drawn(self, _kernel_draw(generator, "philox_exponential", self._data.shape,
                                          _drawn_dtype(self), lambd, device=self.device))


@export(function=False, method=True)
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fills with samples of the Cauchy distribution, ``median + sigma tan(pi (u - 1/2))``, in
    place."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    drawn = _philox_draw(generator, self._data.shape, _drawn_dtype(self), False, self.device)
    return _fill_drawn(self, drawn, lambda u: ((u - 0.5) * math.pi).tan() * sigma + median)


@export(function=False, method=True)
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fills with ``exp`` of samples of N(mean, std²), in place."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    drawn = _philox_draw(generator, self._data.shape, _drawn_dtype(self), True, self.device)
    return _fill_drawn(self, drawn, lambda z: (z * std + mean).exp())


@export(function=False, method=True)
def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Fills with samples of the geometric distribution (trials up to the first success of
    probability ``p``, from 1), ``ceil(log(u) / log(1 - p))``, in place."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    drawn = _philox_draw(generator, self._data.shape, np.dtype(np.float64), False, self.device)
    return _fill_drawn(self, drawn, lambda u: (u.log() / math.log1p(-p)).ceil().clamp_min(1))


class fork_rng:
    """``torch.random.fork_rng``: the default generator's state saved on entry and restored on
    exit (``enabled=False``: nothing); ``devices`` is accepted (CUDA samples come from the same
    generator)."""

    def __init__(self, devices=None, enabled: bool = True, _caller="fork_rng",
                 _devices_kw="devices", device_type="cuda"):
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            self._state = get_rng_state()

    def __exit__(self, *exc):
        if self.enabled:
            set_rng_state(self._state)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with fork_rng(enabled=self.enabled):
                return fn(*args, **kwargs)

        return wrapped


def _cuda_seeding() -> None:
    """``numgrad.cuda``'s seeding functions (``manual_seed``, ``manual_seed_all``, ``seed``,
    ``seed_all``, ``initial_seed``, ``get_rng_state[_all]``, ``set_rng_state[_all]``), which
    programs call beside ``manual_seed`` for reproducibility: CUDA samples are drawn on the host
    from the default generator, so they act on it."""
    def manual_seed_cuda(seed) -> None:
        default_generator.manual_seed(seed)

    def get_rng_state_cuda(device="cuda") -> Tensor:
        return get_rng_state()

    def set_rng_state_cuda(new_state, device="cuda") -> None:
        set_rng_state(new_state)

    def seed_cuda() -> None:
        seed()

    functions = {
        "manual_seed": manual_seed_cuda, "manual_seed_all": manual_seed_cuda,
        "seed": seed_cuda, "seed_all": seed_cuda,
        "initial_seed": initial_seed, "get_rng_state": get_rng_state_cuda,
        "set_rng_state": set_rng_state_cuda,
        "get_rng_state_all": lambda: [get_rng_state()],
        "set_rng_state_all": lambda new_states: set_rng_state(list(new_states)[0]),
    }
    for name, fn in functions.items():
        if not hasattr(cuda, name):
            setattr(cuda, name, fn)


_cuda_seeding()


# ------------------------------------------------------------------ rand, randn, randint, *_like
def _size(size, keyword):
    if keyword is not None:
        if size:
            raise TypeError("rand() received an invalid combination of arguments: size given "
                            "twice")
        size = (keyword,)
    return creation._shape(size)


def _checked_generator(generator, name: str) -> None:
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"generator={type(generator).__name__}, but expected a "
                        "numgrad.Generator")


@export
def rand(*size, generator=None, dtype=None, device=None, requires_grad: bool = False,
         **kw) -> Tensor:
    """Uniform random values in [0, 1)."""
    shape = _size(size, kw.pop("size", None))
    _checked_generator(generator, "rand")
    np_dtype = _drawable(creation._float_dtype(dtype), "check_uniform_bounds")
    return creation._finish(_philox_draw(generator, shape, np_dtype, device=device),
                            requires_grad, device)


@export
def randn(*size, generator=None, dtype=None, device=None, requires_grad: bool = False,
          **kw) -> Tensor:
    """Standard normal random values."""
    shape = _size(size, kw.pop("size", None))
    _checked_generator(generator, "randn")
    np_dtype = _drawable(creation._float_dtype(dtype), "normal_kernel_cpu")
    return creation._finish(_philox_draw(generator, shape, np_dtype, True, device),
                            requires_grad, device)


def _integers(generator, low: int, high: int, shape: tuple, np_dtype, device=None):
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    if np_dtype == np.bool_ and (low < 0 or high > 2):
        raise RuntimeError("to - 1 is out of bounds for bool")
    if low < -2 ** 63 or high > 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    return _kernel_draw(generator, "philox_integers", shape, low, high, np_dtype, device=device)


@export
def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """Random integers in [low, high) (``randint(high, size)`` starts at 0); int64 unless
    ``dtype``."""
    if size is None:
        low, high, size = 0, low, high
    _checked_generator(generator, "randint")
    np_dtype = creation.to_dtype(dtype).np if dtype is not None else np.dtype(np.int64)
    return creation._finish(_integers(generator, int(low), int(high), creation._shape((size,)),
                                      np_dtype, device), requires_grad, device)


@export
def rand_like(input: Tensor, *, generator=None, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    """``rand`` with the shape (and by default the dtype and device) of ``input``."""
    return rand(tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                device=device or input.device, requires_grad=requires_grad)


@export
def randn_like(input: Tensor, *, generator=None, dtype=None, device=None,
               requires_grad: bool = False) -> Tensor:
    """``randn`` with the shape (and by default the dtype and device) of ``input``."""
    return randn(tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                 device=device or input.device, requires_grad=requires_grad)


@export
def randint_like(input: Tensor, low=0, high=None, *, generator=None, dtype=None, device=None,
                 requires_grad: bool = False) -> Tensor:
    """``randint`` with the shape (and by default the dtype and device) of ``input``:
    ``randint_like(x, high)`` or ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    _checked_generator(generator, "randint_like")
    dt = dtype or input.dtype
    np_dtype = creation.to_dtype(dt).np
    device = device or input.device
    return creation._finish(_integers(generator, int(low), int(high), tuple(input.shape),
                                      np_dtype, device), requires_grad, device)
