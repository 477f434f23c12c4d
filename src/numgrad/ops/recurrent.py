"""The LSTM layer as one node, as PyTorch's CPU path runs it (oneDNN's ``mkldnn_rnn_layer``,
``MkldnnRnnLayerBackward0``): the recurrence over a whole sequence is one kernel each way
(``K.rnn.lstm_forward``/``lstm_backward``: a matrix product and one pass over the gates per
step), not a dozen ops and their nodes per step. ``nn.LSTM`` takes it for a CPU float32 sequence
without projections or packing, where PyTorch takes oneDNN's (float64 runs the loop of ops, whose
nodes PyTorch's float64 LSTM has too); the input projection stays ``linear``.

The node's output is ``(T + 1, B, H)``: the steps' hidden states, then the last cell state (so
one node gives the output, ``h_n`` and ``c_n``, each a view of it). The backward recorded for a
second derivative (``create_graph=True``) is the same formula in differentiable ops.

Below it, the layers themselves (``_run_layers``: every layer, direction and step of ``RNN``,
``LSTM`` and ``GRU``, composed from numgrad's ops), which both ``nn.modules.rnn`` and the
functional forms here (``torch.lstm``, ``torch.gru`` ...) run.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import ops
from .._dtype import torch_name
from ..autograd import grad_mode
from ..tensor import Tensor
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, kernels_of, register


def _lstm_sample(m, gx, h, c, w_hh):
    """The op on numgrad; on PyTorch, its LSTM over ``gx`` with an identity input projection
    and no biases (the same recurrence)."""
    if hasattr(m.ops, "recurrent"):
        out, h_n, c_n = m.ops.recurrent.lstm_layer(gx, h, c, w_hh)
    else:
        eye = m.eye(gx.shape[-1], dtype=gx.dtype)
        out, h_n, c_n = m.lstm(gx, (h[None], c[None]), (eye, w_hh), False, 1, 0.0, True, False,
                               False)
        h_n, c_n = h_n[0], c_n[0]
    return m.cat([out.flatten(), h_n.flatten(), c_n.flatten()])


@register
class LstmLayer(Op):
    """``(gx, h0, c0, w_hh)`` -> the stacked ``h_1 .. h_T, c_T`` of an LSTM layer whose steps'
    input projections (both biases added) are ``gx`` (T, B, 4H); ``workspace`` (a list, empty
    until the forward) gets the gates' activations and the cell states, which the backward
    reads."""

    name, node = "lstm_layer", "MkldnnRnnLayerBackward0"
    jvp = _jvp.transposed_backward
    # (``lstm_layer`` gives CUDA tensors to the layer's ops, which run there: the node itself
    # sees CPU arrays only)
    on_cuda = True
    save_inputs = (0, 1, 2, 3)
    save_output = True
    samples = (
        Sample(_lstm_sample, ((3, 2, 8), (2, 2), (2, 2), (8, 2))),
    )

    @staticmethod
    def forward(K, gx, h0, c0, w_hh, *, workspace):
        y, acts, cs = K.rnn.lstm_forward(gx, h0, c0, w_hh)
        workspace.append((acts, cs))
        return y

    @staticmethod
    def backward(ctx, grad):
        gx, h0, c0, w_hh, y = ctx.saved_tensors
        if grad_mode.state.enabled:  # (create_graph: the formula in differentiable ops)
            grads = _backward_in_ops(grad, gx, h0, c0, w_hh)
        else:
            acts, cs = ctx.params["workspace"][0]
            K = kernels_of(grad._data)
            grads = tuple(Tensor._wrap(a) for a in K.rnn.lstm_backward(
                grad._data, acts, cs, y._data, h0._data, c0._data, w_hh._data))
        return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))


def _forward_in_ops(gx: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor) -> tuple:
    """The recurrence in numgrad's ops (Tensor's methods, which vmap's batched tensors take
    too): each step's gates ``(i, f, g, o)``, the cell states, and the hidden states from
    ``h0`` on."""
    w_t = w_hh.t()
    h, c = h0, c0
    gates, cells, hs = [], [], [h0]
    for t in range(gx.shape[0]):
        i, f, g, o = (gx[t] + h.mm(w_t)).chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        gates.append((i, f, g, o))
        cells.append(c)
        hs.append(h)
    return gates, cells, hs


def _backward_in_ops(grad: Tensor, gx: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor) -> tuple:
    """``lstm_backward`` in numgrad's ops (differentiable): the forward's gates again, then the
    steps in reverse."""
    steps = gx.shape[0]
    gates, cells, hs = _forward_in_ops(gx, h0, c0, w_hh)
    dh_rec = None
    dc = grad[steps]
    dgates = [None] * steps
    for t in range(steps - 1, -1, -1):
        i, f, g, o = gates[t]
        tc = ops.tanh(cells[t])
        dh = grad[t] if dh_rec is None else grad[t] + dh_rec
        dc = dc + dh * o * (1 - tc * tc)
        c_prev = cells[t - 1] if t else c0
        dgates[t] = ops.cat([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * (1 - g * g), dh * tc * o * (1 - o)], 1)
        dh_rec = ops.mm(dgates[t], w_hh)
        dc = dc * f
    dgx = ops.stack(dgates, 0)
    hidden, gate_size = h0.shape[-1], gx.shape[-1]
    h_prev = ops.stack(hs[:steps], 0)
    dw = ops.mm(dgx.reshape(-1, gate_size).t(), h_prev.reshape(-1, hidden))
    return dgx, dh_rec, dc, dw


def _check(gx: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor) -> None:
    """PyTorch's errors for what its LSTM refuses: integer or bool tensors (its messages), a
    0-d one (an IndexError, as reading its last size), other shapes, and no steps."""
    dtype = gx.dtype  # (not its array: a vmap's batched tensor has none to read)
    if dtype.name == "bool":
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    if not dtype.is_floating_point:
        raise RuntimeError("result type Float can't be cast to the desired output type "
                           f"{torch_name(np.dtype(dtype.name))}")
    gates = (gx.shape[-1], h0.shape[-1], c0.shape[-1], w_hh.shape[-1])
    if gx.ndim != 3 or h0.ndim != 2 or c0.ndim != 2 or w_hh.ndim != 2 or \
            tuple(w_hh.shape) != (gates[0], gates[1]) or gates[0] != 4 * gates[1] or \
            tuple(h0.shape) != tuple(c0.shape) or h0.shape[0] != gx.shape[1]:
        raise RuntimeError(f"lstm_layer: expected gx (T, B, 4H), h0 and c0 (B, H) and w_hh "
                           f"(4H, H), got {list(gx.shape)}, {list(h0.shape)}, "
                           f"{list(c0.shape)} and {list(w_hh.shape)}")
    if gx.shape[0] == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")


def lstm_layer(gx: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor) -> tuple:
    """One LSTM layer's recurrence (``LstmLayer``): ``(output (T, B, H), h_n, c_n)``. Under
    vmap, and on CUDA (whose kernels have no LSTM layer yet), its ops (whose batching rules
    merge the examples into their kernels)."""
    _check(gx, h0, c0, w_hh)
    vmap = sys.modules.get("numgrad.func._vmap")
    if vmap is not None and vmap._levels or not isinstance(gx._data, np.ndarray):
        # (``stack``'s public form: batched tensors')
        _, cells, hs = _forward_in_ops(gx, h0, c0, w_hh)
        return sys.modules["numgrad"].stack(hs[1:], 0), hs[-1], cells[-1]
    y = apply(LstmLayer, (gx, h0, c0, w_hh), (gx._data, h0._data, c0._data, w_hh._data),
              workspace=[])
    steps = gx.shape[0]
    return y[:steps], y[steps - 1], y[steps]


# ------------------------------------------------------- the layers: one step of each cell
def _nn_functional():
    """``numgrad.nn.functional``, whose dispatching ``linear`` and ``dropout`` the layers call
    (vmap's rules and ``__torch_function__`` modes meet them there), read at call time: it
    imports this package."""
    from ..nn import functional

    return functional


# The blocks each weight is used in: the LSTM's four gates as one block (one addmm and one
# sigmoid a step: fewer ops than four), the GRU's three (its n gate differs).
_BLOCKS = {"LSTM": 1, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _weights(mode: str, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    """The blocks of a layer's weights (row blocks of ``weight_ih`` and ``weight_hh``;
    ``weight_hh``'s transposed for the step's ``addmm``): ``(w_ih_blocks, input_biases,
    w_hh_t_blocks, b_hn, w_hr_t)``. The input biases hold ``b_ih + b_hh`` (added once, not at
    every step), but for the GRU's n gate, whose ``b_hn`` stays inside the reset product."""
    n = _BLOCKS[mode]
    w_ih_g = w_ih.chunk(n, 0) if n > 1 else (w_ih,)
    w_hh_t = tuple(w.t() for w in (w_hh.chunk(n, 0) if n > 1 else (w_hh,)))
    b_i = b_ih.chunk(n, 0) if b_ih is not None and n > 1 else (b_ih,) * n
    b_h = b_hh.chunk(n, 0) if b_hh is not None and n > 1 else (b_hh,) * n
    biases = []
    for k in range(n):
        if (mode == "GRU" and k == 2) or b_h[k] is None:
            biases.append(b_i[k])
        else:
            biases.append(b_h[k] if b_i[k] is None else b_i[k] + b_h[k])
    b_hn = b_h[2] if mode == "GRU" else None
    return w_ih_g, biases, w_hh_t, b_hn, None if w_hr is None else w_hr.t()


