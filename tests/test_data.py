"""numgrad.utils.data against torch.utils.data: default collation (structure, dtypes, shapes,
values), DataLoader lengths and batches, samplers, random_split's lengths, the datasets, and the
error messages; and the shuffling's reproducibility under numgrad's generator (the permutations
themselves are not PyTorch's, by design)."""
import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as TD

import numgrad
from numgrad.utils import data as D

Point = collections.namedtuple("Point", "x y")


def _to_torch(x):
    """A sample's numgrad tensors as torch tensors (containers rebuilt alike)."""
    if isinstance(x, numgrad.Tensor):
        return torch.from_numpy(x.detach().numpy().copy())
    if isinstance(x, Point):
        return Point(*(_to_torch(v) for v in x))
    if isinstance(x, dict):
        return type(x)((k, _to_torch(v)) for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(v) for v in x)
    return x


def _describe(x):
    """A comparable picture of a batch: container types, and each tensor's dtype, shape, values."""
    if isinstance(x, (numgrad.Tensor, torch.Tensor)):
        return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist())
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, [(k, _describe(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_describe(v) for v in x])
    return (type(x).__name__, x)


def _same_error(ours, theirs):
    """Both calls raise the same exception class with the same message."""
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    assert str(got.value) == str(want.value)


def test_import_paths():
    from numgrad.utils.data import DataLoader, TensorDataset

    assert numgrad.utils.data.DataLoader is DataLoader
    assert numgrad.utils.data.TensorDataset is TensorDataset
    assert numgrad.utils.data.dataloader.default_collate is D.default_collate
    assert numgrad.utils.data.dataset.Subset is D.Subset
    assert numgrad.utils.data.sampler.RandomSampler is D.RandomSampler
    assert D.get_worker_info() is None and TD.get_worker_info() is None


BATCHES = {
    "tensors": [numgrad.tensor([1.0, 2.0]), numgrad.tensor([3.0, 4.0])],
    "int_tensors": [numgrad.tensor([[1, 2]], dtype=numgrad.int32)] * 3,
    "zero_d": [numgrad.tensor(1.5), numgrad.tensor(2.5)],
    "floats": [1.5, 2.5, -3.0],
    "ints": [1, 2, 3],
    "bools": [True, False],
    "np_float32": [np.float32(1), np.float32(2)],
    "np_float64": [np.float64(1), np.float64(2)],
    "np_int32": [np.int32(1), np.int32(3)],
    "np_bool": [np.bool_(True), np.bool_(False)],
    "np_arrays": [np.array([1, 2]), np.array([3, 4])],
    "np_float32_arrays": [np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)],
    "tuples": [(numgrad.tensor([1.0]), 1, "a"), (numgrad.tensor([2.0]), 2, "b")],
    "lists": [[1, 2.0], [3, 4.0]],
    "dicts": [{"x": numgrad.tensor([1.0, 2.0]), "y": 1, "z": [1.0, 2.0]},
              {"x": numgrad.tensor([3.0, 4.0]), "y": 2, "z": [3.0, 4.0]}],
    "ordered_dicts": [collections.OrderedDict(b=1, a=2.0), collections.OrderedDict(b=3, a=4.0)],
    "nested": [{"a": (numgrad.tensor(1), {"b": [np.float32(1)]})},
               {"a": (numgrad.tensor(2), {"b": [np.float32(2)]})}],
    "namedtuples": [Point(numgrad.tensor([1.0]), 1), Point(numgrad.tensor([2.0]), 2)],
    "strings": ["a", "bc"],
    "bytes": [b"a", b"b"],
}


@pytest.mark.parametrize("name", BATCHES)
def test_default_collate_matches_torch(name):
    batch = BATCHES[name]
    ours = D.default_collate(batch)
    theirs = TD.default_collate(_to_torch(batch))
    assert _describe(ours) == _describe(theirs)
    if name == "namedtuples":
        assert type(ours) is Point


@pytest.mark.parametrize("sample", [
    np.array([1.0, 2.0]), np.float32(3), (np.int32(1), [np.array([1, 2])]),
    {"a": np.array([1, 2], np.int32), "b": "s"}, Point(np.float64(1), 2), "text", 3, 2.5,
    np.array(["a", "b"]),
])
def test_default_convert_matches_torch(sample):
    assert _describe(D.default_convert(sample)) == _describe(TD.default_convert(sample))


