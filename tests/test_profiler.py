"""``autograd.profiler``: every op and backward node timed under PyTorch's names, averaged in
PyTorch's table, and nothing left wrapped (or timed) outside a profile block."""
import torch

import numgrad
from numgrad.ops.elementwise import Mul


def _profile(m):
    x = m.ones(4, 4, requires_grad=True)
    with m.autograd.profiler.profile(use_cuda=False) as prof:
        with m.autograd.profiler.record_function("my_block"):
            y = (x * 2).sum()
        y.backward()
    return prof


def test_ops_nodes_and_ranges_are_counted_under_pytorch_names():
    ours = {e.key: e.count for e in _profile(numgrad).key_averages()}
    theirs = {e.key: e.count for e in _profile(torch).key_averages()}
    for name in ("my_block", "aten::sum", "MulBackward0", "SumBackward0"):
        assert ours[name] == theirs[name], name
    # (PyTorch's MulBackward0 runs a second aten::mul; numgrad's formula calls the kernel)
    assert ours["aten::mul"] == 1 and theirs["aten::mul"] == 2
    assert set(ours) <= set(theirs)


def test_table_has_pytorch_columns_and_times_nest():
    prof = _profile(numgrad)
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    header = [line for line in table.splitlines() if "Name" in line][0].split("  ")
    assert [h.strip() for h in header if h.strip()] == [
        "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    assert "Self CPU time total:" in table
    events = {e.key: e for e in prof.key_averages()}
    block = events["my_block"]
    assert block.cpu_time_total >= events["aten::mul"].cpu_time_total
    assert block.self_cpu_time_total <= block.cpu_time_total
    assert str(prof) == prof.table()


def test_nothing_stays_wrapped_after_the_block():
    forward, backward = Mul.forward, Mul.backward
    with numgrad.autograd.profiler.profile():
        assert Mul.forward is not forward
    # (equal, not identical: a formula op's forward is a classmethod, bound anew on each read)
    assert Mul.forward == forward and Mul.backward == backward
    assert numgrad.mul(numgrad.tensor([2.0]), 3).tolist() == [6.0]


def test_a_profile_never_entered_has_no_events_as_pytorch():
    for m in (numgrad, torch):
        assert len(m.autograd.profiler.profile().key_averages()) == 0
