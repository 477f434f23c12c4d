"""The random-number bridge of tests/test_programs.py (tests only: numgrad never imports torch).

tests/test_programs.py puts this folder first on PYTHONPATH, so Python imports this file at start-up
in both runs of a program, and sets NUMGRAD_PROGRAMS_RUN to say which run it is:

- both runs: Python's ``random`` and NumPy's global generator are seeded with 0 (some programs draw
  from them unseeded: ``random.randint`` in dynamic_net.py, ``np.random.randn`` in
  polynomial_numpy.py), and PyTorch's default CPU generator is seeded with 0 (PyTorch seeds it
  afresh in every process, so an unseeded program would differ between two PyTorch runs);
- ``NUMGRAD_PROGRAMS_RUN=numgrad`` (the run under ``python -m numgrad run``): the real PyTorch is
  imported here first, kept as ``_rt``, and taken out of ``sys.modules``, so that the program's
  ``import torch`` gives numgrad (and numgrad's refusal to mix with a real PyTorch is not tripped);
  it is put back, with numgrad's ``torch`` finder taken out of ``sys.meta_path``, only while one of
  its functions runs (PyTorch imports ``torch`` lazily, from C++ too). numgrad's sampling
  functions are replaced by versions that draw from PyTorch's generator, with the shape, dtype and
  call order of PyTorch's own functions (so the same numbers), and convert the result to a numgrad
  tensor: ``manual_seed``, ``rand``, ``randn``, ``randint``, ``rand_like``, ``randn_like``,
  ``normal``, ``randperm``, ``Tensor.uniform_``, ``Tensor.normal_``, and ``nn.init.uniform_`` /
  ``nn.init.normal_`` (which ``kaiming_*`` / ``xavier_*`` and the layers' ``reset_parameters`` call,
  as PyTorch's do), and ``get_rng_state``/``set_rng_state``/``fork_rng`` (PyTorch's state, which
  ``utils.checkpoint`` saves and restores around its recomputation). numgrad's other Philox draws (``bernoulli`` with a tensor, ``multinomial``,
  ``random_``, ``randint_like``, ``exponential_``) and its NumPy generator are replaced by ones that
  raise, so a draw the bridge does not cover fails loudly instead of giving other numbers (its
  uniform and normal draws, which dropout's masks and ``bernoulli_`` with a number use, stay
  numgrad's own, as they were).
"""
import os
import random
import sys

import numpy as np

_RUN = os.environ.get("NUMGRAD_PROGRAMS_RUN")


def _torch_modules():
    return {n: m for n, m in sys.modules.items() if n == "torch" or n.startswith("torch.")}


