"""The recurrent layers, as PyTorch's: ``RNN`` (tanh or relu), ``LSTM`` (with ``proj_size``),
``GRU`` and the cells ``RNNCell``, ``LSTMCell``, ``GRUCell``.

PyTorch's parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``, ``weight_hr_l0``),
shapes, gate order (i, f, g, o for the LSTM; r, z, n for the GRU, whose ``b_hn`` sits inside
the reset product), initialisation (U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))),
``batch_first``, ``bidirectional``, dropout between layers, unbatched inputs, ``PackedSequence``
inputs and PyTorch's errors. Each step is composed from numgrad's ops (``addmm``, ``sigmoid``,
``tanh``, ``cat``): the input projection of every step (with both biases, but the GRU's
``b_hn``) is one matrix product per layer, direction and block of gates, the recurrent one an
``addmm`` per step and block."""
from __future__ import annotations

import math
import numbers
import warnings

from ...ops.recurrent import _project, _run_layers, _step, _weights
from ...creation import empty, zeros
from ...tensor import Tensor
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]


def _apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    return tensor.index_select(dim, permutation)


def _cell(mode: str, cell, input: Tensor, h: Tensor, c=None):
    """One step of a cell module (``RNNCell``, ``LSTMCell``, ``GRUCell``)."""
    w_ih_g, biases, w_hh_t, b_hn, _ = _weights(mode, cell.weight_ih, cell.weight_hh,
                                               cell.bias_ih, cell.bias_hh)
    return _step(mode, _project(input, w_ih_g, biases), h, c, w_hh_t, b_hn)


