"""``numgrad.testing.assert_close`` against ``torch.testing.assert_close``: the same pass or
fail, the same exception class and the same message (PyTorch's ``torch.`` names read
``numgrad.``), for tensors, NumPy arrays, numbers and containers of them."""
import math

import numpy as np
import pytest
import torch

import numgrad

CASES = {
    "close": lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0 + 1e-6])),
    "not close": lambda m: (m.tensor([1.0, 2.0, 3.0]), m.tensor([1.0, 2.5, 3.0])),
    "2-d": lambda m: (m.tensor([[1.0, 2.0], [3, 4]]), m.tensor([[1.0, 2.0], [3, 5]])),
    "float64": lambda m: (m.tensor([1.0, 2.0], dtype=m.float64),
                          m.tensor([1.0, 2.0 + 1e-5], dtype=m.float64)),
    "integers": lambda m: (m.tensor([1, 2]), m.tensor([1, 3])),
    "bools": lambda m: (m.tensor([True, False]), m.tensor([True, True])),
    "zero expected": lambda m: (m.tensor([1.0, 0.0]), m.tensor([1.0, 1.0])),
    "nan": lambda m: (m.tensor([1.0, math.nan]), m.tensor([1.0, math.nan])),
    "inf": lambda m: (m.tensor([math.inf, -math.inf]), m.tensor([math.inf, -math.inf])),
    "0-d": lambda m: (m.tensor(1.0), m.tensor(2.0)),
    "dtype": lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0], dtype=m.float64)),
    "shape": lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0, 3.0])),
    "numbers": lambda m: (1.0, 1.1),
    "equal ints": lambda m: (3, 3),
    "ints": lambda m: (1, 2),
    "list": lambda m: ([m.tensor(1.0)], [m.tensor(2.0)]),
    "dict": lambda m: ({"a": m.tensor(1.0)}, {"a": m.tensor(2.0)}),
    "lengths": lambda m: ([m.tensor(1.0)], [m.tensor(1.0), m.tensor(2.0)]),
    "tensor and list": lambda m: (m.tensor([1.0, 2.0]), [1.0, 2.0]),
    "numpy": lambda m: (np.array([1.0, 2.0]), np.array([1.0, 2.5])),
}
OPTIONS = {
    "defaults": {}, "tolerances": dict(rtol=0.1, atol=0.0), "equal_nan": dict(equal_nan=True),
    "no dtype check": dict(check_dtype=False), "rtol alone": dict(rtol=0.1),
}


def _outcome(m, case, options):
    try:
        m.testing.assert_close(*case(m), **options)
    except Exception as e:  # noqa: BLE001 (the class is compared)
        return type(e), str(e).replace("torch.", "numgrad.")
    return None


@pytest.mark.parametrize("options", list(OPTIONS.values()), ids=list(OPTIONS))
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_assert_close_passes_and_fails_as_pytorch(case, options):
    assert _outcome(numgrad, case, options) == _outcome(torch, case, options)


def test_a_custom_message_replaces_pytorchs():
    for m in (numgrad, torch):
        with pytest.raises(AssertionError, match="^custom$"):
            m.testing.assert_close(m.tensor([1.0]), m.tensor([2.0]), msg="custom")
