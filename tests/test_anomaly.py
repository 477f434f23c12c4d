"""Anomaly detection (``set_detect_anomaly``, ``detect_anomaly``) against PyTorch: the same program
run in both must raise the same error and warn with the same forward traceback."""
import threading
import warnings

import numpy as np
import pytest
import torch

import numgrad as ng

TORCH_SUFFIX = " (Triggered internally at"  # what PyTorch's C++ warnings append


@pytest.fixture(autouse=True)
def _anomaly_off():
    yield
    ng.autograd.set_detect_anomaly(False)
    torch.autograd.set_detect_anomaly(False)


def _is_enabled(m):
    return (m.autograd.is_anomaly_enabled(), m.autograd.is_anomaly_check_nan_enabled()) if m is ng \
        else (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())


def _run(program, m):
    """``program(m)``'s error (type, message) or None, and the warnings it raised (texts)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = program(m)
            error = None
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            result, error = None, (type(e), str(e))
    texts = [str(w.message).split(TORCH_SUFFIX)[0].rstrip() for w in caught]
    return result, error, texts


def _both(program):
    """The same program in numgrad and in torch, called from one line (so the stacks match)."""
    return [_run(program, m) for m in (ng, torch)]


def _np(t):
    return np.array(t.detach().tolist(), dtype=np.float64)


# --------------------------------------------------------------------------- switching it
def test_set_detect_anomaly_as_function_and_context_manager():
    def program(m):
        states = [_is_enabled(m)]
        m.autograd.set_detect_anomaly(True)
        states.append(_is_enabled(m))
        with m.autograd.set_detect_anomaly(False):
            states.append(_is_enabled(m))
            with m.autograd.set_detect_anomaly(True, check_nan=False):
                states.append(_is_enabled(m))
            states.append(_is_enabled(m))
        states.append(_is_enabled(m))
        m.autograd.set_detect_anomaly(False)
        states.append(_is_enabled(m))
        return states

    (ours, _, _), (theirs, _, _) = _both(program)
    assert ours == theirs
    assert ours == [(False, True), (True, True), (False, True), (True, False), (False, True),
                    (True, True), (False, True)]


def test_detect_anomaly_warns_and_restores():
    def program(m):
        states = []
        with m.autograd.detect_anomaly():
            states.append(_is_enabled(m))
            with m.autograd.detect_anomaly(check_nan=False):
                states.append(_is_enabled(m))
            states.append(_is_enabled(m))
        states.append(_is_enabled(m))
        return states

    (ours, _, warned), (theirs, _, twarned) = _both(program)
    assert ours == theirs == [(True, True), (True, False), (True, True), (False, True)]
    assert warned == twarned == ["Anomaly Detection has been enabled. This mode will increase "
                                 "the runtime and should only be enabled for debugging."] * 2


def test_anomaly_mode_is_process_wide():
    ng.autograd.set_detect_anomaly(True)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(ng.autograd.is_anomaly_enabled()))
    thread.start()
    thread.join(10)
    assert seen == [True]


# --------------------------------------------------------------------------- NaN in backward
def _sqrt_of_zero_times_zero(m, leaves=None):
    x = m.tensor([0.0, 1.0], requires_grad=True)
    w = m.tensor([2.0, 3.0], requires_grad=True)
    if leaves is not None:
        leaves += [x, w]
    with m.autograd.detect_anomaly():
        s = x.sqrt()
        out = (s * 0).sum() + (w * w).sum()
        out.backward()


def test_nan_in_backward_names_the_op_and_shows_the_forward_trace():
    (_, error, warned), (_, terror, twarned) = _both(_sqrt_of_zero_times_zero)
    assert error == terror == (
        RuntimeError, "Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert warned[0] == twarned[0]  # "Anomaly Detection has been enabled. …"
    assert warned[1] == twarned[1]  # the same traceback, frame for frame
    head = "Error detected in SqrtBackward0. Traceback of forward call that caused the error:\n"
    assert warned[1].startswith(head)
    assert warned[1].endswith(f'File "{__file__}", line {_line_of("s = x.sqrt()")}, in '
                              "_sqrt_of_zero_times_zero\n    s = x.sqrt()")
    assert len(warned) == 2


def test_nothing_is_written_when_backward_finds_nan():
    leaves = []
    _, error, _ = _run(lambda m: _sqrt_of_zero_times_zero(m, leaves), ng)
    assert error[0] is RuntimeError
    x, w = leaves
    assert x.grad is None and w.grad is None  # w's gradient was computed, but never written


def test_without_anomaly_mode_nan_flows_and_nothing_is_recorded():
    def program(m):
        x = m.tensor([0.0, 1.0], requires_grad=True)
        s = x.sqrt()
        (s * 0).sum().backward()
        return x.grad.tolist(), s.grad_fn

    (grad, node, ), error, warned = _run(program, ng)
    (tgrad, _), terror, twarned = _run(program, torch)
    assert error is terror is None and warned == twarned == []
    np.testing.assert_array_equal(grad, tgrad)
    assert np.isnan(grad[0]) and grad[1] == 0.0
    assert not hasattr(node, "_anomaly")  # no stack taken when the mode is off


def test_check_nan_false_lets_nan_through():
    def program(m):
        x = m.tensor([0.0, 1.0], requires_grad=True)
        with m.autograd.set_detect_anomaly(True, check_nan=False):
            (x.sqrt() * 0).sum().backward()
        return x.grad.tolist()

    (ours, error, warned), (theirs, terror, twarned) = _both(program)
    assert error is terror is None and warned == twarned == []
    np.testing.assert_array_equal(ours, theirs)


def test_a_nan_seed_is_caught_at_the_first_node():
    def program(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        with m.autograd.set_detect_anomaly(True):
            y = x * 2
            y.backward(m.tensor([float("nan"), 1.0]))

    (_, error, warned), (_, terror, twarned) = _both(program)
    assert error == terror == (
        RuntimeError, "Function 'MulBackward0' returned nan values in its 0th output.")
    assert warned == twarned


# --------------------------------------------------------------------------- custom Functions
def _make_sqrt(m):
    """sqrt with its backward written in tensor ops (recorded under create_graph)."""

    class MySqrt(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.sqrt()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad / (2 * y)

    return MySqrt


def test_custom_function_returning_nan_is_named():
    def program(m):
        x = m.tensor([0.0, 4.0], requires_grad=True)
        with m.autograd.set_detect_anomaly(True):
            y = _make_sqrt(m).apply(x)
            (y * 0).sum().backward()

    (_, error, warned), (_, terror, twarned) = _both(program)
    assert error == terror == (
        RuntimeError, "Function 'MySqrtBackward' returned nan values in its 0th output.")
    head = "Error detected in MySqrtBackward. Traceback of forward call that caused the error:\n"
    assert warned[0].startswith(head) and twarned[0].startswith(head)
    assert warned[0].endswith("    y = _make_sqrt(m).apply(x)")
    assert "    y = _make_sqrt(m).apply(x)" in twarned[0]  # torch adds its function.py frame


def test_nodes_recorded_by_a_backward_name_their_parent():
    """create_graph=True: the nodes MySqrt's backward records remember it as their parent; the
    second backward fails in one of them, and the trace of the parent follows."""

    def program(m):
        with m.autograd.set_detect_anomaly(True):
            x = m.tensor([0.0, 4.0], requires_grad=True)
            y = _make_sqrt(m).apply(x)
            (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
            (g * 0).sum().backward()

    (_, error, warned), (_, terror, twarned) = _both(program)
    assert error == terror == (
        RuntimeError, "Function 'DivBackward0' returned nan values in its 1th output.")
    assert len(warned) == len(twarned) == 2
    assert warned[0].startswith("Error detected in DivBackward0. Traceback of forward call that "
                                "caused the error:\n")
    assert "(g,) = m.autograd.grad(y.sum(), x, create_graph=True)" in warned[0]
    parent = ("\n\nPrevious calculation was induced by MySqrtBackward. Traceback of forward call "
              "that induced the previous calculation:\n")
    assert warned[1].startswith(parent) and twarned[1].startswith(parent)
    assert warned[1].endswith("    y = _make_sqrt(m).apply(x)")


def test_any_error_in_backward_shows_the_forward_trace():
    def program(m):
        class Fails(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                raise ValueError("Some error in backward")

        x = m.tensor([1.0], requires_grad=True)
        with m.autograd.set_detect_anomaly(True):
            a, b = Fails.apply(x)
            a.sum().backward()

    (_, error, warned), (_, terror, twarned) = _both(program)
    assert error == terror == (ValueError, "Some error in backward")
    assert warned[0].startswith("Error detected in FailsBackward. Traceback of forward call that "
                                "caused the error:\n")
    assert warned[0].endswith("    a, b = Fails.apply(x)")
    assert twarned[0].startswith("Error detected in FailsBackward.")


def test_a_modified_saved_tensor_shows_the_trace_and_torchs_hint():
    def program(m):
        class Cube(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 3 * grad * x * x

        a = m.tensor([1.0, 2.0], requires_grad=True)
        with m.autograd.set_detect_anomaly(True):
            b = a * 1
            c = Cube.apply(b)
            with m.no_grad():
                b.mul_(2)
            c.sum().backward()

    (_, error, warned), (_, terror, twarned) = _both(program)
    hint = ("Hint: the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good luck!")
    assert error[0] is terror[0] is RuntimeError
    assert error[1].endswith(hint) and terror[1].endswith(hint)
    assert "is at version 1; expected version 0 instead." in error[1]
    assert warned[0].startswith("Error detected in CubeBackward. Traceback of forward call that "
                                "caused the error:\n")
    assert warned[0].endswith("    c = Cube.apply(b)")
    assert twarned[0].startswith("Error detected in CubeBackward.")


def test_hint_without_anomaly_mode_matches_torch():
    def program(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        b = a * 1
        c = b.sqrt()  # saves its output
        with m.no_grad():
            c.mul_(2)
        c.sum().backward()

    (_, error, _), (_, terror, _) = _both(program)
    hint = ("Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with {}.autograd.set_detect_anomaly(True, check_nan=False).")
    assert error[1].endswith(hint.format("numgrad")) and terror[1].endswith(hint.format("torch"))


def _line_of(text: str) -> int:
    with open(__file__) as f:
        for number, line in enumerate(f, 1):
            if line.strip() == text:
                return number
    raise AssertionError(text)