def _install_bridge():
    import contextlib

    import torch as _rt

    _rt.manual_seed(0)
    real = _torch_modules()
    for name in real:
        del sys.modules[name]

    import numgrad
    from numgrad import _as_torch, creation
    from numgrad import random as ng_random
    from numgrad.nn import init as ng_init

    @contextlib.contextmanager
    def real_torch():
        """The real PyTorch back in ``sys.modules`` (and numgrad's ``torch`` finder out of
        ``sys.meta_path``) while a PyTorch function runs: PyTorch imports ``torch`` lazily, from
        C++ too."""
        ours = _torch_modules()
        finder = _as_torch._FINDER in sys.meta_path
        for name in ours:
            del sys.modules[name]
        if finder:
            sys.meta_path.remove(_as_torch._FINDER)
        sys.modules.update(real)
        try:
            yield
        finally:
            real.update(_torch_modules())
            for name in real:
                sys.modules.pop(name, None)
            sys.modules.update(ours)
            if finder:
                sys.meta_path.insert(0, _as_torch._FINDER)

    def bridged(fn):
        import functools

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if kwargs.get("generator") is not None:
                raise RuntimeError("tests/programs/_bridge: a generator= argument is not bridged")
            with real_torch():
                return fn(*args, **kwargs)

        return call

    def rt_dtype(dtype, default=None):
        """PyTorch's dtype for a numgrad dtype (None: ``default``, else float32)."""
        if dtype is None:
            dtype = default
        if dtype is None:
            return _rt.float32
        return getattr(_rt, creation.to_dtype(dtype).np.name)

    def to_ng(t, requires_grad=False, device=None):
        return creation._finish(np.ascontiguousarray(t.numpy()), requires_grad, device)

    def to_rt(v):
        return _rt.from_numpy(np.array(v._host())) if isinstance(v, numgrad.Tensor) else v

    @bridged
    def manual_seed(seed):
        return _rt.default_generator.manual_seed(int(seed))

    @bridged
    def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
        return to_ng(_rt.rand(creation._shape(size), dtype=rt_dtype(dtype)), requires_grad, device)

    @bridged
    def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
        return to_ng(_rt.randn(creation._shape(size), dtype=rt_dtype(dtype)), requires_grad,
                     device)

    @bridged
    def randint(low, high=None, size=None, *, dtype=None, device=None, requires_grad=False,
                generator=None):
        if size is None:
            low, high, size = 0, low, high
        return to_ng(_rt.randint(low, high, tuple(size), dtype=rt_dtype(dtype, numgrad.int64)),
                     requires_grad, device)

    @bridged
    def rand_like(input, *, dtype=None, device=None, requires_grad=False):
        return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                    requires_grad=requires_grad)

    @bridged
    def randn_like(input, *, dtype=None, device=None, requires_grad=False):
        return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                     requires_grad=requires_grad)

    @bridged
    def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
               requires_grad=False):
        tensors = isinstance(mean, numgrad.Tensor) or isinstance(std, numgrad.Tensor)
        if tensors:
            out = _rt.normal(to_rt(mean), to_rt(std))
        else:
            out = _rt.normal(mean, std, tuple(size), dtype=rt_dtype(dtype))
        return to_ng(out, requires_grad, device)

    @bridged
    def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
        return to_ng(_rt.randperm(n, dtype=rt_dtype(dtype, numgrad.int64)), requires_grad, device)

    def fill(t, values):
        """``t`` filled in place with ``values`` (PyTorch's draws, as an array)."""
        return ng_random._fill_tensor(t, numgrad.tensor(values, dtype=t.dtype, device=t.device))

    def like(t):
        return _rt.empty(tuple(t.shape), dtype=rt_dtype(t.dtype))

    @bridged
    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        if a > b:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                               f"from={a} > to={b}")
        return fill(self, like(self).uniform_(a, b).numpy())

    @bridged
    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        return fill(self, like(self).normal_(mean, std).numpy())

    @bridged
    def init_uniform_(tensor, a=0.0, b=1.0, generator=None):
        return ng_init._fill(tensor, like(tensor).uniform_(a, b).numpy())

    @bridged
    def init_normal_(tensor, mean=0.0, std=1.0, generator=None):
        return ng_init._fill(tensor, like(tensor).normal_(mean, std).numpy())

    for name, fn in [("manual_seed", manual_seed), ("rand", rand), ("randn", randn),
                     ("randint", randint), ("rand_like", rand_like),
                     ("randn_like", randn_like)]:
        setattr(numgrad, name, fn)
        setattr(creation, name, fn)
    for name, fn in [("normal", normal), ("randperm", randperm)]:
        setattr(numgrad, name, fn)
        setattr(ng_random, name, fn)
    # The generator's state (``utils.checkpoint`` keeps it to replay a forward's draws): PyTorch's,
    # kept as PyTorch's ByteTensor, which only these functions read.
    @bridged
    def get_rng_state():
        return _rt.get_rng_state()

    @bridged
    def set_rng_state(new_state):
        _rt.set_rng_state(new_state)

    @contextlib.contextmanager
    def fork_rng(devices=None, enabled=True, *args, **kwargs):
        if not enabled:
            yield
            return
        state = get_rng_state()
        try:
            yield
        finally:
            set_rng_state(state)

    for name, fn in [("get_rng_state", get_rng_state), ("set_rng_state", set_rng_state),
                     ("fork_rng", fork_rng)]:
        setattr(numgrad, name, fn)
        setattr(ng_random, name, fn)
    numgrad.Tensor.uniform_ = uniform_
    numgrad.Tensor.normal_ = normal_
    ng_init.uniform_ = init_uniform_
    ng_init.normal_ = init_normal_

    class _Unbridged:
        """numgrad's own NumPy generator, replaced: a draw the bridge does not cover."""

        def __getattr__(self, name):
            raise RuntimeError(f"tests/programs/_bridge: numgrad drew random numbers with its own "
                               f"generator (np.random.Generator.{name}), a draw this bridge does "
                               f"not route to PyTorch's generator")

    creation._rng = _Unbridged()
    kernel_draw = ng_random._kernel_draw

    def philox_draw(generator, kernel, *args):
        if kernel not in ("philox_uniform", "philox_normal"):
            raise RuntimeError(f"tests/programs/_bridge: numgrad drew random numbers with its own "
                               f"generator ({kernel}), a draw this bridge does not route to "
                               f"PyTorch's generator")
        return kernel_draw(generator, kernel, *args)

    ng_random._kernel_draw = philox_draw


if _RUN == "numgrad":
    _install_bridge()
elif _RUN == "torch":
    import torch

    torch.manual_seed(0)
if _RUN in ("numgrad", "torch"):
    random.seed(0)
    np.random.seed(0)
