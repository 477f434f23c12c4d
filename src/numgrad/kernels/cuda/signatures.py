"""Every CUDA kernel of numgrad with the argument types it can be launched with, in one place.

The compile check (``compile_check.py``, run by tests/test_cuda_compile.py) compiles each kernel
for each signature listed here to PTX and a linked cubin for real GPUs, without one. The lists
cover what users can reach, not only what the tests launch: each kernel family takes every dtype
that numgrad's ops can pass it (the formula table's dtypes for the generated elementwise kernels),
and every layout path (contiguous, strided and broadcast operands all reach a kernel as flat
C-contiguous arrays plus an int64 meta array, so the layout paths are kernels of their own, each
listed). The simulator suite records every launch and fails on one whose signature is not here
(tests/cuda_sim/conftest.py), and a test fails on a kernel of the package missing here, so a
kernel or dtype added later joins the check.

The argument types are Numba's types of what the entry points pass: device arrays are flat, C
contiguous (``Array(dtype, 1, "C")``), host numbers NumPy scalars of the operands' dtype, Python
ints ``int64`` and Python bools ``boolean``.
"""
from __future__ import annotations

from numba import types

from .. import formulas
from .. import codegen
from . import (elementwise, indexing, layout, linalg, loss, reduction, conv, gather,
    sorting, philox, predicates, pooling, upsample, structure, counting, decompositions as dec)

F32, F64, I64, I32, BOOL = types.float32, types.float64, types.int64, types.int32, types.boolean
FLOAT = (F32, F64)
NUMBER = FLOAT + (I64, I32)
ALL = NUMBER + (BOOL,)
_BY_NAME = {"float32": F32, "float64": F64, "int64": I64, "int32": I32, "bool": BOOL}


def A(dtype) -> types.Array:
    """A flat, C-contiguous device array of ``dtype``."""
    return types.Array(dtype, 1, "C")


META = A(I64)  # layout meta arrays, index arrays and error flags

# The generated kernels of each template (``cuda/templates/*.py``), as functions of the operands'
# dtype ``t`` and the result's ``r`` (bool for comparisons, else ``t``).
TEMPLATES = {
    "cuda/unary": {
        "map_k": lambda t, r: (A(t), A(r)),
    },
    "cuda/binary": {
        "zip_k": lambda t, r: (A(t), A(t), A(r)),
        "zip_scalar_k": lambda t, r: (A(t), t, A(r)),
        "zip_bcast_k": lambda t, r: (A(t), A(t), META, A(r)),
        "zip_into_k": lambda t, r: (A(t), A(t), META, I64),  # in place: not for comparisons
    },
}

# The generated kernels of the line bodies of ``kernels/lines.py`` (``cuda/templates/lines.py``:
# the body's operands, then the number of rows or lines), each body's kernel and signatures:
# scans, cumprod's gradient, cummax/cummin, logcumsumexp (``each_line_k``: one thread per line of
# an ``(outer, n, inner)`` view), mode's rows, searchsorted's values (``each_k``).
LINE_KERNELS = {"mode_row": "each_k", "search_one": "each_k"}  # (the others: each_line_k)
LINES = {
    "scan_line": [(A(t), A(t), I64, I64, BOOL, BOOL, F64 if t in FLOAT else I64, I64)
                  for t in FLOAT + (I64,)],
    "cumprod_grad_line": [(A(t), A(t), A(t), A(t), I64, I64, I64) for t in FLOAT],
    "cum_extreme_line": [(A(t), A(t), META, I64, I64, BOOL, I64) for t in ALL],
    "logcumsumexp_line": [(A(t), A(t), I64, I64, I64) for t in FLOAT],
    "mode_row": [(A(t), A(t), I64, A(t), META, I64) for t in ALL],
    "search_one": [(A(t), A(t), META, BOOL, I64, I64, BOOL, A(r), I64)
                   for t in NUMBER for r in (I64, I32)],
}