def _project(x: Tensor, w_ih_g, biases) -> list:
    """Each block's input projection ``x W_ih_k^T + b_k``, for all steps at once."""
    return [_nn_functional().linear(x, w, b) for w, b in zip(w_ih_g, biases)]


def _step(mode: str, gi, h: Tensor, c, w_hh_t, b_hn=None, w_hr_t=None):
    """One step: ``gi`` holds this step's rows of each block's input projection, ``w_hh_t`` the
    blocks' transposed recurrent weights; returns ``(h', c')`` (``c'`` None but for the LSTM).
    Each block is one ``addmm``, then elementwise ops."""
    if mode in ("RNN_TANH", "RNN_RELU"):
        pre = ops.addmm(gi[0], h, w_hh_t[0])
        return (ops.tanh(pre) if mode == "RNN_TANH" else ops.relu(pre)), None
    if mode == "LSTM":
        # the activations of the gates' column blocks are contiguous, so the rest is too
        i, f, g, o = ops.addmm(gi[0], h, w_hh_t[0]).chunk(4, 1)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        h = ops.sigmoid(o) * ops.tanh(c)
        if w_hr_t is not None:
            h = ops.mm(h, w_hr_t)
        return h, c
    # GRU: r, z = sigmoid(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z}),
    # n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = n + z * (h - n)
    r = ops.sigmoid(ops.addmm(gi[0], h, w_hh_t[0]))
    z = ops.sigmoid(ops.addmm(gi[1], h, w_hh_t[1]))
    hn = ops.mm(h, w_hh_t[2]) if b_hn is None else ops.addmm(b_hn, h, w_hh_t[2])
    n = ops.tanh(gi[2] + r * hn)
    return n + z * (h - n), None


