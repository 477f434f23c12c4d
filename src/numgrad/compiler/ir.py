"""The compiler's intermediate representation: the typed nodes a trace records, and the passes
that turn a trace's nodes into the steps a program runs.

A trace (``tracer.py``) is a list of ``Node``: one kernel call each, with its operation
(``Op``: the kernel's family), the dtype and shape of its result, the values it reads
(``sources``), its constants (``args``) and its arguments as recorded (``specs``: ("v", value), ("c", constant),
("t"/"l", specs), ("kw", name, spec)). A node unpacks as ``name, specs, out``.

The passes, in the order they run (``schedule`` runs the first three), each a loop over the
nodes (no recursion over the graph, so a graph of any depth compiles):

1. ``dead_code``: the nodes whose results or writes something needs, walked from the end.
2. ``hash_cons``: value numbering. Each pure node is keyed by its kernel, its constants (by their
   bits: ``0.0`` and ``-0.0`` are two keys) and the values it reads, each with the number of
   writes into its memory so far; a node whose key an earlier node has is that node, where
   neither result is written, escapes (``needed``) or is viewed. Two calls of one kernel on
   the same values compute the same bits, so the program computes it once.
3. ``fuse``: runs of nodes the target can compute in generated loops (``lower.fusible``)
   become segments; views between them are read through their layouts.
4. ``fold_constants``: steps that compute from constants alone are computed now, by the trace
   (their values are the trace's, made by the same kernels), and become constants.

``lower.py`` renders a segment for the CPU or CUDA; ``program.py`` writes the Python driver;
``whole.py`` the whole program as one Numba function. ``DTYPES`` is the one dtype map they use.
"""
from __future__ import annotations

import enum
import struct

import numpy as np

# ---------------------------------------------------------------------- kernel families
# Kernel functions that only describe their arguments: called directly, not recorded.
STRUCTURAL = frozenset({"is_contiguous", "is_writeable", "may_share_memory", "address",
                        "check_errors"})
# Those that give back values read from the data: a trace cannot hold them.
READS = {
    "any_equal": "a test of a tensor's values (any_equal)",
    "to_host": "a copy of a tensor to the host",
    "nonzero": "indexing by a boolean mask (its result's shape depends on the values)",
    "structure.repeat_index": "repeat_interleave's counts (its result's size depends on them)",
}
# Those that write into an argument (the index of that argument: an array, or a tuple of them).
WRITES = {"binary_into": 1, "unary_into": 1, "assign": 0, "index_put": 0,
          "custom_call_into": 1,  # (a custom op with mutates_args: numgrad.library)
          # (the optimizers' fused steps: each parameter's arrays and state, tuples in a tuple)
          "optim.adam_step": 0, "optim.sgd_step": 0,
          **dict.fromkeys(("philox_uniform", "philox_normal", "philox_integers",
                           "philox_permutation", "philox_exponential", "philox_bernoulli",
                           "philox_multinomial"), 0)}  # (a draw advances the generator's state)
RANDOM = frozenset(name for name in WRITES if name.startswith("philox_"))
# Those whose result may view their first argument's memory.
VIEWS = frozenset({"reshape_view", "broadcast_to", "permute", "transpose", "squeeze",
                   "unsqueeze", "view_index", "ascontiguous", "structure.diagonal",
                   "structure.unfold", "complex_real", "complex_imag", "complex_pairs",
                   "complex_from_pairs"})


class Op(enum.Enum):
    """A node's operation: the family of its kernel."""

    UNARY = "unary"
    BINARY = "binary"
    FULL = "full"
    COPY = "copy"
    UPLOAD = "upload"
    CAST = "cast"
    WHERE = "where"
    SUM_DIMS = "sum_dims"
    EMPTY = "empty"
    BINARY_INTO = "binary_into"
    UNARY_INTO = "unary_into"
    ASSIGN = "assign"
    INDEX_PUT = "index_put"
    RANDOM = "random"  # a draw (it writes the generator's state)
    VIEW = "view"  # a view NumPy made (a slice, a reshape), recorded by the tracer
    VIEW_KERNEL = "view kernel"  # a kernel whose result may view its argument (``VIEWS``)
    READ = "read"  # a kernel whose result depends on values a trace cannot hold (``READS``)
    CALL = "call"  # any other kernel: a matrix product, a softmax, a scatter ...


