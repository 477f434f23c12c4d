"""Matrix products, through the kernel module's ``matmul`` (BLAS through NumPy on the CPU: no JIT
beats a tuned GEMM; a shared-memory tiled GEMM on CUDA) and ``dot``.

``mm``, ``bmm`` and ``mv`` carry ``trans_a``/``trans_b`` flags (False from the public functions):
their backward formulas (``grad @ b.T``, ``a.T @ grad``) are the same ops with flags flipped, so
the kernels read a transposed operand where it lies, on every device, and the formulas stay
closed under differentiation (second derivatives are again flagged products).
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import grad_mode
from .._dtype import c_name, torch_name
from ..tensor import Tensor
from ._names import export
from .elementwise import Mul, uniform_element
from . import _jvp
from .registry import Op, Sample, apply, kernels_of, register
from .complex import conj
from .shape import SqueezeInplace
from ._promote import broadcast_shapes
from .shape import UnsafeView
from .products import tensordot


def _mm(op, a: Tensor, b: Tensor, trans_a: bool, trans_b: bool) -> Tensor:
    return apply(op, (a, b), (a._data, b._data), trans_a=trans_a, trans_b=trans_b)


class _MatrixProduct(Op):
    """``op(a) @ op(b)`` (``mm`` and ``bmm``), ``op`` transposing the last two dimensions where
    the flags say."""

    jvp = _jvp.bilinear
    on_cuda = True
    complex_ok = True
    save_inputs = (0, 1)

    @staticmethod
    def forward(K, a, b, *, trans_a, trans_b):
        return K.matmul(a, b, trans_a, trans_b)

    @classmethod
    def backward(cls, ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return _product_backward(cls, a, b, grad, need_a, need_b, ctx.params["trans_a"],
                                 ctx.params["trans_b"])


def _product_backward(cls, a, b, grad, need_a, need_b, ta, tb):
    """The gradients of ``op(a) @ op(b)`` (``cls`` Mm or Bmm, which records them); of complex
    ones, the products with the conjugates (the conjugate Wirtinger derivative)."""
    grad_a = grad_b = None
    if grad._data.dtype.kind == "c":
        a, b = conj(a), conj(b)
    if cls is Mm and not grad_mode.state.enabled:
        c = uniform_element(grad._data)  # (a 2-D product's gradient)
        if c is not None:
            return _uniform_grad_backward(a._data, b._data, c, grad.shape, ta, tb, need_a, need_b)
    # As PyTorch's mm_mat1/mat2_backward, an unflagged 2-D operand stored column-major (a
    # transposed view, e.g. the weight.t() of F.linear) gets its gradient column-major too:
    # the transpose of a row-major product, so that the transpose back to the parameter is
    # contiguous and the engine adopts it as .grad without a copy.
    if need_a:  # d op(a) = grad @ op(b).T
        if ta:
            grad_a = _mm(cls, b, grad, tb, True)
        elif cls is Mm and _column_major(a._data):
            grad_a = _mm(cls, b, grad, tb, True).t()
        else:
            grad_a = _mm(cls, grad, b, False, not tb)
    if need_b:  # d op(b) = op(a).T @ grad
        if tb:
            grad_b = _mm(cls, grad, a, True, ta)
        elif cls is Mm and _column_major(b._data):
            grad_b = _mm(cls, grad, a, True, ta).t()
        else:
            grad_b = _mm(cls, a, grad, not ta, False)
    return grad_a, grad_b


def _uniform_grad_backward(a, b, c, shape, ta, tb, need_a, need_b):
    """Mm's backward when the output's gradient is ``c`` everywhere: ``grad @ op(b).T`` has every
    row equal to ``c`` times the row sums of ``op(b)``, and ``op(a).T @ grad`` every column equal to
    ``c`` times the column sums of ``op(a)``, so two reductions replace two matrix products
    (O(n^2) for O(n^3)). The results are broadcast views, which the engine makes contiguous when
    it stores them."""
    K = kernels_of(a)
    m, n = shape
    value = np.asarray(c)
    grad_a = grad_b = None
    if need_a:  # d op(a)[i, k] = c * sum_j op(b)[k, j]
        v = K.binary(K.MUL, K.sum_dims(b, (0,) if tb else (1,), False), value)
        d = K.broadcast_to(v, (m, v.shape[0]))
        grad_a = Tensor._wrap(d.T if ta else d)
    if need_b:  # d op(b)[k, j] = c * sum_i op(a)[i, k]
        u = K.binary(K.MUL, K.sum_dims(a, (1,) if ta else (0,), False), value)
        d = K.broadcast_to(u.reshape(u.shape[0], 1), (u.shape[0], n))
        grad_b = Tensor._wrap(d.T if tb else d)
    return grad_a, grad_b


def _column_major(x) -> bool:
    """Whether a 2-D array is stored column by column (and not also row by row)."""
    return x.strides[0] < x.strides[1] and x.shape[0] > 1 and x.shape[1] > 1


@register
class Mm(_MatrixProduct):
    name, node = "mm", "MmBackward0"
    samples = (
        Sample(lambda m, a, b: a @ b, ((3, 4), (4, 5))),
        Sample(lambda m, a, b: m.mm(a, b), ((2, 3), (3, 1))),
        Sample(lambda m, a, b: m.matmul(a, b), ((1, 3), (3, 2))),
    )



@register
class Addmm(Op):
    """``input + mat1 @ mat2`` (``beta = alpha = 1``), ``input`` broadcast to the product's shape:
    F.linear with a bias, as one node, as in PyTorch. The bias is added by the row-broadcast
    kernel; the products of the backward are Mm's (so are its second derivatives)."""

    name, node = "addmm", "AddmmBackward0"
    complex_ok = True
    jvp = _jvp.bilinear_with((1, 2), 0)
    on_cuda = True
    save_inputs = (1, 2)
    samples = (
        Sample(lambda m, c, a, b: m.addmm(c, a, b), ((5,), (3, 4), (4, 5))),
        Sample(lambda m, c, a, b: m.addmm(c, a, b), ((3, 5), (3, 4), (4, 5))),
        Sample(lambda m, c, a, b: m.addmm(c, a, b), ((1, 1), (2, 3), (3, 4))),
        Sample(lambda m, x, w, b: m.nn.functional.linear(x, w, b), ((3, 4), (5, 4), (5,))),
    )

    @staticmethod
    def forward(K, c, a, b, *, trans_a, trans_b):
        # A large product adds a bias row block by block (``K.matmul_add_row``: on the CPU, on
        # the thread that computed the block); else ``binary``, not ``binary_into`` the new
        # product: its broadcast of a bias over the rows is the threaded, vectorised kernel (in
        # place took 20 ms for 700 x 10,000), and compiled programs fuse it with what follows.
        fused = K.ROW_BIAS_FUSED_MACS
        if fused is not None and c.ndim == 1 and c.shape[0] > 1:
            macs = a.shape[0] * a.shape[1] * (b.shape[0] if trans_b else b.shape[1])
            if macs > fused:
                return K.matmul_add_row(a, b, c, trans_a, trans_b)
        return K.binary(K.ADD, K.matmul(a, b, trans_a, trans_b), c)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_c, need_a, need_b = ctx.needs_input_grad
        grad_a, grad_b = _product_backward(Mm, a, b, grad, need_a, need_b, ctx.params["trans_a"],
                                           ctx.params["trans_b"])
        return (grad if need_c else None), grad_a, grad_b  # (the engine sums grad to c's shape)


