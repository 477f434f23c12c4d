"""The ops, one file per family; each op is declared once (see ``registry``).

Each family module lists its public functions in ``__all__`` and the names Tensor gets as methods
in ``METHODS``; a new family is one line in ``FAMILIES``.
"""

from . import convert, elementwise
from . import exponents_and_rounding, trigonometric, special_functions  # (log2; asin; erf ...)
from . import ternary, division, logical_bitwise, signs_and_extrema  # (lerp; fmod; bitwise_and)
from . import indexing, inplace, linalg, loss, reduction
from . import shape
from . import conv
from . import padding, pooling  # (pooling and padding, nn.functional's)
from . import einsum, gather, scan, sorting  # (scans, sorting, gather/scatter, einsum)
from . import structure  # (tril, diagonal, flip, roll, the *stack family ...)
from . import predicates  # (predicates, nan-aware and order reductions)
from . import data_dependent  # (nonzero, masked_select, unique: shapes from values)
from . import normalization  # noqa: F401  (batch_norm: NativeBatchNormBackward0)
from . import recurrent  # (the LSTM layer as one node; torch.lstm, gru, rnn_tanh ...)
from . import activation  # (the fused activations, nn.functional's)
from . import linalg_solve, linalg_decompositions  # (torch.linalg's; svd, qr ...)
from . import linalg_determinants, linalg_norms, linalg_compositions  # (det, norm ...)
from . import upsample  # (interpolate, pixel_shuffle: nn.functional's)
from . import index_views, index_writes, products  # (unbind; index_add; kron ...)
from . import counting, cumulative_extremes, utilities  # (bincount; cummax; diff)
# nn.functional's own ops (threshold, prelu, glu, native_group_norm ...): not a family (they are
# not numgrad.X nor Tensor methods), but registered with the others, so that REGISTRY (warmup, the
# profiler) holds them whether or not numgrad.nn, which numgrad imports on first use, is imported.
from . import nn_functional  # noqa: F401
from . import flat_index, linalg_derived, order_statistics, scatter_views
from . import aten, linalg_lu, native_normalization, scatter_reductions
from . import float_parts, integer_math  # (frexp, nextafter; gcd, lcm)
from . import finite_differences, histograms  # (gradient; histogram, histogramdd)
from . import incomplete_gamma, resize, strided  # (igamma; resize_; as_strided)
from . import grid_sample  # (grid_sampler_2d/3d)
from . import linalg_ldl  # noqa: F401  (linalg.ldl_factor, ldl_solve)
from . import hashing  # (hash_tensor)
from . import complex  # noqa: A004  (complex, polar, view_as_real, the parts of complex tensors)
from . import fourier  # noqa: F401  (the DFT along a dimension: numgrad.fft's primitive)
from . import spectral  # (stft)
# ATen's backward ops and other torch.ops.aten names that are not families' exports
from .activation import (  # noqa: F401
    elu_backward, gelu_backward, hardsigmoid_backward, hardswish_backward, hardtanh_backward,
    leaky_relu_backward, log_sigmoid_backward, mish_backward, silu_backward, softplus_backward,
)
from .aten import _safe_softmax, _softmax_backward_data  # noqa: F401
from .aten import native_dropout_backward, slice  # noqa: F401,A004
from .conv import convolution_backward  # noqa: F401
from .elementwise import sigmoid_backward, tanh_backward, threshold_backward  # noqa: F401
from .loss import nll_loss_backward  # noqa: F401
from .loss import (  # noqa: F401
    binary_cross_entropy_backward, huber_loss_backward, smooth_l1_loss_backward,
)
from .native_normalization import _batch_norm_with_update  # noqa: F401
from .padding import (  # noqa: F401
    reflection_pad1d_backward, reflection_pad2d_backward, replication_pad1d_backward,
    replication_pad2d_backward,
)
from .padding import reflection_pad3d_backward, replication_pad3d_backward  # noqa: F401
from .pooling import (  # noqa: F401
    _adaptive_avg_pool2d_backward, adaptive_max_pool2d_backward, avg_pool2d_backward,
    max_pool2d_with_indices_backward,
)
from .registry import REGISTRY, Op, Sample, apply, kernels_of, register  # noqa: F401
from .structure import diagonal_backward, unfold_backward  # noqa: F401
from .upsample import _upsample_bilinear2d_aa  # noqa: F401

# The families, in the order their names are bound (a later family's name wins).
FAMILIES = (
    elementwise, reduction, shape, linalg, convert, inplace, indexing, loss,
    exponents_and_rounding, trigonometric, special_functions, ternary, division, logical_bitwise,
    signs_and_extrema, conv, scan, sorting, gather, einsum, pooling, padding, structure,
    predicates, data_dependent, activation, recurrent, linalg_solve, linalg_decompositions,
    linalg_determinants, linalg_norms, linalg_compositions, upsample, index_views, index_writes, products, cumulative_extremes,
    counting, utilities, flat_index, linalg_derived, order_statistics, scatter_views,
    native_normalization, aten, linalg_lu, scatter_reductions, float_parts, integer_math,
    finite_differences, histograms, incomplete_gamma, resize, strided, grid_sample, complex,
    spectral, hashing,
)

__all__ = []
METHODS = {}
for _family in FAMILIES:
    for _name in _family.__all__:
        globals()[_name] = getattr(_family, _name)
        __all__.append(_name)
    for _name in _family.METHODS:
        METHODS[_name] = getattr(_family, _name)
        globals().setdefault(_name, METHODS[_name])


def check_accumulable(dst) -> None:
    """PyTorch's error if ``dst`` (a ``.grad``'s array) cannot be accumulated into in place: an
    expanded ``.grad`` (set by the user to a broadcast view), whose elements share memory. The
    engine can call it on every destination of a backward pass before writing any."""
    K = kernels_of(dst)
    if not K.is_writeable(dst):
        from .inplace import _OVERLAP

        raise RuntimeError(_OVERLAP)


def accumulate_into(dst, src, checked: bool = False) -> None:
    """``dst += src`` on arrays (host or device), in place (gradient accumulation). An expanded
    ``.grad`` is refused with PyTorch's error (``check_accumulable``; ``checked``: the caller ran
    it), before anything is written."""
    if not checked:
        check_accumulable(dst)
    K = kernels_of(dst)
    K.binary_into(K.ADD, dst, src)


def __getattr__(name: str):
    """``numgrad.ops.<ns>``: the ops ``numgrad.library`` registered in namespace ``ns`` (none
    before it is imported, so a miss, as an import's ``from .ops import x``, does not import
    it)."""
    import sys

    library = sys.modules.get("numgrad.library")
    if library is None or name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return library.namespace(name)
