"""``autograd.functional``: Jacobians, Hessians and their products with vectors, for functions of
tensors, as ``torch.autograd.functional`` computes them, built on ``autograd.grad``.

Each function takes ``func`` and ``inputs`` (a tensor or a tuple of tensors) and returns results
nested as PyTorch's: a tuple where the inputs (or outputs) were a tuple, a bare tensor where not.
numgrad has no forward-mode AD, so ``jvp`` and ``hvp`` use the double-vjp trick (the gradient of
a vector-Jacobian product with respect to its vector is the Jacobian-vector product), as PyTorch's
do. ``vectorize`` is accepted and ignored: Jacobian rows are computed one ``grad`` call each.
"""
from __future__ import annotations

import numgrad

from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..tensor import Tensor
from ..creation import zeros_like
from .. import _lazy

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ------------------------------------------------------------------ helpers (PyTorch's, ported)
def _as_tuple(inp, arg_name: str, fn_name: str):
    """(whether ``inp`` was a tuple, ``inp`` as a tuple), checking that it holds tensors."""
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but {where} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Unwraps one-element tuples where the user gave bare tensors. ``to_unpack`` is one flag, or
    two (outer, inner) for nested results such as Jacobians."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool) -> tuple:
    """Inputs to differentiate with respect to: with ``create_graph``, views of those that require
    grad (so the result stays connected to them); otherwise detached copies of the reference."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view(tuple(inp.shape)))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph: bool) -> tuple:
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


def _check_requires_grad(inputs, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is thrice differentiable and that the hessian depends on the "
                "inputs."
            )
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example)."
            )
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode."
            )
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The outputs "
            "must be computed in a differentiable manner from the input when running in strict "
            "mode."
        )


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad (None for every input if none does),
    allowing unused inputs."""
    grad = numgrad.autograd.grad  # (read at the call: the public form, which dispatches)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph)


_ZEROS_STRICT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
                   "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it prevents "
                         "from using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros (shaped as ``refs``) for the gradients that are None, or strict mode's errors."""
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_ZEROS_STRICT[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        res += (grads_i,)
    return res


def _prepare(func, inputs, v, create_graph: bool, strict: bool, fn_name: str, v_like: str):
    """The shared start of vjp/jvp/vhp/hvp: inputs prepared, ``v`` checked (against the outputs
    or the inputs, per ``v_like``), outputs computed. Runs in grad mode."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    if v_like == "inputs":
        if v is not None:
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
    is_outputs_tuple, outputs = _as_tuple(
        func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if v_like == "outputs":
        if v is not None:
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs


def _single_element(is_outputs_tuple: bool, outputs, fn_name: str) -> None:
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )


# ------------------------------------------------------------------ the public functions
def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The dot product of a vector ``v`` with the Jacobian of ``func`` at ``inputs``.

    Returns ``(func_output, vjp)``; ``vjp`` has the inputs' shapes. ``v`` (shaped as the outputs)
    may be omitted when ``func`` returns a single element. With ``create_graph`` both are
    differentiable; with ``strict``, an input that no output depends on raises instead of
    getting zeros.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _prepare(
            func, inputs, v, create_graph, strict, "vjp", "outputs")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The product of the Jacobian of ``func`` at ``inputs`` with a vector ``v``.

    Returns ``(func_output, jvp)``; ``jvp`` has the outputs' shapes. ``v`` (shaped as the inputs)
    may be omitted when the input is a single element. Computed with the double-vjp trick: the
    vjp with a dummy vector ``u`` is linear in ``u``, and its gradient with respect to ``u`` in
    the direction ``v`` is ``J v``.
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _prepare(
            func, inputs, v, create_graph, strict, "jvp", "inputs")
        # backward is linear in grad_outputs: their values never reach the result (zeros are
        # merely free of inf and nan)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_outputs_tuple))


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``.

    For one input and one output, a tensor of shape ``output.shape + input.shape``; with a tuple
    of inputs and/or outputs, ``J[i][j]`` is the Jacobian of output ``i`` with respect to input
    ``j`` (an outer tuple over outputs, an inner one over inputs). With ``vectorize``, by
    ``numgrad.func``: ``jacrev``, or ``jacfwd`` for ``strategy="forward-mode"`` (which needs it).
    """
    stack, zeros_like = numgrad.stack, numgrad.zeros_like  # (the public forms: inside vmap
    # they reach its rules)

    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strict and vectorize:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
            "supported together. Please either set `strict=False` or `vectorize=False`.")
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(  # (PyTorch's message, its missing space included)
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
            "only implemented for `vectorize=True`.")
    if vectorize:
        return _vectorized_jacobian(func, inputs, create_graph, strategy)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        jac = ()
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)  # rows[k]: d out.flatten()[j] / d inputs[k], per j
            for j in range(out.numel()):
                seed = zeros_like(out).reshape(-1)  # the gradient of out.reshape(-1)[j]
                seed[j] = 1  # (by ops, not the array: under vmap each example has its seed)
                seed = seed.view(tuple(out.shape))
                vj = _autograd_grad((out,), inputs, (seed,), retain_graph=True,
                                    create_graph=create_graph)
                for k, (rows_k, vj_k, inp) in enumerate(zip(rows, vj, inputs)):
                    if vj_k is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {k}. This is not allowed in strict mode."
                            )
                        vj_k = zeros_like(inp)
                    elif strict and create_graph and not vj_k.requires_grad:
                        raise RuntimeError(
                            "The jacobian of the user-provided function is independent of input "
                            f"{i}. This is not allowed in strict mode when create_graph=True."
                        )
                    rows_k.append(vj_k)
            jac += (tuple(stack(rows_k, dim=0).view(tuple(out.shape) + tuple(inp.shape))
                          for rows_k, inp in zip(rows, inputs)),)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _vectorized_jacobian(func, inputs, create_graph: bool, strategy: str):
    """``jacobian(..., vectorize=True)``: ``numgrad.func.jacrev`` or ``jacfwd`` with respect
    to every input."""
    transforms = _lazy.module("func")

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple = []

        def outputs_of(*inp):
            is_tuple, outs = _as_tuple(func(*inp), "outputs of the user-provided function",
                                       "jacobian")
            is_outputs_tuple.append(is_tuple)
            return outs

        transform = transforms.jacfwd if strategy == "forward-mode" else transforms.jacrev
        jac = transform(outputs_of, argnums=tuple(range(len(inputs))))(*inputs)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple[0], is_inputs_tuple))


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its gradient.

    For one input, a tensor of shape ``input.shape + input.shape``; for a tuple of inputs,
    ``H[i][j]`` is the block for inputs ``i`` and ``j``. With ``vectorize``, the outer Jacobian
    is ``numgrad.func``'s (forward-over-reverse for ``outer_jacobian_strategy="forward-mode"``).
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The product of a vector ``v`` with the Hessian of the scalar function ``func`` at
    ``inputs``. Returns ``(func_output, vhp)``; ``vhp`` has the inputs' shapes."""
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _prepare(
            func, inputs, v, create_graph, strict, "vhp", "inputs")
        _single_element(is_outputs_tuple, outputs, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The product of the Hessian of the scalar function ``func`` at ``inputs`` with a vector
    ``v``, by the double-vjp trick. Returns ``(func_output, hvp)``; ``hvp`` has the inputs'
    shapes."""
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _prepare(
            func, inputs, v, create_graph, strict, "hvp", "inputs")
        _single_element(is_outputs_tuple, outputs, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))
