"""``ctc_loss``: the connectionist temporal classification loss, ``-log`` of the probability of
all alignments of each target (blanks between and around its labels, repeats merged) with the
input, by the forward (alpha) recursion in log space over time, every sequence of the batch at
once (its own input and target lengths masking the rest).

Composed of numgrad's ops (``logsumexp`` steps), so the gradient follows; to it is added, where
``t`` is within the input length, ``exp(log_probs)`` times the incoming gradient, as PyTorch's
ctc_loss_backward computes it (its gradient is the derivative through a ``log_softmax`` feeding
``log_probs``, which both then agree on).
"""
from __future__ import annotations

import math

from ..tensor import Tensor
import numgrad
from ..ops._names import export as _export


def _ng():
    return numgrad


def _lengths(v, device):
    ng = _ng()
    if isinstance(v, Tensor):
        return v.to(ng.int64)
    return ng.tensor([v] if isinstance(v, int) else list(v), dtype=ng.int64, device=device)


def _logsumexp0(x: Tensor) -> Tensor:
    """``logsumexp`` over dimension 0, -inf (with a zero gradient, not NaN) where every term
    is -inf."""
    ng = _ng()
    none = (x.detach() == -math.inf).all(0)
    return ng.where(none, -math.inf, ng.where(none.unsqueeze(0), 0.0, x).logsumexp(0))


@_export
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """``log_probs`` (T, N, C) (or (T, C)), ``targets`` (N, S) padded or 1-D concatenated;
    'mean' divides each loss by its target length, then averages."""
    ng = _ng()
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    dtype = lp.dtype
    lp = lp.to(ng.float64)  # (the recursion in float64: 50 steps of float32 drift otherwise)
    T, N, C = lp.shape
    in_len = _lengths(input_lengths, lp.device).reshape(N)
    tg_len = _lengths(target_lengths, lp.device).reshape(N)
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if bool((in_len > T).any()):
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{int(in_len.max())}")
    S = int(tg_len.max()) if N else 0
    if targets.ndim == 1 and not unbatched or unbatched and targets.ndim == 1:
        starts = tg_len.cumsum(0) - tg_len
        pos = starts.unsqueeze(1) + ng.arange(max(S, 1), device=lp.device)
        pos = pos.clamp(max=max(targets.shape[0] - 1, 0))
        labels = targets[pos] if targets.numel() else ng.zeros((N, max(S, 1)), dtype=ng.int64)
    else:
        labels = targets.reshape(N, -1)[:, :max(S, 1)] if S else ng.zeros((N, 1),
                                                                           dtype=ng.int64)
    labels = labels.to(ng.int64)
    L = 2 * max(S, 1) + 1
    s = ng.arange(L, device=lp.device)
    ext = ng.where(s % 2 == 1, labels.gather(1, ((s - 1) // 2).clamp(0, labels.shape[1] - 1)
                                             .unsqueeze(0).expand(N, L)), blank)
    valid = s.unsqueeze(0) < (2 * tg_len + 1).unsqueeze(1)
    prev2 = ng.cat([ext[:, :1], ext[:, :1], ext[:, :-2]], 1)
    skip = (s.unsqueeze(0) >= 2) & (ext != blank) & (ext != prev2)
    neg = -math.inf
    emit = lp.gather(2, ext.unsqueeze(0).expand(T, N, L))  # (T, N, L)
    alpha = ng.where((s < 2).unsqueeze(0) & valid, emit[0], neg)
    for t in range(1, T):
        a1 = ng.cat([alpha.new_full((N, 1), neg), alpha[:, :-1]], 1)
        a2 = ng.cat([alpha.new_full((N, 2), neg), alpha[:, :-2]], 1)
        a2 = ng.where(skip, a2, neg)
        step = _logsumexp0(ng.stack([alpha, a1, a2])) + emit[t]
        step = ng.where(valid, step, neg)
        alpha = ng.where((t < in_len).unsqueeze(1), step, alpha)
    last = (2 * tg_len).unsqueeze(1)
    end = ng.stack([alpha.gather(1, last), alpha.gather(1, (last - 1).clamp(min=0))]).squeeze(2)
    end = ng.where(ng.stack([tg_len >= 0, tg_len > 0]), end, neg)
    loss = -_logsumexp0(end)
    # (PyTorch's backward: exp(log_probs) more, within each input's length)
    inside = (ng.arange(T, device=lp.device).unsqueeze(1) < in_len.unsqueeze(0)).to(lp.dtype)
    extra = ((lp - lp.detach()) * lp.detach().exp() * inside.unsqueeze(2)).sum((0, 2))
    loss = loss + extra
    if zero_infinity:
        loss = ng.where(loss.detach().isinf(), 0.0, loss)
    loss = loss.to(dtype)
    if reduction == "mean":
        return (loss / tg_len.clamp_min(1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    if reduction != "none":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return loss.squeeze(0) if unbatched else loss
