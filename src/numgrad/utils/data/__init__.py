"""``numgrad.utils.data``: PyTorch's ``torch.utils.data`` for numgrad tensors.

Datasets (``Dataset``, ``IterableDataset``, ``TensorDataset``, ``ConcatDataset``,
``ChainDataset``, ``Subset``, ``random_split``), samplers (``Sampler``, ``SequentialSampler``,
``RandomSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler``, ``BatchSampler``) and ``DataLoader`` with
``default_collate`` / ``default_convert``, with PyTorch's names, defaults and error messages.

Loading is single-process: ``num_workers > 0`` is accepted (so PyTorch code runs unchanged) and
loads in the main process, giving the same batches in the same order (with a warning saying so).

Randomness (shuffling, ``random_split``) comes from numgrad's generator, so
``numgrad.manual_seed(s)`` (or a seeded ``generator=``) makes it reproducible run after run; the
permutations are not PyTorch's (the generators differ).
"""
from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
    "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info", "random_split",
]
