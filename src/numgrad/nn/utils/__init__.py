"""``numgrad.nn.utils``: gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``)."""
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm"]
from . import rnn  # noqa: E402,F401  (PackedSequence, pad_sequence, pack_padded_sequence ...)

__all__ += ["rnn"]
