"""``grad_fn._saved_<name>`` / ``_raw_saved_<name>`` against PyTorch 2.13 (issue 31): for each op,
the same graph is built in numgrad and in torch and the node's saved attributes compared: the
names ``dir`` lists, and each value with its Python type (ints as ints, tuples as tuples, None as
None, tensors by dtype, shape and values; negative int64 arguments as PyTorch shows them, through
an unsigned conversion)."""
import numpy as np
import pytest
import torch

import numgrad

RNG = np.random.default_rng(2031)
X = RNG.standard_normal((4, 3))
W = RNG.standard_normal((3, 2))
V = RNG.standard_normal(3)
IMG = RNG.standard_normal((2, 3, 5, 5))
KER = RNG.standard_normal((4, 3, 3, 3))
B4 = RNG.standard_normal(4)
EMB = RNG.standard_normal((10, 3))
X3 = RNG.standard_normal((2, 4, 6))


def _cases(m):
    F = m.nn.functional
    x = m.tensor(X, requires_grad=True)
    w = m.tensor(W, requires_grad=True)
    img = m.tensor(IMG, requires_grad=True)
    k = m.tensor(KER, requires_grad=True)
    b = m.tensor(B4, requires_grad=True)
    t = m.tensor([0, 2, 1, 1])
    e = m.tensor(EMB, requires_grad=True)
    x3 = m.tensor(X3, requires_grad=True)
    v = m.tensor(V, requires_grad=True)
    return {
        # MmBackward0 / AddmmBackward0: strides of the inputs whose gradient is needed
        "mm": lambda: x.mm(w),
        "mm_self_only": lambda: x.mm(m.tensor(W)),
        "mm_transposed": lambda: x.t().mm(m.tensor(X, requires_grad=True)),
        "linear_no_bias": lambda: F.linear(x, w.t()),
        "addmm": lambda: m.addmm(m.tensor(W[0]), x, w),
        # SliceBackward0 / SelectBackward0 / UnsqueezeBackward0: the last view op of a key
        "slice_open_end": lambda: x[1:],
        "slice_second_dim": lambda: x[:, 1:3],
        "slice_step": lambda: x[0:4:2],
        "slice_negative_start": lambda: x[-2:],
        "slice_past_end": lambda: x[1:100],
        "slice_full": lambda: x[:],
        "slice_after_select": lambda: x[0, 1:],
        "slice_after_none": lambda: x[None, 1:],
        "slice_chain": lambda: x[1:][2:],
        "narrow": lambda: x.narrow(1, 0, 2),
        "narrow_negative_start": lambda: x.narrow(1, -2, 2),
        "select": lambda: x[1],
        "select_negative": lambda: x[-1],
        "select_method": lambda: x.select(1, 2),
        "select_after_slice": lambda: x[1:, 0],
        "unsqueeze_index": lambda: x[0, None],
        "unbind": lambda: x.unbind(0)[1],
        # MaxBackward0 / MinBackward0 with a dim
        "max_dim": lambda: x.max(1)[0],
        "max_dim_keepdim": lambda: x.max(1, keepdim=True)[0],
        "max_negative_dim": lambda: x.max(-1)[0],
        "min_dim": lambda: x.min(0)[0],
        # LinalgVectorNormBackward0
        "vector_norm": lambda: m.linalg.vector_norm(x),
        "vector_norm_dim": lambda: m.linalg.vector_norm(x, dim=1),
        "vector_norm_negative_dim": lambda: m.linalg.vector_norm(x, 3.0, dim=-1),
        "vector_norm_ord1": lambda: m.linalg.vector_norm(x, ord=1),
        "tensor_norm": lambda: x.norm(),
        "tensor_norm_dim": lambda: x.norm(dim=1),
        # NllLossBackward0
        "nll_loss": lambda: F.nll_loss(x.log_softmax(1), t),
        "nll_loss_sum": lambda: F.nll_loss(x.log_softmax(1), t, reduction="sum"),
        "nll_loss_weight": lambda: F.nll_loss(x.log_softmax(1), t, weight=m.tensor(V)),
        "nll_loss_ignore": lambda: F.nll_loss(x.log_softmax(1), t, ignore_index=1),
        "cross_entropy": lambda: F.cross_entropy(x, t),
        # ConvolutionBackward0
        "conv2d": lambda: F.conv2d(img, k, b),
        "conv2d_no_bias": lambda: F.conv2d(img, k),
        "conv2d_padded": lambda: F.conv2d(img, k, b, padding=1, stride=2),
        "conv1d": lambda: F.conv1d(img[:, :, 0], k[:, :, 0], b),
        # NativeLayerNormBackward0 / EmbeddingBackward0 (one op each)
        "layer_norm": lambda: F.layer_norm(x, (3,), v, m.tensor(V, requires_grad=True)),
        "layer_norm_no_affine": lambda: F.layer_norm(x3, (4, 6)),
        "embedding": lambda: F.embedding(t, e),
        "embedding_padding": lambda: F.embedding(t.view(2, 2), e, padding_idx=-2),
        "embedding_scaled": lambda: F.embedding(t, e, padding_idx=1, scale_grad_by_freq=True),
        "embedding_double_backward": lambda: m.autograd.grad(
            F.embedding(t, e, padding_idx=2), e, m.tensor(X, requires_grad=True),
            create_graph=True)[0],
        # a sweep of common ops
        "log_softmax": lambda: x.log_softmax(1),
        "var": lambda: x.var(1),
        "logsumexp": lambda: x.logsumexp(1),
        "cumsum": lambda: x.cumsum(1),
        "reshape": lambda: x.reshape(3, 4),
        "flatten": lambda: x.flatten(),
        "unsqueeze": lambda: x.unsqueeze(1),
        "t": lambda: x.t(),
        "stack": lambda: m.stack([x, x]),
        "clone": lambda: x.clone(),
        "bmm": lambda: x.unsqueeze(0).bmm(w.unsqueeze(0)),
        "where": lambda: m.where(x > 0, x, m.tensor(X)),
        "sqrt": lambda: (x * x).sqrt(),
        "abs": lambda: x.abs(),
        "maximum": lambda: m.maximum(x, m.tensor(X) * 0.5),
        "silu": lambda: F.silu(x),
        "hardtanh": lambda: F.hardtanh(x),
        "mse_none": lambda: F.mse_loss(x, m.tensor(X), reduction="none"),
        "l1": lambda: F.l1_loss(x, m.tensor(X)),
        "mean_tuple": lambda: x.mean((0, 1)),
        "div_scalar": lambda: x / 3,
        "expand_as": lambda: x[:1].expand_as(x),
        "einsum": lambda: m.einsum("ij,jk->ik", x, w),
        "outer": lambda: m.outer(v, m.tensor(V)),
        "x3_slice_last": lambda: x3[..., 2:5],
        # dims as the caller wrote them (negative, in its order), as PyTorch's nodes keep them
        "sum_negative_dims": lambda: x3.sum((-1, 0)),
        "mean_negative_dim": lambda: x.mean(-1, keepdim=True),
        "amax_negative_dim": lambda: x.amax(-1),
        "logsumexp_negative_dim": lambda: x.logsumexp(-1),
        "nansum_negative_dim": lambda: x.nansum(-1),
        "softmax_negative_dim": lambda: x.softmax(-1),
        "log_softmax_negative_dim": lambda: x.log_softmax(-1),
        "transpose_negative": lambda: x.transpose(-1, -2),
        "permute_negative": lambda: x3.permute(-1, 0, 1),
        "unsqueeze_negative": lambda: x.unsqueeze(-1),
        "squeeze_negative": lambda: x.unsqueeze(1).squeeze(-2),
        "cat_negative": lambda: m.cat([x, x], -1),
        "stack_negative": lambda: m.stack([x, x], -1),
        "cumsum_negative": lambda: x.cumsum(-1),
        "index_select_negative": lambda: x.index_select(-1, m.tensor([0, 2])),
        # var/std: dim and correction None where the caller gave none; prod; sort/topk indices
        "var_all": lambda: x.var(),
        "var_unbiased": lambda: x.var(unbiased=True),
        "std_negative_dims": lambda: x3.std((-1, 0), correction=0),
        "prod_all": lambda: x.prod(),
        "prod_negative_dim": lambda: x.prod(-1),
        "sort_default_dim": lambda: x.sort(descending=True)[0],
        "topk": lambda: x.topk(2, 0)[0],
        # structure ops' arguments
        "diagonal": lambda: x3.diagonal(1, -1, -2),
        "tril_negative": lambda: x.tril(-1),
        "roll": lambda: x.roll((1, -1), (0, -1)),
        "roll_flat": lambda: x.roll(2),
        "flip_negative": lambda: x.flip(-1, 0),
        "repeat": lambda: x.repeat(2, 1, 3),
        "gather_negative": lambda: x.gather(-1, m.tensor([[0], [2], [1], [1]])),
        "cummax": lambda: x.cummax(1)[0],
        "cummin_negative": lambda: x.cummin(-1)[0],
        "split": lambda: x.split(3)[1],
        "split_negative_dim": lambda: x.split(2, -1)[0],
        "chunk": lambda: x.chunk(2)[0],
        "split_with_sizes": lambda: x.split([1, 3])[1],
        "chunk_negative_dim": lambda: x3.chunk(3, -1)[2],
        "narrow_negative_dim": lambda: x.narrow(-1, 0, 2),
        "logcumsumexp_negative": lambda: x.logcumsumexp(-1),
        "sort_stable": lambda: x.sort(stable=True)[0],
        "median_dim": lambda: x.median(-1)[0],
        "mode_dim": lambda: x.mode(0, keepdim=True)[0],
        "max_pool3d": lambda: F.max_pool3d(img[:, :, None].expand(2, 3, 2, 5, 5), 2),
        "avg_pool3d": lambda: F.avg_pool3d(img[:, :, None], (1, 2, 2)),
        "trace": lambda: x[:3].trace(),
        "unfold": lambda: x.unfold(0, 2, 1),
        "cross_negative": lambda: m.linalg.cross(x, m.tensor(X)),
        "glu_negative": lambda: F.glu(x3, -1),
        # fields PyTorch's nodes keep that numgrad's derive
        "index_tensor": lambda: x[t],
        "index_two_and_slice": lambda: x3[:, t, m.tensor([0, 1, 2, 5])],
        "index_mask": lambda: x[m.tensor(X) > 0],
        "index_after_basic": lambda: x3[1:, None, m.tensor([0, 2])],
        "masked_fill": lambda: x.masked_fill(m.tensor(X) > 0, 0.5),
        "masked_fill_tensor_value": lambda: x.masked_fill(
            m.tensor(X) > 0, m.tensor(0.5, requires_grad=True)),
        "masked_fill_constant_tensor_value": lambda: x.masked_fill(m.tensor(X) > 0, m.tensor(0.5)),
        "kthvalue": lambda: x.kthvalue(2)[0],
        "kthvalue_keepdim": lambda: x.kthvalue(3, 0, keepdim=True)[0],
        "kthvalue_0d": lambda: x[0, 0].kthvalue(1, -1)[0],
        "logit": lambda: x.sigmoid().logit(),
        "logit_eps": lambda: x.sigmoid().logit(0.25),
        "median_0d": lambda: x[0, 0].median(0)[0],
        "median_0d_keepdim": lambda: x[0, 0].median(-1, keepdim=True)[0],
        "mode_0d": lambda: x[1, 1].mode()[0],
        "select_negative_dim": lambda: x.select(-1, -2),
        "masked_select": lambda: x.masked_select(m.tensor(X) > 0),
        "masked_select_broadcast": lambda: x.masked_select(m.tensor([True, False, True])),
        "index_add": lambda: x.index_add(0, m.tensor([0, 2]), m.tensor(W.T, requires_grad=True)),
        "index_add_self_only": lambda: x.index_add(-1, m.tensor([0, 2]), m.tensor(X[:, :2]),
                                                   alpha=2),
        "prelu_one_weight": lambda: F.prelu(x, m.tensor([0.25], dtype=m.float64,
                                                        requires_grad=True)),
        "prelu_channels": lambda: F.prelu(x3, b),
        "prelu_1d": lambda: F.prelu(v, m.tensor(0.25, dtype=m.float64, requires_grad=True)),
        "logsigmoid": lambda: F.logsigmoid(x),
        "rrelu_eval": lambda: F.rrelu(x, 0.1, 0.3),
        "unsafe_split": lambda: x.unsafe_split(3)[1],
        "unsafe_chunk": lambda: x.unsafe_chunk(2, -1)[0],
        "unsafe_split_with_sizes": lambda: m.unsafe_split_with_sizes(x, [1, 3])[1],
        "std_mean_std": lambda: m.std_mean(x, 1)[0],
        "std_mean_mean": lambda: m.std_mean(x3, (0, -1), correction=0, keepdim=True)[1],
        "var_mean_var": lambda: m.var_mean(x)[0],
        "var_mean_mean": lambda: m.var_mean(x, -1)[1],
        # a result of split/std_mean used: its edge is (the one node, its output_nr)
        "split_part_used": lambda: x.split(3)[1] * 2,
        "chunk_parts_used": lambda: x.chunk(3, -1)[2] * x.chunk(3, -1)[0],
        "split_with_sizes_part_used": lambda: x.split([1, 3])[1].exp(),
        "std_mean_mean_used": lambda: m.std_mean(x, 1)[1] - 1,
        "var_mean_var_used": lambda: m.var_mean(x)[0] * m.var_mean(x)[1],
        "sum_dtype": lambda: x.sum(dtype=m.float32),
        "mean_dim_dtype": lambda: x.mean(-1, keepdim=True, dtype=m.float32),
        # the hinge of the margin losses: PyTorch's clamp_min (ClampMinBackward0)
        "margin_ranking_loss": lambda: F.margin_ranking_loss(
            x, m.tensor(X[::-1].copy()), m.tensor(np.sign(X)), reduction="none"),
        "clamp_max": lambda: x.clamp_max(0.5),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(
            x, m.tensor(X[::-1].copy()), m.tensor(X * 2), reduction="none"),
        "max_pool2d": lambda: F.max_pool2d(img, 2),
        "max_pool2d_stride": lambda: F.max_pool2d(img, 3, stride=2, padding=1, ceil_mode=True),
        "avg_pool2d": lambda: F.avg_pool2d(img, 2),
        "adaptive_max_pool2d": lambda: F.adaptive_max_pool2d(img, (2, 3)),
        "batch_norm_train": lambda: F.batch_norm(
            img, m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64), v, v * 0.5,
            training=True),
        "batch_norm_eval": lambda: F.batch_norm(
            img, m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64), v, None),
        "batch_norm_no_stats": lambda: F.batch_norm(img, None, None, training=True),
        "group_norm": lambda: F.group_norm(x3, 2, b, b * 0.5),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(x, m.tensor(X).sigmoid()),
        "bce_with_logits_pos_weight": lambda: F.binary_cross_entropy_with_logits(
            x, m.tensor(X).sigmoid(), pos_weight=m.tensor(V)),
        "elu": lambda: F.elu(x),
        "elu_int_alpha": lambda: F.elu(x, 2),
        "softplus": lambda: F.softplus(x),
        "softplus_floats": lambda: F.softplus(x, 2.0, 10.5),
        "relu6": lambda: F.relu6(x),
        "selu": lambda: F.selu(x),
        "rsub": lambda: 1 - x,
        "rpow": lambda: 2 ** x,
        "pow_tensors": lambda: x.abs() ** m.tensor(X, requires_grad=True),
        "add_alpha": lambda: m.add(x, m.tensor(X, requires_grad=True), alpha=2),
        "sub_alpha": lambda: m.sub(x, m.tensor(X), alpha=0.5),
        "addcmul": lambda: m.addcmul(x, m.tensor(X), m.tensor(X), value=0.5),
        "scatter_value": lambda: x.scatter(1, m.tensor([[0], [2], [1], [1]]), 1.0),
        "threshold": lambda: F.threshold(x, 0.1, 20.0),
        "nan_to_num": lambda: m.nan_to_num(x),
        "smooth_l1": lambda: F.smooth_l1_loss(x, m.tensor(X), beta=0.5),
        "huber": lambda: F.huber_loss(x, m.tensor(X), delta=0.5),
        "pad_constant": lambda: F.pad(x, (1, 0, 2, 1), value=1.5),
        "pad_reflect": lambda: F.pad(x3, (1, 2), mode="reflect"),
        "pixel_shuffle": lambda: F.pixel_shuffle(k, 1),
        "interpolate_nearest": lambda: F.interpolate(img, scale_factor=2),
        "interpolate_bilinear": lambda: F.interpolate(img, size=(3, 4), mode="bilinear"),
        # RsubBackward0 (two tensors, alpha as given); DivBackward2 (a rounding mode, a tensor or
        # number divisor: self kept where the divisor's gradient is needed)
        "rsub_tensors": lambda: m.rsub(x, m.tensor(X, requires_grad=True)),
        "rsub_tensors_alpha": lambda: m.rsub(m.tensor(X), x, alpha=2),
        "div_floor_tensors": lambda: m.div(x, x * 2 + 5, rounding_mode="floor"),
        "div_trunc_number": lambda: x.div(2, rounding_mode="trunc"),
    }


