"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits,
lazily computed attributes, the standard normal draw."""
from __future__ import annotations

import functools
import numbers

import numpy as np

import numgrad
from numgrad.func._vmap import innermost
from numgrad.tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler–Mascheroni constant


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


def _physical(mask):
    """``mask`` itself, or inside ``vmap`` the whole batch's values (its physical tensor)."""
    if type(mask).__name__ == "BatchedTensor":
        return innermost(mask)
    return mask


def _is_all_true(mask) -> bool:
    """Whether every element of the boolean tensor ``mask`` is True; inside ``vmap``, over
    the whole batch (what argument validation needs there: it reads no single example's value
    to branch on)."""
    return bool(_physical(mask).all())


def _is_any_true(mask) -> bool:
    """Whether some element of ``mask`` is True, over the whole batch inside ``vmap`` (the
    samplers' rejection loops run until every example of every batch entry is accepted)."""
    return bool(_physical(mask).any())


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



def _batch_shape(values, param) -> numgrad.Size:
    """The batch shape of a distribution built from the parameters ``values``: ``()`` when
    every one is a Python number, else the size of ``param``, one of them broadcast."""
    if all(isinstance(v, numbers.Number) for v in values):
        return _size()
    return param.size()


def _expand_params(dist, cls, batch_shape, _instance, names=(), probs_or_logits=False):
    """PyTorch's ``expand`` for ``dist``, a ``cls``: a new instance (or ``_instance``, made by a
    subclass's ``expand``) whose parameters ``names`` are ``dist``'s expanded to
    ``batch_shape`` (views), and with ``probs_or_logits`` also whichever of ``probs`` and
    ``logits`` ``dist`` holds (see ``_ProbsOrLogits``); its batch shape is set without
    validation, and its validation flag is ``dist``'s."""
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = _size(batch_shape)
    for name in names:
        setattr(new, name, getattr(dist, name).expand(batch_shape))
    if probs_or_logits:
        if "probs" in dist.__dict__:
            new.probs = dist.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in dist.__dict__:
            new.logits = dist.logits.expand(batch_shape)
            new._param = new.logits
    super(cls, new).__init__(batch_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new


class _ProbsOrLogits:
    """What the distributions given a success probability ``probs`` or its log-odds ``logits``
    (exactly one) share: the other one computed on first use, ``_param`` (the one given: its
    dtype, device and shape are the distribution's), ``param_shape`` and ``_new``."""

    def _set_probs_or_logits(self, probs, logits, *others) -> list:
        """Stores the one of ``probs`` and ``logits`` given (PyTorch's ValueError unless
        exactly one is), broadcast with ``others`` (before it, whose tensors set the dtype of
        numbers), as ``self.probs`` or ``self.logits`` and as ``self._param``; returns
        ``others`` broadcast."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            *others, self.probs = broadcast_all(*others, probs)
            self._param = self.probs
        else:
            *others, self.logits = broadcast_all(*others, logits)
            self._param = self.logits
        return others

    def _set_count_and_probs_or_logits(self, total_count, probs, logits) -> None:
        """``_set_probs_or_logits``, with ``self.total_count`` broadcast with the parameter and
        of its dtype (Binomial's and NegativeBinomial's number of trials)."""
        (total_count,) = self._set_probs_or_logits(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()


class _OfCategorical:
    """What the distributions drawn through a Categorical (``self._categorical``: OneHotCategorical,
    Multinomial, ExpRelaxedCategorical) take from it: ``probs``, ``logits``, ``param_shape`` and
    ``_new``."""

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class _OfRelaxedBase:
    """What the relaxed distributions (a transform of ``base_dist``: RelaxedBernoulli,
    RelaxedOneHotCategorical) take from their base: ``temperature``, ``logits``, ``probs``."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


def _tril_positions(n: int, diag: int):
    """The (row, column) positions of the lower triangle below diagonal ``diag`` of an n x n
    matrix, row by row (as NumPy arrays)."""
    rows, cols = np.tril_indices(n, k=diag)
    return rows, cols


def tril_matrix_to_vec(mat, diag: int = 0):
    """The entries of the lower triangle (below diagonal ``diag``) of the last two dimensions,
    row by row, as the last dimension."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _tril_positions(n, diag)
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    index = numgrad.tensor((rows * n + cols).tolist(), dtype=numgrad.int64, device=mat.device)
    return flat.index_select(-1, index)


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of ``tril_matrix_to_vec``: a (batch of) D x D lower-triangular matrices
    holding ``vec``'s entries row by row (zeros elsewhere)."""
    m = vec.shape[-1]
    # D is the positive root of D² + (1 + 2 diag) D - |diag| (diag + 1) - 2 m = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = numgrad.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    rows, cols = _tril_positions(n, diag)
    # a gather from [0, vec...]: position k of the triangle reads entry k + 1, the rest 0
    source = np.zeros(n * n, dtype=np.int64)
    source[rows * n + cols] = np.arange(1, len(rows) + 1)
    padded = numgrad.cat([vec.new_zeros(tuple(vec.shape[:-1]) + (1,)), vec], -1)
    index = numgrad.tensor(source.tolist(), dtype=numgrad.int64, device=vec.device)
    return padded.index_select(-1, index).reshape(tuple(vec.shape[:-1]) + (n, n))
