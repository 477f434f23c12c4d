"""Lowering a trace's segments to fused Numba loops.

The trace is a tape of kernel calls (``tracer.py``, its nodes ``ir.Node``). The passes of
``ir.py`` drop the calls whose results nothing needs and those that repeat an earlier one, and
make every run of calls that Numba code can compute (``fusible``: elementwise formulas of the
table, fills, copies and casts, views, sums over a block of dimensions, in-place updates) a
segment, which ``segment_source`` renders as one generated ``njit`` function; what is left
(matrix products through BLAS, losses, softmax, indexing) stays a call of the kernel it was,
between them. A program with nothing left over is one Numba call.

Inside a function, each value is an element layout over the memory of a root value (its own
array, or the array it views: a broadcast, a reshape, a transpose, a slice), known from the
arrays the trace saw; the guard makes every later call see the same layouts. A value that only
elementwise consumers of the same shape read is not stored: its formula is computed in their
loop (fusion); the others are stored, in loops that compute together every stored value of one
shape whose inputs allow it. Each formula is the table's own function (``kernels/formulas.py``),
so a fused loop computes the values the eager kernels compute, operation for operation: each
fused value is converted to its dtype as the kernel's output array would store it, an operand
the eager kernel swaps (one value against an array) is swapped, and float numbers (a fill's
value, a number operand) reach the function as arguments, so that LLVM cannot compute or
rewrite their formulas with other roundings when it compiles.

A trace on CUDA (``device="cuda"``) is lowered the same way, within ``CUDA_LOWERED``: a segment
is a Python function that allocates its stored values from numgrad's memory pool and launches
generated ``numba.cuda`` kernels, each a grid-stride loop holding the loops over one shape that
no thread of it could race in (``segment_source``); the formulas are the table's CUDA functions,
numbers are converted and operands swapped as ``kernels/cuda/elementwise.py`` does.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..kernels import formulas
from ..kernels.cpu.elementwise import PARALLEL_THRESHOLD, parallel_safe
from .ir import DTYPES as _DTYPES, Segment, constant as _constant, root as _root, values as _values
from .tracer import _address

ELEMENTWISE = frozenset({"unary", "binary", "full", "copy", "upload", "cast", "where"})
LOWERED = ELEMENTWISE | {"binary_into", "assign", "sum_dims", "empty"}
# On CUDA (generated kernels, ``segment_source``): the elementwise formulas, fills, copies, casts
# to a float and the in-place updates; sums stay the reduction kernels' calls.
CUDA_LOWERED = frozenset({"unary", "binary", "full", "copy", "cast", "where", "binary_into",
                          "assign"})


class Layout:
    """Where a value's elements are: ``root`` (the value owning the memory), an offset and
    strides in elements, and the shape."""

    __slots__ = ("root", "offset", "shape", "strides")

    def __init__(self, root, offset, shape, strides):
        self.root, self.offset, self.shape, self.strides = root, offset, tuple(shape), tuple(strides)

    def is_whole(self) -> bool:
        """Whether it is its root's memory itself, in C order."""
        return self.offset == 0 and self.strides == _c_strides(self.shape) and \
            math.prod(self.shape) == self.root.array.size


def _c_strides(shape) -> tuple:
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step if shape[d] != 1 else 0
        step *= shape[d]
    return tuple(strides)


def _is_host(a) -> bool:
    return isinstance(a, np.ndarray)


def _contiguous(a) -> bool:
    return a.flags.c_contiguous if _is_host(a) else a.is_c_contiguous()


