"""``gradcheck`` and ``gradgradcheck``: analytical gradients against central finite differences."""
from __future__ import annotations

import warnings

import numpy as np


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when an analytical and a numerical Jacobian disagree."""


def _outputs(func, inputs) -> tuple:
    from ..tensor import Tensor

    out = func(*inputs)
    return (out,) if isinstance(out, Tensor) else tuple(o for o in out if isinstance(o, Tensor))


def _numerical_jacobian(func, inputs, wrt, eps):
    """J[o][i] of shape (numel of input i, numel of output o), by central differences."""
    # Not under no_grad: the function may itself use autograd (as gradgradcheck's does).
    if True:
        base = _outputs(func, inputs)
        jac = [[np.zeros((inputs[i]._data.size, o._data.size)) for i in wrt] for o in base]
        for col, i in enumerate(wrt):
            flat = inputs[i]._data.reshape(-1)  # a view: perturbs the input in place
            for j in range(flat.size):
                orig = flat[j].item()
                flat[j] = orig + eps
                plus = [o._data.astype(np.float64).reshape(-1) for o in _outputs(func, inputs)]
                flat[j] = orig - eps
                minus = [o._data.astype(np.float64).reshape(-1) for o in _outputs(func, inputs)]
                flat[j] = orig
                for k in range(len(base)):
                    jac[k][col][j] = (plus[k] - minus[k]) / (2 * eps)
    return jac


def _analytical_jacobian(func, inputs, wrt):
    from . import grad
    from ..creation import zeros_like

    outs = _outputs(func, inputs)
    jac = [[np.zeros((inputs[i]._data.size, o._data.size)) for i in wrt] for o in outs]
    targets = [inputs[i] for i in wrt]
    for k, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for j in range(o._data.size):
            seed = zeros_like(o)
            seed._data.reshape(-1)[j] = 1
            grads = grad(o, targets, seed, retain_graph=True, allow_unused=True)
            for col, g in enumerate(grads):
                if g is not None:
                    jac[k][col][:, j] = g._data.astype(np.float64).reshape(-1)
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Checks the gradients that autograd computes for ``func(*inputs)`` against finite
    differences, for every input that requires grad. Use float64 inputs."""
    from ..tensor import Tensor

    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    for i in wrt:
        if inputs[i]._data.dtype != np.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. "
                "This check will likely fail if all the inputs are not of double precision "
                "floating point.", UserWarning, stacklevel=2)
    numerical = _numerical_jacobian(func, inputs, wrt, eps)
    analytical = _analytical_jacobian(func, inputs, wrt)
    for k, (num_rows, ana_rows) in enumerate(zip(numerical, analytical)):
        for col, (n, a) in enumerate(zip(num_rows, ana_rows)):
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=False):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {wrt[col]},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, **_ignored) -> bool:
    """Checks second derivatives: gradchecks the function ``(inputs, grad_outputs) -> the
    gradients of func(*inputs)``, computed with ``create_graph=True``."""
    from . import grad
    from ..random import randn
    from ..tensor import Tensor

    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            randn(o.shape, dtype=o.dtype, requires_grad=True) for o in outs if o.requires_grad
        )
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args):
        outs = [o for o in _outputs(func, args[:n]) if o.requires_grad]
        targets = [t for t in args[:n] if isinstance(t, Tensor) and t.requires_grad]
        grads = grad(outs, targets, args[n:], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
