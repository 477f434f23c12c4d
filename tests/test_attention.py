"""numgrad's attention against PyTorch's: ``F.scaled_dot_product_attention`` (bool and float
``attn_mask``, ``is_causal``, ``scale``, ``enable_gqa``, ``dropout_p``, fully masked rows),
``nn.MultiheadAttention`` (``batch_first``, ``bias``, ``add_bias_kv``, ``add_zero_attn``,
``kdim``/``vdim``, ``need_weights``, ``average_attn_weights``, ``key_padding_mask``,
``attn_mask``, ``is_causal``, unbatched inputs), ``nn.TransformerEncoderLayer``/
``TransformerEncoder``, ``nn.TransformerDecoderLayer``/``TransformerDecoder`` and
``nn.Transformer`` (``norm_first``, ``activation``, ``batch_first``, masks,
``generate_square_subsequent_mask``).

Each PyTorch module is built with a seed and its ``state_dict`` loaded into numgrad's; outputs
and the gradients of every parameter and input must equal PyTorch's (float64 to 1e-10,
float32 to PyTorch's tolerance), in train mode (dropout 0) and eval mode. Also: parameter
names, repr, warnings and errors with PyTorch's messages, and gradchecks."""
import warnings

import numpy as np
import pytest
import torch

import numgrad
import numgrad.nn.functional as F
from numgrad import nn
from numgrad.autograd import gradcheck, gradgradcheck

TF = torch.nn.functional
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1.3e-6, atol=1e-5)}
E, HEADS = 8, 2


def _close(ours, theirs, dtype="float64", what=""):
    assert tuple(ours.shape) == tuple(theirs.shape), what
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), err_msg=what,
                               **TOL[dtype])


def _pair(array, requires_grad=True):
    return (numgrad.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _pairs(rng, dtype, *shapes):
    return [_pair(rng.normal(size=s).astype(dtype)) for s in shapes]


def _same_error(ours, theirs):
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    assert str(got.value) == str(want.value).replace("torch.", "numgrad.")


def _load(ours, theirs):
    result = ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys


def _backward_both(o_outs, t_outs):
    o_loss = sum(((o * o).sum() * (k + 1) + o.sum() for k, o in enumerate(o_outs)), start=0)
    t_loss = sum(((t * t).sum() * (k + 1) + t.sum() for k, t in enumerate(t_outs)), start=0)
    o_loss.backward()
    t_loss.backward()


def _check_params(ours, theirs, dtype):
    names = [n for n, _ in ours.named_parameters()]
    assert names == [n for n, _ in theirs.named_parameters()]
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        if q.grad is None:
            assert p.grad is None or not p.grad.detach().numpy().any(), name
        else:
            _close(p.grad, q.grad, dtype, f"grad of {name}")


def _masks(kind, rng, shape):
    if kind == "bool":
        m = rng.uniform(size=shape) > 0.3
        m[..., 0] = True
        return numgrad.tensor(m), torch.tensor(m)
    m = rng.normal(size=shape)
    return _pair(m)


# ------------------------------------------------------------------ scaled_dot_product_attention
SDPA = [
    ((2, 3, 4), (2, 5, 4), (2, 5, 6), {}),
    ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), dict(mask="bool")),
    ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), dict(mask="float", scale=0.3)),
    ((1, 2, 4, 4), (1, 2, 6, 4), (1, 2, 6, 2), dict(is_causal=True)),
    ((1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2), dict(enable_gqa=True)),
    ((3, 4), (5, 4), (5, 2), dict(mask="bool")),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", SDPA, ids=lambda c: ",".join(map(str, c[3].items())) or "plain")
def test_sdpa_matches_pytorch(case, dtype):
    qs, ks, vs, kw = case
    kw = dict(kw)
    rng = np.random.default_rng(0)
    pairs = _pairs(rng, dtype, qs, ks, vs)
    kind = kw.pop("mask", None)
    if kind is not None:
        om, tm = _masks(kind, rng, (qs[-2], ks[-2]))
        if kind == "float":
            om, tm = om.to(getattr(numgrad, dtype)), tm.to(getattr(torch, dtype))
        kw_o, kw_t = dict(kw, attn_mask=om), dict(kw, attn_mask=tm)
    else:
        kw_o = kw_t = kw
    o = F.scaled_dot_product_attention(*[p[0] for p in pairs], **kw_o)
    t = TF.scaled_dot_product_attention(*[p[1] for p in pairs], **kw_t)
    _close(o, t, dtype)
    _backward_both([o], [t])
    for a, b in pairs:
        _close(a.grad, b.grad, dtype)