ELEMENTWISE = frozenset({Op.UNARY, Op.BINARY, Op.FULL, Op.COPY, Op.UPLOAD, Op.CAST, Op.WHERE})
_NAMED = {op.value: op for op in Op if op not in (Op.RANDOM, Op.VIEW_KERNEL, Op.READ, Op.CALL)}


def op_of(name: str) -> Op:
    """The operation of a kernel called ``name``."""
    op = _NAMED.get(name)
    if op is not None:
        return op
    if name in RANDOM:
        return Op.RANDOM
    if name in VIEWS:
        return Op.VIEW_KERNEL
    if name in READS:
        return Op.READ
    return Op.CALL


# ---------------------------------------------------------------------- dtypes
# The one map from a dtype to the text that names it in generated code (the renderers').
DTYPES = {"float32": "np.float32", "float64": "np.float64", "int64": "np.int64",
          "int32": "np.int32", "bool": "np.bool_", "complex64": "np.complex64",
          "complex128": "np.complex128"}


def dtype_text(dtype) -> str:
    """The generated code's name of ``dtype`` (a KeyError for one the renderers do not emit)."""
    return DTYPES[np.dtype(dtype).name]


# ---------------------------------------------------------------------- values and specs
def values(spec):
    """The trace values a spec refers to."""
    kind = spec[0]
    if kind == "v":
        yield spec[1]
    elif kind in ("t", "l"):
        for s in spec[1]:
            yield from values(s)
    elif kind == "kw":
        yield from values(spec[2])


def constant(spec):
    """The Python value of a constant spec (tuples of constants included)."""
    if spec[0] == "c":
        return spec[1]
    if spec[0] in ("t", "l"):
        items = [constant(s) for s in spec[1]]
        return tuple(items) if spec[0] == "t" else items
    raise ValueError(spec)


def root(v):
    """The value owning ``v``'s memory (``v`` itself, or the value it views)."""
    while v.base is not None:
        v = v.base
    return v


def _substitute(spec, by: dict):
    """``spec`` with each value in ``by`` replaced by its image."""
    kind = spec[0]
    if kind == "v":
        image = by.get(spec[1])
        return spec if image is None else ("v", image)
    if kind in ("t", "l"):
        return (kind, tuple(_substitute(s, by) for s in spec[1]))
    if kind == "kw":
        return ("kw", spec[1], _substitute(spec[2], by))
    return spec


# ---------------------------------------------------------------------- nodes
class Node:
    """One kernel call of a trace: ``name`` (the kernel), ``op``, ``specs`` (its arguments),
    ``out`` (its result's spec), and the ``dtype`` and ``shape`` of its (first) result, None
    where it gives back no array. Unpacks as ``name, specs, out``."""

    __slots__ = ("name", "op", "specs", "out", "dtype", "shape")

    def __init__(self, name: str, specs: tuple, out):
        self.name = name
        self.op = op_of(name)
        self.specs = specs
        self.out = out
        first = next(values(out), None)
        array = None if first is None else first.array
        self.dtype = None if array is None else array.dtype
        self.shape = None if array is None else tuple(array.shape)

    def __iter__(self):
        return iter((self.name, self.specs, self.out))

    def __getitem__(self, index):
        return (self.name, self.specs, self.out)[index]

    def __len__(self) -> int:
        return 3

    def __repr__(self) -> str:
        results = ", ".join(map(repr, self.results))
        return f"Node({self.op.name}, {self.name!r}, {self.dtype}, {self.shape} -> {results})"

    @property
    def sources(self) -> tuple:
        """The values it reads."""
        return tuple(v for s in self.specs for v in values(s))

    @property
    def args(self) -> tuple:
        """Its arguments that are not values: the constants of its specs, as recorded
        (``(name, value)`` for a keyword's)."""
        out = []
        for s in self.specs:
            spec = s[2] if s[0] == "kw" else s
            if next(values(spec), None) is None:  # (no value in it: a constant, or a tuple of)
                out.append((s[1], constant(spec)) if s[0] == "kw" else constant(spec))
        return tuple(out)

    @property
    def results(self) -> tuple:
        return tuple(values(self.out))

    @property
    def target(self):
        """The value it writes into (None: it writes nothing; the first of ``targets``)."""
        index = WRITES.get(self.name)
        if index is None:
            return None
        return next(values(self.specs[index]), None)

    @property
    def targets(self) -> tuple:
        """The values it writes into (an optimizer's step writes several)."""
        index = WRITES.get(self.name)
        return () if index is None else tuple(values(self.specs[index]))

    def replace(self, specs=None) -> "Node":
        """This call with other arguments."""
        return Node(self.name, self.specs if specs is None else specs, self.out)

    def pure(self) -> bool:
        """Whether its results depend on its arguments alone and it changes nothing: two calls
        on the same values compute the same bits."""
        return self.op not in (Op.EMPTY, Op.RANDOM, Op.READ, Op.BINARY_INTO, Op.UNARY_INTO,
                               Op.ASSIGN, Op.INDEX_PUT) and self.name not in WRITES


