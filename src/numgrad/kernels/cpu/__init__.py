"""CPU kernels (``numba.njit``, cached) and their array-level entry points.

Large kernels share their work among numgrad's own worker threads (``_workers``: Python threads
calling ``nogil`` kernels on parts), never Numba's ``parallel=True``, whose OpenMP threads spin
against BLAS's after each region; Numba's threading layer is left as the user has it."""
import importlib
import sys

from ..formulas import OP_CODES
from ._cache import light_cache
from .elementwise import *  # noqa: F401,F403  (entry points)
from .reduction import (  # noqa: F401
    any_equal, any_equal_device, arg_reduce_dims, extreme_share, finite_or_zero, inf_where_zero,
    one_hot_dim, product_of_others, reduce_dims, sum_dims,
)
from .linalg import ROW_BIAS_FUSED_MACS, dot, matmul, matmul_add_row  # noqa: F401
from .softmax import log_softmax_backward_last, log_softmax_last  # noqa: F401
from . import structure  # noqa: F401  (``K.structure``: tril/triu, diagonals, flip/roll)
from .indexing import index, index_add_flat, index_put, nonzero, unravel_index  # noqa: F401
from .layout import *  # noqa: F401,F403

globals().update(OP_CODES)  # K.EXP, K.ADD, K.MAX …
DEVICE = "cpu"  # the device type whose kernels these are


# Kernel modules of the less common ops, imported on first use (each njit dispatcher costs
# ~0.2 ms at import, and a fresh process should not pay for convolution to add two tensors):
# ``K.<module>`` for these modules, and ``K.<function>`` for these functions.
_LAZY_MODULES = ("loss", "conv", "pooling", "rnn", "optim")  # K.loss: the losses', K.conv,
# K.pooling (+ padding), K.rnn: the LSTM layer's, K.optim: the optimizers' fused steps
_LAZY_FUNCTIONS = {
    "cumprod_backward": "scan", "cumulative": "scan", "sort_dim": "sorting", "topk_dim": "sorting",
    "gather_dim": "gather", "index_select_dim": "gather", "scatter_dim": "gather",
    "mode_dim": "predicates", "nan_to_num": "predicates", "isclose": "predicates",
    "order_dim": "predicates",
    "cum_extreme": "scan", "logcumsumexp_dim": "scan",
    "search_sorted": "counting", "bincount": "counting", "histc": "counting",
    "batch_norm_stats": "normalization", "batch_norm_forward": "normalization",
    "batch_norm_backward": "normalization", "layer_norm_forward": "normalization",
    "layer_norm_backward": "normalization", "embedding_backward": "embedding",
    "embedding_forward": "embedding", "embedding_bag_forward": "embedding",
    "embedding_bag_backward": "embedding",
    "embedding_bag_per_sample_weights_backward": "embedding", "attention_forward": "attention",
    "attention_backward": "attention",
    "ldl_factor": "ldl", "ldl_solve": "ldl", "xor_rows": "hashing",
    "custom_call": "custom", "custom_call_into": "custom",  # (numgrad.library's custom ops)
}
_LAZY_FUNCTIONS.update({n: "complex" for n in (  # (K.complex_real ...; K.fft_c2c)
    "complex_real", "complex_imag", "complex_pairs", "complex_from_pairs", "complex_conj",
    "complex_abs", "complex_angle", "complex_from_parts", "linalg_eig")}, fft_c2c="fft")
_LAZY_FUNCTIONS.update({f"philox_{n}": "philox" for n in (  # (K.philox_uniform ...)
    "uniform", "normal", "integers", "permutation", "exponential", "bernoulli", "multinomial")})
_LAZY_FUNCTIONS.update({f"linalg_{n}": "decompositions" for n in (  # (K.linalg_det ...)
    "det", "det_backward", "slogdet", "inv", "solve", "cholesky", "eigh", "svd", "qr", "pinv",
    "lstsq")})


def __getattr__(name: str):
    module = name if name in _LAZY_MODULES else _LAZY_FUNCTIONS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(f"{__name__}.{module}")
    light_cache(loaded)
    value = loaded if module == name else getattr(loaded, name)
    globals()[name] = value
    return value


def _load_kernels_lightly() -> None:
    """Light cache loading for the dispatchers of this package's modules (all imported above)."""
    for name, module in list(sys.modules.items()):
        if name.startswith(__name__ + "."):
            light_cache(module)


_load_kernels_lightly()