@register
class Mv(Op):
    name, node = "mv", "MvBackward0"
    complex_ok = True
    jvp = _jvp.bilinear
    on_cuda = True
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 0}
    samples = (Sample(lambda m, a, v: a @ v, ((3, 4), (4,))), Sample(lambda m, a, v: m.mv(a, v), ((2, 5), (5,))))

    @staticmethod
    def forward(K, a, v, *, trans_a):
        return K.matmul(a, v, trans_a)

    @staticmethod
    def backward(ctx, grad):
        a, v = ctx.saved_tensors
        need_a, need_v = ctx.needs_input_grad
        ta = ctx.params["trans_a"]
        if grad._data.dtype.kind == "c":  # (the conjugate Wirtinger derivative)
            a = None if a is None else conj(a)
            v = None if v is None else conj(v)
        grad_a = grad_v = None
        if need_a:  # the outer product grad v^T (v grad^T for a transposed a)
            grad_a = grad.reshape(grad.shape[0], 1) * v if not ta else v.reshape(v.shape[0], 1) * grad
        if need_v:  # op(a).T @ grad
            grad_v = apply(Mv, (a, grad), (a._data, grad._data), trans_a=not ta)
        return grad_a, grad_v


@register
class Dot(Op):
    name, node = "dot", "DotBackward0"
    complex_ok = True
    jvp = _jvp.bilinear
    on_cuda = True
    save_inputs = (0, 1)
    save_only_for = Mul.save_only_for
    samples = (Sample(lambda m, a, b: a @ b, ((4,), (4,))), Sample(lambda m, a, b: m.dot(a, b), ((6,), (6,))))

    @staticmethod
    def forward(K, a, b):
        return K.dot(a, b)

    backward = Mul.backward  # d(a·b) = (grad * b, grad * a), with a 0-d grad