def _run_direction(mode, gis, batch_sizes, h0, c0, w_hh_t, b_hn, w_hr_t, reverse):
    """Runs one layer in one direction over the steps' input projections ``gis`` (step ``t``
    has ``batch_sizes[t]`` rows, decreasing, as in a packed sequence); returns the steps'
    outputs and the final ``(h, c)`` of every sequence of the batch."""
    steps = len(gis)
    outs = [None] * steps
    if not reverse:
        h, c = h0, c0
        done_h, done_c = [], []
        for t in range(steps):
            bs = batch_sizes[t]
            if h.shape[0] > bs:  # sequences bs.. ended at the previous step
                done_h.append(h[bs:])
                h = h[:bs]
                if c is not None:
                    done_c.append(c[bs:])
                    c = c[:bs]
            h, c = _step(mode, gis[t], h, c, w_hh_t, b_hn, w_hr_t)
            outs[t] = h
        if done_h:
            h = ops.cat([h] + done_h[::-1], 0)
            if c is not None:
                c = ops.cat([c] + done_c[::-1], 0)
        return outs, h, c
    h = h0[:batch_sizes[-1]]
    c = None if c0 is None else c0[:batch_sizes[-1]]
    for t in range(steps - 1, -1, -1):
        bs, have = batch_sizes[t], h.shape[0]
        if have < bs:  # sequences have.. start at this step
            h = ops.cat([h, h0[have:bs]], 0)
            if c is not None:
                c = ops.cat([c, c0[have:bs]], 0)
        h, c = _step(mode, gis[t], h, c, w_hh_t, b_hn, w_hr_t)
        outs[t] = h
    return outs, h, c