def test_sdpa_fully_masked_rows_give_zeros_and_no_gradient():
    rng = np.random.default_rng(1)
    pairs = _pairs(rng, "float64", (2, 3, 4), (2, 5, 4), (2, 5, 6))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    fmask = np.where(mask, 0.0, -np.inf)
    for m in (mask, fmask):
        o = F.scaled_dot_product_attention(*[p[0] for p in pairs], attn_mask=numgrad.tensor(m))
        t = TF.scaled_dot_product_attention(*[p[1] for p in pairs], attn_mask=torch.tensor(m))
        _close(o, t)
        for a, b in pairs:
            a.grad = b.grad = None
        _backward_both([o], [t])
        for a, b in pairs:
            _close(a.grad, b.grad)


def test_sdpa_dropout():
    rng = np.random.default_rng(2)
    q, k, v = (numgrad.tensor(rng.normal(size=(2, 3, 4))) for _ in range(3))
    zero = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    np.testing.assert_array_equal(zero.numpy(), np.zeros((2, 3, 4)))
    numgrad.manual_seed(0)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    numgrad.manual_seed(0)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    plain = F.scaled_dot_product_attention(q, k, v)
    assert not np.allclose(a.numpy(), plain.numpy())


def test_sdpa_errors_match_pytorch():
    def qkv(m, dtype_k=None):
        q = m.zeros(2, 3, 4, dtype=m.float64)
        k = m.zeros(2, 5, 4, dtype=dtype_k or m.float64)
        return q, k, m.zeros(2, 5, 6, dtype=m.float64)

    calls = [
        lambda m: m.nn.functional.scaled_dot_product_attention(
            *qkv(m), attn_mask=m.ones(3, 5, dtype=m.bool), is_causal=True),
        lambda m: m.nn.functional.scaled_dot_product_attention(*qkv(m, m.float32)),
        lambda m: m.nn.functional.scaled_dot_product_attention(
            *qkv(m), attn_mask=m.ones(3, 5, dtype=m.int64)),
        lambda m: m.nn.functional.scaled_dot_product_attention(
            m.zeros(4), m.zeros(4), m.zeros(4)),
        lambda m: m.nn.functional.scaled_dot_product_attention(*qkv(m), dropout_p=1.5),
    ]
    for call in calls:
        _same_error(lambda call=call: call(numgrad), lambda call=call: call(torch))


def test_sdpa_gradcheck():
    rng = np.random.default_rng(3)
    q, k, v = (numgrad.tensor(rng.normal(size=s), requires_grad=True)
               for s in ((1, 3, 2), (1, 4, 2), (1, 4, 3)))
    mask = numgrad.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    assert gradcheck(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m),
                     (q, k, v, mask))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                     (q, k, v))


# ------------------------------------------------------------------ the fused op (flash path)
# 4-D inputs of one head size: PyTorch's CPU flash kernel and numgrad's one op, same node.
# (query shape, key/value shape, keyword arguments, how the query is laid out)
FLASH = [
    ((2, 2, 3, 4), (2, 2, 5, 4), dict(is_causal=True), "contiguous"),
    ((1, 2, 5, 4), (1, 2, 3, 4), dict(is_causal=True, scale=0.4), "transposed"),
    ((2, 2, 3, 4), (2, 2, 5, 4), dict(mask="bool4d"), "contiguous"),
    ((2, 2, 3, 4), (2, 2, 5, 4), dict(mask="float", scale=0.3), "transposed"),
    ((1, 4, 3, 2), (1, 2, 3, 2), dict(enable_gqa=True, is_causal=True), "contiguous"),
    ((1, 4, 3, 2), (1, 2, 5, 2), dict(enable_gqa=True, mask="bool", is_causal=True), "contiguous"),
    # causal queries in blocks of 32 rows (``_query_blocks``), keys past a block's diagonal
    # skipped; fewer queries than keys (the last keys reached by none: zero gradients)
    ((1, 2, 70, 4), (1, 2, 70, 4), dict(is_causal=True), "transposed"),
    ((1, 4, 66, 2), (1, 2, 80, 2), dict(enable_gqa=True, mask="bool", is_causal=True), "contiguous"),
]


