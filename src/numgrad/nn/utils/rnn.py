"""``numgrad.nn.utils.rnn``: ``PackedSequence`` and the padding and packing helpers of PyTorch's
``torch.nn.utils.rnn`` (``pad_sequence``, ``pack_padded_sequence``, ``pad_packed_sequence``,
``pack_sequence``, ``unpad_sequence``, ``unpack_sequence``, ``invert_permutation``).

Packing is composed from numgrad's ops (slices, ``cat``, ``stack``, ``index_select``), so a
gradient flows back through a packed sequence to the padded tensor. As in PyTorch, the lengths
and ``batch_sizes`` are host (CPU) int64 tensors."""
from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import NamedTuple

from ... import ops
from ..._dtype import int64 as _int64
from ...creation import arange, as_tensor, empty_like, full
from ...tensor import Tensor
from ..._dtype import float64
from ..._dtype import float32
from ..._dtype import int32

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(PackedSequence_):
    """The time steps of a batch of variable-length sequences, packed: ``data`` holds, step
    after step, the rows of the sequences still running (``batch_sizes[t]`` of them, longest
    first); ``sorted_indices`` is the order the batch was sorted into (None if it was given
    sorted), ``unsorted_indices`` its inverse. Made by ``pack_padded_sequence`` and
    ``pack_sequence``; the recurrent modules take and return it."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should "
                    "never be created manually. They should be instantiated by functions like "
                    "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                    "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise AssertionError("Expected data to be a list or tuple of length 2")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """``data.to(...)``, the index tensors moved to ``data``'s device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return t.to(data.device)

        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, move),
                          _bind(self.unsorted_indices, move))

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self.to("cuda")

    def cpu(self, *args, **kwargs) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=float32)

    def long(self) -> PackedSequence:
        return self.to(dtype=_int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=int32)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation (``out[permutation[i]] = i``), or None for None."""
    if permutation is None:
        return None
    out = empty_like(permutation)
    return out.scatter_(0, permutation, arange(0, permutation.numel(),
                                               device=permutation.device))


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.to(_int64).cpu().tolist()]
    return [int(v) for v in lengths]


def _pack_padded(input: Tensor, lengths: list[int], batch_first: bool):
    """ATen's ``_pack_padded_sequence``: the packed data and ``batch_sizes`` of a padded
    ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) tensor whose lengths decrease."""
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if batch_first:
        input = input.transpose(0, 1)
    batch_size = input.size(1)
    if len(lengths) != batch_size:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
            f"(batch_size={batch_size})")
    if lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0")
    for a, b in itertools.pairwise(lengths):
        if b > a:
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    data = ops.cat([input[t, :bs] for t, bs in enumerate(batch_sizes)], 0)
    return data, as_tensor(batch_sizes, dtype=_int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch of sequences of the given ``lengths`` (a list or a CPU int64
    tensor): ``input`` is ``(T, B, *)``, or ``(B, T, *)`` with ``batch_first``; with
    ``enforce_sorted`` the lengths must decrease, else the batch is sorted first (and
    ``sorted_indices`` records it)."""
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=_int64, device="cpu")
    else:
        lengths = lengths.to(dtype=_int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = ops.sort(lengths, descending=True, stable=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, _lengths_list(lengths), batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pad_packed(data: Tensor, batch_sizes: list[int], batch_first: bool, padding_value: float,
                total_length: int):
    batch = batch_sizes[0]
    rest = tuple(data.shape[1:])
    rows = []
    for piece, bs in zip(data.split(batch_sizes, 0), batch_sizes):
        if bs < batch:
            piece = ops.cat([piece, full((batch - bs, *rest), padding_value, dtype=data.dtype,
                                         device=data.device)], 0)
        rows.append(piece)
    for _ in range(len(batch_sizes), total_length):
        rows.append(full((batch, *rest), padding_value, dtype=data.dtype, device=data.device))
    out = ops.stack(rows, 0)
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(batch)]
    return (out.transpose(0, 1) if batch_first else out), as_tensor(lengths, dtype=_int64)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """The inverse of ``pack_padded_sequence``: ``(padded, lengths)``, the padded tensor
    ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``; ``T`` is ``total_length`` if given) in
    the batch's original order, and the lengths as a CPU int64 tensor."""
    batch_sizes = _lengths_list(sequence.batch_sizes)
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}")
        max_seq_length = total_length
    padded, lengths = _pad_packed(sequence.data, batch_sizes, batch_first, padding_value,
                                  max_seq_length)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        return (padded.index_select(0 if batch_first else 1, unsorted),
                lengths[unsorted.cpu()])
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stacks sequences ``(L_i, *)`` of different lengths into ``(T, B, *)`` (``(B, T, *)``
    with ``batch_first``), padded with ``padding_value`` on the right (or the left)."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(  # noqa: TRY004  (PyTorch's type)
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}.")
    max_len = max(s.size(0) for s in sequences)
    rows = []
    for s in sequences:
        n = s.size(0)
        if n < max_len:
            pad = full((max_len - n, *s.shape[1:]), padding_value, dtype=s.dtype,
                       device=s.device)
            s = ops.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return ops.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False):
    """The list of sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of sequences ``(L_i, *)`` (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = as_tensor([v.size(0) for v in sequences], dtype=_int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence):
    """The list of sequences a ``PackedSequence`` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