def _fused_lstm(data: Tensor, h0: Tensor, c0, params: dict) -> bool:
    """Whether a layer of an LSTM runs as one node (``LstmLayer``): CPU float32 tensors,
    no projection, as PyTorch's CPU LSTM takes oneDNN's layer (its float64 runs the loop of
    ops, whose nodes ours has too)."""
    if c0 is None or params.get("weight_hr") is not None:
        return False
    dtype = data._data.dtype
    return dtype.name == "float32" and all(
        isinstance(t._data, np.ndarray) and t._data.dtype == dtype  # (a trace's arrays too)
        for t in (data, h0, c0, params["weight_hh"]))


def _run_layers(mode: str, input: Tensor, batch_sizes, hx: Tensor, cx, weights: list,
                num_layers: int, bidirectional: bool, dropout: float, training: bool,
                batch_first: bool):
    """``RNNBase._run`` over ``weights`` (a dict of each layer and direction's parameters by
    PyTorch's names less the suffix: ``weight_ih``, ``weight_hh``, ``bias_ih`` ...)."""
    packed = batch_sizes is not None
    if packed:
        sizes = [int(b) for b in batch_sizes.tolist()]
        data = input
    else:
        if batch_first:
            input = input.transpose(0, 1)
        steps, batch = input.size(0), input.size(1)
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        sizes = [batch] * steps
        data = input.reshape(steps * batch, input.size(2))
    num_directions = 2 if bidirectional else 1
    h_n, c_n = [], []
    for layer in range(num_layers):
        results = []
        for direction in range(num_directions):
            k = layer * num_directions + direction
            params = weights[k]
            w_ih_g, biases, w_hh_t, b_hn, w_hr_t = _weights(
                mode, params["weight_ih"], params["weight_hh"], params.get("bias_ih"),
                params.get("bias_hh"), params.get("weight_hr"))
            c0 = None if cx is None else cx[k]
            if mode == "LSTM" and not packed and _fused_lstm(data, hx[k], c0, params):
                gx = _project(data, w_ih_g, biases)[0].reshape(
                    len(sizes), sizes[0], params["weight_hh"].shape[0])
                if direction == 1:
                    gx = gx.flip(0)
                out, h, c = lstm_layer(gx, hx[k], c0, params["weight_hh"])
                results.append(out.flip(0) if direction == 1 else out)
                h_n.append(h)
                c_n.append(c)
                continue
            gates = [gi.split(sizes, 0) if len(sizes) > 1 else [gi]
                     for gi in _project(data, w_ih_g, biases)]
            gis = list(zip(*gates))  # per step, each gate's rows
            outs, h, c = _run_direction(mode, gis, sizes, hx[k], c0, w_hh_t, b_hn, w_hr_t,
                                        reverse=direction == 1)
            # as PyTorch's CPU loop: the steps stacked (a packed sequence's rows
            # concatenated), the directions concatenated
            results.append(ops.cat(outs, 0) if packed else ops.stack(outs, 0))
            h_n.append(h)
            c_n.append(c)
        output = results[0] if len(results) == 1 else ops.cat(results, 1 if packed else 2)
        if dropout != 0 and training and layer < num_layers - 1:
            output = _nn_functional().dropout(output, dropout, True)
        data = output if packed else output.reshape(len(sizes) * sizes[0], output.size(2))
    if not packed and batch_first:
        output = output.transpose(0, 1)
    h_n = ops.stack(h_n, 0)
    c_n = ops.stack(c_n, 0) if cx is not None else None
    return output, h_n, c_n