def _flash_inputs(rng, dtype, qs, ks, layout):
    if layout == "transposed":  # (a view of a (B, L, H, E) tensor, as a GPT's heads)
        q = rng.normal(size=(qs[0], qs[2], qs[1], qs[3])).astype(dtype)
        oq, tq = _pair(q)
        pairs = [(oq, tq), *_pairs(rng, dtype, ks, ks)]
        return pairs, [oq.transpose(1, 2), tq.transpose(1, 2)]
    pairs = _pairs(rng, dtype, qs, ks, ks)
    return pairs, list(pairs[0])


def _flash_mask(kind, rng, dtype, qs, ks):
    if kind == "bool4d":  # (broadcast over heads and queries; the second batch's keys all
        m = rng.uniform(size=(qs[0], 1, qs[2], ks[2])) > 0.3  # masked in one row)
        m[:, :, :, 0] = True
        m[1, 0, 1] = False
        return numgrad.tensor(m), torch.tensor(m)
    if kind == "bool":
        m = rng.uniform(size=(qs[2], ks[2])) > 0.3
        return numgrad.tensor(m), torch.tensor(m)
    m = rng.normal(size=(qs[2], ks[2])).astype(dtype)
    m[1] = -np.inf  # (a row masked whole by -inf)
    return numgrad.tensor(m), torch.tensor(m)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", FLASH, ids=lambda c: f"{c[2]}-{c[3]}")
def test_fused_attention_matches_pytorchs_flash_kernel(case, dtype):
    """Values, gradients, the node, the output's layout and the saved logsumexp."""
    qs, ks, kw, layout = case
    kw = dict(kw)
    rng = np.random.default_rng(5)
    pairs, (oq, tq) = _flash_inputs(rng, dtype, qs, ks, layout)
    kind = kw.pop("mask", None)
    ko, kt = dict(kw), dict(kw)
    if kind is not None:
        ko["attn_mask"], kt["attn_mask"] = _flash_mask(kind, rng, dtype, qs, ks)
    o = F.scaled_dot_product_attention(oq, pairs[1][0], pairs[2][0], **ko)
    t = TF.scaled_dot_product_attention(tq, pairs[1][1], pairs[2][1], **kt)
    assert o.grad_fn.name() == t.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert o.stride() == t.stride()
    _close(o, t, dtype)
    lse = o.grad_fn.params["stats"].lse
    np.testing.assert_allclose(lse, t.grad_fn._saved_logsumexp.detach().numpy(), **TOL[dtype])
    _backward_both([o], [t])
    for a, b in pairs:
        _close(a.grad, b.grad, dtype)


def test_fused_attention_gradgradcheck_and_double_backward():
    rng = np.random.default_rng(6)
    q, k, v = (numgrad.tensor(rng.normal(size=s), requires_grad=True)
               for s in ((1, 4, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2)))
    mask = numgrad.tensor(np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], dtype=bool))

    def f(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, attn_mask=mask, is_causal=True,
                                              enable_gqa=True)

    assert f(q, k, v).grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert gradcheck(f, (q, k, v))
    assert gradgradcheck(f, (q, k, v))


