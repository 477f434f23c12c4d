"""``numgrad.nn.utils``: gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``) and a
model's parameters as one vector (``parameters_to_vector``, ``vector_to_parameters``)."""
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters"]
from . import rnn  # noqa: F401  (PackedSequence, pad_sequence, pack_padded_sequence ...)

__all__ += ["rnn"]