@register
class Bmm(_MatrixProduct):
    name, node = "bmm", "BmmBackward0"
    samples = (
        Sample(lambda m, a, b: m.bmm(a, b), ((2, 3, 4), (2, 4, 5))),
        Sample(lambda m, a, b: a @ b, ((2, 3, 4), (2, 4, 5))),
        Sample(lambda m, a, b: m.matmul(a, b), ((2, 1, 3, 4), (3, 4, 2))),
        Sample(lambda m, a, b: a @ b, ((2, 3, 4), (4, 5))),
        Sample(lambda m, a, v: a @ v, ((2, 3, 4), (4,))),
        Sample(lambda m, v, b: v @ b, ((4,), (2, 4, 3))),
    )



def _refuse_bool(kernel: str, data, out_size: int, inner: int) -> None:
    """PyTorch's refusal of a bool product (``"addmm_impl_cpu_" not implemented for 'Bool'``,
    named after the kernel it reaches), which comes only where that kernel would run: a product
    with no output elements, or with an empty inner dimension (a fill with zeros), is made."""
    if data.dtype.kind == "b" and out_size and inner:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _check_float_pair(a: Tensor, b: Tensor, what: str):
    """PyTorch's error, in each product's words, for operands of two dtypes."""
    if a.dtype is not b.dtype:
        x, y = a._data.dtype, b._data.dtype
        if what == "mm":
            message = (f"expected m1 and m2 to have the same dtype, but got: {c_name(x)} != "
                       f"{c_name(y)}")
        elif what == "mv":
            message = (f"addmv input tensors must have the same dtype, but got {torch_name(y)}, "
                       f"{torch_name(x)}, and {torch_name(y)}")
        elif what == "dot":
            message = (f"dot : expected both vectors to have same dtype, but found "
                       f"{torch_name(x)} and {torch_name(y)}")
        else:  # (bmm)
            message = f"expected scalar type {torch_name(x)} but found {torch_name(y)}"
        raise RuntimeError(message)


def _matrices(mat1: Tensor, mat2: Tensor, first: str, dims: bool):
    """The arrays of two matrices that multiply, with PyTorch's errors (``mm`` names the first
    ``self``, ``addmm`` names it ``mat1`` and says the dimensions, ``dims``)."""
    a, b = mat1._data, mat2._data
    if a.ndim != 2 or b.ndim != 2:
        bad = a if a.ndim != 2 else b
        raise RuntimeError(f"{first if bad is a else 'mat2'} must be a matrix"
                           + (f", got {bad.ndim}-D tensor" if dims else ""))
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})"
        )
    _check_float_pair(mat1, mat2, "mm")
    return a, b