def test_fused_attention_errors_and_paths_match_pytorch():
    def qkv(m):
        return m.zeros(2, 2, 3, 4), m.zeros(2, 2, 5, 4), m.zeros(2, 2, 5, 4)

    sdpa = "nn.functional.scaled_dot_product_attention"
    calls = [
        lambda m: _get(m, sdpa)(*qkv(m), attn_mask=m.zeros(3, 6)),  # (does not broadcast)
        lambda m: _get(m, sdpa)(*qkv(m), attn_mask=m.zeros(2, 2, 3, 5, dtype=m.float64)),
        lambda m: _get(m, sdpa)(m.zeros(1, 3, 2, 4), m.zeros(1, 2, 2, 4), m.zeros(1, 2, 2, 4),
                                enable_gqa=True),
    ]
    for call in calls:
        _same_error(lambda call=call: call(numgrad), lambda call=call: call(torch))
    # a causal and an explicit mask at once: both applied on the flash path (PyTorch 2.13)
    rng = np.random.default_rng(7)
    pairs = _pairs(rng, "float64", (1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3))
    m = rng.uniform(size=(4, 4)) > 0.5
    o = F.scaled_dot_product_attention(*[p[0] for p in pairs], attn_mask=numgrad.tensor(m),
                                       is_causal=True)
    t = TF.scaled_dot_product_attention(*[p[1] for p in pairs], attn_mask=torch.tensor(m),
                                        is_causal=True)
    _close(o, t)
    # empty sizes, a mask that needs a gradient, dropout: PyTorch's math path, as numgrad's
    for qs, ks in (((0, 2, 3, 4), (0, 2, 5, 4)), ((2, 2, 0, 4), (2, 2, 5, 4)),
                   ((2, 2, 3, 4), (2, 2, 0, 4))):
        ps = _pairs(rng, "float64", qs, ks, ks)
        o = F.scaled_dot_product_attention(*[p[0] for p in ps])
        t = TF.scaled_dot_product_attention(*[p[1] for p in ps])
        _close(o, t)
        assert o.grad_fn.name() != "ScaledDotProductFlashAttentionForCpuBackward0"
    mo, mt = _pair(rng.normal(size=(4, 4)))
    o = F.scaled_dot_product_attention(*[p[0] for p in pairs], attn_mask=mo)
    t = TF.scaled_dot_product_attention(*[p[1] for p in pairs], attn_mask=mt)
    assert o.grad_fn.name() == t.grad_fn.name() == "UnsafeViewBackward0" or \
        t.grad_fn.name() == "UnsafeViewBackward0"
    _backward_both([o], [t])
    _close(mo.grad, mt.grad)


def _get(module, path):
    for part in path.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("shapes", [((3, 4, 5, 6), (3, 4, 5, 6)), ((1, 4, 70, 6), (1, 2, 70, 6))],
                         ids=["batch spans", "one sample's key heads"])
def test_fused_attention_on_threads_equals_one_thread(monkeypatch, shapes):
    """Spans of the batch shared among threads, or a sample's key heads where the batch has
    fewer samples than threads, give the one-thread values, bit for bit."""
    from numgrad.kernels.cpu import attention as A

    rng = np.random.default_rng(8)
    qs, ks = shapes
    q, g = (rng.normal(size=qs).astype(np.float32) for _ in range(2))
    k, v = (rng.normal(size=ks).astype(np.float32) for _ in range(2))
    mask = rng.uniform(size=(qs[0], 1, qs[2], ks[2])) > 0.3
    results, parts = [], []
    run = A._workers.run
    monkeypatch.setattr(A._workers, "run", lambda items, *a, **k: (parts.append(list(items)),
                                                                   run(items, *a, **k)))
    for threads in (1, 2):
        monkeypatch.setattr(A._workers, "threads_for", lambda parts, large, n=threads: n)
        out, lse = A.attention_forward(q, k, v, mask, True, 0.5)
        results.append((out, lse, *A.attention_backward(g, q, k, v, out, lse, mask, True, 0.5)))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    assert parts[0] == ([((0, 1), (0, 4)), ((1, 3), (0, 4))] if qs[0] == 3 else
                        [((0, 1), (0, 1)), ((0, 1), (1, 2))])


def test_fused_attention_gradients_are_laid_out_as_their_inputs():
    """The heads of a (B, T, H, E) tensor's view get their gradients back in that layout, as
    PyTorch's kernel gives them (the views' backwards then copy nothing)."""
    strides = {}
    for m in (numgrad, torch):
        qkv = m.tensor(np.random.default_rng(0).normal(size=(2, 8, 24)).astype(np.float32),
                       requires_grad=True)
        heads = [z.view(2, 8, 2, 4).transpose(1, 2) for z in qkv.split(8, dim=2)]
        seen = strides[m.__name__] = []
        for z in heads:
            z.register_hook(lambda g, seen=seen: seen.append(tuple(g.stride())))
        m.nn.functional.scaled_dot_product_attention(*heads, is_causal=True).sum().backward()
    assert strides["numgrad"] == strides["torch"] == [(64, 4, 8, 1)] * 3