def _constant_key(c):
    """A key equal for two constants only where a kernel cannot tell them apart: floats by
    their bits (0.0 and -0.0, NaNs of other payloads differ), NumPy scalars by dtype and bits,
    ``True`` apart from ``1``."""
    if isinstance(c, np.generic):
        return ("g", c.dtype.str, c.tobytes())
    if isinstance(c, float):
        return ("f", struct.pack("<d", c))
    if isinstance(c, (tuple, list)):
        return (type(c).__name__, tuple(_constant_key(x) for x in c))
    if isinstance(c, slice):
        return ("s", _constant_key(c.start), _constant_key(c.stop), _constant_key(c.step))
    if isinstance(c, np.dtype):
        return ("d", c.str)
    if c is None or c is Ellipsis or isinstance(c, (bool, int, str, type)):
        return (type(c).__name__, c)
    return ("id", id(c))  # (anything else is only itself)


def _spec_key(spec, versions: dict):
    kind = spec[0]
    if kind == "v":
        v = spec[1]
        return ("v", v.index, versions.get(root(v), 0))
    if kind == "c":
        return ("c", _constant_key(spec[1]))
    if kind in ("t", "l"):
        return (kind, tuple(_spec_key(s, versions) for s in spec[1]))
    if kind == "kw":
        return ("kw", spec[1], _spec_key(spec[2], versions))
    raise AssertionError(spec)


# ---------------------------------------------------------------------- passes
def dead_code(nodes, needed: set) -> list:
    """The nodes whose results (or writes) something needs, in their order: those that make a
    value of ``needed`` or a view of one's memory, those that write into an input or into memory
    something needed lives in, and those these read from."""
    live = set(needed)
    live_roots = {root(v) for v in live}
    keep = []
    for node in reversed(nodes):
        outs = set(node.results)
        wanted = bool(outs & live) or (node.op in (Op.VIEW, Op.VIEW_KERNEL) and
                                       any(root(v) in live_roots for v in outs))
        for target in node.targets:
            r = root(target)
            wanted = wanted or r.kind == "input" or r in live_roots
        if wanted:
            keep.append(node)
            for v in node.sources:
                live.add(v)
                live_roots.add(root(v))
    keep.reverse()
    return keep


def hash_cons(nodes, needed: set) -> list:
    """The nodes with each pure node that repeats an earlier one (same kernel, same constants,
    same values at the same versions) dropped and its results read from the earlier one's,
    where that is sound: no result of either is written or viewed, and the dropped one's
    results are not needed at the end (each needed array is its own memory, as eager's)."""
    versions: dict = {}  # root -> writes into its memory so far
    table: dict = {}  # key -> the first node with it
    by: dict = {}  # dropped result -> the kept one's
    viewed = {root(v) for node in nodes for v in node.results if v.base is not None}
    kept = []

    def shareable(node) -> bool:
        sources = set(node.sources)
        return all(v.kind == "node" and root(v) is v and not v.written and v not in viewed
                   and v not in sources for v in node.results)

    for node in nodes:
        if by:
            specs = tuple(_substitute(s, by) for s in node.specs)
            if specs != node.specs:
                node = node.replace(specs)
        results = node.results
        if node.pure() and results and shareable(node):
            key = (node.name, tuple(_spec_key(s, versions) for s in node.specs))
            first = table.get(key)
            if first is None:
                table[key] = node
            elif not any(v in needed for v in results) and \
                    len(first.results) == len(results):
                by.update(zip(results, first.results))
                continue
        for target in node.targets:
            r = root(target)
            versions[r] = versions.get(r, 0) + 1
        kept.append(node)
    return kept