def _rounded(a):
    return (a.round(10) if a.dtype.kind in "fc" else a).tolist()


# Saved values whose content PyTorch leaves undefined (rrelu's noise in eval: an unwritten
# tensor), compared by dtype and shape only
UNDEFINED = {("rrelu_eval", "_saved_noise")}


def _describe(v, m):
    if isinstance(v, m.Tensor):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape),
                _rounded(np.asarray(v.detach().numpy())), v.requires_grad)
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, tuple(_describe(u, m) for u in v))
    if type(v).__name__.endswith("SavedTensor"):
        return "SavedTensor"
    return (type(v).__name__, v)


def _saved(m, case):
    y = _cases(m)[case]()
    fn = y.grad_fn
    attrs = sorted(a for a in dir(fn) if a.startswith(("_saved_", "_raw_saved_")))
    edges = tuple((None if f is None else f.name(), k) for f, k in fn.next_functions)
    return fn.name(), {a: _describe(getattr(fn, a), m) for a in attrs}, edges


# Cases whose node's inputs come from other nodes than PyTorch's: a chain of basic indexing is one
# view node in numgrad (PyTorch records one per step, an UnsqueezeBackward0 or SliceBackward0
# before the last); add/sub with alpha scale the other operand by a MulBackward0 of its own;
# where keeps an edge (None) for its condition, which PyTorch's node leaves out; ATen's
# margin_ranking_loss adds its margin as a C++ Scalar (AddBackward1), numgrad as a wrapped number.
EDGES_DIFFER = {"add_alpha", "index_after_basic", "select_after_slice", "slice_after_none",
                "slice_after_select", "unsqueeze_index", "where", "margin_ranking_loss"}


