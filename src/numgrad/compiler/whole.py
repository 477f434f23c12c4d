"""A replay's steps as one Numba function, where every step can run inside one.

The driver (``program.py``) calls the lowered steps one by one from Python: each fused segment,
matrix product, softmax or scatter is a Python call and a Numba or NumPy dispatch, with reshapes
and transposes between them, about 1–2 µs a step. Where every step of a replay is one of these,
they are written as one ``@njit(cache=True)`` function instead, called once:

- a fused segment: its generated function, called from the program;
- ``matmul`` of two 2-D operands small enough for one BLAS thread (``kernels/cpu/linalg.py``;
  eager splits larger ones over its worker threads): NumPy's own GEMM (``kernels/cpu/blas.py``)
  with the arguments ``np.matmul`` gives it, so the product is NumPy's to the bit;
- ``transpose`` of a matrix, ``reshape_view`` of a contiguous array, ``zeros``;
- ``log_softmax_last`` and its backward: the kernels' own row functions;
- ``index_put`` accumulating rows (``z[rows, target]``'s backward): the kernel's scatter, its
  indices checked first, in Python (an index out of range runs the steps one by one instead,
  which raise eager's error where eager does);
- an optimizer's fused step (``optim.sgd_step``, ``optim.adam_step``): the kernel's update of
  each parameter (``_sgd``; ``adam_param``, which advances the step count and computes the bias
  corrections as the Python entry does), on this thread.

Anything else, and the replay keeps the one-by-one driver. The program's arguments are the
values the steps read from outside; it returns those the end needs.
"""
from __future__ import annotations

import numpy as np

from . import ir
from ..kernels.cpu import blas, indexing, linalg, optim

class Unsupported(Exception):
    """A step that cannot run inside the program."""