@export(method=True, out=True)
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product of two 2-D tensors."""
    a, b = _matrices(input, mat2, "self", False)
    if a.dtype.kind == "b":
        _refuse_bool("addmm_impl_cpu_", a, a.shape[0] * b.shape[1], a.shape[1])
    return apply(Mm, (input, mat2), (a, b), trans_a=False, trans_b=False)


@export(method=True)
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the product's shape."""
    for name, t in (("self", input), ("mat1", mat1)):  # (PyTorch's checks, in its order)
        if isinstance(t, Tensor) and isinstance(mat2, Tensor) and t.dtype is not mat2.dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got "
                               f"{torch_name(t._data.dtype)} and {torch_name(mat2._data.dtype)}")
    if beta != 1 or alpha != 1:
        product = mm(mat1, mat2)
        return (input * beta if beta != 1 else input) + (product * alpha if alpha != 1 else product)
    a, b = _matrices(mat1, mat2, "mat1", True)
    c = input._data
    target = (a.shape[0], b.shape[1])
    if a.dtype.kind == "b":
        if not a.shape[1] and target[0] * target[1]:
            # (PyTorch fills with beta * input, beta an integer: a result type its cast refuses)
            raise RuntimeError("result type Long can't be cast to the desired output type Bool")
        _refuse_bool("addmm_impl_cpu_", a, target[0] * target[1], a.shape[1])
    if c.ndim > 2:
        raise RuntimeError(
            f"expand(numgrad.{input.dtype.name}{{{list(c.shape)}}}, size={list(target)}): the "
            f"number of sizes provided (2) must be greater or equal to the number of dimensions "
            f"in the tensor ({c.ndim})"
        )
    for dim in (1, 0)[:c.ndim]:
        n = c.shape[dim - 2 + c.ndim]
        if n != target[dim] and n != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({target[dim]}) must match the existing size "
                f"({n}) at non-singleton dimension {dim}.  Target sizes: {list(target)}.  "
                f"Tensor sizes: {list(c.shape)}"
            )
    return apply(Addmm, (input, mat1, mat2), (c, a, b), trans_a=False, trans_b=False)


@export(method=True, out=True)
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    a, v = input._data, vec._data
    if a.ndim == 0:  # (PyTorch sizes the result by the matrix's first dimension first)
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec "
            f"({v.shape[0]})"
        )
    _check_float_pair(input, vec, "mv")
    if a.dtype.kind == "b":
        _refuse_bool("addmv_impl_cpu", a, a.shape[0], a.shape[1])
    return apply(Mv, (input, vec), (a, v), trans_a=False)


@export(method=True, out=True)
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The dot product of two 1-D tensors."""
    a, b = input._data, tensor._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors"
        )
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            "inconsistent tensor size, expected tensor [{0}] and src [{1}] to have the same number "
            "of elements, but got {0} and {1} elements respectively".format(a.shape[0], b.shape[0])
        )
    _check_float_pair(input, tensor, "dot")
    if a.dtype.kind == "b":
        _refuse_bool("dot", a, 1, 1)
    return apply(Dot, (input, tensor), (a, b))


@export(method=True, out=True)
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size."""
    a, b = input._data, mat2._data
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a.ndim != 3 else "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )
    if a.dtype.kind == "b":
        _refuse_bool("bmm", a, a.shape[0] * a.shape[1] * b.shape[2], a.shape[2])
    _check_float_pair(input, mat2, "bmm")
    return apply(Bmm, (input, mat2), (a, b), trans_a=False, trans_b=False)