@pytest.mark.parametrize("case", sorted(_cases(torch)))
def test_saved_attributes_as_pytorch(case):
    ours, theirs = _saved(numgrad, case), _saved(torch, case)
    assert ours[0] == theirs[0]
    # next_functions: the inputs' node names and output numbers; where numgrad's graph is still
    # shaped otherwise (listed with the reason), it must still differ, so the list stays true
    if case in EDGES_DIFFER:
        assert ours[2] != theirs[2]
    else:
        assert ours[2] == theirs[2]
    assert sorted(ours[1]) == sorted(theirs[1])
    for name, value in theirs[1].items():
        if (case, name) in UNDEFINED:
            assert ours[1][name][:3] == value[:3], name
        else:
            assert ours[1][name] == value, name


def test_raw_saved_of_a_derived_tensor_takes_hooks():
    """``_raw_saved_<name>`` of a value numgrad derives (``nll_loss``'s total weight): PyTorch's
    checks, and its pack hook sees the value."""
    def run(m):
        x = m.tensor(X, requires_grad=True)
        fn = m.nn.functional.nll_loss(x.log_softmax(1), m.tensor([0, 2, 1, 1]),
                                      weight=m.tensor(V)).grad_fn
        seen = []
        fn._raw_saved_total_weight.register_hooks(lambda t: seen.append(float(t)) or t,
                                                  lambda t: t)
        try:
            fn._raw_saved_weight.register_hooks(1, lambda t: t)
        except TypeError as e:
            seen.append(type(e).__name__)
        return seen
    ours, theirs = run(numgrad), run(torch)
    assert ours[1:] == theirs[1:] == ["TypeError"]
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)


