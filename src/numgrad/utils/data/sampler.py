"""Samplers: which dataset indices a ``DataLoader`` reads, and in which order (PyTorch's
``torch.utils.data.sampler``).

The random ones draw from numgrad's generator: the global one (``numgrad.manual_seed``) unless a
``generator`` is given, which may be a numgrad ``Generator`` (where numgrad has one) or a NumPy
``numpy.random.Generator``. The same seed gives the same indices in every run; they are not the
indices PyTorch draws for that seed.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sized
from typing import Generic, TypeVar

import numpy as np
import numgrad

from ... import creation

T_co = TypeVar("T_co", covariant=True)


def _randperm(n: int, generator=None) -> list[int]:
    """A random permutation of ``range(n)`` as a list, drawn from ``generator`` (None: numgrad's
    global generator)."""
    if isinstance(generator, np.random.Generator):
        return generator.permutation(n).tolist()

    randperm = getattr(numgrad, "randperm", None)
    if randperm is not None:
        out = randperm(n) if generator is None else randperm(n, generator=generator)
        return out.tolist()
    if generator is None:  # (before numgrad.randperm: the generator behind numgrad.rand)
        return creation._rng.permutation(n).tolist()
    return _numpy_of(generator).permutation(n).tolist()


def _randint(high: int, size: int, generator=None) -> list[int]:
    """``size`` random integers in ``[0, high)`` as a list, drawn from ``generator``."""
    if isinstance(generator, np.random.Generator):
        return generator.integers(0, high, size=size).tolist()

    if generator is None:
        return numgrad.randint(0, high, (size,)).tolist()
    try:
        return numgrad.randint(0, high, (size,), generator=generator).tolist()
    except TypeError:  # (numgrad.randint without a generator argument)
        return _numpy_of(generator).integers(0, high, size=size).tolist()


def _numpy_of(generator) -> np.random.Generator:
    """The NumPy generator inside a generator object, or a TypeError."""
    for name in ("_rng", "_generator", "_np", "rng"):
        inner = getattr(generator, name, None)
        if isinstance(inner, np.random.Generator):
            return inner
    raise TypeError("generator must be a numgrad.Generator or a numpy.random.Generator, but got "
                    f"{type(generator).__name__}")


class Sampler(Generic[T_co]):
    """The base class of samplers: an iterable of dataset indices (or of lists of them)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """The indices ``0, 1, ..., len(data_source) - 1`` in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """The indices in a random order: a new permutation on every iteration (with
    ``replacement``, ``num_samples`` independent draws instead).

    Without ``generator`` the permutations come from numgrad's global generator (so
    ``numgrad.manual_seed`` fixes them); with one, from it. They are not PyTorch's permutations.
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.replacement:
            yield from _randint(n, self.num_samples, self.generator)
            return
        for _ in range(self.num_samples // n):
            yield from _randperm(n, self.generator)
        if self.num_samples % n:
            yield from _randperm(n, self.generator)[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order (a new one on every iteration)."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _randperm(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``[0, len(weights))`` drawn with probabilities proportional to
    ``weights`` (``numgrad.multinomial``), with or without replacement."""

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, but got "
                f"num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}")

        weights_tensor = numgrad.as_tensor(weights, dtype=numgrad.double)
        if len(weights_tensor.shape) != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        if isinstance(self.generator, np.random.Generator):
            p = self.weights.numpy()
            drawn = self.generator.choice(len(p), self.num_samples, self.replacement, p / p.sum())
            yield from drawn.tolist()
            return
        rand_tensor = numgrad.multinomial(self.weights, self.num_samples, self.replacement,
                                          generator=self.generator)
        yield from iter(rand_tensor.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Groups another sampler's indices into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