def test_default_collate_errors_match_torch():
    _same_error(lambda: D.default_collate([[1, 2], [3]]),
                lambda: TD.default_collate([[1, 2], [3]]))
    _same_error(lambda: D.default_collate([object()]), lambda: TD.default_collate([object()]))
    strings = [np.array(["a"]), np.array(["b"])]
    _same_error(lambda: D.default_collate(strings), lambda: TD.default_collate(strings))
    _same_error(lambda: D.default_collate([numgrad.zeros(2), numgrad.zeros(3)]),
                lambda: TD.default_collate([torch.zeros(2), torch.zeros(3)]))


def _datasets(n, features=3):
    x = np.arange(n * features, dtype=np.float32).reshape(n, features)
    y = np.arange(n) % 3
    ours = D.TensorDataset(numgrad.tensor(x), numgrad.tensor(y))
    theirs = TD.TensorDataset(torch.tensor(x), torch.tensor(y))
    return ours, theirs


@pytest.mark.parametrize("n", [1, 7, 10])
@pytest.mark.parametrize("batch_size", [1, 3, 5, 10, 12, None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_loader_batches_match_torch(n, batch_size, drop_last):
    if batch_size is None and drop_last:
        return
    ours, theirs = _datasets(n)
    a = D.DataLoader(ours, batch_size=batch_size, drop_last=drop_last)
    b = TD.DataLoader(theirs, batch_size=batch_size, drop_last=drop_last)
    assert len(a) == len(b)
    got, want = [_describe(x) for x in a], [_describe(x) for x in b]
    assert got == want and len(got) == len(a)
    it = iter(a)
    assert iter(it) is it and len(it) == len(a)
    if len(a):
        assert _describe(next(it)) == want[0]


def test_loader_defaults_and_attributes_match_torch():
    ours, theirs = _datasets(4)
    a, b = D.DataLoader(ours), TD.DataLoader(theirs)
    for name in ("batch_size", "drop_last", "num_workers", "pin_memory", "timeout",
                 "prefetch_factor", "persistent_workers", "generator", "worker_init_fn"):
        assert getattr(a, name) == getattr(b, name), name
    assert type(a.sampler).__name__ == type(b.sampler).__name__ == "SequentialSampler"
    assert type(a.batch_sampler).__name__ == "BatchSampler"
    assert a.collate_fn is D.default_collate
    assert D.DataLoader(ours, batch_size=None).collate_fn is D.default_convert
    assert type(D.DataLoader(ours, shuffle=True).sampler).__name__ == "RandomSampler"
    assert a.dataset is ours and len(a.dataset) == 4
    _same_error(lambda: setattr(a, "batch_size", 2), lambda: setattr(b, "batch_size", 2))


def _epoch(loader):
    return [y.tolist() for _, y in loader]


def _indexed(n):
    return D.TensorDataset(numgrad.arange(n), numgrad.arange(n))


def test_shuffle_is_seeded_by_manual_seed_and_reshuffles_each_epoch():
    ds = _indexed(20)
    numgrad.manual_seed(123)
    loader = D.DataLoader(ds, batch_size=6, shuffle=True)
    first, second = _epoch(loader), _epoch(loader)
    numgrad.manual_seed(123)
    again = D.DataLoader(ds, batch_size=6, shuffle=True)
    assert _epoch(again) == first and _epoch(again) == second
    assert first != second  # a new order every epoch
    for epoch in (first, second):
        assert [len(b) for b in epoch] == [6, 6, 6, 2]
        assert sorted(i for batch in epoch for i in batch) == list(range(20))
    numgrad.manual_seed(124)
    assert _epoch(D.DataLoader(ds, batch_size=6, shuffle=True)) != first


def test_shuffle_with_a_generator_ignores_the_global_seed():
    ds = _indexed(15)

    def run(global_seed):
        numgrad.manual_seed(global_seed)
        loader = D.DataLoader(ds, batch_size=4, shuffle=True, drop_last=True,
                              generator=np.random.default_rng(7))
        return _epoch(loader), _epoch(loader)

    (a1, a2), (b1, b2) = run(0), run(1)
    assert (a1, a2) == (b1, b2) and a1 != a2
    assert [len(b) for b in a1] == [4, 4, 4]
    Generator = getattr(numgrad, "Generator", None)
    if Generator is not None:  # numgrad's own generator objects, where numgrad has them
        g1, g2 = Generator(), Generator()
        g1.manual_seed(5)
        g2.manual_seed(5)
        assert (_epoch(D.DataLoader(ds, batch_size=4, shuffle=True, generator=g1))
                == _epoch(D.DataLoader(ds, batch_size=4, shuffle=True, generator=g2)))


def test_samplers_match_torch():
    data = list(range(10))
    assert list(D.SequentialSampler(data)) == list(TD.SequentialSampler(data))
    for bs in (1, 3, 4, 10, 11):
        for drop in (False, True):
            a = D.BatchSampler(D.SequentialSampler(data), bs, drop)
            b = TD.BatchSampler(TD.SequentialSampler(data), bs, drop)
            assert list(a) == list(b) and len(a) == len(b)
    for kwargs in ({}, {"num_samples": 25}, {"num_samples": 4}, {"replacement": True},
                   {"replacement": True, "num_samples": 40}):
        numgrad.manual_seed(0)
        a, b = D.RandomSampler(data, **kwargs), TD.RandomSampler(data, **kwargs)
        drawn = list(a)
        assert len(a) == len(b) == len(drawn) == len(list(b))
        assert all(0 <= i < 10 for i in drawn)
        if not kwargs.get("replacement"):
            counts = collections.Counter(drawn)
            assert max(counts.values()) - min(counts.values()) <= 1
    sub = D.SubsetRandomSampler([3, 5, 7], generator=np.random.default_rng(0))
    assert sorted(sub) == [3, 5, 7] and len(sub) == 3


@pytest.mark.parametrize("call", [
    lambda m: m.BatchSampler(range(3), 0, False),
    lambda m: m.BatchSampler(range(3), True, False),
    lambda m: m.BatchSampler(range(3), 2, 1),
    lambda m: m.RandomSampler(range(3), replacement=1),
    lambda m: m.RandomSampler(range(3), num_samples=0),
    lambda m: m.TensorDataset(*(
        (numgrad.zeros(2), numgrad.zeros(3)) if m is D else (torch.zeros(2), torch.zeros(3)))),
    lambda m: m.ConcatDataset([]),
    lambda m: m.Dataset()[0],
])
def test_dataset_and_sampler_errors_match_torch(call):
    _same_error(lambda: call(D), lambda: call(TD))


@pytest.mark.parametrize("kwargs", [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(persistent_workers=True), dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], drop_last=True), dict(batch_size=None, drop_last=True),
    dict(batch_size=0), dict(batch_size=-1),
])
def test_loader_errors_match_torch(kwargs):
    ours, theirs = _datasets(4)
    _same_error(lambda: D.DataLoader(ours, **kwargs), lambda: TD.DataLoader(theirs, **kwargs))