@pytest.mark.parametrize("parts", [
    lambda m, x: (x.split(3)[1],),
    lambda m, x: (x.chunk(2, -1)[0] * 2, x.chunk(2, -1)[1]),
    lambda m, x: (m.unsafe_split_with_sizes(x, [1, 3])[1],),
    lambda m, x: (m.std_mean(x, 1)[1],),
    lambda m, x: (m.var_mean(x, -1)[0], m.var_mean(x, -1)[1] * 3),
], ids=["split_one_part", "chunk_two_parts", "unsafe_split_with_sizes_one_part",
        "std_mean_mean_only", "var_mean_both"])
def test_gradient_through_some_results_of_a_multi_result_op(parts):
    """Results left unused get no gradient (zeros where the op's node is PyTorch's one node for
    all of them): the input's gradient is PyTorch's."""
    def run(m):
        x = m.tensor(X, requires_grad=True)
        sum(p.sum() for p in parts(m, x)).backward()
        return np.asarray(x.grad)
    np.testing.assert_allclose(run(numgrad), run(torch), rtol=1e-12, atol=1e-12)


def test_a_node_autograd_grad_does_not_run_keeps_its_saved_values():
    """``autograd.grad(y, x)`` for a non-leaf ``x`` stops at ``x``'s node without running it, so
    its saved values stay: a later backward through ``x`` works, as in PyTorch."""
    def run(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        x = a * a
        (g,) = m.autograd.grad((x * 3).sum(), x)
        x.sum().backward()
        return np.asarray(g), np.asarray(a.grad)
    for ours, theirs in zip(run(numgrad), run(torch)):
        np.testing.assert_array_equal(ours, theirs)
