"""Pictures of the autograd graph: ``make_dot(var)``, with torchviz's API.

``make_dot`` walks the graph behind a tensor (or a tuple of tensors) from its ``grad_fn`` along
``next_functions``, iteratively (graphs made in loops can be deep), and returns an
:class:`AutogradGraph` that holds the graph as Graphviz DOT text (``.source``, no dependency).
Jupyter shows it inline as SVG through ``_repr_mimebundle_`` when the Python ``graphviz`` package
and Graphviz's ``dot`` program are installed, and as the DOT text with a note on how to install
them when they are not. ``render`` and ``pipe`` need them and say so clearly when they are missing.

What the picture shows (colours as torchviz draws them, plus two marks of numgrad's):

* an operation's node (``grad_fn``) by its name, e.g. ``MulBackward0``, grey;
* a leaf that requires grad (its ``AccumulateGrad`` node) as a light blue box with its shape, and
  its name when ``params`` (e.g. ``dict(model.named_parameters())``) names it;
* the output tensor(s) in green, with their shapes;
* a tensor that retains its gradient (``retain_grad()``) in gold, labelled ``retains_grad``;
* a tensor or node with hooks (``register_hook``) in plum, labelled with the number of hooks;
* with ``show_saved=True``, the tensors a node saved for backward, in orange (dashed edges);
* with ``show_attrs=True``, a node's non-tensor arguments (``dim``, ``keepdim`` …).

Edges point the way the forward pass ran: from the inputs towards the output.
"""
from __future__ import annotations

import itertools
import os

from . import _lazy
from .autograd.node import AccumulateGrad, SavedTensor
from .tensor import Tensor

__all__ = ["make_dot", "AutogradGraph", "GraphvizUnavailable"]

# Fill colours; the first three are torchviz's.
COLORS = {
    "leaf": "lightblue",
    "output": "darkolivegreen1",
    "saved": "orange",
    "retained": "gold",
    "hooked": "plum",
    "op": "lightgrey",
}
_LEGEND = {
    "leaf": "leaf (AccumulateGrad)",
    "output": "output",
    "saved": "saved for backward",
    "retained": "retains_grad",
    "hooked": "has hooks",
}

_INSTALL = (
    "To draw the graph, install Graphviz: the Python package (`pip install graphviz`, or "
    "`pip install numgrad[viz]`) and the system package that provides the `dot` program "
    "(Debian/Ubuntu: `apt-get install graphviz`; macOS: `brew install graphviz`; conda: "
    "`conda install -c conda-forge graphviz`)."
)


class GraphvizUnavailable(RuntimeError):
    """Graphviz (the Python package or its ``dot`` program) is needed but not installed."""


