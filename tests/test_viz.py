"""``numgrad.viz.make_dot``: the DOT text of known graphs, its marks, and rendering."""
import re
import shutil
import sys
from collections import Counter

import pytest

import numgrad
from numgrad import nn
from numgrad.viz import AutogradGraph, GraphvizUnavailable, make_dot

_NODE = re.compile(r'^\t(n\d+) \[label="((?:[^"\\]|\\.)*)" fillcolor="([^"]+)"', re.M)
_EDGE = re.compile(r"^\t(n\d+) -> (n\d+)", re.M)


def parse(graph: AutogradGraph):
    """The DOT text read back: {id: (label lines, fill colour)} and the (tail, head) edges."""
    nodes = {m[1]: (m[2].split("\\n"), m[3]) for m in _NODE.finditer(graph.source)}
    edges = [(m[1], m[2]) for m in _EDGE.finditer(graph.source)]
    return nodes, edges


def labelled(nodes, first_line):
    return [k for k, (lines, _) in nodes.items() if lines[0] == first_line]


def basic():
    """The first seed walkthrough, before backward."""
    x = numgrad.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    return x, y, z, z.mean()


def test_exported_from_the_package():
    assert numgrad.viz.make_dot is make_dot


def test_basic_walkthrough_graph():
    x, _, _, out = basic()
    g = make_dot(out)
    nodes, edges = parse(g)
    names = Counter(lines[0] for lines, _ in nodes.values())
    assert names == Counter({"AddBackward0": 1, "MulBackward0": 2, "MeanBackward0": 1,
                             "(2, 2)": 1, "()": 1})
    # x -> Add; Add -> Mul twice (y * y); Mul -> Mul (* 3, a constant: no edge); Mul -> Mean;
    # Mean -> the output.
    assert len(edges) == 6
    assert g.edges == edges and {k: "\n".join(v[0]) for k, v in nodes.items()} == g.nodes
    (leaf,) = labelled(nodes, "(2, 2)")
    (add,) = labelled(nodes, "AddBackward0")
    (mean,) = labelled(nodes, "MeanBackward0")
    (output,) = labelled(nodes, "()")
    assert nodes[leaf][1] == "lightblue" and nodes[output][1] == "darkolivegreen1"
    assert edges.count((leaf, add)) == 1
    assert (mean, output) in edges
    muls = labelled(nodes, "MulBackward0")
    assert sum(edges.count((add, m)) for m in muls) == 2
    for tail, head in edges:  # every edge joins declared nodes
        assert tail in nodes and head in nodes
    assert "legend" not in g.source  # nothing marked: no legend
    assert g.source.startswith("digraph {") and g.source.rstrip().endswith("}")
    assert str(g) == g.source


def test_node_names_and_edges_match_pytorch():
    torch = pytest.importorskip("torch")

    def program(lib):
        a = lib.ones(3, 4, requires_grad=True)
        b = lib.ones(4, requires_grad=True)
        h = (a * b).exp() + a
        return (h.sum(dim=1) * 2).mean()

    def walk_pytorch(root):
        names, edges, seen, stack = Counter(), 0, {root}, [root]
        while stack:
            fn = stack.pop()
            names[fn.name().rpartition("::")[2]] += 1
            for nxt, _ in fn.next_functions:
                if nxt is None:
                    continue
                edges += 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return names, edges

    names, edges = walk_pytorch(program(torch).grad_fn)
    nodes, ng_edges = parse(make_dot(program(numgrad)))
    ng_names = Counter(lines[0] for lines, colour in nodes.values() if colour == "lightgrey")
    assert ng_names + Counter({"AccumulateGrad": 2}) == names
    assert len(ng_edges) == edges + 1  # and one edge to the output tensor


def test_leaf_shapes_and_param_names():
    numgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))
    loss = nn.CrossEntropyLoss()(model(numgrad.randn(8, 64)), numgrad.randint(0, 10, (8,)))
    for params in (dict(model.named_parameters()), model.named_parameters()):
        nodes, _ = parse(make_dot(loss, params=params))
        leaves = {tuple(lines) for lines, colour in nodes.values() if colour == "lightblue"}
        assert leaves == {("0.weight", "(16, 64)"), ("0.bias", "(16)"),
                          ("2.weight", "(10, 16)"), ("2.bias", "(10)")}
    nodes, _ = parse(make_dot(loss))  # no params: shapes only
    leaves = {tuple(lines) for lines, colour in nodes.values() if colour == "lightblue"}
    assert leaves == {("(16, 64)",), ("(16)",), ("(10, 16)",), ("(10)",)}
    with pytest.raises(TypeError, match="'w'"):
        make_dot(loss, params={"w": 3.0})
    with pytest.raises(TypeError, match="tensor"):
        make_dot([1, 2])


