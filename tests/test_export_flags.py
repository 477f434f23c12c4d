"""Every list of op names is derived from the ``@export`` flags declared beside each function
(``ops/_names.py``): the families' ``__all__``, ``numgrad.ops.METHODS`` and the Tensor methods,
the functions that take ``out=``, the in-place forms ``ops/inplace.py`` makes, the
``numgrad.ops.<name>``-only names, and the facades ``numgrad.linalg``, ``numgrad.nn.functional``
and ``numgrad.special`` (``export(linalg=, functional=, special=)``). No module lists them by
hand. (No kernel is compiled here.)"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import numgrad
from numgrad import ops
from numgrad.ops import _names

SRC = Path(numgrad.__file__).resolve().parent
# The modules whose names were once listed by hand: every op module, the factories, random, out=.
# And the namespaces that declare their own functions with export: linalg, fft, special,
# nn.functional (and its nn/functional_<concept>.py), signal.windows.
DERIVED = sorted(SRC.glob("ops/*.py")) + [SRC / "creation.py", SRC / "random.py", SRC / "_out.py",
                                         SRC / "linalg.py", SRC / "fft.py", SRC / "special.py",
                                         SRC / "signal" / "windows.py"] + \
    sorted(SRC.glob("nn/functional*.py"))
HAND_LISTS = ("METHODS", "FUNCTIONS", "RANDOM_FUNCTIONS", "ATEN_EXTRAS", "_UNARY_FORMS",
              "_MORE_FORMS", "SAME_DTYPE", "TUPLE_OUT", "NO_OVERLAP", "DTYPE_FIRST", "ANY_DTYPE",
              "LINALG", "FUNCTIONAL", "POLYNOMIALS", "NAMES", "__all__")


def _unwrapped(fn):
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def _takes_out(fn) -> bool:
    """Whether ``fn`` (numgrad's public form) has ``_out.with_out``'s form among its wrappers."""
    while fn is not None:
        if hasattr(fn, "_out_name"):
            return True
        fn = getattr(fn, "__wrapped__", None)
    return False


def _names_written(value) -> bool:
    """Whether ``value`` (an expression) writes a name as a string: an element of a list, tuple
    or set, or a dict's key."""
    for node in ast.walk(value):
        items = node.keys if isinstance(node, ast.Dict) else \
            node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else []
        if any(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
            return True
    return False


def _hand_lists(path: Path) -> list:
    """The top-level ``METHODS = (...)``, ``FUNCTIONS``, ``LINALG = {...}``, ``FUNCTIONAL`` or
    ``__all__ = [...]`` that write names in ``path`` (``__all__ += list(_LINALG)``, a list
    derived from the flags, is not one)."""
    found = []
    for node in ast.parse(path.read_text()).body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and target.id in HAND_LISTS and \
                    value is not None and _names_written(value):
                found.append(f"{path.name}:{node.lineno} {target.id}")
    return found


def test_no_module_lists_names_by_hand():
    found = [entry for path in DERIVED for entry in _hand_lists(path)]
    assert not found, ("names listed by hand (declare the flags with @export beside each "
                       f"function, ops/_names.py): {found}")


def test_the_families_lists_are_their_flags():
    """Each family's ``__all__`` is its names flagged ``function``; ``ops.__all__`` is those of
    every family in ``FAMILY_NAMES``' order; ``ops.METHODS`` maps each name flagged ``method`` to
    that family's function (a later family's wins), and Tensor has each of them."""
    every, methods = [], {}
    for family in ops.FAMILIES:
        names = _names.functions(family.__name__)
        assert list(getattr(family, "__all__", [])) == names, family.__name__
        every += names
        methods.update((n, getattr(family, n)) for n in _names.methods(family.__name__))
    assert ops.__all__ == every
    assert ops.METHODS == methods
    for name, fn in methods.items():
        assert _unwrapped(inspect.getattr_static(numgrad.Tensor, name)) is _unwrapped(fn), name
    for module in (numgrad.random, numgrad.creation):
        for name in _names.methods(module.__name__):
            assert _unwrapped(inspect.getattr_static(numgrad.Tensor, name)) is \
                _unwrapped(getattr(module, name)), name


def test_out_is_where_the_flag_says():
    """``numgrad.<name>`` takes ``out=`` for every name flagged ``out``; any other public function
    that takes it was given it by its own module (``tensordot``, ``searchsorted`` ...), and the
    ops' own functions and Tensor's methods never get it from ``_out.install``."""
    flagged = set(_names.out_names())
    assert {"add", "arange", "bernoulli", "multinomial", "kthvalue", "norm"} <= flagged
    for name in flagged:
        assert _takes_out(getattr(numgrad, name)), name
    for name in dir(numgrad):
        fn = getattr(numgrad, name)
        if name not in flagged and callable(fn) and _takes_out(fn):
            own = getattr(ops, name, None) or getattr(numgrad.random, name, None)
            assert own is not None and _takes_out(own), name
    assert not _takes_out(ops.add) and not _takes_out(inspect.getattr_static(numgrad.Tensor, "add"))


def test_inplace_forms_are_where_the_flag_says():
    """Each op flagged ``inplace`` has its form ``<name>_`` made by ``ops/inplace.py``: a Tensor
    method, and ``numgrad.<name>_`` unless flagged ``"method"``."""
    from numgrad.ops import inplace

    forms = {n: f for m in inplace._FORM_MODULES for n, f in _names.inplace_forms(m.__name__)}
    assert {"exp", "relu", "asin", "arcsin", "bitwise_left_shift", "addcdiv"} <= set(forms)
    assert forms["pow"] is False and forms["sign"] is False and forms["exp"] is True
    for name, function in forms.items():
        form = getattr(inplace, name + "_")
        assert form.__name__ == name + "_"
        assert _unwrapped(inspect.getattr_static(numgrad.Tensor, name + "_")) is form, name
        assert (name + "_" in inplace.__all__) is function, name
    flagged_elsewhere = [n for m in ops.FAMILIES if m not in inplace._FORM_MODULES
                         for n, _ in _names.inplace_forms(m.__name__)]
    assert not flagged_elsewhere  # (inplace.py makes only its _FORM_MODULES' forms)


def test_the_facades_are_their_flags():
    """``numgrad.linalg``, ``numgrad.nn.functional`` and ``numgrad.special`` give each name
    flagged ``linalg``, ``functional`` or ``special`` (the value declared, which may differ from
    the op module's own function of that name: ``linalg.norm`` is not ``numgrad.norm``), besides
    their own (``numgrad.linalg``'s ``LinAlgError`` and ``matmul``)."""
    import numgrad.linalg
    import numgrad.nn.functional
    import numgrad.special

    facades = {"linalg": numgrad.linalg, "functional": numgrad.nn.functional,
               "special": numgrad.special}
    given = {kind: {} for kind in facades}
    for table in _names.FACADES.values():
        for (kind, name), value in table.items():
            assert name not in given[kind], (kind, name)
            given[kind][name] = value
    assert {"solve", "lu", "eig", "norm", "matrix_power", "ldl_solve"} <= set(given["linalg"])
    assert {"conv2d", "pad", "one_hot", "adaptive_max_pool1d", "batch_norm", "kl_div"} <= \
        set(given["functional"])
    assert {"airy_ai", "chebyshev_polynomial_t", "modified_bessel_k1"} <= set(given["special"])
    for kind, module in facades.items():
        for name, value in given[kind].items():
            assert name in module.__all__, (kind, name)
            assert _unwrapped(getattr(module, name)) is _unwrapped(value), (kind, name)
    assert numgrad.linalg.__all__ == ["LinAlgError", "matmul", *given["linalg"]]
    special = numgrad.special  # (its own names for numgrad's ops, then the special= ones)
    assert special.__all__ == _names.functions(special.__name__) + list(given["special"])
    F = numgrad.nn.functional  # (its own functions, the ops' forms, nn/functional_*.py's)
    parts = [F.__name__] + [m for m in _names.EXPORTS if m.startswith(F.__name__ + "_")]
    assert len(parts) == 12 and sorted(F.__all__) == sorted(
        [*given["functional"], *(n for m in parts for n in _names.functions(m))])
    same = [_unwrapped(getattr(module, name)) is _unwrapped(getattr(numgrad, name))
            for module, name in ((numgrad.linalg, "norm"), (numgrad.linalg, "slogdet"),
                                 (numgrad.nn.functional, "max_pool2d"))]
    assert same == [False, True, True]


def test_aten_names_are_ops_attributes_only():
    aten = {n for m in ops.IMPORT_ORDER for n in _names.aten_names(f"numgrad.ops.{m}")}
    assert {"silu_backward", "convolution_backward", "slice", "_upsample_bilinear2d_aa"} <= aten
    for name in aten:
        assert callable(getattr(ops, name)), name
        assert name not in ops.__all__ and name not in ops.METHODS, name


def test_export_and_alias_declare_once_and_return_the_function():
    source = (
        "from numgrad.ops._names import alias, export\n"
        "@export(method=True, out=True)\n"
        "def mul(a, b): return a * b\n"
        "multiply = alias(mul, 'multiply')\n"
        "@export(function=False, method=True)\n"
        "def mul_(a, b): return a\n"
        "twice = export(lambda a: 2 * a, 'twice', aten=True)\n"
        "export(len, function=False, linalg='size')\n"
        "@export(method=True, inplace='method')\n"
        "def sq(a): return a * a\n"
    )
    namespace = {"__name__": "_export_flags_probe"}
    try:
        exec(compile(source, "<probe>", "exec"), namespace)
        assert namespace["multiply"] is namespace["mul"] and namespace["twice"](2) == 4
        assert namespace["__all__"] == ["mul", "multiply", "sq"]
        assert _names.methods("_export_flags_probe") == ["mul", "multiply", "mul_", "sq"]
        assert _names.inplace_forms("_export_flags_probe") == [("sq", False)]
        assert _names.aten_names("_export_flags_probe") == ["twice"]
        assert {"mul", "multiply"} <= set(_names.out_names())
        assert _names.FACADES["_export_flags_probe"] == {("linalg", "size"): len}
        assert "len" not in _names.EXPORTS["_export_flags_probe"]  # (a facade's value only)
        with pytest.raises(ValueError, match="exports 'mul' twice"):
            exec("export(mul)", namespace)
        again = {"__name__": "_export_flags_probe"}  # (a reload runs the module anew)
        exec(compile(source, "<probe>", "exec"), again)
        assert again["__all__"] == ["mul", "multiply", "sq"]
        assert _names.functions("_export_flags_probe") == ["mul", "multiply", "sq"]
        with pytest.raises(ValueError, match="inplace='yes'"):
            exec("export(len, 'size', inplace='yes')", again)
        with pytest.raises(ValueError, match="is not exported"):
            exec("alias(len, 'size')", again)
        with pytest.raises(ValueError, match="gives linalg.size twice"):
            exec("export(abs, function=False, linalg='size')", again)
    finally:
        _names.EXPORTS.pop("_export_flags_probe", None)
        _names.FACADES.pop("_export_flags_probe", None)
        _names._NAMESPACES.pop("_export_flags_probe", None)