def _batched(input: Tensor, other: Tensor) -> Tensor:
    """matmul with batch dimensions: broadcast them, fold them into one, ``bmm``, unfold."""
    vector_left = input._data.ndim == 1
    vector_right = other._data.ndim == 1
    if vector_left:
        input = input.unsqueeze(0)
    if vector_right:
        other = other.unsqueeze(1)
    (n, k), (k2, m) = input._data.shape[-2:], other._data.shape[-2:]
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    batch = _broadcast_batch(input._data.shape[:-2], other._data.shape[:-2])
    count = math.prod(batch)  # (not -1: with a size 0 among n, k, m it could not be inferred)
    if input._data.dtype.kind == "b":
        _refuse_bool_batched(input._data, other._data, vector_left, vector_right, count * n * m, k)
    a = input.expand(batch + (n, k)).reshape(count, n, k)
    b = other.expand(batch + (k, m)).reshape(count, k, m)
    out = bmm(a, b)
    shape = batch + ((n,) if not vector_left else ()) + ((m,) if not vector_right else ())
    return apply(UnsafeView, (out,), (out._data,), shape=shape)


def _refuse_bool_batched(a, b, vector_left: bool, vector_right: bool, out_size: int, k: int):
    """The refusal of a bool batched product, named as PyTorch's matmul names it: it folds the
    batch of the operand with more dimensions into rows (``mm``, or ``mv`` for a vector) where
    that needs no copy (``should_fold``: never for a matrix on the left, whose folded product
    would need a transpose), else it runs ``bmm``. (``a`` and ``b`` as given: ``a`` unsqueezed
    to a row, ``b`` to a column where they were vectors.)"""
    da = 1 if vector_left else a.ndim
    db = 1 if vector_right else b.ndim
    fold = False
    if da >= 3 and db <= 2:
        fold = _rows_fold(a.shape, a.strides)
    elif db >= 3 and da == 1:  # the transposed right operand folds
        n = b.ndim  # (device shapes refuse negative indices)
        shape = tuple(b.shape[:n - 2]) + (b.shape[n - 1], b.shape[n - 2])
        strides = tuple(b.strides[:n - 2]) + (b.strides[n - 1], b.strides[n - 2])
        fold = _rows_fold(shape, strides)
    if fold:
        vector = (db if da >= db else da) == 1
        _refuse_bool("addmv_impl_cpu" if vector else "addmm_impl_cpu_", a, out_size, k)
    _refuse_bool("bmm", a, out_size, k)


def _rows_fold(shape: tuple, strides: tuple) -> bool:
    """Whether the leading dimensions of an array of ``shape`` and ``strides`` fold into its
    rows without a copy (PyTorch's test; an empty array always folds)."""
    if math.prod(shape) == 0:
        return True
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _broadcast_batch(a: tuple, b: tuple) -> tuple:
    return tuple(broadcast_shapes(a, b))


@export(method=True, out=True)
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product, by the dimensions of the operands as PyTorch: dot, mv, mm, and a 1-D
    left operand as a row vector."""
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 1 and db == 2:
        out = mm(input.unsqueeze(0), other)
        return apply(SqueezeInplace, (out,), (out._data,), dim=0)
    if da == 2 and db == 2:
        return mm(input, other)
    if da >= 3 and _should_fold(input, other):
        return _folded(input, other)
    return _batched(input, other)


def _should_fold(input: Tensor, other: Tensor) -> bool:
    """PyTorch's ``should_fold`` for a left operand of 3 or more dimensions: a right one of 1 or
    2 dimensions multiplies the left one's batch folded into rows (one ``mm`` or ``mv``: a
    ``Linear`` of a sequence is one GEMM, not a batch of them against copies of the weight),
    where the right one requires grad (its gradient is then one product, not a batch of them
    summed) or the fold makes no copy."""
    if other._data.ndim > 2:
        return False
    return other.requires_grad or _rows_fold(input._data.shape, input._data.strides)


def _folded(input: Tensor, other: Tensor) -> Tensor:
    """``input @ other`` with ``input``'s leading dimensions folded into rows (``_should_fold``),
    viewed back as PyTorch's ``_unsafe_view`` of the product."""
    shape = tuple(input._data.shape)  # (a device array's shape refuses negative indices)
    lead, k = shape[:len(shape) - 1], shape[len(shape) - 1]
    folded = input.reshape(math.prod(lead), k)
    if other._data.ndim == 2:
        out, shape = mm(folded, other), lead + (tuple(other._data.shape)[1],)
    else:
        out, shape = mv(folded, other), lead
    return apply(UnsafeView, (out,), (out._data,), shape=shape)