class Segment:
    """A run of fused nodes: one generated function."""

    def __init__(self):
        self.nodes: list = []
        self.inputs: list = []  # root values read from outside the segment
        self.outputs: list = []  # values it returns (roots made in it)

    def __repr__(self):
        return f"Segment({len(self.nodes)} nodes, {len(self.inputs)} in, {len(self.outputs)} out)"


# Nodes a segment fuses at most: a longer run is cut (the compile time and memory of a Numba
# function grow faster than its size; a chain of thousands of ops compiles as several). A tiny
# GPT's compiled step (its AdamW update traced op by op: a run of over 1,000 nodes) took 112-116 s
# to compile with an empty program cache at 512, three functions of ~1,100 lines taking 14-40 s
# each; 76 s at 128 and 68 s at 64.
SEGMENT_NODES = 128
# Nodes a whole program (``whole.py``: the replay as one Numba function) has at most.
WHOLE_NODES = 512


def fuse(nodes, needed: set, fusible) -> list:
    """Steps for the program: ("call", node) for a kernel call kept as it is, ("segment",
    Segment) for a run of nodes ``fusible(node)`` says the target computes in generated loops,
    ("view", node) for a view (segments read views through their layouts, so a view does not
    end a segment; the driver makes it only where a call or the end needs it)."""
    steps = []
    current = None
    for node in nodes:
        if node.op is Op.VIEW_KERNEL and any(v.base is None for v in node.results):
            # a view-making kernel that made a new array (ascontiguous of a strided one): a
            # computation, which a segment reading it must follow
            current = None
            steps.append(("call", node))
        elif node.op in (Op.VIEW, Op.VIEW_KERNEL):
            steps.append(("view", node))
        elif fusible(node):
            if current is None or len(current.nodes) >= SEGMENT_NODES:
                current = Segment()
                steps.append(("segment", current))
            current.nodes.append(node)
        else:
            current = None
            steps.append(("call", node))
    # views only where the driver needs them: for a call, the end, or another such view (one
    # that only segments read is theirs to read through its layout)
    driver = set(needed)
    for kind, step in reversed(steps):
        if kind == "call" or (kind == "view" and set(step.results) & driver):
            driver.update(step.sources)
    steps = [(kind, step) for kind, step in steps
             if kind != "view" or set(step.results) & driver]
    # Each segment's inputs (roots made before it or outside) and outputs (roots made in it that
    # later steps, the views kept, or the end need).
    later_needed = {root(v) for v in needed} | set(needed)
    for kind, step in reversed(steps):
        if kind in ("call", "view"):
            later_needed.update(root(v) for v in step.sources)
            continue
        made = {v for node in step.nodes for v in node.results if root(v) is v}
        step.outputs = [v for v in sorted(made, key=lambda v: v.index) if v in later_needed]
        used = []
        for node in step.nodes:
            for v in node.sources:
                r = root(v)
                if r not in made and r not in used:
                    used.append(r)
        step.inputs = used
        later_needed.update(used)
    return steps


def fold_constants(steps: list, needed: set, bound) -> tuple:
    """The steps without those that compute from constants alone (an ``x.mean()``'s seed
    gradient divided by the count, broadcast): their values are the trace's, computed by the
    same kernels, and become constants of the program. Only values no kernel writes into and
    that the end does not need (a constant must not escape to the caller, who could change it).
    Returns (the steps kept, the values folded)."""
    folded: set = set()

    def is_constant(v) -> bool:
        r = root(v)
        return r not in bound and (r in folded or (r.kind == "const" and not r.written))

    def can_fold(outs) -> bool:
        return all(v not in needed and root(v) not in needed and not v.written
                   and not root(v).written for v in outs)

    kept = []
    for kind, step in steps:
        if kind == "segment":
            pure = all(node.pure() for node in step.nodes)
            outs = [v for node in step.nodes for v in node.results]
            reads = step.inputs
        else:
            pure = step.pure() and step.out != ("c", None)
            outs = list(step.results)
            reads = step.sources
        if pure and outs and all(is_constant(v) for v in reads) and can_fold(outs):
            folded.update(outs)
            continue
        kept.append((kind, step))
    return kept, folded


def schedule(nodes, needed: set, fusible) -> list:
    """The steps computing ``needed`` from ``nodes``: the first three passes, in order (the
    driver folds constants, knowing which values its program is given: ``fold_constants``)."""
    return fuse(hash_cons(dead_code(nodes, needed), needed), needed, fusible)
