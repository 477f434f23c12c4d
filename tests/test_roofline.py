"""benchmarks/roofline.py counts the matrix products of a step (issue 29's bound on what a
compiled step can reach): each product of the forward and the backward, once."""
import importlib.util
import pathlib

import numpy as np

import numgrad as ng

HERE = pathlib.Path(__file__).parent


def _roofline():
    path = HERE.parent / "benchmarks" / "roofline.py"
    spec = importlib.util.spec_from_file_location("roofline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_products_of_a_linear_layer_and_a_batched_product_are_counted_once():
    roofline = _roofline()
    x = ng.randn(3, 8)  # (no gradient: only the weight's product in the backward)
    lin = ng.nn.Linear(8, 4)
    a, b = ng.randn(2, 5, 3, requires_grad=True), ng.randn(2, 3, 6, requires_grad=True)
    weights = ng.randn(3, 4)  # (a gradient that is not one number: real products)
    with roofline.Products() as products:
        (lin(x) * weights).sum().backward()
        ((a @ b) * ng.randn(2, 5, 6)).sum().backward()
    assert sorted(products.calls) == sorted([
        (1, 3, 8, 4, np.dtype(np.float32)),  # x @ w.T
        (1, 4, 3, 8, np.dtype(np.float32)),  # grad.T @ x
        (2, 5, 3, 6, np.dtype(np.float32)), (2, 5, 6, 3, np.dtype(np.float32)),
        (2, 3, 5, 6, np.dtype(np.float32))])
    assert products.flops == 2 * (3 * 8 * 4 + 4 * 3 * 8) + 2 * 2 * 3 * (5 * 3 * 6)
    assert np.matmul is products._saved[0]  # (numpy's functions back after the block)


def test_the_time_inside_products_is_the_union_of_their_calls_intervals():
    roofline = _roofline()
    assert roofline.covered([]) == 0.0
    # (overlapping calls on two threads count once; a call inside another adds nothing)
    assert roofline.covered([(5.0, 6.0), (0.0, 2.0), (1.0, 3.0), (1.5, 1.7)]) == 4.0
    with roofline.Products() as products:
        ng.randn(4, 5) @ ng.randn(5, 6)
    assert len(products.intervals) == len(products.calls) == 1
    (start, end), = products.intervals
    assert 0.0 <= end - start == roofline.covered(products.intervals)