@export(method=True)
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors, the first conjugated (of real ones, ``dot``)."""
    return dot(conj(input), other)


@export(method=True)
def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum of products over the last dimension of both (a 0-d operand multiplies)."""
    if not input.ndim or not other.ndim:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")

    return tensordot(input, other, dims=([-1], [-1]))


def _scalar_as(value, t: Tensor):
    """``alpha``/``beta`` in ``t``'s dtype, as ATen converts them (0.6 is 0 for an integer
    tensor, 3 is True for a bool one)."""
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return value
    return bool(value) if t.dtype.name == "bool" else int(value)


@export(method=True)
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` (``input`` broadcast; ignored, NaN
    included, when ``beta`` is 0)."""
    for name, t in (("vec1", vec1), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"{name} must be 1-dimensional, but got {t.ndim}-D")
    product = vec1.reshape(-1, 1) * vec2
    beta, alpha = _scalar_as(beta, input), _scalar_as(alpha, input)
    if input.dtype.name == "bool":  # (``beta and input or alpha and product``, as ATen's)
        return (input & beta) | (product & alpha)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        broadcast_shapes(tuple(input.shape), tuple(product.shape))  # (PyTorch's shape error)
        return product
    return (input * beta if beta != 1 else input) + product


@export(method=True)
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]`` (one matrix product of the
    batches laid side by side)."""
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    bs, n, k = batch1.shape
    if tuple(batch2.shape[:2]) != (bs, k):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{bs}, {k}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")
    beta, alpha = _scalar_as(beta, input), _scalar_as(alpha, input)
    a = batch1.permute(1, 0, 2).reshape(n, bs * k)
    b = batch2.reshape(bs * k, batch2.shape[2])
    return addmm(input, a, b, beta=beta, alpha=alpha)


@export(function=False, method=True)
def addmm_(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``addmm`` in place: ``input`` must have the product's shape (PyTorch's words else)."""
    from .inplace import _write

    if mat1.ndim == 2 and mat2.ndim == 2:
        target = [mat1.shape[0], mat2.shape[1]]
        if list(input.shape) != target:
            raise RuntimeError(f"Bad in-place call: input tensor size {list(input.shape)} and "
                               f"output tensor size {target} should match")
    return _write(input, addmm, mat1, mat2, beta=beta, alpha=alpha, saves_self=False)


@export(function=False, method=True)
def addbmm_(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``addbmm`` in place."""
    from .inplace import _write

    return _write(input, addbmm, batch1, batch2, beta=beta, alpha=alpha, saves_self=False)


@export(function=False, method=True)
def addr_(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``addr`` in place: ``input`` must be the outer product's matrix (PyTorch's words
    else)."""
    from .inplace import _write

    if input.ndim != 2:
        raise RuntimeError(f"2D tensor expected, got {input.ndim}D tensor for input")
    if vec1.ndim == 1 and vec2.ndim == 1 and tuple(input.shape) != (len(vec1), len(vec2)):
        raise RuntimeError(f"size mismatch, input: {list(input.shape)}, v1: {list(vec1.shape)}, "
                           f"v2: {list(vec2.shape)}")
    return _write(input, addr, vec1, vec2, beta=beta, alpha=alpha, saves_self=False)