def test_causal_query_blocks_equal_the_whole_rows():
    """Causal attention computed in blocks of queries (keys past each block's diagonal skipped)
    equals the same computed over every key for every row, to float64's rounding."""
    from numgrad.kernels.cpu import attention as A

    assert A._query_blocks(64, 64, True) == [(32, 64, 64), (0, 32, 32)]
    assert A._query_blocks(200, 150, True)[0] == (192, 200, 150)
    assert A._query_blocks(63, 63, True) == [(0, 63, 63)]  # (under two blocks: one)
    assert A._query_blocks(64, 64, False) == [(0, 64, 64)]
    rng = np.random.default_rng(9)
    q, g = (rng.normal(size=(2, 3, 100, 5)) for _ in range(2))
    k, v = (rng.normal(size=(2, 3, 90, 5)) for _ in range(2))
    blocked = A.attention_forward(q, k, v, None, True, 0.4)
    blocked += A.attention_backward(g, q, k, v, *blocked, None, True, 0.4)
    assert len(A._query_blocks(100, 90, True)) == 4
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(A, "_query_blocks", lambda L, S, causal: [(0, L, S)])
        whole = A.attention_forward(q, k, v, None, True, 0.4)
        whole += A.attention_backward(g, q, k, v, *whole, None, True, 0.4)
    for a, b in zip(blocked, whole):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def test_compiled_attention_step_equals_eager():
    """A training step through the fused op (forward, backward, SGD) compiled and eager."""
    def make():
        numgrad.manual_seed(0)
        proj = nn.Linear(8, 24)
        opt = numgrad.optim.SGD(proj.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            q, k, v = proj(x).view(2, 5, 3, 8).transpose(1, 2).unbind(1)
            y = F.scaled_dot_product_attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1),
                                               is_causal=True)
            loss = (y * y).mean()
            loss.backward()
            opt.step()
            return loss

        return proj, step

    x = numgrad.tensor(np.random.default_rng(9).normal(size=(2, 5, 8)).astype(np.float32))
    eager_proj, eager_step = make()
    compiled_proj, step = make()
    compiled = numgrad.compile(step)
    for _ in range(3):
        a, b = eager_step(x), compiled(x)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for (name, p), (_, c) in zip(eager_proj.named_parameters(), compiled_proj.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy(), err_msg=name)


# ------------------------------------------------------------------ MultiheadAttention
MHA = [
    ({}, {}),
    (dict(batch_first=True), dict(need_weights=False)),
    (dict(bias=False), dict(average_attn_weights=False, kpm="bool")),
    (dict(add_bias_kv=True, add_zero_attn=True), dict(kpm="bool", mask="float")),
    (dict(kdim=5, vdim=3), dict(mask="bool", need_weights=False)),
    (dict(batch_first=True), dict(self_attention=True, mask="causal", is_causal=True,
                                  need_weights=False)),
    ({}, dict(self_attention=True, kpm="float", mask="3d")),
]


def _mha_ids(case):
    return ",".join(f"{k}={v}" for k, v in {**case[0], **case[1]}.items()) or "plain"