def generated() -> list:
    """(name, dispatcher, signatures) of every generated kernel: each elementwise formula row of
    the table, for each dtype it serves, through its family's template (``codegen.load`` makes
    the modules; rows that share a function share its module, and their signatures merge), and
    each line body's loop (``LINES``)."""
    found: dict = {}
    for op, rows in formulas.TABLE.items():
        template = "cuda/unary" if isinstance(op, formulas.Unary) else "cuda/binary"
        result = BOOL if isinstance(op, formulas.Compare) else None
        for row in rows:
            if not any(d in _BY_NAME for d in row.dtypes):  # (a complex row: first use)
                continue
            module = codegen.load(template, row.cuda)
            for kernel, pattern in TEMPLATES[template].items():
                if kernel == "zip_into_k" and result is BOOL:
                    continue
                name = f"{template}[{row.cuda}].{kernel}"
                _, _, sigs = found.setdefault(name, (name, getattr(module, kernel), []))
                for dtype in row.dtypes:
                    t = _BY_NAME.get(dtype)
                    if t is None:  # (complex: not in the catalogue yet; compiled at first use)
                        continue
                    sig = pattern(t, result or t)
                    if sig not in sigs:
                        sigs.append(sig)
    for body, sigs in LINES.items():
        ref, kernel = f"cuda.lines:{body}", LINE_KERNELS.get(body, "each_line_k")
        found[body] = (f"cuda/lines[{ref}].{kernel}",
                       getattr(codegen.load("cuda/lines", ref), kernel), sigs)
    return list(found.values())


# (input, output) of the sum trees: one pass into the result, or into float64 partial sums and a
# second pass from those.
_SUM_TREE = [(F32, F32), (F32, F64), (F64, F32), (F64, F64), (I64, I64), (I64, F64), (F64, I64)]


