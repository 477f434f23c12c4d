"""CPU kernels (``numba.njit``, cached) and their array-level entry points."""
from .elementwise import (  # noqa: F401
    ADD, DIV, EQ, EXP, GE, GT, LE, LT, MAXIMUM, MINIMUM, NE, LOG, MUL, NEG, POW, RECIPROCAL, RELU, RELU_BWD, SIGMOID, SIGMOID_BWD, SQRT, SUB,
    TANH, TANH_BWD, RPOW, RSUB, binary, binary_into, unary,
)
from .reduction import sum_dims  # noqa: F401