def _mha_inputs(rng, dtype, module_kw, call_kw, batched=True):
    L, S, N = 3, 4, 2
    bf = module_kw.get("batch_first", False)
    kdim, vdim = module_kw.get("kdim", E), module_kw.get("vdim", E)

    def shape(n, d):
        if not batched:
            return (n, d)
        return (N, n, d) if bf else (n, N, d)

    if call_kw.get("self_attention"):
        q = _pair(rng.normal(size=shape(S, E)).astype(dtype))
        tensors = [q]
        o_args, t_args = (q[0], q[0], q[0]), (q[1], q[1], q[1])
        L = S
    else:
        tensors = _pairs(rng, dtype, shape(L, E), shape(S, kdim), shape(S, vdim))
        o_args = tuple(t[0] for t in tensors)
        t_args = tuple(t[1] for t in tensors)
    o_kw, t_kw = {}, {}
    for key in ("need_weights", "average_attn_weights", "is_causal"):
        if key in call_kw:
            o_kw[key] = t_kw[key] = call_kw[key]
    kpm = call_kw.get("kpm")
    if kpm is not None:
        m = np.zeros((N, S) if batched else (S,), dtype=bool)
        m[..., -1] = True
        if kpm == "float":
            m = np.where(m, -1e9, 0.0).astype(dtype)
        o_kw["key_padding_mask"], t_kw["key_padding_mask"] = numgrad.tensor(m), torch.tensor(m)
    mask = call_kw.get("mask")
    if mask is not None:
        if mask == "causal":
            om = nn.Transformer.generate_square_subsequent_mask(L, dtype=getattr(numgrad, dtype))
            tm = torch.nn.Transformer.generate_square_subsequent_mask(
                L, dtype=getattr(torch, dtype))
        elif mask == "3d":
            m = rng.normal(size=(N * HEADS, L, S)).astype(dtype)
            om, tm = numgrad.tensor(m), torch.tensor(m)
        else:
            om, tm = _masks(mask, rng, (L, S))
            if mask == "float":
                om, tm = om.detach().to(getattr(numgrad, dtype)), tm.detach().to(
                    getattr(torch, dtype))
        o_kw["attn_mask"], t_kw["attn_mask"] = om, tm
    return tensors, o_args, t_args, o_kw, t_kw


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", MHA, ids=_mha_ids)
def test_multihead_attention_matches_pytorch(case, dtype):
    module_kw, call_kw = case
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, HEADS, dtype=getattr(torch, dtype), **module_kw)
    ours = nn.MultiheadAttention(E, HEADS, dtype=getattr(numgrad, dtype), **module_kw)
    _load(ours, theirs)
    rng = np.random.default_rng(4)
    tensors, o_args, t_args, o_kw, t_kw = _mha_inputs(rng, dtype, module_kw, call_kw)
    for mode in ("train", "eval"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        ours.zero_grad()
        theirs.zero_grad()
        for a, b in tensors:
            a.grad = b.grad = None
        with warnings.catch_warnings(record=True) as o_warn:
            warnings.simplefilter("always")
            o_out, o_w = ours(*o_args, **o_kw)
        with warnings.catch_warnings(record=True) as t_warn:
            warnings.simplefilter("always")
            t_out, t_w = theirs(*t_args, **t_kw)
        assert [str(w.message) for w in o_warn] == [str(w.message) for w in t_warn]
        _close(o_out, t_out, dtype, "output")
        if t_w is None:
            assert o_w is None
            _backward_both([o_out], [t_out])
        else:
            _close(o_w, t_w, dtype, "weights")
            _backward_both([o_out, o_w], [t_out, t_w])
        _check_params(ours, theirs, dtype)
        for a, b in tensors:
            _close(a.grad, b.grad, dtype, "input grad")


def test_multihead_attention_unbatched_and_repr():
    torch.manual_seed(1)
    theirs = torch.nn.MultiheadAttention(E, HEADS, dtype=torch.float64)
    ours = nn.MultiheadAttention(E, HEADS, dtype=numgrad.float64)
    _load(ours, theirs)
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(5)
    for call_kw in ({}, dict(kpm="bool", mask="bool")):
        _, o_args, t_args, o_kw, t_kw = _mha_inputs(rng, "float64", {}, call_kw,
                                                    batched=False)
        o_out, o_w = ours(*o_args, **o_kw)
        t_out, t_w = theirs(*t_args, **t_kw)
        _close(o_out, t_out)
        _close(o_w, t_w)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(11)
    pairs = _pairs(rng, "float64", (2, 4, 3), (2, 4, 5), (2, 6, 5))
    o = F.scaled_dot_product_attention(*(p[0].transpose(-2, -1) for p in pairs))
    t = TF.scaled_dot_product_attention(*(p[1].transpose(-2, -1) for p in pairs))
    _close(o, t)
    torch.manual_seed(5)
    theirs = torch.nn.MultiheadAttention(4, 2, batch_first=True, dtype=torch.float64)
    ours = nn.MultiheadAttention(4, 2, batch_first=True, dtype=numgrad.float64)
    _load(ours, theirs)
    (oq, tq), = _pairs(rng, "float64", (3, 4, 2))
    o_out, o_w = ours(oq.permute(2, 0, 1), oq.permute(2, 0, 1), oq.permute(2, 0, 1))
    t_out, t_w = theirs(tq.permute(2, 0, 1), tq.permute(2, 0, 1), tq.permute(2, 0, 1))
    _close(o_out, t_out)
    _close(o_w, t_w)
    _backward_both([o_out], [t_out])
    _close(oq.grad, tq.grad)


def test_multihead_attention_initialisation_and_names():
    ours = nn.MultiheadAttention(E, HEADS, add_bias_kv=True, kdim=5, vdim=3)
    theirs = torch.nn.MultiheadAttention(E, HEADS, add_bias_kv=True, kdim=5, vdim=3)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    assert not ours.in_proj_bias.detach().numpy().any()
    assert not ours.out_proj.bias.detach().numpy().any()
    bound = np.sqrt(6 / (E + E))
    assert np.abs(ours.q_proj_weight.detach().numpy()).max() <= bound


def test_multihead_attention_errors_match_pytorch():
    def mha(m, **kw):
        return m.nn.MultiheadAttention(E, HEADS, **kw)

    calls = [
        lambda m: m.nn.MultiheadAttention(0, 2),
        lambda m: m.nn.MultiheadAttention(6, 4),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, E), m.zeros(4, E)),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, 2, E), m.zeros(4, 2, E),
                         key_padding_mask=m.zeros(2, 4, 1, dtype=m.bool)),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, 2, E), m.zeros(4, 2, E),
                         key_padding_mask=m.zeros(2, 5, dtype=m.bool)),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, 2, E), m.zeros(4, 2, E),
                         attn_mask=m.zeros(3, 5)),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, 2, E), m.zeros(4, 2, E),
                         attn_mask=m.zeros(3, 3, 4)),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, 2, E), m.zeros(4, 2, E),
                         attn_mask=m.zeros(3, 4, dtype=m.int64)),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, 2, E), m.zeros(4, 2, E), is_causal=True),
        lambda m: mha(m)(m.zeros(3, 2, E), m.zeros(4, 2, E), m.zeros(5, 2, E)),
        lambda m: mha(m)(m.zeros(3, 2, E + 1), m.zeros(4, 2, E + 1), m.zeros(4, 2, E + 1)),
        lambda m: mha(m)(m.zeros(E), m.zeros(E), m.zeros(E)),
    ]
    for call in calls:
        _same_error(lambda call=call: call(numgrad), lambda call=call: call(torch))