def hand_written() -> list:
    """(module, kernel name, signatures) of every kernel written out in ``kernels/cuda``; a
    factory-built kernel is named ``"DICT[dtype]"`` after the module dict that holds it."""
    table = [
        (elementwise, "_where_k", [(A(BOOL), A(t), A(t), META, A(t)) for t in ALL]),
        (layout, "_copy_k", [(A(s), META, A(d)) for s in ALL for d in ALL]),
        (layout, "_assign_k", [(A(d), A(s), META, I64) for d in ALL for s in ALL]),
        (layout, "_fill_k", [(A(t), t) for t in ALL]),
        (indexing, "_gather_k", [(A(t), META, META, META, A(t)) for t in ALL]),
        (indexing, "_scatter_k", [(A(t), META, META, META, A(t)) for t in ALL]),
        (indexing, "_scatter_add_k", [(A(t), META, META, META, A(t)) for t in NUMBER]),
        (indexing, "_scatter_or_k", [(A(BOOL), META, META, META, A(BOOL))]),
        (indexing, "_count_k", [(A(BOOL), META, I64, I64, META)]),
        (indexing, "_scan_k", [(META, META)]),
        (indexing, "_nonzero_k", [(A(BOOL), META, I64, I64, META, I64, META)]),
        (indexing, "_unravel_k", [(META, META, META)]),
        (loss, "_gather_k", [(A(t), I64, META, A(t), I64, A(t), A(t), META) for t in FLOAT]),
        (loss, "_reduce_k", [(A(t), A(t), BOOL, A(t)) for t in FLOAT]),
        (loss, "_total_weight_k", [(META, A(t), I64, A(t), META) for t in FLOAT]),
        (loss, "_scatter_k", [(A(t), I64, META, A(t), I64, A(t), I64, A(t), META)
                              for t in FLOAT]),
        (loss, "_pointwise_k", [(I64, A(t), A(t), A(t), BOOL, A(t), BOOL, F64, A(t))
                                for t in FLOAT]),
        (loss, "_pointwise_backward_k", [(I64, A(t), I64, A(t), A(t), A(t), BOOL, F64, F64, A(t))
                                         for t in FLOAT]),
        (loss, "_scaled_sum_k", [(A(t), F64, A(t)) for t in FLOAT]),
        # Sums: floats, and integers (made int64 by the op); the trees' partial sums are float64.
        (reduction, "_sum_k", [(A(t), I64, I64, A(t)) for t in FLOAT + (I64,)]),
        (reduction, "_sum_tree_k", [(A(s), I64, I64, I64, I64, A(d)) for s, d in _SUM_TREE]),
        (reduction, "_reduce_k", [(I64, A(t), I64, I64, A(t)) for t in ALL]),
        (reduction, "_arg_reduce_k", [(I64, A(t), I64, I64, META) for t in NUMBER]),
        (reduction, "_permute_k", [(A(t), META, A(t)) for t in ALL]),
        (reduction, "_fill_k", [(A(t), t) for t in ALL]),
        (reduction, "_one_hot_k", [(META, I64, I64, A(t)) for t in FLOAT]),
        (reduction, "_any_equal_k", [(A(t), t, A(flag)) for t in FLOAT for flag in (I32, BOOL)]),
        (reduction, "_others_k", [(A(t), I64, I64, I64, t, A(t)) for t in FLOAT]),
        (reduction, "_finite_or_zero_k", [(A(t), A(t)) for t in FLOAT]),
        (reduction, "_inf_where_zero_k", [(A(t), A(t)) for t in FLOAT]),
    ]
    # (convolution: im2col, col2im and the layout passes around the GEMM)
    table += [
        (conv, "_im2col_k", [(A(t),) + (I64,) * 14 + (A(t),) for t in FLOAT]),
        (conv, "_col2im_k", [(A(t),) + (I64,) * 14 + (A(t),) for t in FLOAT]),
        (conv, "_to_batch_major_k", [(A(t), A(t), BOOL, I64, I64, I64, A(t)) for t in FLOAT]),
        (conv, "_to_channel_major_k", [(A(t), I64, I64, I64, A(t)) for t in FLOAT]),
        (conv, "_im2col3_k", [(A(t), META, A(t)) for t in FLOAT]),
        (conv, "_col2im3_k", [(A(t), META, A(t)) for t in FLOAT]),
    ]
    # (sorting, gather/scatter along one dimension)
    table += [
        (sorting, "_rank_sort_k", [(A(t), I64, I64, BOOL, A(t), META) for t in ALL]),
    ]
    # (the Philox draws; the predicates' kernels)
    table += [
        (philox, "_uniform32_k", [(I64, I64, A(F32))]),
        (philox, "_uniform64_k", [(I64, I64, A(F64))]),
        (philox, "_normal32_k", [(I64, I64, BOOL, F64, F64, A(F32))]),
        (philox, "_normal64_k", [(I64, I64, BOOL, F64, F64, A(F64))]),
        (predicates, "_nan_to_num_k", [(A(t), t, t, t, A(t)) for t in FLOAT]),
        (predicates, "_isclose_k", [(A(t), A(t), t, t, BOOL, A(BOOL)) for t in FLOAT]),
        (predicates, "_bitonic_fill_k", [(A(t), I64, I64, A(t), META) for t in ALL]),
        (predicates, "_bitonic_step_k", [(A(t), META, I64, I64, I64, I64) for t in ALL]),
        (predicates, "_bitonic_take_k", [(A(t), META, I64, I64, A(t), META) for t in ALL]),
        (gather, "_gather_k", [(A(t), META, META, META, A(t)) for t in ALL]),
        (gather, "_scatter_k", [(A(t), META, META, META, A(t)) for t in ALL]),
        (gather, "_scatter_add_k", [(A(t), META, META, META, A(t)) for t in NUMBER]),
        (gather, "_scatter_serial_k", [(A(t), META, META, META, A(t), I64) for t in NUMBER]),
    ]
    # (pooling and padding of the last two dimensions)
    table += [
        (pooling, "_max_pool_k", [(A(t),) + (I64,) * 13 + (t, A(t), META) for t in NUMBER]),
        (pooling, "_adaptive_max_k", [(A(t),) + (I64,) * 5 + (A(t), META) for t in FLOAT]),
        (pooling, "_avg_pool_k", [(A(t),) + (I64,) * 11 + (BOOL, I64, A(t)) for t in FLOAT]),
        (pooling, "_avg_pool_int_k", [(A(I64),) + (I64,) * 11 + (BOOL, I64, A(I64))]),
        (pooling, "_avg_pool_backward_k", [(A(t),) + (I64,) * 11 + (BOOL, I64, A(t))
                                           for t in FLOAT]),
        (pooling, "_adaptive_avg_k", [(A(t),) + (I64,) * 5 + (A(t),) for t in FLOAT]),
        (pooling, "_adaptive_avg_backward_k", [(A(t),) + (I64,) * 5 + (A(t),) for t in FLOAT]),
        (pooling, "_scatter_k", [(A(t), META, I64, I64, A(t)) for t in FLOAT]),
        (pooling, "_gather_k", [(A(t), META, I64, I64, A(t)) for t in FLOAT]),
        (pooling, "_pad_k", [(A(t),) + (I64,) * 7 + (A(t),) for t in NUMBER]),
        (pooling, "_pad_backward_k", [(A(t),) + (I64,) * 7 + (A(t),) for t in FLOAT]),
        (pooling, "_max_pool3d_k", [(A(t), META, t, A(t), META) for t in NUMBER]),
        (pooling, "_avg_pool3d_k", [(A(t), META, BOOL, I64, A(t)) for t in FLOAT]),
        (pooling, "_avg_pool3d_backward_k", [(A(t), META, BOOL, I64, A(t)) for t in FLOAT]),
        (pooling, "_adaptive_avg3d_k", [(A(t), META, A(t)) for t in FLOAT]),
        (pooling, "_adaptive_avg3d_backward_k", [(A(t), META, A(t)) for t in FLOAT]),
    ]
    # (interpolation: the taps of each output, and their adjoint)
    table += [
        (upsample, "_resample_k", [(A(t),) + (META, A(t), I64) * 3 + (I64,) * 6 + (A(t),)
                                   for t in FLOAT]),
        (upsample, "_resample_backward_k", [(A(t),) + (META, A(t), I64) * 3 + (I64,) * 6
                                            + (A(t),) for t in FLOAT]),
    ]
    # (tril/triu, flip/roll)
    table += [
        (structure, "_tri_k", [(A(t), I64, I64, I64, BOOL, A(t)) for t in ALL]),
        (structure, "_remap_k", [(A(t), META, A(t)) for t in ALL]),
    ]
    # (bincount, histc)
    table += [
        (counting, "_bincount_k", [(META, A(w), BOOL, A(w)) for w in (I64, F32, F64)]),
        (counting, "_histc_k", [(A(t), t, t, t, A(t)) for t in FLOAT]),
    ]
    # (torch.linalg: LU, Cholesky, QR, Jacobi eigh, SVD)
    table += [
        (dec, "_lu_k", [(A(t), I64, I64, META, META, A(t), A(t), A(t)) for t in FLOAT]),
        (dec, "_lu_solve_k", [(A(t), META, A(t), I64, I64, I64) for t in FLOAT]),
        (dec, "_cholesky_k", [(A(t), A(t), I64, I64, META) for t in FLOAT]),
        (dec, "_qr_k", [(A(t), A(t), A(t), I64, I64, I64, I64, BOOL) for t in FLOAT]),
        (dec, "_upper_rows_k", [(A(t), A(t), I64, I64, I64, I64) for t in FLOAT]),
        (dec, "_eigh_k", [(A(t), A(t), A(t), A(t), I64, I64, BOOL, F64) for t in FLOAT]),
        (dec, "_svd_k", [(A(t), A(t), A(t), A(t), I64, I64, I64, I64, F64) for t in FLOAT]),
    ]
    for dtype, kernel in linalg._GEMM.items():  # factory-built, one per dtype
        t = _BY_NAME[dtype.name]
        table.append((linalg, f"_GEMM[{dtype.name}]",
                      [(A(t), A(t), A(t), I64, I64, I64, I64, BOOL, BOOL, I64, I64)]))
    for dtype, kernel in reduction._EXTREME_TREE.items():
        t = _BY_NAME[dtype.name]
        table.append((reduction, f"_EXTREME_TREE[{dtype.name}]",
                      [(I64, A(t), META, BOOL, I64, I64, I64, I64, A(t), META)]))
    return table


def kernel_of(module, name: str):
    """The dispatcher that ``(module, name)`` of the tables above names."""
    if name.endswith("]"):
        holder, _, key = name[:-1].partition("[")
        return {d.name: k for d, k in getattr(module, holder).items()}[key]
    return getattr(module, name)


def catalogue() -> list:
    """[(name, dispatcher, signatures)] of every kernel, hand-written and generated."""
    prefix = len("numgrad.kernels.")
    return [(f"{module.__name__[prefix:]}.{name}", kernel_of(module, name), sigs)
            for module, name, sigs in hand_written()] + generated()