def test_retained_tensors_are_marked():
    x, y, z, out = basic()
    y.retain_grad()
    out.retain_grad()
    g = make_dot(out)
    nodes, edges = parse(g)
    marked = {k: v for k, v in nodes.items() if "retains_grad" in v[0]}
    assert len(marked) == 2
    assert all(colour == "gold" for _, colour in marked.values())
    assert {tuple(lines) for lines, _ in marked.values()} == {("(2, 2)", "retains_grad"),
                                                              ("()", "retains_grad")}
    (ret_y,) = [k for k, v in marked.items() if v[0][0] == "(2, 2)"]
    (add,) = labelled(nodes, "AddBackward0")
    assert (add, ret_y) in edges  # drawn beside the node that made it
    assert "legend" in g.source and "retains_grad" in g.source.split("legend", 1)[1]


def test_hooked_tensors_and_nodes_are_marked():
    x, y, z, out = basic()
    x.register_hook(lambda g: g)
    x.register_hook(lambda g: g)
    handle = z.register_hook(lambda g: g * 2)
    g = make_dot(out)
    nodes, _ = parse(g)
    hooked = {tuple(lines): colour for lines, colour in nodes.values() if "hooks" in lines[-1]}
    assert hooked == {("(2, 2)", "hooks: 2"): "plum", ("MulBackward0", "hooks: 1"): "plum"}
    assert "has hooks" in g.source
    handle.remove()
    nodes, _ = parse(make_dot(out))
    assert [lines for lines, _ in nodes.values() if "hooks" in lines[-1]] == [["(2, 2)", "hooks: 2"]]


def test_several_outputs_share_their_graph():
    x = numgrad.ones(3, requires_grad=True)
    h = x.exp()
    a, b = h * 2, h.sum()
    nodes, edges = parse(make_dot((a, b)))
    assert len(labelled(nodes, "ExpBackward0")) == 1
    outputs = [lines[0] for lines, colour in nodes.values() if colour == "darkolivegreen1"]
    assert sorted(outputs) == ["()", "(3)"]
    assert len(edges) == 5  # x -> Exp -> Mul, Sum; Mul -> a; Sum -> b


def test_leaf_and_untracked_outputs():
    x = numgrad.ones(2, requires_grad=True)
    nodes, edges = parse(make_dot(x, params={"x": x}))
    assert list(nodes.values()) == [(["x", "(2)", "(output)"], "darkolivegreen1")] and not edges
    nodes, edges = parse(make_dot(numgrad.ones(3) * 2))
    assert list(nodes.values()) == [(["(3)"], "darkolivegreen1")] and not edges


def test_show_attrs_and_show_saved():
    x = numgrad.ones(3, 4, requires_grad=True)
    y = (x * x).sum(dim=1)
    nodes, _ = parse(make_dot(y, show_attrs=True))
    (sum_node,) = [lines for lines, _ in nodes.values() if lines[0] == "SumBackward1"]
    assert len(sum_node) > 1 and any("1" in line for line in sum_node[1:])
    nodes, _ = parse(make_dot(y, show_attrs=True, max_attr_chars=8))
    assert all(len(line) <= 8 for lines, _ in nodes.values() for line in lines[1:])
    g = make_dot(y, show_saved=True)
    nodes, edges = parse(g)
    (mul,) = labelled(nodes, "MulBackward0")
    (leaf,) = [k for k, (_, colour) in nodes.items() if colour == "lightblue"]
    assert edges.count((leaf, mul)) == 4  # two inputs, each saved too (dashed)
    assert g.source.count('style="dashed"') == 2
    y.backward(numgrad.ones(3))
    nodes, _ = parse(make_dot(y, show_saved=True))
    assert "(saved tensors freed)" in nodes[labelled(nodes, "MulBackward0")[0]][0]