def test_multihead_attention_gradcheck():
    ours = nn.MultiheadAttention(4, 2, dtype=numgrad.float64)
    rng = np.random.default_rng(6)
    q = numgrad.tensor(rng.normal(size=(2, 1, 4)), requires_grad=True)
    kv = numgrad.tensor(rng.normal(size=(3, 1, 4)), requires_grad=True)
    assert gradcheck(lambda a, b: ours(a, b, b)[0], (q, kv))


# ------------------------------------------------------------------ Transformer layers
def _transformer_kw(norm_first, activation, batch_first, m):
    act = activation
    if activation == "callable":
        act = m.tanh
    return dict(dim_feedforward=16, dropout=0.0, activation=act, batch_first=batch_first,
                norm_first=norm_first, dtype=m.float64)


LAYERS = [(False, "relu", False), (True, "gelu", True), (False, "callable", True)]


@pytest.mark.parametrize("norm_first,activation,batch_first", LAYERS)
def test_encoder_and_decoder_layers_match_pytorch(norm_first, activation, batch_first):
    rng = np.random.default_rng(7)
    src = rng.normal(size=(2, 5, E) if batch_first else (5, 2, E))
    tgt = rng.normal(size=(2, 4, E) if batch_first else (4, 2, E))
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[1, 3:] = True
    for kind in ("encoder", "decoder"):
        torch.manual_seed(2)
        cls = "TransformerEncoderLayer" if kind == "encoder" else "TransformerDecoderLayer"
        theirs = getattr(torch.nn, cls)(E, HEADS, **_transformer_kw(
            norm_first, activation, batch_first, torch))
        ours = getattr(nn, cls)(E, HEADS, **_transformer_kw(
            norm_first, activation, batch_first, numgrad))
        _load(ours, theirs)
        assert repr(ours) == repr(theirs)
        (os_, ts), (ot, tt) = _pair(src), _pair(tgt)
        for mode in ("train", "eval"):
            getattr(ours, mode)()
            getattr(theirs, mode)()
            ours.zero_grad()
            theirs.zero_grad()
            for a in (os_, ts, ot, tt):
                a.grad = None
            if kind == "encoder":
                o = ours(os_, src_key_padding_mask=numgrad.tensor(kpm))
                t = theirs(ts, src_key_padding_mask=torch.tensor(kpm))
                inputs = [(os_, ts)]
            else:
                om = nn.Transformer.generate_square_subsequent_mask(4, dtype=numgrad.float64)
                tm = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
                o = ours(ot, os_, tgt_mask=om, memory_key_padding_mask=numgrad.tensor(kpm),
                         tgt_is_causal=True)
                t = theirs(tt, ts, tgt_mask=tm, memory_key_padding_mask=torch.tensor(kpm),
                           tgt_is_causal=True)
                inputs = [(os_, ts), (ot, tt)]
            _close(o, t, "float64", f"{kind} {mode}")
            _backward_both([o], [t])
            _check_params(ours, theirs, "float64")
            for a, b in inputs:
                _close(a.grad, b.grad)


