"""The ops, one file per family; each op is declared once (see ``registry``)."""
from ..kernels import cpu as _cpu
from .convert import clone, contiguous, to  # noqa: F401
from .elementwise import (  # noqa: F401
    add, clamp, clip, div, eq, exp, ge, gt, le, log, lt, maximum, minimum, ne, mul, neg, pow, reciprocal, relu, rsub, sigmoid, sigmoid_backward, sqrt,
    sub, tanh, tanh_backward, threshold_backward,
)
from .inplace import add_, clamp_, copy_, div_, fill_, mul_, sub_, zero_  # noqa: F401
from .linalg import dot, matmul, mm, mv  # noqa: F401
from .reduction import mean, norm, sum  # noqa: F401
from .registry import REGISTRY, Op, Sample, apply, register  # noqa: F401
from .shape import (  # noqa: F401
    expand, expand_as, flatten, permute, reshape, squeeze, t, transpose, unsqueeze, view,
)


def accumulate_into(dst, src) -> None:
    """``dst += src`` on arrays, in place (gradient accumulation)."""
    _cpu.binary_into(_cpu.ADD, dst, src)
