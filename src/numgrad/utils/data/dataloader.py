"""``DataLoader``, ``default_collate`` and ``default_convert``, as PyTorch's
``torch.utils.data.dataloader``, loading in the main process only."""
from __future__ import annotations

import collections.abc
import copy
import re
import warnings
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import numpy as np

from ...tensor import Tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler
import numgrad

T_co = TypeVar("T_co", covariant=True)

_np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}"
)


def get_worker_info():
    """None: numgrad loads data in the main process, where PyTorch's answer is None too."""
    return


# ------------------------------------------------------------------------------------ collation
def _stack(batch, *, collate_fn_map=None):
    return numgrad.stack(batch, 0)


def _numpy_array(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))

    return collate([numgrad.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _numpy_scalar(batch, *, collate_fn_map=None):
    return numgrad.from_numpy(np.array(batch))


def _float(batch, *, collate_fn_map=None):
    return numgrad.tensor(batch, dtype=numgrad.float64)


def _int(batch, *, collate_fn_map=None):
    return numgrad.tensor(batch)


def _as_is(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict = {
    Tensor: _stack,
    np.ndarray: _numpy_array,
    (np.bool_, np.number, np.object_): _numpy_scalar,
    float: _float,
    int: _int,
    str: _as_is,
    bytes: _as_is,
}


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collates a list of samples by the type of the first, with ``collate_fn_map`` (type → function
    of ``(batch, *, collate_fn_map)``) for the leaves; mappings, named tuples and sequences are
    collated element by element (a tuple sample gives a list, as in PyTorch)."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        values = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                  for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(values)
                return clone
            return elem_type(values)
        except TypeError:
            return values
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        elem_size = len(elem)
        if not all(len(e) == elem_size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        collated = [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        if isinstance(elem, tuple):
            return collated
        return _same_sequence(elem, collated)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _same_sequence(original, items: list):
    """``items`` in a sequence of ``original``'s type, as PyTorch's collation rebuilds one: a
    mutable sequence is copied and filled in, others are built from the list; where the type
    cannot be built that way, the list itself."""
    try:
        if isinstance(original, collections.abc.MutableSequence):
            clone = copy.copy(original)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(original)(items)
    except TypeError:
        return items


def default_collate(batch):
    """PyTorch's default collation of a list of samples into a batch: tensors are stacked (a new
    first dimension), NumPy arrays and scalars become tensors and are stacked, Python floats
    become a float64 tensor and ints an int64 one (bools a bool one), strings stay a list, and
    dicts, named tuples, tuples and lists are collated field by field (a tuple gives a list)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """PyTorch's conversion of one sample when automatic batching is off (``batch_size=None``):
    NumPy arrays and scalars become tensors, containers are converted element by element."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if (elem_type.__name__ == "ndarray"
                and _np_str_obj_array_pattern.search(data.dtype.str) is not None):
            return data
        if isinstance(data, np.generic):
            return numgrad.from_numpy(np.array(data))
        return numgrad.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        values = {key: default_convert(data[key]) for key in data}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update(values)
                return clone
            return elem_type(values)
        except TypeError:
            return values
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence(data, [default_convert(d) for d in data])
    return data


# ---------------------------------------------------------------------------------- DataLoader
class _InfiniteConstantSampler:
    """The sampler of an iterable dataset: None forever (the dataset decides what comes)."""

    def __iter__(self):
        while True:
            yield None


_WORKERS_WARNING = (
    "numgrad's DataLoader loads data in the main process: num_workers={} runs as num_workers=0 "
    "(the same batches in the same order; worker_init_fn is not called)."
)


class DataLoader(Generic[T_co]):
    """Iterates over ``dataset`` in batches, as PyTorch's ``DataLoader`` (its arguments, defaults,
    checks and error messages).

    Each iteration draws the order afresh: with ``shuffle=True`` a new permutation every epoch,
    from ``generator`` if given (a numgrad ``Generator`` or a ``numpy.random.Generator``), else
    from numgrad's global generator, so that ``numgrad.manual_seed`` makes the batches the same
    run after run. (They are not the batches PyTorch draws for the same seed: the generators
    differ.)

    Loading is single-process: ``num_workers > 0`` is accepted so that PyTorch code runs as it
    is, and loads in the main process (same batches, same order) with a warning; ``worker_init_fn``
    is then never called and ``get_worker_info()`` is None. ``pin_memory``, ``timeout``,
    ``prefetch_factor``, ``persistent_workers``, ``multiprocessing_context`` and ``in_order`` are
    checked as PyTorch checks them and have no other effect.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to "
                "None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers > 0:
            warnings.warn(_WORKERS_WARNING.format(num_workers), UserWarning, stacklevel=2)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True

    def __setattr__(self, attr, val) -> None:
        if getattr(self, "_DataLoader__initialized", False) and attr in (
                "batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                "persistent_workers"):
            raise ValueError(
                f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _SingleProcessDataLoaderIter:
        return _SingleProcessDataLoaderIter(
            self, self._iterate_stream() if self._iterable else self._iterate_map())

    def _iterate_map(self):
        dataset, collate_fn = self.dataset, self.collate_fn
        if self._auto_collation:
            getitems = getattr(dataset, "__getitems__", None)
            for indices in self.batch_sampler:
                if getitems:
                    data = getitems(indices)
                else:
                    data = [dataset[i] for i in indices]
                yield collate_fn(data)
        else:
            for index in self.sampler:
                yield collate_fn(dataset[index])

    def _iterate_stream(self):
        it = iter(self.dataset)
        collate_fn = self.collate_fn
        if not self._auto_collation:
            for data in it:
                yield collate_fn(data)
            return
        for indices in self.batch_sampler:
            data = []
            for _ in indices:
                try:
                    data.append(next(it))
                except StopIteration:
                    break
            if not data or (self.drop_last and len(data) < len(indices)):
                return
            yield collate_fn(data)
            if len(data) < len(indices):
                return

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return (length + self.batch_size - 1) // self.batch_size
            return length
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter:
    """One pass over a ``DataLoader`` (``iter(loader)``): ``next()`` gives the next batch and
    ``len()`` the loader's length, as PyTorch's iterator."""

    def __init__(self, loader: DataLoader, batches: Iterator[Any]) -> None:
        self._loader = loader
        self._batches = batches
        self._num_yielded = 0

    def __iter__(self) -> _SingleProcessDataLoaderIter:
        return self

    def __next__(self) -> Any:
        batch = next(self._batches)
        self._num_yielded += 1
        return batch

    def __len__(self) -> int:
        return len(self._loader)