class _Stream(D.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(numgrad.tensor([float(i), 2.0 * i]) for i in range(self.n))

    def __len__(self):
        return self.n


class _TorchStream(TD.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(torch.tensor([float(i), 2.0 * i]) for i in range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("batch_size", [1, 3, 4, None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_matches_torch(batch_size, drop_last):
    if batch_size is None and drop_last:
        return
    a = D.DataLoader(_Stream(7), batch_size=batch_size, drop_last=drop_last)
    b = TD.DataLoader(_TorchStream(7), batch_size=batch_size, drop_last=drop_last)
    assert len(a) == len(b)
    assert [_describe(x) for x in a] == [_describe(x) for x in b]
    _same_error(lambda: D.DataLoader(_Stream(2), shuffle=True),
                lambda: TD.DataLoader(_TorchStream(2), shuffle=True))
    chained = D.ChainDataset([_Stream(2), _Stream(3)])
    assert len(chained) == 5 and len(list(chained)) == 5


def test_concat_and_subset_match_torch():
    ours, theirs = _datasets(5)
    ours2, theirs2 = _datasets(3, features=3)
    a, b = ours + ours2, theirs + theirs2
    assert type(a).__name__ == "ConcatDataset" and len(a) == len(b) == 8
    assert a.cumulative_sizes == b.cumulative_sizes
    for i in (0, 4, 5, 7, -1, -8):
        assert _describe(a[i]) == _describe(b[i])
    _same_error(lambda: a[-9], lambda: b[-9])
    sa, sb = D.Subset(ours, [4, 0, 2]), TD.Subset(theirs, [4, 0, 2])
    assert len(sa) == len(sb) == 3 and _describe(sa[0]) == _describe(sb[0])
    assert _describe(list(D.DataLoader(sa, batch_size=2))) == _describe(
        list(TD.DataLoader(sb, batch_size=2)))


class _Counting(D.Dataset):
    """A dataset with a batched read (``__getitems__``), which the loader uses."""

    def __init__(self):
        self.calls = []

    def __getitem__(self, i):
        return i

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [numgrad.tensor(i) for i in indices]

    def __len__(self):
        return 5


def test_getitems_and_custom_collate():
    ds = _Counting()
    batches = [b.tolist() for b in D.DataLoader(ds, batch_size=2)]
    assert batches == [[0, 1], [2, 3], [4]] and ds.calls == batches
    assert list(D.DataLoader(D.Subset(ds, [4, 3]), batch_size=2, collate_fn=len)) == [2]
    assert ds.calls[-1] == [4, 3]
    dicts = [{"a": i, "b": float(i)} for i in range(5)]
    got = list(D.DataLoader(dicts, batch_size=2, collate_fn=lambda b: [d["a"] for d in b]))
    assert got == [[0, 1], [2, 3], [4]]
    loaded = next(iter(D.DataLoader(dicts, batch_size=5)))
    assert loaded["a"].dtype == numgrad.int64 and loaded["b"].dtype == numgrad.float64


@pytest.mark.parametrize("n,lengths", [
    (10, [3, 7]), (10, [0.3, 0.7]), (30, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]),
    (5, [1 / 3, 1 / 3, 1 / 3]), (4, [0.5, 0.5, 0.0]),
])
def test_random_split_lengths_match_torch(n, lengths):
    with warnings.catch_warnings(record=True) as ours_w:
        warnings.simplefilter("always")
        ours = D.random_split(range(n), lengths, generator=np.random.default_rng(0))
    with warnings.catch_warnings(record=True) as theirs_w:
        warnings.simplefilter("always")
        theirs = TD.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert [str(w.message) for w in ours_w] == [str(w.message) for w in theirs_w]
    assert all(type(s) is D.Subset for s in ours)
    assert sorted(i for s in ours for i in s) == list(range(n))


def test_random_split_is_seeded():
    numgrad.manual_seed(3)
    a = [list(s) for s in D.random_split(range(12), [5, 7])]
    numgrad.manual_seed(3)
    b = [list(s) for s in D.random_split(range(12), [5, 7])]
    c = [list(s) for s in D.random_split(range(12), [5, 7])]
    assert a == b and a != c
    g = [list(s) for s in D.random_split(range(12), [0.5, 0.5], generator=np.random.default_rng(1))]
    h = [list(s) for s in D.random_split(range(12), [0.5, 0.5], generator=np.random.default_rng(1))]
    assert g == h


@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [1.2, -0.2], [11]])
def test_random_split_errors_match_torch(lengths):
    _same_error(lambda: D.random_split(range(10), lengths),
                lambda: TD.random_split(range(10), lengths))


def test_num_workers_runs_in_process():
    ds = _indexed(9)
    with pytest.warns(UserWarning, match="loads data in the main process: num_workers=2"):
        loader = D.DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True,
                              pin_memory=True, worker_init_fn=lambda i: 1 / 0)
    assert loader.prefetch_factor == 2
    assert _epoch(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]


def test_training_loop_with_a_loader():
    """A tutorial's loop: a shuffled loader over a TensorDataset drives SGD; the loss falls."""
    numgrad.manual_seed(0)
    x = numgrad.randn(64, 2)
    y = (x[:, 0] - 2 * x[:, 1]).reshape(-1, 1)
    model = numgrad.nn.Linear(2, 1)
    opt = numgrad.optim.SGD(model.parameters(), lr=0.1)
    loader = D.DataLoader(D.TensorDataset(x, y), batch_size=16, shuffle=True)
    losses = []
    for _ in range(5):
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = numgrad.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item()
        losses.append(total)
    assert losses[-1] < 0.1 * losses[0]
