"""Type aliases for numgrad's annotations, for type checkers only (numgrad ships ``py.typed``).

The functions that factories make (``exp = _unary(Exp)``) carry one of these as their declared
type, so that mypy and pyright see ``numgrad.exp`` and ``Tensor.exp`` as taking and returning
``Tensor``. Modules import the aliases under ``typing.TYPE_CHECKING`` only: nothing here runs
when numgrad is imported.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from typing import TypeAlias

    from .tensor import Tensor

    Number: TypeAlias = "int | float | bool"
    # input -> result (exp, tanh, relu ...)
    UnaryOp: TypeAlias = Callable[[Tensor], Tensor]
    # (input, other) -> result, either side a tensor or a Python number (eq, bitwise_and ...)
    BinaryOp: TypeAlias = Callable[["Tensor | Number", "Tensor | Number"], Tensor]
    # (input, other) -> result, both tensors (logaddexp, fmax ...)
    TensorBinaryOp: TypeAlias = Callable[[Tensor, Tensor], Tensor]
    # input.op_(other) -> input (add_, hypot_ ...)
    InplaceBinaryOp: TypeAlias = Callable[[Tensor, "Tensor | Number"], Tensor]
    # (grad, input) -> the gradient of the input (ATen's *_backward ops)
    BackwardOp: TypeAlias = Callable[[Tensor, Tensor], Tensor]