def _size_to_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def _quote(text: str) -> str:
    """A DOT double-quoted string (newlines become centred line breaks)."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: dict) -> str:
    return " ".join(f"{k}={_quote(v)}" for k, v in attrs.items())


def _truncate(text: str, limit: int) -> str:
    text = str(text)
    if limit is not None and len(text) > limit:
        return text[: max(limit - 3, 0)] + "..."
    return text


class AutogradGraph:
    """The picture ``make_dot`` returns: DOT text, plus rendering when Graphviz is installed.

    ``source`` is the DOT text. ``nodes`` maps each DOT node id to its label and ``edges`` lists
    ``(tail, head)`` id pairs, for programs that want the structure without parsing DOT.
    """

    def __init__(self, source: str, nodes: dict, edges: list):
        self.source = source
        self.nodes = nodes
        self.edges = edges

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"<AutogradGraph: {len(self.nodes)} nodes, {len(self.edges)} edges>"

    # ------------------------------------------------------------- rendering (needs graphviz)

    def _source_object(self):
        try:
            graphviz = _lazy.optional("graphviz")
        except ImportError as e:
            raise GraphvizUnavailable(
                "The Python package 'graphviz' is not installed. " + _INSTALL
            ) from e
        return graphviz, graphviz.Source(self.source)

    def pipe(self, format: str = "svg", encoding: str | None = None):
        """The graph drawn by ``dot`` in ``format`` (bytes, or str when ``encoding`` is given).

        Raises :class:`GraphvizUnavailable` when Graphviz is not installed."""
        graphviz, src = self._source_object()
        try:
            return src.pipe(format=format, encoding=encoding)
        except graphviz.ExecutableNotFound as e:
            raise GraphvizUnavailable(
                "The Python package 'graphviz' is installed, but Graphviz's `dot` program was "
                "not found on PATH. " + _INSTALL
            ) from e

    def render(self, filename: str | os.PathLike = "autograd_graph", format: str = "svg",
               directory=None, view: bool = False, cleanup: bool = False) -> str:
        """Writes the DOT text to ``filename`` and the drawing beside it as ``filename.format``
        (as torchviz's ``dot.render("graph", format="png")``); returns the drawing's path.

        Raises :class:`GraphvizUnavailable` when Graphviz is not installed."""
        graphviz, src = self._source_object()
        try:
            return src.render(filename=filename, directory=directory, format=format, view=view,
                              cleanup=cleanup)
        except graphviz.ExecutableNotFound as e:
            raise GraphvizUnavailable(
                "The Python package 'graphviz' is installed, but Graphviz's `dot` program was "
                "not found on PATH. " + _INSTALL
            ) from e

    def save(self, filename: str | os.PathLike) -> str:
        """Writes the DOT text to ``filename`` (no dependency); returns the path."""
        with open(filename, "w", encoding="utf-8") as f:
            f.write(self.source)
        return os.fspath(filename)

    # ------------------------------------------------------------------ Jupyter display

    def _repr_svg_(self) -> str | None:
        """SVG for Jupyter, or None (no SVG to show) when Graphviz is not installed."""
        try:
            return self.pipe(format="svg", encoding="utf-8")
        except GraphvizUnavailable:
            return None

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """SVG (with a short text form) when Graphviz is installed; otherwise the DOT text with a
        note on why there is no picture and how to get one."""
        try:
            svg = self.pipe(format="svg", encoding="utf-8")
        except GraphvizUnavailable as e:
            return {"text/plain": f"{e}\nThe graph's DOT source:\n{self.source}"}
        return {"image/svg+xml": svg, "text/plain": repr(self)}


def make_dot(var, params=None, show_attrs: bool = False, show_saved: bool = False,
             max_attr_chars: int = 50) -> AutogradGraph:
    """Draws the autograd graph behind ``var`` (a tensor or a tuple/list of tensors).

    ``params``: a mapping of names to tensors (``dict(model.named_parameters())``) or an iterable
    of ``(name, tensor)`` pairs; leaves found there are labelled with their names.
    ``show_attrs``: list each node's non-tensor arguments, each cut to ``max_attr_chars``.
    ``show_saved``: draw the tensors each node saved for backward (or say they were freed).
    """
    if params is not None:
        items = params.items() if hasattr(params, "items") else params
        param_map = {}
        for name, p in items:
            if not isinstance(p, Tensor):
                raise TypeError(f"params must map names to tensors; {name!r} is "
                                f"{type(p).__name__}")
            param_map[id(p)] = name
    else:
        param_map = {}
    outputs = tuple(var) if isinstance(var, (tuple, list)) else (var,)
    for o in outputs:
        if not isinstance(o, Tensor):
            raise TypeError(f"make_dot expects a tensor or a tuple of tensors, got "
                            f"{type(o).__name__}")
    return _Builder(param_map, show_attrs, show_saved, max_attr_chars).build(outputs)


class _Builder:
    """One traversal: assigns DOT ids in order of discovery, so the text is deterministic."""

    def __init__(self, param_map, show_attrs, show_saved, max_attr_chars):
        self.param_map = param_map
        self.show_attrs = show_attrs
        self.show_saved = show_saved
        self.max_attr_chars = max_attr_chars
        self.counter = itertools.count()
        self.ids: dict[int, str] = {}  # id(tensor or node) -> DOT id
        self.data_ids: dict[int, str] = {}  # id(array) -> DOT id, for tensors drawn as boxes
        self.keep: list = []  # holds every object whose id() is a key, so ids stay unique
        self.nodes: dict[str, dict] = {}  # DOT id -> attributes (label, fillcolor, ...)
        self.edges: list[tuple[str, str, dict]] = []
        self.kinds: set[str] = set()
        self.linked: set[str] = set()  # tensors drawn with an edge from their grad_fn

    def _id(self, obj) -> tuple[str, bool]:
        key = id(obj)
        if key in self.ids:
            return self.ids[key], False
        self.keep.append(obj)
        name = f"n{next(self.counter)}"
        self.ids[key] = name
        return name, True

    def _tensor_id(self, t, data) -> tuple[str, bool]:
        """The DOT id of a tensor drawn as a box of its own (not a leaf's), found by the tensor or
        by its data: a node's saved output is kept as bare data, the array of the tensor."""
        name = self.ids.get(id(t)) if t is not None else None
        if name is None:
            name = self.data_ids.get(id(data))
        if name is not None:
            if t is not None and id(t) not in self.ids:
                self.ids[id(t)] = name
                self.keep.append(t)
            return name, False
        name, _ = self._id(t if t is not None else data)
        self.data_ids[id(data)] = name
        self.keep.append(data)
        return name, True

    def _node(self, name: str, lines: list[str], kind: str, **extra) -> None:
        self.kinds.add(kind)
        attrs = {"label": "\n".join(lines), "fillcolor": COLORS[kind]}
        attrs.update(extra)
        self.nodes[name] = attrs

    def _mark(self, name: str, kind: str, line: str) -> None:
        """Adds a mark (retained, hooked) to a node already drawn: a label line and its colour
        (hooks over retention over the node's own colour)."""
        attrs = self.nodes[name]
        attrs["label"] += "\n" + line
        if kind == "hooked" or attrs["fillcolor"] != COLORS["hooked"]:
            attrs["fillcolor"] = COLORS[kind]
        self.kinds.add(kind)

    def _tensor_lines(self, t: Tensor) -> list[str]:
        name = self.param_map.get(id(t))
        shape = _size_to_str(t.shape)
        return [name, shape] if name else [shape]

    def _leaf(self, t: Tensor) -> str:
        """The box of a leaf that requires grad (its AccumulateGrad node), drawn once."""
        name, new = self._id(t)
        if new:
            self._node(name, self._tensor_lines(t), "leaf", tooltip="AccumulateGrad")
            if t._hooks:
                self._mark(name, "hooked", f"hooks: {len(t._hooks)}")
        return name

    def _fn_lines(self, fn) -> list[str]:
        lines = [fn.name()]
        if self.show_attrs:
            params = getattr(fn, "params", None) or {}
            for k, v in params.items():
                lines.append(_truncate(f"{k}: {v!r}", self.max_attr_chars))
            saved = getattr(fn, "_saved", ())
            for i, s in enumerate(saved):
                if s is not None and type(s) is not SavedTensor and not isinstance(s, Tensor):
                    lines.append(_truncate(f"saved {i}: {s!r}", self.max_attr_chars))
        if self.show_saved and getattr(fn, "_released", False):
            lines.append("(saved tensors freed)")
        return lines

    def _saved(self, fn, fn_name: str) -> None:
        for i, s in enumerate(getattr(fn, "_saved", ())):
            if type(s) is not SavedTensor:
                continue
            if s.tensor is not None:  # an input, kept as the tensor itself
                t = s.tensor
                if t.grad_fn is None and t.requires_grad:
                    name = self._leaf(t)
                else:
                    name, new = self._tensor_id(t, t._data)
                    if new:
                        self._node(name, ["saved", *self._tensor_lines(t)], "saved")
            else:  # the node's own output, kept as bare data
                name, new = self._tensor_id(None, s.data)
                if new:
                    self._node(name, ["saved output", _size_to_str(s.data.shape)], "saved")
            self.edges.append((name, fn_name, {"style": "dashed", "dir": "none"}))

    def _output(self, t: Tensor) -> None:
        if t.grad_fn is None and t.requires_grad:  # a leaf as output: its box, marked
            name = self._leaf(t)
            self._mark(name, "output", "(output)")
            return
        name, new = self._tensor_id(t, t._data)
        if not new:
            return
        self._node(name, [_size_to_str(t.shape)], "output")
        if t.grad_fn is not None:
            self.linked.add(name)
            self.edges.append((self._fn(t.grad_fn), name, {}))

    def _fn(self, fn) -> str:
        """The DOT id of node ``fn``, queued for the walk on first sight."""
        name, new = self._id(fn)
        if new:
            self.queue.append((fn, name))
        return name

    def build(self, outputs) -> AutogradGraph:
        self.queue: list = []
        for t in outputs:
            self._output(t)
        while self.queue:  # the walk: a stack, never recursion
            fn, name = self.queue.pop()  # never an AccumulateGrad: leaves are boxes (below)
            self._node(name, self._fn_lines(fn), "op")
            hooks = getattr(fn, "_pre_hooks", None)
            if hooks:
                self._mark(name, "hooked", f"hooks: {len(hooks)}")
            ref = getattr(fn, "_retained", None)
            retained = ref() if ref is not None else None
            if retained is not None:
                rid, new = self._tensor_id(retained, retained._data)
                if new:
                    self._node(rid, [_size_to_str(retained.shape)], "retained")
                if rid not in self.linked:  # an output has its edge already
                    self.linked.add(rid)
                    self.edges.append((name, rid, {"style": "dotted"}))
                self._mark(rid, "retained", "retains_grad")
            if self.show_saved:
                self._saved(fn, name)
            for next_fn, _index in fn.next_functions:
                if next_fn is None:
                    continue
                if type(next_fn) is AccumulateGrad:
                    src = self._leaf(next_fn.variable)
                else:
                    src = self._fn(next_fn)
                self.edges.append((src, name, {}))
        # In order of discovery (a leaf is drawn as soon as an edge reaches it).
        self.nodes = dict(sorted(self.nodes.items(), key=lambda item: int(item[0][1:])))
        return AutogradGraph(self._source(), {k: v["label"] for k, v in self.nodes.items()},
                             [(a, b) for a, b, _ in self.edges])

    def _source(self) -> str:
        out = [
            "digraph {",
            '\tgraph [size="12,12" ranksep=0.3]',
            '\tnode [fontname=monospace fontsize=10 height=0.2 shape=box style="filled,rounded"]',
        ]
        for name, attrs in self.nodes.items():
            out.append(f"\t{name} [{_attrs(attrs)}]")
        for a, b, attrs in self.edges:
            out.append(f"\t{a} -> {b}" + (f" [{_attrs(attrs)}]" if attrs else ""))
        if "retained" in self.kinds or "hooked" in self.kinds:
            # A legend, for the colours torchviz users have not seen before: one HTML-like
            # label, a table with a row per kind of box in this picture.
            rows = "".join(
                f'<TR><TD BGCOLOR="{COLORS[k]}">{_LEGEND[k]}</TD></TR>'
                for k in ("leaf", "output", "saved", "retained", "hooked") if k in self.kinds
            )
            out.append('\tlegend [shape=plaintext style="" margin=0 label=<<TABLE BORDER="0" '
                       'CELLBORDER="1" CELLSPACING="2" CELLPADDING="3">'
                       f'<TR><TD BORDER="0"><B>legend</B></TD></TR>{rows}</TABLE>>]')
        out.append("}")
        return "\n".join(out) + "\n"