class RNNBase(Module):
    """The base of ``RNN``, ``LSTM`` and ``GRU``: parameters, checks and the layer loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}", UserWarning, stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(
                f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(
                f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_size = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gate_size is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size *= hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                params = [Parameter(empty((gate_size, layer_input), **kw)),
                          Parameter(empty((gate_size, real_hidden), **kw))]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    params += [Parameter(empty(gate_size, **kw)),
                               Parameter(empty(gate_size, **kw))]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    params.append(Parameter(empty((proj_size, hidden_size), **kw)))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, param in zip(names, params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters, one list per layer and direction, in PyTorch's order."""
        return [[getattr(self, w) for w in ws] for ws in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op, as PyTorch's off cuDNN (numgrad keeps each parameter on its own)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------------ checks
    def check_input(self, input: Tensor, batch_sizes) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes) -> tuple:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx: Tensor, expected: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(expected, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    # ------------------------------------------------------------------ the computation
    def _run(self, input: Tensor, batch_sizes, hx: Tensor, cx):
        """Every layer over a 3-D ``(T, B, I)`` input (``batch_sizes`` None) or the 2-D data of
        a packed sequence; returns ``(output, h_n, c_n)``."""
        weights = [{n.split("_l")[0]: getattr(self, n) for n in names}
                   for names in self._all_weights]
        return _run_layers(self.mode, input, batch_sizes, hx, cx, weights, self.num_layers,
                           self.bidirectional, self.dropout, self.training, self.batch_first)

    def _zeros(self, input, batch, size):
        num_directions = 2 if self.bidirectional else 1
        return zeros(self.num_layers * num_directions, batch, size, dtype=input.dtype,
                     device=input.device)

    def _forward_single(self, input, hx, name: str):
        """RNN and GRU's ``forward``: a single hidden state."""
        orig = input
        if isinstance(orig, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zeros(input, int(batch_sizes[0]), self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                if name == "RNN":
                    raise ValueError(
                        f"RNN: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(
                            "For unbatched 2-D input, hx should also be 2-D but got "
                            f"{hx.dim()}-D tensor")
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(
                    f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            sorted_indices = unsorted_indices = None
            if hx is None:
                batch = input.size(0) if self.batch_first else input.size(1)
                hx = self._zeros(input, batch, self.hidden_size)
        self.check_forward_args(input, hx, batch_sizes)
        output, hidden, _ = self._run(input, batch_sizes, hx, None)
        if isinstance(orig, PackedSequence):
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNN(RNNBase):
    """An Elman RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu):
    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)``
    returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def __setattr__(self, name, value):
        if name == "nonlinearity" and "_parameters" not in self.__dict__:
            object.__setattr__(self, name, value)  # set before Module.__init__, as PyTorch
            return
        super().__setattr__(name, value)

    def forward(self, input, hx=None):
        return self._forward_single(input, hx, "RNN")


class GRU(RNNBase):
    """A gated recurrent unit RNN (gates r, z, n; ``b_hn`` inside the reset product):
    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)``; ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single(input, hx, "GRU")


class LSTM(RNNBase):
    """A long short-term memory RNN (gates i, f, g, o; with ``proj_size`` > 0 the hidden state
    is projected by ``weight_hr``): ``LSTM(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, proj_size=0)``;
    ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes) -> tuple:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        orig = input
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(orig, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            batch = int(batch_sizes[0])
            if hx is None:
                hx = (self._zeros(input, batch, real_hidden),
                      self._zeros(input, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, batch_sizes)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            batch = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = (self._zeros(input, batch, real_hidden),
                      self._zeros(input, batch, self.hidden_size))
                self.check_forward_args(input, hx, batch_sizes)
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError(
                            "For batched 3-D input, hx and cx should also be 3-D but got "
                            f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError(
                            "For unbatched 2-D input, hx and cx should also be 2-D but got "
                            f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
                self.check_forward_args(input, hx, batch_sizes)
        output, h, c = self._run(input, batch_sizes, hx[0], hx[1])
        hidden = (h, c)
        if isinstance(orig, PackedSequence):
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)


# ------------------------------------------------------------------ cells
def _check_cell_input(input: Tensor, input_size: int) -> None:
    if input.size(1) != input_size:
        raise RuntimeError(
            f"input has inconsistent input_size: got {input.size(1)} expected {input_size}")


def _check_cell_hidden(input: Tensor, hx: Tensor, hidden_size: int, label) -> None:
    if input.size(0) != hx.size(0):
        raise RuntimeError(
            f"Input batch size {input.size(0)} doesn't match hidden{label} batch size "
            f"{hx.size(0)}")
    if hx.size(1) != hidden_size:
        raise RuntimeError(
            f"hidden{label} has inconsistent hidden_size: got {hx.size(1)}, expected "
            f"{hidden_size}")


class RNNCellBase(Module):
    """The base of the cells: ``weight_ih`` ``(chunks * hidden, input)``, ``weight_hh``
    ``(chunks * hidden, hidden)``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name: str, input: Tensor, hx, what: str = "hidden"):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        return input, hx, is_batched


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, hx, is_batched = self._prepare("RNNCell", input, hx)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        _check_cell_input(input, self.weight_ih.size(1))
        _check_cell_hidden(input, hx, self.weight_hh.size(1), 0)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        ret, _ = _cell(mode, self, input, hx)
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c') = cell(x, (h, c))``, gates i, f, g, o."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(
                f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(
                        f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D "
                        "instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (z, z)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        _check_cell_input(input, self.weight_ih.size(1))
        _check_cell_hidden(input, hx[0], self.weight_hh.size(1), 0)
        _check_cell_hidden(input, hx[1], self.weight_hh.size(1), 1)
        h, c = _cell("LSTM", self, input, hx[0], hx[1])
        if not is_batched:
            return h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step: ``h' = cell(x, h)``, gates r, z, n."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, hx, is_batched = self._prepare("GRUCell", input, hx)
        _check_cell_input(input, self.weight_ih.size(1))
        _check_cell_hidden(input, hx, self.weight_hh.size(1), 0)
        ret, _ = _cell("GRU", self, input, hx)
        return ret if is_batched else ret.squeeze(0)