def test_saved_intermediates_and_outputs():
    x = numgrad.ones(3, requires_grad=True)
    e = x.exp()  # saves its output, as bare data
    w = numgrad.ones(3, requires_grad=True)
    y = e * w  # saves its input e (for w's gradient; ``e * 3.0`` would not, as in PyTorch)
    nodes, edges = parse(make_dot(y, show_saved=True))
    (saved,) = [k for k, (_, colour) in nodes.items() if colour == "orange"]
    assert nodes[saved][0][1] == "(3)"
    (exp,) = labelled(nodes, "ExpBackward0")
    (mul,) = labelled(nodes, "MulBackward0")
    assert (saved, exp) in edges and (saved, mul) in edges  # one box for e, saved twice
    nodes, _ = parse(make_dot(x.exp().sum(), show_saved=True))  # the exp's output is gone
    assert [lines for lines, colour in nodes.values() if colour == "orange"] == [
        ["saved output", "(3)"]]
    out = x.exp()  # the saved output is the output tensor itself: one box
    nodes, edges = parse(make_dot(out, show_saved=True))
    assert len(nodes) == 3 and not [1 for _, colour in nodes.values() if colour == "orange"]
    assert len(edges) == 3
    e.retain_grad()  # e: saved by Mul, saved (as data) by Exp, retained: one box
    nodes, _ = parse(make_dot(y, show_saved=True))
    assert [lines for lines, colour in nodes.values() if colour == "gold"] == [
        ["saved", "(3)", "retains_grad"]]
    assert len(nodes) == 6  # y, MulBackward0, e, ExpBackward0, the leaves x and w


def test_custom_function_nodes():
    class Split(numgrad.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1, t * 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga + 2 * gb

    x = numgrad.ones(2, requires_grad=True)
    a, b = Split.apply(x)
    nodes, edges = parse(make_dot(a + b, show_attrs=True, show_saved=True))
    assert len(labelled(nodes, "SplitBackward")) >= 1
    for tail, head in edges:
        assert tail in nodes and head in nodes


def test_deep_chain_without_recursion():
    x = numgrad.ones(2, requires_grad=True)
    y = x
    for _ in range(10_000):  # deeper than the recursion limit: the walk must be iterative
        y = y * 1.0
    assert sys.getrecursionlimit() < 10_000
    g = make_dot(y)
    assert len(g.nodes) == 10_002 and len(g.edges) == 10_001
    assert g.source.count("MulBackward0") == 10_000


# -------------------------------------------------------------------------------- rendering


def test_without_the_graphviz_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    g = make_dot(basic()[3])
    bundle = g._repr_mimebundle_()
    assert list(bundle) == ["text/plain"]
    text = bundle["text/plain"]
    assert "'graphviz' is not installed" in text
    assert "pip install graphviz" in text and "apt-get install graphviz" in text
    assert g.source in text
    assert g._repr_svg_() is None
    with pytest.raises(GraphvizUnavailable, match="pip install graphviz"):
        g.pipe("svg")
    with pytest.raises(GraphvizUnavailable, match="pip install graphviz"):
        g.render(tmp_path / "graph")
    assert g.save(tmp_path / "graph.dot") and (tmp_path / "graph.dot").read_text() == g.source


def test_without_the_dot_program(monkeypatch, tmp_path):
    pytest.importorskip("graphviz", reason="the graphviz package is in the test extra")
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` there
    g = make_dot(basic()[3])
    text = g._repr_mimebundle_()["text/plain"]
    assert "`dot` program was not found" in text and "apt-get install graphviz" in text
    assert g.source in text
    with pytest.raises(GraphvizUnavailable, match="dot"):
        g.render(tmp_path / "graph", format="svg")


@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz's `dot` program is not installed (apt-get install graphviz)")
def test_svg_rendering(tmp_path):
    import graphviz  # noqa: F401  (in the test extra: a missing package fails, not skips)

    x, y, z, out = basic()
    y.retain_grad()
    z.register_hook(lambda g: g)
    g = make_dot(out, params={"x": x}, show_saved=True, show_attrs=True)
    bundle = g._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert "<svg" in svg and "MeanBackward0" in svg and "retains_grad" in svg
    assert "has hooks" in svg
    assert g._repr_svg_() == svg
    assert g.pipe("png")[:8] == b"\x89PNG\r\n\x1a\n"
    path = g.render(tmp_path / "graph", format="svg")
    assert path.endswith("graph.svg") and "<svg" in (tmp_path / "graph.svg").read_text()
    assert (tmp_path / "graph").read_text() == g.source