def _layout(v) -> Layout | None:
    """The layout of ``v`` over its root's memory, from the arrays the trace saw (None if it
    cannot be described: a negative stride, another dtype, memory on another device)."""
    root = _root(v)
    a, r = v.array, root.array
    item = r.dtype.itemsize
    if a.dtype != r.dtype or any(s % item for s in a.strides) or any(s < 0 for s in a.strides):
        return None
    if _is_host(a) != _is_host(r):
        return None
    offset = _address(a) - _address(r) if a.size or _is_host(a) else 0
    if offset % item:
        return None
    strides = tuple(0 if n == 1 else s // item for n, s in zip(a.shape, a.strides))
    return Layout(root, offset // item, a.shape, strides)


# ---------------------------------------------------------------------- planning
def _lowerable(node, device: str = "cpu") -> bool:
    name, specs, out = node
    if name not in (LOWERED if device == "cpu" else CUDA_LOWERED):
        return False
    outs = list(_values(out))
    if not all(_named_dtype(s) for s in specs) or not all(
            v.array.dtype.name in _DTYPES for v in outs):
        return False  # (float16, int8, uint8, int16: their kernels compute them widened)
    for v in outs:
        lay = _layout(v)
        if lay is None:
            return False
        if _root(v) is v and not _contiguous(v.array):
            return False
    for s in specs:
        for v in _values(s):
            lay = _layout(v)
            if lay is None or not _contiguous(lay.root.array):
                return False
    if device == "cuda" and not _cuda_lowerable(node, outs):
        return False
    if name == "unary" or name == "binary":
        op = specs[0][1]
        if formulas.rows(op) is None:
            return False
    if name == "sum_dims":
        x = next(_values(specs[0]))
        dims = _constant(specs[1])
        if not dims or dims != tuple(range(dims[0], dims[-1] + 1)):
            return False
        if not _layout(x).is_whole() or x.array.size >= PARALLEL_THRESHOLD:
            return False
        if x.array.dtype.kind not in "fi":
            return False
    if name == "binary_into":
        out_v = next(_values(specs[1]))
        if _layout(out_v) is None:
            return False
    if name == "where":
        return all(_layout(v) is not None for s in specs for v in _values(s))
    return True


def _named_dtype(spec) -> bool:
    """Whether every array and NumPy number ``spec`` holds has a dtype the generated code names
    (``ir.DTYPES``); the narrow ones do not: a node reading one stays a kernel call."""
    kind = spec[0]
    if kind == "v":
        return spec[1].array.dtype.name in _DTYPES
    if kind in ("t", "l"):
        return all(_named_dtype(s) for s in spec[1])
    if kind == "kw":
        return _named_dtype(spec[2])
    if kind == "c" and isinstance(spec[1], np.generic):
        return spec[1].dtype.name in _DTYPES
    return True


def _host_number(v) -> bool:
    """Whether ``v`` (a CUDA kernel's operand) is a number on the host: a constant 0-d array
    (``binary_operands`` makes one of a Python number), which the kernel takes by value."""
    return _is_host(v.array) and v.kind == "const" and v.base is None and not v.written and \
        v.array.ndim == 0


def _cuda_lowerable(node, outs) -> bool:
    """What a CUDA segment can compute as the eager CUDA kernels do (``kernels/cuda``): every
    operand on the device but a host number of a binary op (converted to the other operand's
    dtype), a cast to a float, and in-place updates whose operand is of the target's dtype and
    does not overlap it (the eager kernel copies such an operand first)."""
    name, specs, out = node
    operands = [v for s in specs for v in _values(s)]
    if any(v in operands for v in outs):
        return False  # (a kernel that gave back its argument: nothing to compute)
    hosts = [v for v in operands if _is_host(v.array)]
    if name == "binary":
        devices = [v for v in operands if not _is_host(v.array)]
        return bool(devices) and all(_host_number(v) for v in hosts) and \
            all(v.array.dtype == devices[0].array.dtype for v in devices)
    if name == "binary_into":
        target, other = next(_values(specs[1])), specs[2]
        if other[0] == "v":
            b = other[1]
            if b.array.dtype != target.array.dtype and not _host_number(b):
                return False
            if not _is_host(b.array) and _root(b) is _root(target):
                return False
        return all(v is target or _host_number(v) or not _is_host(v.array) for v in operands)
    if hosts:
        return False
    if name == "cast":
        return outs[0].array.dtype.kind == "f" and operands[0].array.dtype.kind in "fiu"
    if name == "assign":
        target, source = operands[0], operands[1:]
        return all(_root(v) is not _root(target) for v in source)
    return True


def fusible(device: str = "cpu"):
    """The test ``ir.fuse`` asks of a node: whether a segment for ``device`` computes it."""
    return lambda node: _lowerable(node, device)


# ---------------------------------------------------------------------- code
def _float(value: float) -> str:
    """Exact source text for a float (Python's repr round-trips)."""
    if value != value:
        return "np.nan"
    if value in (float("inf"), -float("inf")):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(float(value))


def _literal(value) -> str:
    """Exact source text for a number (a NumPy scalar keeps its type)."""
    if isinstance(value, np.generic):
        name = _DTYPES[value.dtype.name]
        if value.dtype.kind == "f":
            return f"{name}({_float(float(value))})"
        if value.dtype.kind == "c":
            return f"{name}(complex({_float(float(value.real))}, {_float(float(value.imag))}))"
        if value.dtype.kind == "b":
            return repr(bool(value))
        return f"{name}({int(value)})"
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, (bool, int)):
        return repr(value)
    raise TypeError(value)


# Lines of a segment's text that mark a split loop (removed from the text; ``threads_variant``
# cuts the function at them), and the forms of its top-level lines that variant reads.
_SPLIT, _SPLIT_END = "# split", "# end split"
_MARKS = (_SPLIT, _SPLIT_END)
_ALLOCATION = re.compile(r"^    (r\d+) = np\.empty\(")
_CONST = re.compile(r"^    k\d+_\d+ = k\d+\[\d+\]$")
_LOCAL = re.compile(r"^    (\w+) = ")
_THREADS_HEAD = ["from numgrad.kernels.cpu._workers import run_parts as _run_parts"]


class _Code:
    def __init__(self):
        self.imports: dict[str, str] = {}  # "module:function" -> local name
        self.lines: list[str] = []

    def formula(self, ref: str) -> str:
        name = self.imports.get(ref)
        if name is None:
            name = self.imports[ref] = f"f{len(self.imports)}_{ref.rpartition(':')[2]}"
        return name

    def emit(self, text: str, indent: int) -> None:
        self.lines.append("    " * indent + text)


def _is_identity(lay: Layout, shape: tuple) -> bool:
    return lay.shape == tuple(shape) and lay.is_whole()


def _is_scalar(lay: Layout) -> bool:
    return lay.root.array.size == 1


def _dtype(spec) -> np.dtype:
    """The dtype of a kernel operand: an array's, or a number's (a NumPy scalar)."""
    if spec[0] == "v":
        return spec[1].array.dtype
    return np.asarray(spec[1]).dtype


def _operand_array(spec):
    """The array (or NumPy scalar) a kernel operand was while tracing."""
    return spec[1].array if spec[0] == "v" else np.asarray(spec[1])


def _swaps(op, a_spec, b_spec, shape) -> bool:
    """Whether the eager ``binary`` kernel (``cpu/elementwise.py``) computes ``op(a, b)`` as
    ``SWAPPED[op](b, a)``: where ``a`` is one value (a number, or one element repeated) against
    a contiguous ``b`` of the result's shape, it takes the loop for a number on the right. The
    two give the same values except where the formula's order matters: maximum and minimum of
    0.0 and -0.0 give their first operand. The guard keeps these layouts, so this decision is
    the eager kernel's on every replay."""
    if op not in formulas.SWAPPED:
        return False
    a, b = _operand_array(a_spec), _operand_array(b_spec)
    if a.flags.c_contiguous and (b.ndim == 0 or (a.shape == b.shape and b.flags.c_contiguous)):
        return False  # (its flat loops: an array and a number, two arrays of one shape)
    one_a = a.size == 1 or (a.size > 0 and not any(a.strides))
    one_b = b.size == 1 or (b.size > 0 and not any(b.strides))
    if one_a and one_b:
        return False
    if one_b and a.flags.c_contiguous and a.shape == tuple(shape):
        return False
    return one_a and b.flags.c_contiguous and b.shape == tuple(shape)


def segment_source(seg: Segment, index: int, device: str = "cpu", split: bool = True) -> tuple:
    """(the generated module's text, the function's name, whether it takes the thread count,
    the arrays of float numbers it takes after its inputs) of a segment, rendered for
    ``device``: on the CPU one ``njit`` function of loops (``CpuSegment``; its large flat
    loops split over Numba's threads if ``split``); on CUDA a Python function that allocates
    the stored values (numgrad's memory pool) and launches the segment's loops, in its order,
    as generated kernels (``CudaSegment``).

    The text names its arrays and temporaries by their order in it (``canonical``), not by the
    trace's value numbers: two segments that compute the same thing on the same layouts (a
    transformer's layers, each its own trace values) are one text, one module and one Numba
    compilation (``codegen.load_text`` names a module after its text's digest)."""
    text, function, parallel, constants = (
        CudaSegment if device == "cuda" else CpuSegment)(seg, index, split).render()
    return canonical(text), function, parallel, constants


_VALUE_NAMES = re.compile(r"\b([rts])(\d+)\b")  # (a stored array, a temporary, a chunk's slice)


def canonical(text: str) -> str:
    """``text`` with each name of a trace value (``r12``, ``t40``, ``s12``) renamed after the
    order in which it first appears (``r0``, ``r1``, ...; each prefix counted apart): the same
    text for the same code, whichever trace values it was rendered for."""
    names: dict = {}
    counts: dict = {}

    def rename(match) -> str:
        name = names.get(match.group(0))
        if name is None:
            prefix = match.group(1)
            count = counts.get(prefix, 0)
            counts[prefix] = count + 1
            name = names[match.group(0)] = f"{prefix}{count}"
        return name

    return _VALUE_NAMES.sub(rename, text)


class CpuSegment:
    """The renderer of a segment for the CPU: one ``njit`` function of loops. Each stored
    value is a loop writing its elements; a value only elementwise consumers of its shape read
    is not stored but computed in their loops (``must_store``, ``access``); each element is
    the table's formula of its operands (``expression``). A target's renderer is this class
    with its own allocation, loops, operands of a binary formula and module text."""

    device = "cpu"

    def __init__(self, seg: Segment, index: int, split: bool = True):
        self.seg = seg
        self.split = split  # (whether large flat loops may run on Numba's threads)
        self.function = f"segment{index}"
        self.code = _Code()
        self.made: dict = {}  # root value -> its variable (a flat array), for stored roots
        self.virtual: dict = {}  # value -> (node) computed in consumer loops
        # Float numbers are arguments, in one array per dtype, never literals: LLVM would
        # compute what depends on literals only when it compiles, with other roundings than the
        # kernels' (a fill's log1p folded by the compiler, float32 sin or cosh: one ulp off
        # glibc's), and rewrite libm calls whose operand is known (pow(x, 0.5) as sqrt(x),
        # 2.0 ** x as exp2(x)): the eager kernels get the same numbers at run time.
        self.floats: dict = {}  # dtype name -> {bits: (variable, value)}
        self.flat = {"on": False, "ok": True, "slices": {}, "shape": ()}
        # A serial loop nest being rendered (``loop``): the layouts its body reads and writes
        # while its plan is made (``collect``), then the plan (``nest``: the loop's shape, its
        # dimensions' groups, their index variables, and the rows sliced before the inner loop)
        self.collect = None
        self.nest = None
        self.rows = 0  # (row slices made so far: their names, q0, q1, ...)
        self.parallel = False
        self.touched: dict = {}  # root -> (written, every access at the loop's own position)
        # The last loop emitted, which the next over the same shape may join (``loop``):
        # (kind, shape, where its text ends, where its body goes, what it touched, its slices)
        self.last_loop = None
        self.outputs = set(seg.outputs)
        self.consumers: dict = {}  # root -> [(node, the value it reads, its phase)]
        self.phase_of: dict = {}
        phase = 0
        for node in seg.nodes:
            name, specs, out = node
            if name in ("sum_dims", "binary_into", "assign", "empty"):
                phase += 1
            for v in node.sources:
                self.consumers.setdefault(_root(v), []).append((node, v, phase))
            for v in _values(out):
                self.phase_of[v] = phase
            if name in ("sum_dims", "binary_into", "assign"):
                phase += 1

    # ------------------------------------------------------------------ the target's
    def allocate(self, v) -> None:
        self.code.emit(f"r{v.index} = np.empty({v.array.size}, {_DTYPES[v.array.dtype.name]})", 1)

    def binary_operands(self, op, specs, shape) -> tuple:
        """(the formula's op, its first and second operands, the dtype numbers are converted
        to or None) of a ``binary`` node, as the eager kernel computes it (``_swaps``)."""
        if _swaps(op, specs[1], specs[2], shape):
            return formulas.SWAPPED[op], specs[2], specs[1], None
        return op, specs[1], specs[2], None

    def operand_dtype(self, dtype):
        """The dtype an in-place update's operand is converted to (None: as it is)."""
        return None

    def touch(self, root, identity: bool, written: bool) -> None:
        """Notes an access of ``root``'s memory in the loop being emitted (whether another loop
        may join it: ``loop``; CUDA's kernels must not race)."""
        was = self.touched.get(root, (False, True))
        self.touched[root] = (was[0] or written, was[1] and identity)

    def _joins(self, kind: str, shape: tuple) -> bool:
        """Whether the loop just rendered (its accesses in ``touched``) may be emitted as more
        body of the last loop: one of the same kind and shape ending where the text ends, and
        no memory that either writes accessed by either at another position than the loop's
        own. Each element then sees the same operations in the same order as in two loops, one
        after the other; the arrays are read and written in one pass instead of two."""
        last = self.last_loop
        if last is None or last[0] != kind or last[1] != shape or last[2] != len(self.code.lines):
            return False
        done, now = last[4], self.touched
        return not any((now[r][0] or done[r][0]) and not (now[r][1] and done[r][1])
                       for r in now.keys() & done.keys())

    def _joined(self) -> None:
        done = self.last_loop[4]
        for r, (written, identity) in self.touched.items():
            was = done.get(r, (False, True))
            done[r] = (was[0] or written, was[1] and identity)

    def loop(self, shape, body_of, can_split=False) -> None:
        """A loop nest over ``shape`` (C order); ``body_of(indices, index, indent)`` emits the
        body (``index``: the flat position in ``shape``). A large one whose operands are all
        flat (``can_split``) runs one contiguous chunk per thread, each array sliced to its
        chunk so that the loop vectorises, as the eager kernels' parallel variants do. A loop
        over the shape of the one before it joins that one where no element could see another
        order of operations (``_joins``)."""
        code, flat = self.code, self.flat
        shape = tuple(shape)
        if not shape:
            self.last_loop = None
            body_of((), "0", 1)
            return
        n = math.prod(shape)
        if n == 0:
            return
        self.touched = {}
        if can_split and self.split and n >= PARALLEL_THRESHOLD and parallel_safe():
            # (split across threads only where the threading layer survives two Python threads
            # in parallel code at once: under workqueue a program runs on one thread, as the
            # eager kernels then do)
            start = len(code.lines)
            flat.update(on=True, ok=True, slices={}, shape=shape)
            body_of(("j",), "j", 3)
            flat["on"] = False
            lines = code.lines[start:]
            del code.lines[start:]
            if flat["ok"]:
                self.parallel = True
                if self._joins("split", shape):  # (before its end mark: more of its body,
                    self._joined()               # and the slices it did not make yet)
                    last = self.last_loop
                    made = last[5]
                    new = [f"        {name} = {self.made[root]}[start:stop]"
                           for root, name in flat["slices"].items() if root not in made]
                    made.update(flat["slices"])
                    code.lines[last[3]:last[3]] = new
                    code.lines[-1:-1] = lines
                    self.last_loop = last[:2] + (len(code.lines), last[3] + len(new)) + last[4:]
                    return
                code.emit(_SPLIT, 1)
                code.emit("for c in prange(chunks):", 1)
                code.emit(f"start, stop = c * {n} // chunks, (c + 1) * {n} // chunks", 2)
                for root, name in flat["slices"].items():
                    code.emit(f"{name} = {self.made[root]}[start:stop]", 2)
                body_at = len(code.lines)
                code.emit("for j in range(stop - start):", 2)
                code.lines.extend(lines)
                code.emit(_SPLIT_END, 1)
                self.last_loop = ("split", shape, len(code.lines), body_at, dict(self.touched),
                                  dict(flat["slices"]))
                return
            self.touched = {}
        groups = self._groups(shape, body_of)
        sizes = [math.prod(shape[d] for d in g) for g in groups]
        indices = [f"i{d}" for d in range(len(groups))]
        self.nest = (shape, groups, indices, sizes, {})
        start = len(code.lines)
        try:
            body_of(tuple(indices), None, 1 + len(groups))
        finally:
            rows, self.nest = self.nest[4], None
        lines = code.lines[start:]
        del code.lines[start:]
        inner = len(groups)  # (the inner loop's indent, its rows' slices before it)
        if self._joins("serial", shape) and self.last_loop[6] == groups:
            self._joined()
            last = self.last_loop
            made = last[5]
            for text, name in rows.items():  # (a row the last loop sliced: its slice)
                if text in made:
                    lines = [re.sub(rf"\b{name}\b", made[text], line) for line in lines]
            new = ["    " * inner + f"{name} = {text}" for text, name in rows.items()
                   if text not in made]
            for text, name in rows.items():
                made.setdefault(text, name)
            code.lines[last[3]:last[3]] = new
            code.lines.extend(lines)
            self.last_loop = last[:2] + (len(code.lines), last[3] + len(new)) + last[4:]
            return
        for d, size in enumerate(sizes):
            if d == len(sizes) - 1:
                for text, name in rows.items():
                    code.emit(f"{name} = {text}", 1 + d)
                at = len(code.lines)
            code.emit(f"for i{d} in range({size}):", 1 + d)
        if not sizes:
            at = len(code.lines)
        code.lines.extend(lines)
        self.last_loop = ("serial", shape, len(code.lines), at, dict(self.touched), dict(rows),
                          groups)

    def _groups(self, shape: tuple, body_of) -> list:
        """The loops of a serial nest over ``shape``: groups of its dimensions, each looped as
        one, the dimensions of size 1 left out and each run of dimensions that every layout the
        body reads or writes walks as one merged (C order): ``[[0, 1], [2, 3]]`` for a per-channel
        bias added to a ``(16, 32, 32, 32)`` array (the body rendered once to see its layouts).
        Merged, the inner loop runs over rows sliced before it (``_element``): LLVM vectorises
        such a loop, where the flat index of every dimension left it scalar (that bias's loop
        took 490 us for 512K float32 elements, 46 us over rows of 1024)."""
        self.collect = []
        start = len(self.code.lines)
        try:
            body_of(tuple(f"i{d}" for d in range(len(shape))),
                    _root_index(Layout(None, 0, shape, _c_strides(shape)), shape,
                                [f"i{d}" for d in range(len(shape))]), 1 + len(shape))
        finally:
            layouts, self.collect = self.collect, None
            del self.code.lines[start:]
            self.touched = {}
        strides = [_loop_strides(lay, shape) for lay in layouts]
        groups: list = []
        for d, size in enumerate(shape):
            if size == 1:
                continue
            if groups and all(st[groups[-1][-1]] == st[d] * size for st in strides):
                groups[-1].append(d)
            else:
                groups.append([d])
        return groups

    def _element(self, lay: Layout, loop_shape, indices) -> str:
        """The text of ``lay``'s element at the loop's position: in a serial nest (``loop``),
        through its groups of dimensions, and in the inner loop a slice of the row made before
        it where the row is contiguous (a value of the row where the inner loop does not move
        it); elsewhere the flat index of ``indices``."""
        array = self.made[lay.root]
        nest = self.nest
        if self.collect is not None:
            self.collect.append(lay)
        if nest is None or nest[0] != tuple(loop_shape):
            return f"{array}[{_root_index(lay, loop_shape, indices)}]"
        shape, groups, names, sizes, rows = nest
        strides = _loop_strides(lay, shape)
        outer = _index_text(lay.offset, ((name, strides[g[-1]])
                                         for g, name in zip(groups[:-1], names[:-1])))
        step = strides[groups[-1][-1]] if groups else 0
        if step == 0:
            return f"{array}[{outer}]"
        if step != 1:
            return f"{array}[{outer} + {names[-1]} * {step}]"
        text = f"{array}[:{sizes[-1]}]" if outer == "0" else \
            f"{array}[{outer}:{outer} + {sizes[-1]}]"
        name = rows.get(text)
        if name is None:
            name = rows[text] = f"q{self.rows}"
            self.rows += 1
        return f"{name}[{names[-1]}]"

    def text(self, head: list) -> str:
        options = 'cache=True, error_model="numpy"'
        body = "\n".join(line for line in self.code.lines if line.strip() not in _MARKS) + "\n"
        if not self.parallel:
            return "\n".join(head) + f"\n\n\n@njit({options})\n" + body
        # A split function has a twin without ``parallel=True`` (``<name>_serial``: the same
        # text, its ``prange`` a plain ``range`` over the same chunks, so the same values),
        # which the driver calls on a busy machine: OpenMP's threads each own one chunk, and a
        # region waits for a thread that has no core (1M elements under a load of 3 on 2 cores:
        # 8 ms against 1.7 on one thread). Compiled on its first call only.
        serial = body.replace(f"def {self.function}(", f"def {self.function}_serial(", 1)
        return ("\n".join(head + _THREADS_HEAD) + f"\n\n\n@njit({options}, parallel=True)\n"
                + body + f"\n\n@njit({options})\n" + serial + self.threads_variant(options))

    def threads_variant(self, options: str) -> str:
        """``<name>_threads``: the split function's work on numgrad's worker threads
        (``_workers.run_parts``) instead of Numba's, for a program that also calls kernels,
        whose threads and BLAS's would wait on OpenMP's spinning ones. A Python function with
        the same parameters and results: it allocates the stored values, then runs the loops in
        their order, each split loop's chunks as parts of one job (``<name>_w<k>``, a ``nogil``
        function of one chunk), the statements between them on this thread (``<name>_w<k>`` of
        the same arrays): the chunks, and so the values, are the split function's. Empty where a
        local value would cross from one of those functions into another."""
        lines = self.code.lines
        params = lines[0][lines[0].index("(") + 1:lines[0].rindex(")")].split(", ")
        base = [p for p in params if p and p != "chunks"]
        consts = [line for line in lines[1:] if _CONST.match(line)]
        allocations, stages, stage = [], [], None
        for line in lines[1 + len(consts):-1]:
            if _ALLOCATION.match(line):
                allocations.append(line)
            elif line.strip() == _SPLIT:
                stages.append(("split", []))
                stage = stages[-1][1]
            elif line.strip() == _SPLIT_END:
                stage = None
            else:
                if stage is None:
                    stages.append(("serial", []))
                    stage = stages[-1][1]
                stage.append(line)
        arrays = [_ALLOCATION.match(line).group(1) for line in allocations]
        texts = ["\n".join(stage) for _, stage in stages]
        for k, (kind, stage) in enumerate(stages):  # (a name a stage sets at its top level)
            for line in stage:
                match = _LOCAL.match(line)
                if match and any(re.search(rf"\b{match.group(1)}\b", text)
                                 for j, text in enumerate(texts) if j != k):
                    return ""
        out = [f"\n\n@njit({options}, nogil=True)"]
        calls = []
        for k, (kind, stage) in enumerate(stages):
            name = f"{self.function}_w{k}"
            text = texts[k]  # (its parameters: the arrays and numbers it reads, no others)
            used = [line for line in consts if re.search(rf"\b{line.split()[0]}\b", text)]
            names = set(re.findall(r"\w+", text + " ".join(used)))
            args = ", ".join(p for p in base + arrays if p in names)
            extra = ", chunks, part" if kind == "split" else ""
            out.append(f"def {name}({args}{', ' if args and extra else ''}{extra[2:]}):")
            out.extend(used)
            out.extend(line.replace("for c in prange(chunks):", "for c in range(part, part + 1):")
                       for line in stage)
            out.append("    return 0")
            out.append(f"\n\n@njit({options}, nogil=True)")
            calls.append(f"    _run_parts({name}, ({args}{',' if args else ''}), chunks)"
                         if kind == "split" else f"    {name}({args})")
        out[-1] = "\n"
        out.append(f"def {self.function}_threads({', '.join(params)}):")
        out.extend(allocations)
        out.extend(calls)
        out.append(lines[-1])
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------------ values
    def must_store(self, v) -> bool:
        """Whether ``v`` (a root made by an elementwise node) is stored; else its formula is
        computed in its consumers' loops."""
        if v in self.outputs or v.written:
            return True
        node = None
        for n in self.seg.nodes:
            if v in set(n.results):
                node = n
        readers = self.consumers.get(v, ())
        if node is not None and node.name == "full":
            # (a fill's value is a literal wherever an elementwise loop reads it, through any
            # layout; a sum reads its operand's memory: ``zeros_like(grad)`` summed down to a
            # broadcast input's shape)
            return any(n.name not in ELEMENTWISE for n, _, _ in readers)
        if v.array.size == 1:
            return True  # (one element: stored once rather than computed in every iteration)
        for node, read, at in readers:
            if node.name not in ELEMENTWISE or at != self.phase_of.get(v):
                return True
            shape = node.shape
            if not _is_identity(_layout(read), shape) or v.array.shape != shape:
                return True  # (computed in another loop, at its positions: a reshape's)
        return False

    def number(self, value) -> str:
        """The source text of a number: a float as a variable read from the arguments."""
        if isinstance(value, (float, np.floating)):
            value = np.asarray(value)[()]  # (a Python float: float64)
            slots = self.floats.setdefault(value.dtype.name, {})
            key = value.tobytes()
            if key not in slots:
                slots[key] = (f"k{value.dtype.itemsize * 8}_{len(slots)}", value)
            return slots[key][0]
        return _literal(value)

    def stored(self, root) -> str:
        """The variable of a stored root: in a chunk of a parallel loop, its chunk's slice."""
        if not self.flat["on"]:
            return self.made[root]
        name = self.flat["slices"].get(root)
        if name is None:
            name = self.flat["slices"][root] = f"s{root.index}"
        return name

    def access(self, v, loop_shape, indices, body) -> str:
        """The expression of ``v``'s element at the loop's indices: a stored array's element, a
        fill's literal, or a fused value's temporary (computed once in this loop body)."""
        lay = _layout(v)
        root = lay.root
        virtual = self.virtual
        if root in virtual:
            node = virtual[root]
            if node.name == "full":
                return self.expression(node, loop_shape, indices, body)
            name = body.get(root)
            if name is None:
                # (the fused values it reads first, from the deepest, with an explicit stack:
                # a chain of any length emits without recursion)
                stack = [(root, False)]
                while stack:
                    r, ready = stack.pop()
                    if r in body:
                        continue
                    if ready:
                        text = self.expression(virtual[r], loop_shape, indices, body)
                        self.code.emit(f"t{r.index} = {text}", body["indent"])
                        body[r] = f"t{r.index}"
                        continue
                    stack.append((r, True))
                    for d in virtual[r].sources:
                        d = _layout(d).root
                        if d in virtual and virtual[d].name != "full" and d not in body:
                            stack.append((d, False))
                name = body[root]
            return name
        if self.flat["on"]:  # a parallel loop's chunk: flat operands only (else it runs serially)
            if _is_identity(lay, self.flat["shape"]):
                self.touch(root, True, False)
                return f"{self.stored(root)}[j]"
            if _is_scalar(lay):
                self.touch(root, False, False)
                return f"{self.made[root]}[0]"
            self.flat["ok"] = False
            return "0"
        self.touch(root, _is_identity(lay, loop_shape), False)
        return self._element(lay, loop_shape, indices)

    def operand(self, spec, loop_shape, indices, body, as_dtype=None) -> str:
        """(``as_dtype``: the dtype a number or a host number is converted to, as the eager
        kernels of the target convert it)"""
        if spec[0] == "v":
            if as_dtype is not None and _is_host(spec[1].array):
                return self.number(as_dtype.type(spec[1].array[()]))
            return self.access(spec[1], loop_shape, indices, body)
        return self.number(spec[1] if as_dtype is None else as_dtype.type(spec[1]))

    def expression(self, node, loop_shape, indices, body) -> str:
        name, specs, out = node
        v = next(_values(out))
        dt = _DTYPES[v.array.dtype.name]
        if name == "full":
            value = specs[1][1]
            if v.array.dtype.kind == "f":  # (converted as the fill converts it)
                return self.number(v.array.dtype.type(value))
            return f"{dt}({_literal(value)})"
        if name in ("copy", "upload"):
            return self.operand(specs[0], loop_shape, indices, body)
        if name == "cast":
            a = self.operand(specs[0], loop_shape, indices, body)
            if _dtype(specs[0]).kind == "c" and v.array.dtype.kind != "c":
                # (complex to real: the real part, as the eager cast (its warning is the
                # Python's); to bool: nonzero, either part)
                return f"({a} != 0)" if v.array.dtype.kind == "b" else f"{dt}(({a}).real)"
            return f"{dt}({a})"
        # Each value is its dtype's, as the eager kernel's output array makes it: Numba computes
        # int32 and bool arithmetic in int64 (an int32 product that wraps, True + True = 2),
        # and a fused value is not stored before its consumers read it.
        if name == "where":
            c, a, b = (self.operand(s, loop_shape, indices, body) for s in specs[:3])
            return f"{dt}({a} if {c} else {b})"
        op = specs[0][1]
        if name == "binary":
            op, first, second, as_dtype = self.binary_operands(op, specs, v.array.shape)
        else:
            first, second, as_dtype = specs[1], None, None
        # (the kernel's formula is its first operand's dtype's, that operand an array or a
        # number: ``K.binary(K.DIV_FLOOR, np.float32(7.5), x)``)
        dtype = as_dtype if as_dtype is not None else _dtype(specs[1])
        if name == "unary":
            a = self.operand(first, loop_shape, indices, body)
            return f"{dt}({_wrapping(op, dtype, a) or self._call(op, dtype, a)})"
        a = self.operand(first, loop_shape, indices, body, as_dtype)
        b = self.operand(second, loop_shape, indices, body, as_dtype)
        return f"{dt}({_wrapping(op, dtype, a, b) or self._call(op, dtype, a, b)})"

    def _call(self, op, dtype, *operands) -> str:
        """A call of the formula table's function of ``op`` for ``dtype``."""
        f = self.code.formula(getattr(formulas.formula(op, dtype), self.device))
        return f"{f}({', '.join(operands)})"

    # ------------------------------------------------------------------ the nodes
    def render(self) -> tuple:
        code, made = self.code, self.made
        params = [f"in{i}" for i in range(len(self.seg.inputs))]
        code.emit("", 0)  # (the function's line: its parameters are known at the end)
        for i, v in enumerate(self.seg.inputs):
            made[v] = f"in{i}"
        for node in self.seg.nodes:
            if node.name in ELEMENTWISE or node.name == "empty":
                v = node.results[0]
                if node.name == "empty" or self.must_store(v):
                    made[v] = f"r{v.index}"
                    self.allocate(v)
                else:
                    self.virtual[v] = node
        for node in self.seg.nodes:
            if node.name in ELEMENTWISE:
                self._elementwise(node)
            elif node.name == "sum_dims":
                self._sum_dims(node)
            elif node.name == "binary_into":
                self._binary_into(node)
            elif node.name == "assign":
                self._assign(node)
            # views compute nothing: their consumers read through their layouts
        outs = [made[v] for v in self.seg.outputs]
        code.emit(f"return ({', '.join(outs)}{',' if outs else ''})", 1)

        head = ["import numpy as np", "from numba import njit, prange"]
        for ref, local in sorted(code.imports.items()):
            module, _, imported = ref.partition(":")
            head.append(f"from numgrad.kernels.{module} import {imported} as {local}")
        constants = []
        for name, slots in sorted(self.floats.items()):
            param = f"k{np.dtype(name).itemsize * 8}"
            params.append(param)
            constants.append(np.array([value for _, value in slots.values()], name))
            code.lines[1:1] = [f"    {variable} = {param}[{i}]"
                               for i, (variable, _) in enumerate(slots.values())]
        if self.parallel:  # (the thread count is an argument: read inside, it keeps Numba from
            params.append("chunks")  # caching)
        code.lines[0] = f"def {self.function}({', '.join(params)}):"
        return self.text(head), self.function, self.parallel, constants

    def _elementwise(self, node) -> None:
        v = node.results[0]
        if v in self.virtual:
            return
        shape = v.array.shape

        def body(indices, index, indent):
            text = self.expression(node, shape, indices, {"indent": indent})
            self.touch(v, True, True)
            where = self._element(Layout(v, 0, shape, _c_strides(shape)), shape, indices) \
                if self.nest is not None else f"{self.stored(v)}[{index}]"
            self.code.emit(f"{where} = {text}", indent)

        self.loop(shape, body, can_split=v.array.dtype.kind == "f")

    def _sum_dims(self, node) -> None:
        code = self.code
        x = node.sources[0]
        dims = _constant(node.specs[1])
        v = node.results[0]
        shape = x.array.shape
        first, last = dims[0], dims[-1] + 1
        outer, k, inner = (math.prod(shape[:first]), math.prod(shape[first:last]),
                           math.prod(shape[last:]))
        src = self.made[_layout(x).root]
        self.made[v] = f"r{v.index}"
        code.emit(f"r{v.index} = np.empty({outer * inner}, {_DTYPES[v.array.dtype.name]})", 1)
        if k == 0:
            code.emit(f"r{v.index}[:] = 0", 1)
        elif outer * inner:
            code.imports.setdefault("cpu.reduction:_sum_rows", "_sum_rows")
            code.imports.setdefault("cpu.reduction:_sum_3d", "_sum_3d")
            if inner == 1:
                code.emit(f"_sum_rows({src}.reshape({outer}, {k}), r{v.index})", 1)
            else:
                kind = x.array.dtype.kind  # (its accumulators' type: ``reduction.accumulators``)
                acc = "np.float64" if kind == "f" else "np.complex128" if kind == "c" else \
                    "np.int64"
                code.emit(f"_sum_3d({src}.reshape({outer}, {k}, {inner}), "
                          f"r{v.index}.reshape({outer}, {inner}), np.empty({inner}, {acc}))", 1)

    def _binary_into(self, node) -> None:
        specs = node.specs
        op, target, b = specs[0][1], node.target, specs[2]
        alpha = dict((s[1], s[2]) for s in specs if s[0] == "kw").get("alpha")
        if alpha is None and len(specs) > 3 and specs[3][0] == "c":
            alpha = specs[3]
        lay = _layout(target)
        dtype = target.array.dtype
        dt = _DTYPES[dtype.name]
        row_op, scale = op, None
        if alpha is not None and alpha[1] is not None:
            scale = float(alpha[1])
            if op == formulas.Binary.SUB:
                row_op, scale = formulas.Binary.ADD, -scale
        shape = target.array.shape

        def body(indices, index, indent):
            where = self._target(lay, shape, indices)
            other = self.operand(b, shape, indices, {"indent": indent}, self.operand_dtype(dtype))
            other = f"{dt}({other})"
            if scale is not None:
                factor = self.number(dtype.type(scale))
                if dtype != np.int64:
                    self.code.emit(f"{where} = {where} + {factor} * {other}", indent)
                    return
                product = f"{dt}({_wrapping(formulas.Binary.MUL, dtype, factor, other)})"
                other, op_now = product, formulas.Binary.ADD
            else:
                op_now = row_op
            value = _wrapping(op_now, dtype, where, other) or \
                self._call(op_now, dtype, where, other)
            self.code.emit(f"{where} = {value}", indent)

        self.loop(shape, body, can_split=dtype.kind == "f")

    def _assign(self, node) -> None:
        target, src = node.target, node.specs[1]
        lay = _layout(target)
        dtype = target.array.dtype
        dt = _DTYPES[dtype.name]
        shape = target.array.shape

        def body(indices, index, indent):
            where = self._target(lay, shape, indices)
            value = self.operand(src, shape, indices, {"indent": indent})
            self.code.emit(f"{where} = {dt}({value})", indent)

        self.loop(shape, body, can_split=dtype.kind == "f")

    def _target(self, lay: Layout, shape, indices) -> str:
        """The element an in-place update writes: in a split loop's chunk, the target's chunk
        where it is the whole of its memory (else the loop runs serially)."""
        identity = _is_identity(lay, shape)
        self.touch(lay.root, identity, True)
        if self.flat["on"]:
            if identity:
                return f"{self.stored(lay.root)}[j]"
            self.flat["ok"] = False
            return "_"
        return self._element(lay, shape, indices)


# Signed 64-bit arithmetic that may wrap, written in unsigned arithmetic: Numba marks signed
# sums, differences, products and negations "no signed wrap", so LLVM may take a fused value for
# one that did not wrap and fold what follows (``x * 2 > 0`` as ``x > 0``), which eager, storing
# each kernel's result, never does. Two's complement: the same bits as the eager kernels'.
_WRAPPING = {formulas.Binary.ADD: "{u}({a}) + {u}({b})",
             formulas.Binary.SUB: "{u}({a}) - {u}({b})",
             formulas.Binary.MUL: "{u}({a}) * {u}({b})",
             formulas.Binary.RSUB: "{u}({b}) - {u}({a})",
             formulas.Unary.NEG: "{u}(0) - {u}({a})",
             formulas.Unary.ABS: "{a} if {a} >= 0 else {t}({u}(0) - {u}({a}))"}


def _wrapping(op, dtype, a, b=None) -> str | None:
    """The wrapping text of ``op`` on int64 operands ``a`` (and ``b``), or None."""
    template = _WRAPPING.get(op)
    if template is None or np.dtype(dtype) != np.int64:
        return None
    return "np.int64(" + template.format(u="np.uint64", t="np.int64", a=a, b=b) + ")"


def _loop_strides(lay: Layout, loop_shape) -> list:
    """``lay``'s stride along each dimension of the loop's shape (0 where it is broadcast)."""
    lead = len(loop_shape) - len(lay.shape)
    return [lay.strides[d - lead] if d >= lead and lay.shape[d - lead] != 1 else 0
            for d in range(len(loop_shape))]


def _root_index(lay: Layout, loop_shape, indices) -> str:
    """The flat index into ``lay``'s root of the element at the loop's ``indices`` (``lay``
    broadcast against the loop's shape)."""
    return _index_text(lay.offset, zip(indices, _loop_strides(lay, loop_shape)))


def _index_text(offset: int, steps) -> str:
    """``offset`` plus each ``(index, stride)`` of ``steps``' product, as source text."""
    terms = [str(offset)] if offset else []
    for name, stride in steps:
        if stride:
            terms.append(name if stride == 1 else f"{name} * {stride}")
    return " + ".join(terms) or "0"


class CudaSegment(CpuSegment):
    """The renderer of a segment for CUDA: a Python function that allocates the stored values
    from numgrad's memory pool and launches generated ``numba.cuda`` kernels, each a
    grid-stride loop holding the loops over one shape that no thread of it could race in; the
    formulas are the table's CUDA functions, numbers are converted and operands swapped as
    ``kernels/cuda/elementwise.py`` does."""

    device = "cuda"

    def __init__(self, seg: Segment, index: int, split: bool = True):
        super().__init__(seg, index, split)
        self.kernels: list = []  # (shape, body lines, what it touched) of each kernel, in order
        self.touched: dict = {}  # root -> (written, every access at the loop's own position)

    def allocate(self, v) -> None:
        self.code.emit(f"r{v.index} = _empty(({v.array.size},), "
                       f"{_DTYPES[v.array.dtype.name]})", 1)

    def binary_operands(self, op, specs, shape) -> tuple:
        # (``kernels/cuda/elementwise.binary``: a number on the left of a device array swaps
        # where the op has a swapped twin; the numbers take the array's dtype, whose formula
        # it runs)
        def on_host(spec) -> bool:
            return spec[0] != "v" or _is_host(spec[1].array)

        if on_host(specs[1]) and op in formulas.SWAPPED and not on_host(specs[2]):
            op, first, second = formulas.SWAPPED[op], specs[2], specs[1]
        else:
            first, second = specs[1], specs[2]
        return op, first, second, _dtype(second if on_host(first) else first)

    def operand_dtype(self, dtype):
        return dtype

    def touch(self, root, identity: bool, written: bool) -> None:
        was = self.touched.get(root, (False, True))
        self.touched[root] = (was[0] or written, was[1] and identity)

    def loop(self, shape, body_of, can_split=False) -> None:
        """A grid-stride loop over the flat positions of ``shape``, each turned into C-order
        indices: the body of the last kernel where it loops over the same shape and neither
        writes memory that the other reads or writes at another position (its threads would
        race), else a new kernel, which the driver launches here (a placeholder line)."""
        code, kernels, touched = self.code, self.kernels, self.touched
        shape = tuple(shape)
        n = math.prod(shape)
        if n == 0:
            return
        start = len(code.lines)
        touched.clear()
        body_of(tuple(f"i{d}" for d in range(len(shape))), "i", 2)
        lines = code.lines[start:]
        del code.lines[start:]
        open_kernel = kernels and code.lines[-1] == f"    <launch {len(kernels) - 1}>"
        if open_kernel and kernels[-1][0] == shape:
            last = kernels[-1][2]
            if not any((touched[r][0] or last[r][0]) and not (touched[r][1] and last[r][1])
                       for r in touched.keys() & last.keys()):
                kernels[-1][1].extend(lines)
                for r, (written, identity) in touched.items():
                    was = last.get(r, (False, True))
                    last[r] = (was[0] or written, was[1] and identity)
                return
        step, head = 1, []
        for d in range(len(shape) - 1, -1, -1):
            text = "i" if step == 1 else f"i // {step}"
            head.append(f"        i{d} = {text}" if d == 0 else
                        f"        i{d} = ({text}) % {shape[d]}")
            step *= shape[d]
        kernels.append((shape, head[::-1] + lines, dict(touched)))
        code.emit(f"<launch {len(kernels) - 1}>", 1)

    def text(self, head: list) -> str:
        """The module: its kernels (each taking the arrays and numbers its body reads, in the
        order it reads them first) and the Python function that launches them."""
        driver, function = self.code.lines, self.function
        texts = []
        for k, (shape, lines, _) in enumerate(self.kernels):
            n = math.prod(shape)
            body = "\n".join(lines)
            names = ", ".join(dict.fromkeys(re.findall(r"\b(?:in\d+|r\d+|k\d+_\d+)\b", body)))
            texts.append(f"@cuda.jit\ndef {function}_{k}({names}):\n"
                         f"    for i in range(cuda.grid(1), {n}, cuda.gridsize(1)):\n{body}\n")
            driver[driver.index(f"    <launch {k}>")] = \
                f"    _launch({function}_{k}, {n})({names})"
        first = ["import numpy as np", "from numba import cuda",
                 "from numgrad.kernels.cuda.memory import empty as _empty, launch as _launch"]
        return "\n".join(first + head[2:]) + "\n\n\n" + "\n\n".join(texts) + "\n\n" + \
            "\n".join(driver) + "\n"