# ---------------------------------------------------------------- torch.lstm, torch.gru ...
def _functional(mode: str, input, second, third, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first=False):
    """The recurrent layers as functions of a flat parameter list (PyTorch's ``torch.lstm``
    and family), in either of their forms: ``(input, hx, params, ..., batch_first)``, or the
    packed one ``(data, batch_sizes, hx, params, ...)``."""
    if isinstance(second if mode == "LSTM" else third, Tensor):  # (the packed form)
        batch_sizes, hx = second, third
    else:
        batch_sizes, hx = None, second
        params, has_biases, num_layers, dropout, train, bidirectional, batch_first = (
            third, params, has_biases, num_layers, dropout, train, bidirectional)
    per = 4 if has_biases else 2
    directions = 2 if bidirectional else 1
    params = list(params)
    projected = mode == "LSTM" and len(params) == num_layers * directions * (per + 1)
    if len(params) != num_layers * directions * (per + projected):
        raise RuntimeError(f"{mode.lower()}: expected {num_layers * directions * per} "
                           f"parameters, got {len(params)}")
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if has_biases else []) + \
        (["weight_hr"] if projected else [])
    weights = [dict(zip(names, params[k * len(names):(k + 1) * len(names)]))
               for k in range(num_layers * directions)]
    h0, c0 = (hx[0], hx[1]) if mode == "LSTM" else (hx, None)
    output, h_n, c_n = _run_layers(mode, input, batch_sizes, h0, c0, weights, num_layers,
                                   bidirectional, dropout, train, batch_first)
    return (output, h_n, c_n) if mode == "LSTM" else (output, h_n)


def _layer_function(mode: str, name: str, returns: str):
    def layer(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
              batch_first=False):
        return _functional(mode, input, hx, params, has_biases, num_layers, dropout, train,
                           bidirectional, batch_first)

    layer.__name__ = layer.__qualname__ = name
    layer.__doc__ = (f"``torch.{name}``: ``{returns}`` of the layers whose parameters are "
                     "``params`` (per layer and direction: ``w_ih, w_hh[, b_ih, b_hh]``"
                     + (", ``[w_hr]``; ``hx`` is ``(h_0, c_0)``" if mode == "LSTM" else "")
                     + "), or the packed form ``(data, batch_sizes, hx, params, ...)``.")
    return layer


lstm = export(_layer_function("LSTM", "lstm", "(output, h_n, c_n)"), "lstm")
gru = export(_layer_function("GRU", "gru", "(output, h_n)"), "gru")
rnn_tanh = export(_layer_function("RNN_TANH", "rnn_tanh", "(output, h_n)"), "rnn_tanh")
rnn_relu = export(_layer_function("RNN_RELU", "rnn_relu", "(output, h_n)"), "rnn_relu")
