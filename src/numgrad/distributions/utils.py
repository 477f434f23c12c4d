"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits,
lazily computed attributes, the standard normal draw."""
from __future__ import annotations

import functools
import numbers

import numgrad
from numgrad.tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def _size(shape=()) -> numgrad.Size:
    return numgrad.Size(tuple(int(s) for s in shape))


def broadcast_all(*values):
    """``values`` (tensors and numbers) broadcast together as tensors: numbers become tensors of
    the first tensor's dtype and device (of the default dtype when none is a tensor)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        options = ({"dtype": numgrad.get_default_dtype()} if like is None
                   else {"dtype": like.dtype, "device": like.device})
        values = [v if isinstance(v, Tensor) else numgrad.tensor(v, **options) for v in values]
    return numgrad.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    """Standard normal values of ``shape`` from the default generator (PyTorch's draw: an
    empty tensor filled by ``normal_``)."""
    return numgrad.empty(tuple(shape), dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim: int):
    """``value`` summed over its ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: the sigmoid of each (``is_binary``) or the softmax over the
    last dimension."""
    if is_binary:
        return numgrad.sigmoid(logits)
    return numgrad.softmax(logits, dim=-1)


def clamp_probs(probs):
    """``probs`` clamped into [eps, 1 - eps] of their dtype."""
    eps = numgrad.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities: log-odds (``is_binary``) or the logs (a categorical's logits,
    defined up to a constant)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return numgrad.log(ps_clamped) - numgrad.log1p(-ps_clamped)
    return numgrad.log(ps_clamped)


class lazy_property:
    """An attribute computed on first access and stored on the instance (a distribution's
    ``probs`` from its ``logits`` and the reverse): a non-data descriptor."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with numgrad.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property is on the class: a property too (documentation tools see it)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)

