"""The ops, one file per family; each op is declared once (see ``registry``).

Each family module declares what each public function is where it defines it, with ``@export``
(``_names.py``: ``numgrad.<name>``, a Tensor method, ``out=``, ``numgrad.ops.<name>`` only); every
list of names is derived from those flags. A new family is its name in ``FAMILY_NAMES`` and
``IMPORT_ORDER``.

This package's own import is light: the registry, and the accumulation the engine calls. The
families import ``Tensor`` and the engine, which import this package first; so they are imported
on first use of any name they give (``numgrad.ops.add``, ``__all__``, ``METHODS``, ``FAMILIES``:
PEP 562 ``__getattr__`` runs ``_load_families``), and ``import numgrad`` loads them with its
``from .ops import *``.
"""
from __future__ import annotations

import importlib
import sys

from . import _names
from .registry import REGISTRY, Op, Sample, apply, kernels_of, register  # noqa: F401

# The families, in the order their names are bound (a later family's name wins).
FAMILY_NAMES = (
    "elementwise", "reduction", "shape", "linalg", "convert", "inplace", "indexing", "loss",
    "exponents_and_rounding", "trigonometric", "special_functions", "ternary", "division",
    "logical_bitwise", "signs_and_extrema", "conv", "scan", "sorting", "gather", "einsum",
    "pooling", "padding", "structure", "predicates", "data_dependent", "activation", "recurrent",
    "linalg_solve", "linalg_decompositions", "linalg_determinants", "linalg_norms",
    "linalg_compositions", "upsample", "index_views", "index_writes", "products",
    "cumulative_extremes", "counting", "utilities", "flat_index", "linalg_derived",
    "order_statistics", "scatter_views", "native_normalization", "aten", "linalg_lu",
    "scatter_reductions", "float_parts", "integer_math", "finite_differences", "histograms",
    "incomplete_gamma", "resize", "strided", "grid_sample", "complex", "spectral", "hashing",
)
# The order the modules are imported in, which is the order of REGISTRY (warmup, the profiler
# and the test harness list the ops in it): the families and the modules that register ops but
# are not families (their ops are not numgrad.X nor Tensor methods): ``normalization``
# (NativeBatchNormBackward0), ``nn_functional`` (nn.functional's own ops: threshold, prelu, glu,
# native_group_norm ..., registered whether or not numgrad.nn is imported), ``linalg_ldl``
# (ldl_factor, ldl_solve), ``fourier`` (the DFT along a dimension: numgrad.fft's primitive).
IMPORT_ORDER = (
    "convert", "elementwise", "exponents_and_rounding", "trigonometric", "special_functions",
    "ternary", "division", "logical_bitwise", "signs_and_extrema", "indexing", "inplace",
    "linalg", "loss", "reduction", "shape", "conv", "padding", "pooling", "einsum", "gather",
    "scan", "sorting", "structure", "predicates", "data_dependent", "normalization", "recurrent",
    "activation", "linalg_solve", "linalg_decompositions", "linalg_determinants", "linalg_norms",
    "linalg_compositions", "upsample", "index_views", "index_writes", "products", "counting",
    "cumulative_extremes", "utilities", "nn_functional", "flat_index", "linalg_derived",
    "order_statistics", "scatter_views", "aten", "linalg_lu", "native_normalization",
    "scatter_reductions", "float_parts", "integer_math", "finite_differences", "histograms",
    "incomplete_gamma", "resize", "strided", "grid_sample", "linalg_ldl", "hashing", "complex",
    "fourier", "spectral", "attention", "embedding_bag",
)
_LOADED = False  # (True once _load_families has begun: a name missed while it runs is missing)


def _load_families() -> None:
    """Imports every family and binds their names here, as their ``@export`` flags say
    (``_names.EXPORTS``): ``FAMILIES``, ``__all__`` (what ``from numgrad.ops import *`` gives),
    ``METHODS`` (the names Tensor gets as methods), each exported function, and the names that are
    ``numgrad.ops.<name>`` only (``aten=True``: ATen's backward ops ...)."""
    global _LOADED, FAMILIES, __all__, METHODS
    _LOADED = True
    namespace = globals()
    for name in IMPORT_ORDER:
        importlib.import_module(f"{__name__}.{name}")
    families = [importlib.import_module(f"{__name__}.{name}") for name in FAMILY_NAMES]
    names, methods = [], {}
    for family in families:
        for name in _names.functions(family.__name__):
            namespace[name] = getattr(family, name)
            names.append(name)
        for name in _names.methods(family.__name__):
            methods[name] = getattr(family, name)
            namespace.setdefault(name, methods[name])
    for name in IMPORT_ORDER:
        module = sys.modules[f"{__name__}.{name}"]
        for extra in _names.aten_names(module.__name__):
            namespace[extra] = getattr(module, extra)
    FAMILIES, __all__, METHODS = tuple(families), names, methods


# PyTorch's error for a write into a tensor whose elements share memory (an expanded view): the
# engine's, in-place ops' and indexed writes'
_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


def check_accumulable(dst) -> None:
    """PyTorch's error if ``dst`` (a ``.grad``'s array) cannot be accumulated into in place: an
    expanded ``.grad`` (set by the user to a broadcast view), whose elements share memory. The
    engine can call it on every destination of a backward pass before writing any."""
    K = kernels_of(dst)
    if not K.is_writeable(dst):
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
    """The families' names on first use (``_load_families``); then ``numgrad.ops.<ns>``: the ops
    ``numgrad.library`` registered in namespace ``ns`` (none before it is imported, so a miss, as
    an import's ``from .ops import x``, does not import it)."""
    if not _LOADED:
        _load_families()
        if name in globals():
            return globals()[name]
    library = sys.modules.get("numgrad.library")
    if library is None or name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return library.namespace(name)
