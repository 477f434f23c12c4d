"""``DistributedSampler``: each process of a distributed job reads its own part of a dataset
(PyTorch's ``torch.utils.data.distributed``), in PyTorch's exact order: a shuffled epoch is the
permutation ``torch.randperm(len(dataset), generator=torch.Generator().manual_seed(seed +
epoch))`` gives (PyTorch's CPU generator, MT19937, reproduced here), so a job reads the same
samples on each rank as the PyTorch program would.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from .sampler import Sampler
from ... import _lazy

__all__ = ["DistributedSampler"]


def _torch_randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``: PyTorch's
    CPU generator is MT19937 seeded with the seed's low 32 bits (NumPy's legacy seeding does
    the same), and its ``randperm`` swaps ``r[i]`` with ``r[i + random() % (n - i)]`` for
    ``i = 0 .. n-2``. (That is PyTorch's way below 2**32 / 20 elements; above, its order differs
    from this one.)"""
    state = np.random.RandomState(seed & 0xFFFFFFFF).get_state()
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": state[1], "pos": state[2]}}
    steps = max(n - 1, 0)
    picks = (bits.random_raw(steps) % np.arange(n, n - steps, -1).astype(np.uint64)).tolist()
    order = list(range(n))
    for i, pick in enumerate(picks):
        j = i + pick
        order[i], order[j] = order[j], order[i]
    return order


class DistributedSampler(Sampler[int]):
    """Restricts loading to a ``1 / num_replicas`` share of the dataset: rank ``r`` reads the
    indices ``r, r + num_replicas, ...`` of the (shuffled, padded) index list. Call
    ``set_epoch(epoch)`` before each epoch for a new shuffle; ``drop_last`` drops the tail
    instead of padding with indices from the start."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            dist = _lazy.module("distributed")
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            # (drop the tail so that every rank gets the same number of whole samples)
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        indices = _torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch: with ``shuffle=True`` each epoch has its own order, the same on
        every rank."""
        self.epoch = epoch