@pytest.mark.parametrize("batch_first,norm_first", [(False, False), (True, True)])
def test_transformer_matches_pytorch(batch_first, norm_first):
    kw = dict(d_model=E, nhead=HEADS, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=16, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    torch.manual_seed(3)
    with warnings.catch_warnings(record=True) as t_warn:
        warnings.simplefilter("always")
        theirs = torch.nn.Transformer(dtype=torch.float64, **kw)
    with warnings.catch_warnings(record=True) as o_warn:
        warnings.simplefilter("always")
        ours = nn.Transformer(dtype=numgrad.float64, **kw)
    assert [str(w.message) for w in o_warn] == [str(w.message) for w in t_warn]
    _load(ours, theirs)
    rng = np.random.default_rng(8)
    src = rng.normal(size=(2, 5, E) if batch_first else (5, 2, E))
    tgt = rng.normal(size=(2, 4, E) if batch_first else (4, 2, E))
    (os_, ts), (ot, tt) = _pair(src), _pair(tgt)
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[0, 4] = True
    om = ours.generate_square_subsequent_mask(4, dtype=numgrad.float64)
    tm = theirs.generate_square_subsequent_mask(4, dtype=torch.float64)
    _close(om, tm)
    for mode in ("train", "eval"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        ours.zero_grad()
        theirs.zero_grad()
        o = ours(os_, ot, tgt_mask=om, src_key_padding_mask=numgrad.tensor(kpm),
                 memory_key_padding_mask=numgrad.tensor(kpm))
        t = theirs(ts, tt, tgt_mask=tm, src_key_padding_mask=torch.tensor(kpm),
                   memory_key_padding_mask=torch.tensor(kpm))
        _close(o, t, "float64", mode)
        _backward_both([o], [t])
        _check_params(ours, theirs, "float64")


def test_transformer_encoder_inference_with_padding_matches_pytorch():
    """Without gradients, in eval mode, PyTorch's encoder runs on the unpadded tokens and its
    padded positions come out as 0 before the final norm: numgrad's does the same."""
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[1, 3:] = True
    x = np.random.default_rng(9).normal(size=(2, 5, E))
    results, encoders = [], []
    for m in (torch, numgrad):
        m.manual_seed(4)
        layer = m.nn.TransformerEncoderLayer(E, HEADS, 16, 0.0, batch_first=True,
                                             dtype=m.float64)
        encoders.append(m.nn.TransformerEncoder(layer, 2).eval())
        if m is numgrad:
            _load(encoders[1], encoders[0])
        # (PyTorch's note that nested tensors are new is not numgrad's)
        with m.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append(encoders[-1](m.tensor(x), src_key_padding_mask=m.tensor(kpm)))
    _close(results[1], results[0])
    assert not results[1].numpy()[1, 3:].any()


def test_transformer_errors_and_names_match_pytorch():
    def tr(m, **kw):
        return m.nn.Transformer(d_model=E, nhead=HEADS, num_encoder_layers=1,
                                num_decoder_layers=1, dim_feedforward=8, **kw)

    calls = [
        lambda m: tr(m)(m.zeros(5, 2, E), m.zeros(4, 3, E)),
        lambda m: tr(m, batch_first=True)(m.zeros(2, 5, E), m.zeros(3, 4, E)),
        lambda m: tr(m)(m.zeros(5, 2, E + 2), m.zeros(4, 2, E + 2)),
        lambda m: m.nn.TransformerEncoderLayer(E, HEADS, activation="tanh"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in calls:
            _same_error(lambda call=call: call(numgrad), lambda call=call: call(torch))
        ours, theirs = tr(numgrad), tr(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    fresh = [p for p in ours.parameters() if p.dim() > 1]
    assert all(np.abs(p.detach().numpy()).max() <= np.sqrt(6 / sum(p.shape)) for p in fresh)


def test_transformer_encoder_layer_gradcheck():
    layer = nn.TransformerEncoderLayer(4, 2, 6, 0.0, dtype=numgrad.float64)
    x = numgrad.tensor(np.random.default_rng(10).normal(size=(3, 1, 4)), requires_grad=True)
    assert gradcheck(lambda a: layer(a), (x,))
