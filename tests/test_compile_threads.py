"""A compiled program that also calls kernels (a matrix product) runs its large fused loops on
numgrad's worker threads (``compiler/lower.py``, ``threads_variant``): the loops in their order,
each split loop's chunks as one job's parts, the statements between them on the calling thread.
The values are eager's, bit for bit, and Numba's own threads are never started (the subprocess
probe in test_cache_and_threads.py)."""
import numpy as np

import numgrad
from numgrad.compiler import lower
from numgrad.kernels.cpu import _workers
from numgrad.kernels.cpu.elementwise import PARALLEL_THRESHOLD


def _model_and_step(optimizer):
    numgrad.manual_seed(0)
    lin = numgrad.nn.Linear(64, 64)
    x = numgrad.randn(PARALLEL_THRESHOLD // 64, 64)  # (activations of a split loop's size)
    opt = optimizer(lin.parameters())

    def step():
        opt.zero_grad()
        loss = (numgrad.tanh(lin(x)) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return lin, step


def test_an_adam_step_with_large_activations_is_eagers_to_the_bit_and_uses_the_worker_threads(
        monkeypatch):
    parts = []
    run = _workers.run

    def counting(items, work, threads, blas=True):
        if getattr(work, "__qualname__", "").startswith("run_parts"):
            parts.append(len(items))
        return run(items, work, threads, blas)

    monkeypatch.setattr(_workers, "run", counting)
    adam = lambda params: numgrad.optim.Adam(params, lr=1e-2)  # noqa: E731
    eager_model, eager_step = _model_and_step(adam)
    model, step = _model_and_step(adam)
    compiled = numgrad.compile(step)
    for _ in range(4):
        assert eager_step().item() == compiled().item()
    for ours, theirs in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert "replayed" in numgrad.compiler.explain(compiled)
    assert parts and all(n == _workers.count() for n in parts)  # (its split loops' chunks)


def test_a_local_value_shared_between_the_cut_functions_keeps_the_function_whole():
    # (``threads_variant`` cuts a split function at its split loops; a top-level name that one
    # part sets and another reads would be lost, so then there is no variant)
    segment = lower.CpuSegment.__new__(lower.CpuSegment)
    segment.function = "segment0"
    segment.code = lower._Code()
    segment.code.lines = [
        "def segment0(in0, chunks):",
        "    r1 = np.empty(8, np.float32)",
        "    t5 = in0[0] * 2",
        "    " + lower._SPLIT,
        "    for c in prange(chunks):",
        "        r1[c] = t5",
        "    " + lower._SPLIT_END,
        "    return (r1,)",
    ]
    assert segment.threads_variant('cache=True') == ""
    segment.code.lines[2] = "    r1[:] = 0"
    segment.code.lines[5] = "        r1[c] = in0[c]"
    text = segment.threads_variant('cache=True')
    assert "def segment0_w0(r1):" in text and "def segment0_w1(in0, r1, chunks, part):" in text
    assert "    _run_parts(segment0_w1, (in0, r1,), chunks)" in text
    assert "for c in range(part, part + 1):" in text and "prange" not in text