class WholeProgram:
    def __init__(self, fixed=frozenset()):
        self.fixed = fixed  # values that are the same arrays at every call (constants, folded)
        self.constants: dict[str, np.ndarray] = {}  # arrays the replay passes, made here
        self.lines: list[str] = []
        self.imports: dict[str, str] = {}  # "module:function" -> local name
        self.args: dict[str, str] = {}  # the program's parameters: name -> the replay's text
        self.python: dict[str, tuple] = {}  # names the replay's prechecks call: (module, name)
        self.made: dict = {}  # value -> its local name's layout kind ("C" or "A")
        self.prechecks: list[str] = []
        self.parallel = False

    # ------------------------------------------------------------------ names
    def _import(self, ref: str) -> str:
        name = self.imports.get(ref)
        if name is None:
            name = self.imports[ref] = f"_f{len(self.imports)}"
        return name

    def _external(self, name: str, text: str | None = None) -> str:
        """A parameter of the program, given the replay's ``text`` (by default its own name)."""
        self.args.setdefault(name, name if text is None else text)
        return name

    def value(self, v) -> str:
        """The local name of a value read by a step (a parameter where made outside)."""
        if v in self.made:
            return f"v{v.index}"
        return self._external(f"v{v.index}")

    def _contiguous(self, v) -> bool:
        """Whether ``v``'s Numba type is C-contiguous (what reshape needs)."""
        if v in self.made:
            return self.made[v] == "C"
        return v.array.flags.c_contiguous  # (an argument: typed from the array given)

    def _make(self, v, kind: str = "C") -> str:
        self.made[v] = kind
        return f"v{v.index}"

    def emit(self, text: str) -> None:
        self.lines.append("    " + text)

    # ------------------------------------------------------------------ steps
    def segment(self, module, function: str, args: list, outs: list, parallel: bool,
                inputs: list, consts: list) -> None:
        """A fused segment's call: ``args`` the driver's argument texts for ``inputs`` (then
        ``consts``, names of the replay's constants)."""
        local = self._import(f"{module.__name__}:{function}")
        texts = []
        for v, text in zip(inputs, args):
            if text.startswith("v"):
                name = self.value(v)
                if text.endswith(".reshape(-1)"):
                    if not self._contiguous(v):
                        raise Unsupported("a strided segment input")
                    texts.append(f"{name}.reshape(-1)")
                else:
                    texts.append(name)
            else:  # (a flat constant: the replay's)
                texts.append(self._external(text))
        texts += [self._external(c) for c in consts]
        if parallel:
            self.parallel = True
            texts.append("chunks")
        names = [f"o{v.index}" for v in outs]
        self.emit(f"({', '.join(names)}{',' if names else ''}) = {local}({', '.join(texts)})")
        for v in outs:
            target = self._make(v)
            self.emit(f"{target} = o{v.index}" if v.array.ndim == 1 else
                      f"{target} = o{v.index}.reshape({tuple(v.array.shape)!r})")

    def call(self, name: str, specs: tuple, out) -> None:
        emit = getattr(self, f"_call_{name.replace('.', '_')}", None)
        if emit is None or any(s[0] == "kw" for s in specs):
            raise Unsupported(name)
        emit(specs, out)

    @staticmethod
    def _single(out):
        if out[0] != "v":
            raise Unsupported("a result that is not one array")
        return out[1]

    @staticmethod
    def _const(spec):
        if spec[0] != "c":
            raise Unsupported("a parameter computed in the trace")
        return spec[1]

    def _call_transpose(self, specs, out):
        a, dims = specs[0][1] if specs[0][0] == "v" else None, specs[1:]
        if a is None or a.array.ndim != 2 or {self._const(d) for d in dims} != {0, 1}:
            raise Unsupported("transpose")
        v = self._single(out)
        source = self.value(a)
        self.emit(f"{self._make(v, 'A')} = {source}.T")

    def _call_reshape_view(self, specs, out):
        a = specs[0][1]  # (the shape: the result's)
        if specs[0][0] != "v" or not self._contiguous(a):
            raise Unsupported("reshape of a strided array")
        v = self._single(out)
        source = self.value(a)
        self.emit(f"{self._make(v)} = {source}.reshape({tuple(v.array.shape)!r})")

    def _call_zeros(self, specs, out):
        v = self._single(out)
        if v.array.dtype.name not in ir.DTYPES:
            raise Unsupported("zeros of this dtype")
        self.emit(f"{self._make(v)} = np.zeros({tuple(v.array.shape)!r}, "
                  f"{ir.DTYPES[v.array.dtype.name]})")

    def _call_matmul(self, specs, out):
        if not blas.AVAILABLE or len(specs) != 4 or specs[0][0] != "v" or specs[1][0] != "v":
            raise Unsupported("matmul")
        a, b = specs[0][1], specs[1][1]
        trans = self._const(specs[2]), self._const(specs[3])
        ea = a.array.T if trans[0] else a.array
        eb = b.array.T if trans[1] else b.array
        v = self._single(out)
        if (ea.ndim != 2 or eb.ndim != 2 or ea.dtype != eb.dtype or ea.dtype.name not in
                ("float32", "float64") or min(ea.shape[0], eb.shape[1]) < 2
                or ir.root(a) is ir.root(b)):
            raise Unsupported("matmul of these operands")  # (NumPy: gemv, dot or syrk)
        oa, ob = blas.operand(ea), blas.operand(eb)
        if oa is None or ob is None or not v.array.flags.c_contiguous:
            raise Unsupported("matmul of strided operands")
        m, k = ea.shape
        n = eb.shape[1]
        if m * n * k > linalg.ONE_THREAD_MACS:
            # (eager splits it over its worker threads, one BLAS thread each: the driver's)
            raise Unsupported("matmul larger than one BLAS thread's")
        gemm = self._import("cpu.blas:" + ("sgemm" if ea.dtype.name == "float32" else "dgemm"))
        source_a, source_b = self.value(a), self.value(b)
        target = self._make(v)
        self.emit(f"{target} = np.empty(({m}, {n}), {ir.DTYPES[ea.dtype.name]})")
        self.emit(f"{gemm}({oa[0]}, {ob[0]}, {m}, {n}, {k}, {source_a}, {oa[1]}, {source_b}, "
                  f"{ob[1]}, {target})")

    def _rows_of(self, v) -> tuple:
        if not self._contiguous(v) or v.array.ndim < 1 or v.array.size == 0:
            raise Unsupported("softmax of a strided or empty array")
        return (v.array.size // v.array.shape[-1], v.array.shape[-1])

    def _call_log_softmax_last(self, specs, out):
        a = specs[0][1]
        rows = self._rows_of(a)
        v = self._single(out)
        f = self._import("cpu.softmax:_log_softmax_rows")
        source = self.value(a)
        target = self._make(v)
        self.emit(f"{target} = np.empty({tuple(v.array.shape)!r}, "
                  f"{ir.DTYPES[v.array.dtype.name]})")
        self.emit(f"{f}({source}.reshape({rows!r}), {target}.reshape({rows!r}))")

    def _call_log_softmax_backward_last(self, specs, out):
        g, o = specs[0][1], specs[1][1]
        rows = self._rows_of(o)
        self._rows_of(g)
        v = self._single(out)
        f = self._import("cpu.softmax:_log_softmax_backward_rows")
        sg, so = self.value(g), self.value(o)
        target = self._make(v)
        self.emit(f"{target} = np.empty({tuple(v.array.shape)!r}, "
                  f"{ir.DTYPES[v.array.dtype.name]})")
        self.emit(f"{f}({sg}.reshape({rows!r}), {so}.reshape({rows!r}), "
                  f"{target}.reshape({rows!r}))")

    def _call_index_put(self, specs, out):
        target, basic, adv, values, accumulate = specs
        if (target[0] != "v" or values[0] != "v" or adv[0] != "t" or basic[0] != "t"
                or self._const(accumulate) is not True):
            raise Unsupported("index_put")
        t, vals = target[1], values[1]
        index = [s[1] for s in adv[1] if s[0] == "v"]
        if len(index) != len(adv[1]) or any(s[0] != "c" for s in basic[1]):
            raise Unsupported("index_put with computed slices")
        arrays = [i.array for i in index]
        if (not indexing._rows_key(t.array, tuple(s[1] for s in basic[1]), arrays)
                or vals.array.dtype != t.array.dtype or not self._contiguous(t)):
            raise Unsupported("index_put that is no row scatter")
        if any(i in self.made for i in index):
            raise Unsupported("index_put with indices computed in the step")
        shape, n = t.array.shape, len(index)
        inner = int(np.prod(shape[n:], dtype=np.int64))
        if vals.array.size == 1 or (vals.array.size and not any(vals.array.strides)):
            if vals in self.made:
                raise Unsupported("index_put of a value repeated, computed in the step")
            # (one value repeated: its first element, as one C-contiguous element; made once
            # where the value is a constant of the program)
            if vals in self.fixed:
                name = f"_w{vals.index}"
                self.constants[name] = first(vals.array)
                flat = self._external(f"w{vals.index}", name)
            else:
                flat = self._external(f"w{vals.index}", f"_first(v{vals.index})")
                self.python["_first"] = ("numgrad.compiler.whole", "first")
            step = 0
        else:
            want = arrays[0].shape + shape[n:]
            if vals.array.shape != want or not self._contiguous(vals):
                raise Unsupported("index_put of values to broadcast")
            flat, step = f"{self.value(vals)}.reshape(-1)", 1
        i0 = self.value(index[0])
        i1 = self.value(index[1]) if n == 2 else i0
        n1 = shape[1] if n == 2 else 1
        f = self._import("cpu.indexing:_scatter_add_1or2")
        check = self._import_python("numgrad.kernels.cpu.indexing", "_rows_in_bounds")
        self.prechecks.append(f"{check}({i0}.reshape(-1), {shape[0]}, {i1}.reshape(-1), {n1}, "
                              f"{n == 2})")
        self.emit(f"{f}(v{t.index}.reshape(-1), {i0}.reshape(-1), {shape[0]}, "
                  f"{i1}.reshape(-1), {n1}, {n == 2}, {inner}, {flat}, {step})")

    def _optim_arrays(self, specs, width: int):
        """Each parameter's written arrays (``width`` of them, None for an absent one) and its
        gradient, of an optimizer step's arguments (all contiguous), and the step's options."""
        targets, grads = specs[:2]
        if targets[0] != "t" or grads[0] != "t" or any(next(ir.values(s), None) is not None
                                                        for s in specs[2:]):
            raise Unsupported("an optimizer step's arguments")
        params = []
        for target, grad in zip(targets[1], grads[1]):
            if target[0] != "t" or len(target[1]) != width or grad[0] != "v":
                raise Unsupported("an optimizer step's arguments")
            arrays = []
            for spec in target[1] + (grad,):
                if spec[0] == "c" and spec[1] is None:
                    arrays.append(None)
                elif spec[0] != "v" or not spec[1].array.flags.c_contiguous or (
                        spec is not grad and not self._contiguous(spec[1])):
                    # (a gradient typed as strided, C-contiguous at the trace, as the guard
                    # keeps it: read through a contiguous copy)
                    raise Unsupported("an optimizer step's strided arrays")
                else:
                    arrays.append(spec[1])
            params.append((arrays[:-1], arrays[-1]))
        return params, [ir.constant(s) for s in specs[2:]]

    def _flat(self, v, dtype) -> str:
        if v is None:
            return f"np.empty(0, {ir.DTYPES[dtype.name]})"
        if not self._contiguous(v):
            return f"np.ascontiguousarray({self.value(v)}).reshape(-1)"
        return f"{self.value(v)}.reshape(-1)"

    def _numbers(self, values, dtype) -> str:
        """A constant array of ``values`` in ``dtype`` (an argument, never literals: LLVM could
        compute with literals at compile time)."""
        name = f"_k{len(self.constants)}"
        self.constants[name] = np.array(values, dtype)
        return self._external(f"k{len(self.constants)}", name)

    def _call_optim_sgd_step(self, specs, out):
        sgd = self._import("cpu.optim:_sgd")
        params, options = self._optim_arrays(specs, 2)
        lr, momentum, dampening, weight_decay, nesterov, maximize, firsts = options
        for ((p, buf), g), first in zip(params, firsts):
            dtype = p.array.dtype
            decay_mode, decay, mode, mom, dampened, nesterov_, neg_lr = optim.sgd_scalars(
                dtype, lr, momentum, dampening, weight_decay, nesterov, first)
            k = self._numbers([decay, mom, dampened, neg_lr], dtype)
            grad = f"-{self._flat(g, dtype)}" if maximize else self._flat(g, dtype)
            self.emit(f"{sgd}({self._flat(p, dtype)}, {grad}, {self._flat(buf, dtype)}, "
                      f"{decay_mode}, {k}[0], {mode}, {k}[1], {k}[2], {nesterov_}, {k}[3])")

    def _call_optim_adam_step(self, specs, out):
        adam = self._import("cpu.optim:adam_param")
        params, options = self._optim_arrays(specs, 5)
        maximize = bool(options[6])
        k = self._numbers(optim.adam_options(*options[:6]), np.float64)  # (the group's, once)
        for (p, m, v, vmax, count), g in params:
            dtype = p.array.dtype
            self.emit(f"{adam}({self._flat(p, dtype)}, {self._flat(g, dtype)}, "
                      f"{self._flat(m, dtype)}, {self._flat(v, dtype)}, "
                      f"{self._flat(vmax, dtype)}, {self.value(count)}.reshape(1), {k}, "
                      f"{maximize})")

    def _import_python(self, module: str, name: str) -> str:
        """A function the replay (Python) calls: its name in the replay's namespace."""
        key = f"_pre_{name}"
        self.python[key] = (module, name)
        return key

    # ------------------------------------------------------------------ end
    def source(self, outs: list, function: str) -> str:
        head = ["import sys as _sys", "", "import numpy as np", "from numba import njit"]
        for ref, local in sorted(self.imports.items()):
            module, _, imported = ref.partition(":")
            if module.startswith("numgrad.kernels.generated."):  # (its name: not an identifier)
                head.append(f"{local} = _sys.modules[{module!r}].{imported}")
                continue
            head.append(f"from numgrad.kernels.{module} import {imported} as {local}")
        params = list(self.args) + (["chunks"] if self.parallel else [])  # (as call_args)
        names = [f"v{v.index}" for v in outs]
        body = self.lines + [f"    return ({', '.join(names)}{',' if names else ''})"]
        return ("\n".join(head) + "\n\n\n@njit(cache=True, error_model=\"numpy\")\n"
                f"def {function}({', '.join(params)}):\n" + "\n".join(body) + "\n")

    def call_args(self) -> list[str]:
        """The replay's texts of the program's arguments, in order."""
        return list(self.args.values()) + (["get_num_threads()"] if self.parallel else [])


def first(array: np.ndarray) -> np.ndarray:
    """The first element of ``array`` as a 1-element C-contiguous array (a view where it is)."""
    if array.flags.c_contiguous:
        return array.reshape(-1)[:1]
    return np.asarray(array[(0,) * array.ndim]).reshape(1)
