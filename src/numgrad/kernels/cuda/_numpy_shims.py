"""Imported first by ``kernels/cuda/__init__.py``: applies numgrad's NumPy shims
(``numgrad.cuda._apply_numpy_shims``) before numba-cuda is imported (numpy 2.5)."""
from ... import cuda as _numgrad_cuda

_numgrad_cuda._apply_numpy_shims()
