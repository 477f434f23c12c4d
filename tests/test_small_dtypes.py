"""float16, bfloat16, uint8, int8 and int16 (``numgrad._lowp``), against torch 2.13: the dtypes'
properties and promotion, creation, casts (rounding, NaN, inf, -0, wrapping), printing, storage
ops, arithmetic computed wider and rounded back, autograd through half tensors, and files both
ways (torch.save, safetensors)."""
import numpy as np
import pytest
import torch

import numgrad

NAMES = ["float16", "bfloat16", "uint8", "int8", "int16"]
ALL = NAMES + ["float32", "float64", "int32", "int64", "bool", "complex64"]
FLOATS = np.array([1.5, -2.25, 0.1, 3.3359375, -0.0, np.inf, -np.inf, 65519.0, 1e-7, 2.0 ** -24],
                  np.float32)


def _same(ours, theirs):
    """Equal values, dtype and shape: bit for bit (NaNs in the same places)."""
    assert str(ours.dtype).replace("numgrad", "torch") == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    a = ours.float().tolist() if ours.dtype.is_floating_point else ours.tolist()
    b = theirs.float().tolist() if theirs.dtype.is_floating_point else theirs.tolist()
    np.testing.assert_array_equal(np.array(a), np.array(b))


def test_dtype_properties_and_promotion_are_pytorchs():
    for name in NAMES:
        ours, theirs = getattr(numgrad, name), getattr(torch, name)
        assert repr(ours) == repr(theirs).replace("torch", "numgrad")
        assert (ours.itemsize, ours.is_floating_point, ours.is_signed) == \
            (theirs.itemsize, theirs.is_floating_point, theirs.is_signed)
        for other in ALL:
            got = numgrad.promote_types(ours, getattr(numgrad, other))
            assert repr(got) == repr(torch.promote_types(theirs, getattr(torch, other))).replace(
                "torch", "numgrad"), (name, other)
    assert numgrad.half is numgrad.float16 and numgrad.short is numgrad.int16
    for name in ("float16", "bfloat16"):
        assert repr(numgrad.finfo(getattr(numgrad, name))) == repr(torch.finfo(getattr(torch, name)))
    for name in ("uint8", "int8", "int16"):
        assert repr(numgrad.iinfo(getattr(numgrad, name))) == repr(torch.iinfo(getattr(torch, name)))


@pytest.mark.parametrize("name", NAMES)
def test_creation_printing_and_legacy_types(name):
    for make in (lambda m: m.zeros(2, 3, dtype=getattr(m, name)),
                 lambda m: m.ones(2, dtype=getattr(m, name)),
                 lambda m: m.full((2,), 7, dtype=getattr(m, name)),
                 lambda m: m.arange(5, dtype=getattr(m, name)),
                 lambda m: m.tensor([1, 2, 100], dtype=getattr(m, name)),
                 lambda m: m.full_like(m.zeros(2, dtype=getattr(m, name)), 3),
                 lambda m: m.zeros(0, dtype=getattr(m, name)),
                 lambda m: m.tensor(5, dtype=getattr(m, name))):
        ours, theirs = make(numgrad), make(torch)
        _same(ours, theirs)
        assert repr(ours) == repr(theirs).replace("torch.", "numgrad.")
    t = numgrad.ones(2, dtype=getattr(numgrad, name))
    assert t.type() == torch.ones(2, dtype=getattr(torch, name)).type().replace("torch", "numgrad")
    assert t.element_size() == torch.ones(1, dtype=getattr(torch, name)).element_size()


@pytest.mark.parametrize("name", NAMES)
def test_casts_both_ways_round_and_wrap_as_pytorch(name):
    values = np.concatenate([FLOATS, [np.nan, 300.7, -1.5, 1e10, 1.00390625, 1.01171875]]).astype(
        np.float32)  # (the last two: ties of bfloat16's rounding)
    ours = numgrad.tensor(values).to(getattr(numgrad, name))
    theirs = torch.tensor(values).to(getattr(torch, name))
    _same(ours, theirs)
    _same(ours.double(), theirs.double())  # (and back)
    method = {"float16": "half", "bfloat16": "bfloat16", "uint8": "byte", "int8": "char",
              "int16": "short"}[name]
    _same(getattr(numgrad.tensor(values[:4]), method)(), getattr(torch.tensor(values[:4]), method)())
    _same(numgrad.arange(3).type_as(ours), torch.arange(3).type_as(theirs))
    legacy = type(theirs.type(), (), {}).__name__.rpartition(".")[2]
    _same(numgrad.arange(3.0).type(getattr(numgrad, legacy)), torch.arange(3.0).type(getattr(torch, legacy)))
    if name == "bfloat16":
        with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
            ours.numpy()
    else:
        assert ours.numpy().dtype == theirs.numpy().dtype


@pytest.mark.parametrize("name", NAMES)
def test_storage_ops(name):
    def run(m):
        x = m.arange(12, dtype=getattr(m, name)).reshape(3, 4)
        y = x.t()  # (not contiguous)
        z = x[1:, ::2]
        z[0, 1] = 9  # (through a view, into x)
        w = m.zeros(4, dtype=getattr(m, name)).copy_(m.tensor([1.5, 2.5, -0.0, 4.0]))
        return [x, y.contiguous(), y.clone(), x[m.tensor([2, 0])], x[x > 5], m.cat([x, x]),
                m.stack([x[0], x[1]]), x.view(4, 3), y.reshape(-1), w, x.flip(0), x[0, 0]]
    for ours, theirs in zip(run(numgrad), run(torch)):
        _same(ours, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_arithmetic_is_computed_wider_and_rounded_back(name):
    def run(m):
        d = getattr(m, name)
        a = m.tensor([3.0, 100.0, 7.0, 1.0, 120.0, 2.0]).to(d)
        b = m.tensor([2.0, 50.0, 3.0, 4.0, 7.0, 1.0]).to(d)
        out = [a + b, a - b, a * b, a * 3, a / b, a < b, a == b, a.sum(), a.max(), m.relu(a - 4),
               a.reshape(2, 3) @ b.reshape(3, 2), a + m.ones(6), a + m.ones(6, dtype=m.int64),
               a * 2.5]
        if d.is_floating_point:
            out += [a.mean(), m.exp(a / 50), m.softmax(a / 10, 0)]
        return out
    for ours, theirs in zip(run(numgrad), run(torch)):
        _same(ours, theirs)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_autograd_through_half_tensors(name):
    def run(m):
        x = m.tensor([[0.5, -1.25, 2.0], [3.0, 0.1, -0.7]], dtype=getattr(m, name),
                     requires_grad=True)
        w = m.tensor([[1.5], [-0.5], [0.25]], dtype=getattr(m, name), requires_grad=True)
        loss = (m.relu(x @ w) * x.sum(1, keepdim=True)).mean()
        loss.backward()
        return loss, x.grad, w.grad
    for ours, theirs in zip(run(numgrad), run(torch)):
        _same(ours.detach(), theirs.detach())


def test_files_both_ways(tmp_path):
    from safetensors.torch import load_file, save_file

    from numgrad import safetensors as st

    src = {n: torch.tensor([1.5, -2.25, 3.0, 100.1]).to(getattr(torch, n)) for n in NAMES}
    src["view"] = src["float16"][1:3]
    torch.save(src, tmp_path / "t.pt")
    ours = numgrad.load(tmp_path / "t.pt")
    for k, v in ours.items():
        _same(v, src[k])
    numgrad.save(ours, tmp_path / "n.pt")
    back = torch.load(tmp_path / "n.pt", weights_only=True)
    for k, v in back.items():
        assert v.dtype == src[k].dtype and torch.equal(v, src[k])
    assert back["view"].untyped_storage().data_ptr() == back["float16"].untyped_storage().data_ptr()
    del src["view"]
    save_file(src, tmp_path / "a.safetensors")
    ours = st.load_file(tmp_path / "a.safetensors")
    st.save_file(ours, tmp_path / "b.safetensors")
    for k, v in load_file(tmp_path / "b.safetensors").items():
        assert v.dtype == src[k].dtype and torch.equal(v, src[k])


def test_a_narrow_array_from_numpy_in_a_fresh_process_is_computed_wider():
    """The ops' test for narrow arrays is off until one is made (``numgrad._lowp.active``); an
    array that enters without numgrad's dtype objects (from NumPy) switches it on."""
    import subprocess
    import sys

    code = ("import numpy as np, numgrad; x = numgrad.from_numpy(np.array([1.5, 2.0], np.float16));"
            " y = (x * x).sum(); print(y.dtype, y.item())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numgrad.float16", "6.25"]


@pytest.mark.parametrize("fn", [
    lambda m, x: x.any(), lambda m, x: x.all(1), lambda m, x: x.count_nonzero(),
    lambda m, x: x.nonzero(), lambda m, x: x.argwhere(), lambda m, x: x.histc(3),
    lambda m, x: m.rrelu(x), lambda m, x: m.rrelu(x.half()), lambda m, x: m.rrelu_(x.clone()),
    lambda m, x: m.normal(x, 1.0).dtype,
], ids=["any", "all", "count_nonzero", "nonzero", "argwhere", "histc", "rrelu", "rrelu_half",
        "rrelu_", "normal"])
def test_bfloat16_predicates_histc_rrelu_and_normal_as_pytorch(fn):
    """(each raised Numba's typing error or NumPy's: bfloat16's NumPy type has no numbers; they
    now read its values as float32, as its elementwise ops do)"""
    def run(m):
        y = fn(m, m.tensor([[0.5, 0.0, -2.0], [-1.0, 0.0, 3.0]], dtype=m.bfloat16))
        if not isinstance(y, m.Tensor):
            return str(y).split(".")[-1]
        values = y.float().tolist() if y.is_floating_point() else y.tolist()
        return str(y.dtype).split(".")[-1], values
    assert run(numgrad) == run(torch)


@pytest.mark.parametrize("fn", [
    lambda m, h, b: m.igamma(h, h + 1), lambda m, h, b: m.igammac(b, b * 2),
    lambda m, h, b: m.logaddexp(b, b + 1), lambda m, h, b: m.logaddexp2(b, b),
    lambda m, h, b: m.dist(b, b * 3), lambda m, h, b: m.isclose(h, h + 0.001),
    lambda m, h, b: m.isclose(b, b), lambda m, h, b: m.linalg.vector_norm(b),
], ids=["igamma_half", "igammac", "logaddexp", "logaddexp2", "dist", "isclose_half",
        "isclose", "vector_norm"])
def test_half_precision_binary_functions_as_pytorch(fn):
    """(float16's igamma returned float32; bfloat16's logaddexp, igamma, dist and vector_norm
    refused it, float16's isclose raised Numba's error: PyTorch computes them all)"""
    def run(m):
        y = fn(m, m.tensor([1.0, 2.0], dtype=m.float16), m.tensor([1.0, 2.0], dtype=m.bfloat16))
        return str(y.dtype).split(".")[-1], y.float().tolist() if y.is_floating_point() else \
            y.tolist()
    assert run(numgrad) == run(torch)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_writes_through_views_of_half_tensors_that_require_grad_land_as_pytorchs(name):
    # (a write through a view of a recorded half tensor went into a widened copy and was lost:
    # slice_scatter, select_scatter, diagonal_scatter and circular padding returned the input)
    def step(m):
        a = m.arange(6.0).to(getattr(m, name)).requires_grad_()
        y = a.clone()
        y[0:2].copy_(m.ones(2, dtype=y.dtype))
        y[2:3].add_(1.0)
        y[3:].mul_(2).add_(5)
        y[m.tensor([0, 4])] = m.tensor([7.0, 8.0]).to(y.dtype)
        z = m.slice_scatter(a, m.full((6,), -1.0, dtype=a.dtype), 0, 0, 6)
        w = m.nn.functional.pad(a.reshape(1, 2, 3), (1, 1), mode="circular")
        (y * 3 + z + w.sum()).sum().backward()
        return y, z, w, a.grad

    for ours, theirs in zip(step(numgrad), step(torch)):
        _same(ours.detach(), theirs.detach())


def test_narrow_numbers_among_an_ops_parameters_are_widened_too():
    # (``1 - x`` of a half tensor passed a float16 number to a kernel compiled for float32:
    # Numba's NotImplementedError in atanh's, logit's, glu's, binary_cross_entropy's backward)
    def fns(m):
        return (m.atanh, lambda v: m.logit(v.abs()), lambda v: 1 - v,
                lambda v: m.nn.functional.glu(m.cat([v, v]), 0))

    for f, g in zip(fns(numgrad), fns(torch)):
        x = numgrad.tensor([0.1, -0.3, 0.7]).to(numgrad.float16).requires_grad_()
        t = torch.tensor([0.1, -0.3, 0.7]).to(torch.float16).requires_grad_()
        y, z = f(x), g(t)
        y.sum().backward()
        z.sum().backward()
        assert y.dtype == x.grad.dtype == numgrad.float16
        for ours, theirs in ((y, z), (x.grad, t.grad)):  # (a half ulp apart at most: logit's)
            np.testing.assert_allclose(ours.detach().float().numpy(), theirs.detach().float().numpy(),
                                       rtol=1e-3)


def test_bfloat16_pooling_padding_and_unfold_as_pytorch():
    # (they refused bfloat16 with PyTorch's words though PyTorch computes them; they now run
    # widened: values, dtypes and gradients. avg_pool3d, and local_response_norm of a 4-D
    # input, which pools with it, refuse float16 and bfloat16 as PyTorch's CPU kernel does)
    def fns(m):
        F = m.nn.functional
        return [lambda x: F.adaptive_avg_pool1d(x[0], 2), lambda x: F.adaptive_avg_pool2d(x, 2),
                lambda x: F.adaptive_avg_pool3d(x[None], 2),
                lambda x: F.adaptive_max_pool1d(x[0], 2), lambda x: F.adaptive_max_pool2d(x, 2),
                lambda x: F.avg_pool1d(x[0], 2), lambda x: F.avg_pool2d(x, 2),
                lambda x: F.max_pool1d(x[0], 2), lambda x: F.max_pool2d(x, 2),
                lambda x: F.max_pool1d(x[0], 2, return_indices=True)[0],
                lambda x: F.max_pool3d(x[None], 2), lambda x: F.local_response_norm(x[0], 2),
                lambda x: F.pad(x[0], (1, 2), mode="reflect"),
                lambda x: F.pad(x, (1, 1, 2, 0), mode="replicate"),
                lambda x: F.pad(x[0], (-1, 1), mode="replicate"), lambda x: F.unfold(x, 2)]

    data = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for i, (f, g) in enumerate(zip(fns(numgrad), fns(torch))):
        x = numgrad.tensor(data).to(numgrad.bfloat16).requires_grad_()
        t = torch.tensor(data).to(torch.bfloat16).requires_grad_()
        y, z = f(x), g(t)
        (y * y).sum().backward()
        (z * z).sum().backward()
        for ours, theirs, exact in ((y.detach(), z.detach(), i != 2),
                                    (x.grad, t.grad, i not in (0, 1, 2, 13))):
            if exact:
                _same(ours, theirs)
            else:  # (ATen adds into a bfloat16 result, rounding each sum (adaptive_avg_pool3d,
                #      the backwards of adaptive_avg_pool2d and replication padding); numgrad
                #      sums in float32 and rounds once: an ulp or two apart)
                assert ours.dtype == numgrad.bfloat16 and ours.shape == theirs.shape
                np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(),
                                           rtol=2 ** -6, atol=2 ** -8)
    for name, m_name in (("float16", "Half"), ("bfloat16", "BFloat16")):
        x = numgrad.ones(1, 2, 2, 2, 2, dtype=getattr(numgrad, name))
        for f in (lambda v: numgrad.nn.functional.avg_pool3d(v, 2),
                  lambda v: numgrad.nn.functional.local_response_norm(v[0], 2)):
            with pytest.raises(NotImplementedError, match=f'"avg_pool3d_out_frame" not '
                               f"implemented for '{m_name}'"):
                f(x)


def test_uint8_and_bfloat16_interpolation_as_pytorch():
    # (every mode refused uint8 and bfloat16: PyTorch resizes uint8 images in fixed point, each
    # pass rounded to uint8, and bfloat16 in float, rounded once)
    x = np.random.default_rng(0).integers(0, 256, (2, 3, 7, 9)).astype(np.uint8)
    cases = (dict(size=(5, 13), mode="bilinear"), dict(scale_factor=1.7, mode="bicubic"),
             dict(size=(4, 3), mode="bilinear", antialias=True),
             dict(size=(4, 3), mode="bicubic", antialias=True),
             dict(size=(4, 11), mode="nearest"), dict(size=(9, 4), mode="bicubic", align_corners=True))
    for kw in cases:
        _same(numgrad.nn.functional.interpolate(numgrad.from_numpy(x), **kw),
              torch.nn.functional.interpolate(torch.from_numpy(x), **kw))
    b = numgrad.from_numpy(x.astype(np.float32) / 8).to(numgrad.bfloat16)
    t = torch.from_numpy(x.astype(np.float32) / 8).to(torch.bfloat16)
    for kw in (dict(size=(4, 5), mode="nearest"), dict(scale_factor=2, mode="bilinear")):
        _same(numgrad.nn.functional.interpolate(b, **kw), torch.nn.functional.interpolate(t, **kw))
    # (and PyTorch's refusals: no linear uint8, no anti-aliased float16)
    for v, kw, msg in ((numgrad.from_numpy(x[0]), dict(size=5, mode="linear"),
                        "\"compute_indices_weights_linear\" not implemented for 'Byte'"),
                       (b.half(), dict(size=3, mode="bilinear", antialias=True),
                        "\"compute_index_ranges_weights\" not implemented for 'Half'")):
        with pytest.raises(NotImplementedError, match=msg):
            numgrad.nn.functional.interpolate(v, **kw)


def test_half_nextafter_steps_in_its_own_spacing_as_pytorch():
    # (float16's nextafter stepped in float32's spacing and returned float32; bfloat16's
    # refused it: PyTorch steps to the dtype's own neighbour, in the dtype)
    vals = [0.0, -0.0, 1.0, -1.0, 3.14, 65504.0, 6e-8, -6e-8, np.inf, -np.inf, np.nan, 1e-40,
            3e38, 9.2e-41]
    for name in ("float16", "bfloat16"):
        def run(m):
            x = m.tensor(vals).to(getattr(m, name)).requires_grad_()
            outs = [m.nextafter(x, t.to(x.dtype)) for t in
                    (m.tensor(vals).flip(0), m.full((len(vals),), np.inf), m.zeros(len(vals)))]
            outs.append(m.nextafter(x, m.tensor(2.0, dtype=m.float32)))  # (promoted: float32)
            sum(o.sum() for o in outs).backward()
            return [o.detach() for o in outs] + [x.grad]

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours, theirs)


def test_bfloat16_nan_and_inf_tests_as_pytorch():
    # (isnan, isinf, isposinf, isneginf and isfinite took bfloat16 (NumPy's "V2") for a
    # non-float dtype: all False (isfinite all True) for NaN and inf; nan_to_num replaced inf
    # by 0, nanmean counted NaNs)
    def run(m):
        x = m.tensor([[1.0, np.nan, np.inf], [-np.inf, -0.0, 3e38]]).to(m.bfloat16)
        return [m.isnan(x), m.isinf(x), m.isposinf(x), m.isneginf(x), m.isfinite(x),
                m.nan_to_num(x), m.nan_to_num(x, posinf=1e39), m.nanmean(x[:, :2], 1),
                m.nanmedian(x, 1).values]

    for ours, theirs in zip(run(numgrad), run(torch)):
        _same(ours, theirs)


def test_integer_bilinear_keeps_its_dtype_as_pytorch():
    # (the product's sum was int64: PyTorch's _trilinear stays in the inputs' dtype, wrapping)
    def run(m, name):
        d = getattr(m, name)
        x1 = m.tensor([[1, -2, 3], [4, 5, -6]], dtype=d) * 20
        x2 = m.tensor([[7, 8, -9, 10], [1, 2, 3, 4]], dtype=d)
        w = (m.arange(60, dtype=d) - 30).reshape(5, 3, 4)
        return m.nn.functional.bilinear(x1, x2, w, m.arange(5, dtype=d))

    for name in ("int32", "int8"):
        _same(run(numgrad, name), run(torch, name))


def test_bucketize_and_searchsorted_out_int32_of_narrow_dtypes_as_pytorch():
    # (out_int32's int32 result is the small integers' widened dtype: it was rounded back to
    # int16 (uint8, int8), as an arithmetic result would be)
    for name in ("int16", "uint8", "bfloat16"):
        def run(m):
            b = m.tensor([1, 3, 5, 7, 9]).to(getattr(m, name))
            x = m.tensor([[0, 3, 4], [9, 10, 5]]).to(getattr(m, name))
            return (m.bucketize(x, b, out_int32=True), m.searchsorted(b, x, out_int32=True,
                                                                         right=True))

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours, theirs)


def test_bfloat16_lerp_as_pytorch():
    # (lerp refused bfloat16 though PyTorch computes it; a dtype mismatch names the half types
    # as PyTorch's C++ does: "expected dtype c10::BFloat16 for `end` but got dtype float")
    data = np.random.default_rng(1).standard_normal((3, 40)).astype(np.float32) * 10

    def run(m):
        a, b, w = (m.tensor(v).to(m.bfloat16).requires_grad_() for v in data)
        outs = [m.lerp(a, b, 0.3), m.lerp(a, b, w), a.lerp(b, 0.7)]
        sum(o.sum() for o in outs).backward()
        return outs + [a.grad, b.grad, w.grad]

    for ours, theirs in zip(run(numgrad), run(torch)):
        _same(ours.detach(), theirs.detach())
    for m in (numgrad, torch):
        for end, weight, message in (
                (m.ones(2), 0.5, "expected dtype c10::BFloat16 for `end` but got dtype float"),
                (m.ones(2, dtype=m.bfloat16), m.ones(2, dtype=m.half),
                 "expected dtype c10::BFloat16 for `weight` but got dtype c10::Half")):
            with pytest.raises(RuntimeError) as e:
                m.lerp(m.ones(2, dtype=m.bfloat16), end, weight)
            assert str(e.value) == message


def test_integer_tensordot_over_a_broadcast_dimension_as_pytorch():
    # (a contracted dimension of size 1 against n sums the other side first: that sum was
    # int64, and mm refused int32 by int64)
    for name in ("int32", "int16"):
        def run(m):
            a = m.tensor([[[3]]], dtype=getattr(m, name))
            b = m.arange(4, dtype=getattr(m, name)).reshape(2, 1, 2)
            return m.tensordot(a, b, dims=([0, 1], [2, 0]))

        _same(run(numgrad), run(torch))


def test_half_matrix_norm_and_matrix_exp_as_pytorch():
    # (both refused bfloat16 as "Expected a floating point or complex tensor"; float16's 'nuc'
    # and ±2 norms raised NumPy's TypeError where PyTorch refuses low precision dtypes)
    data = np.random.default_rng(2).standard_normal((2, 3, 3)).astype(np.float32)
    for name, c_name in (("bfloat16", "BFloat16"), ("float16", "Half")):
        def run(m):
            A = m.tensor(data).to(getattr(m, name)).requires_grad_()
            outs = [m.linalg.matrix_norm(A, o) for o in (1, -1, np.inf, -np.inf)]
            sum(o.sum() for o in outs).backward()
            # (without gradients: the 'fro' norm's is an ulp off PyTorch's, numgrad's backward
            # reading the float32 norm where PyTorch's reads it rounded; PyTorch's matrix_exp's
            # is -inf for a half 1x1 matrix)
            return outs + [A.grad, m.linalg.matrix_norm(A.detach()),
                           m.linalg.matrix_exp(A.detach()[:, :1, :1])]  # (1x1: exp)

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours.detach(), theirs.detach())
        for m in (numgrad, torch):
            A = m.tensor(data).to(getattr(m, name))
            for o in ("nuc", 2, -2):
                with pytest.raises(RuntimeError, match="linalg.matrix_norm: Low precision dtypes "
                                   f"not supported. Got {c_name}$"):
                    m.linalg.matrix_norm(A, o)
        # (PyTorch 2.13's CPU matrix_exp of a 2x2 or larger half matrix is NaN, inf or values
        # near -2e4 / -1.3e30, the identity's too: numgrad's is float32's, rounded once)
        x = numgrad.tensor(data).to(getattr(numgrad, name))
        t = torch.tensor(data).to(getattr(torch, name))
        _same(numgrad.linalg.matrix_exp(x), torch.linalg.matrix_exp(t.float()).to(t.dtype))


def test_trace_of_narrow_dtypes_as_pytorch():
    # (bfloat16's trace was summed as int64, NumPy's "V2" taken for a non-float dtype)
    data = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32) * 10
    for name in NAMES:
        def run(m):
            x = m.tensor(data).to(getattr(m, name))
            if x.is_floating_point():
                x.requires_grad_()
            y = m.trace(x)
            if not x.requires_grad:
                return [y]
            y.backward()
            return [y.detach(), x.grad]

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours, theirs)


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
def test_bfloat16_scatter_index_and_segment_amin_amax_as_pytorch():
    # (their fill for an excluded element asked NumPy's iinfo of bfloat16's "V2": ValueError
    # 'Invalid integer data type'; it is ±inf, a float's)
    data = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    for reduce in ("amin", "amax"):
        def run(m):
            a, s = (m.tensor(v).to(m.bfloat16).requires_grad_() for v in (data, data[::-1] * 2))
            idx = m.tensor([[0, 1, 0, 2], [2, 2, 1, 0], [1, 0, 0, 0]])
            outs = [a.scatter_reduce(1, idx, s, reduce, include_self=False),
                    a.scatter_reduce(0, idx, s, reduce),
                    a.index_reduce(0, m.tensor([2, 0, 2]), s, reduce, include_self=False),
                    a.index_reduce(1, m.tensor([1, 1, 3, 0]), s, reduce)]
            outs.append(m._segment_reduce(a, reduce[1:], lengths=m.tensor([1, 0, 2])))
            sum(o.sum() for o in outs).backward()
            return outs + [a.grad, s.grad]

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours.detach(), theirs.detach())


def test_half_nll_loss_with_class_weights_as_pytorch():
    # (bfloat16's class weights reached nll_loss's kernel as NumPy's "V2" words: ValueError
    # 'setting an array element with a sequence'; a narrow array among an op's parameters is
    # widened now, as its narrow numbers are. 'mean' of float16/bfloat16 rounds the sum and the
    # total weight to the dtype before dividing, and its backward divides the gradient by that
    # total in the dtype before weighting it, as PyTorch's kernel: they were an ulp off)
    data = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)
    for name in ("bfloat16", "float16"):
        for reduction in ("none", "mean", "sum"):
            def run(m):
                x = m.tensor(data).to(getattr(m, name)).requires_grad_()
                w = m.tensor([3.125, -3.03125, 5.09375]).to(x.dtype)
                t = m.tensor([0, 2, 1, 2])
                F = m.nn.functional
                outs = [F.nll_loss(x, t, weight=w, reduction=reduction),
                        F.nll_loss(x, t, reduction=reduction, ignore_index=1),
                        F.nll_loss(x[:2], t[:2], weight=w, reduction=reduction, ignore_index=2)]
                sum(o.sum() for o in outs).backward()
                return outs + [x.grad]

            for ours, theirs in zip(run(numgrad), run(torch)):
                _same(ours.detach(), theirs.detach())


def test_float32_trigamma_near_the_poles_as_pytorch():
    # (an integer input is computed in float32; PyTorch's float32 trigamma is float arithmetic,
    # sin(pi x) of float32's pi nonzero at -8: 2.0e13 where float64 arithmetic gave 1.0e31)
    for name in ("int16", "int8", "float32"):
        def run(m):
            x = m.tensor([-8, -5, -1, 0, 3, 7]).to(getattr(m, name))
            return [m.polygamma(1, x), m.special.polygamma(1, x)]

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours, theirs)


def test_as_strided_scatter_of_a_view_addresses_its_base_memory_as_pytorch():
    # (the offset and strides address the input's memory, as as_strided reads it: they were
    # taken over the input as if it were contiguous, so src landed in the wrong element, or in
    # an element PyTorch's write misses, the OpInfo's int32 non-contiguous sample 0)
    def run(m):
        base = m.tensor([10, -8, 3, 4, 9, 1], dtype=m.int32)
        src = m.tensor([6, 7], dtype=m.int32)
        return [m.as_strided_scatter(base[1::2], src[0], (), (), 0),
                m.as_strided_scatter(base[1::2], src, (2,), (1,), 0),
                m.as_strided_scatter(base[1:4], src, (2,), (2,)),
                m.as_strided_scatter(base[1::2], src, (2,), (2,), 3)]

    for ours, theirs in zip(run(numgrad), run(torch)):
        _same(ours, theirs)


def test_random_draws_from_narrow_probabilities_as_pytorch():
    # (bfloat16 probabilities were refused: "multinomial only supports floating-point dtypes
    # for input, got: Float", '"bernoulli" not implemented for 'Float''; an integer tensor with
    # a number p was refused where PyTorch draws 0s and 1s of its dtype; the refusals name the
    # dtype ('Char', not 'Float') and bernoulli's kernel as PyTorch's)
    def run(m):
        p = m.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]).to(m.bfloat16)
        out = [m.bernoulli(p), p.bernoulli(), m.multinomial(p[:, 1:].flip(0), 1),
               m.multinomial(p[1], 2).sort()[0],
               m.bernoulli(p, 0.0), m.bernoulli(p, 1.0)]
        for name in ("int8", "uint8", "int16", "int64", "bool"):
            out += [m.bernoulli(m.ones(2, dtype=getattr(m, name)), 1.0),
                    m.ones(2, dtype=getattr(m, name)).bernoulli_(0.0)]
        errors = []
        for name in ("int8", "uint8", "int16", "int64", "bool"):
            for f in (m.bernoulli, lambda x: m.multinomial(x, 1)):
                with pytest.raises((NotImplementedError, RuntimeError)) as e:
                    f(m.ones(2, dtype=getattr(m, name)))
                errors.append((e.type.__name__, str(e.value)))
        return out, errors

    (ours, our_errors), (theirs, their_errors) = run(numgrad), run(torch)
    for a, b in zip(ours, theirs):
        _same(a, b)
    assert our_errors == their_errors


def test_half_arithmetic_with_python_numbers_as_pytorch():
    # (PyTorch's CPU kernels take a Python number with a float16/bfloat16 tensor two ways: add,
    # sub, fmod, remainder and the comparisons convert it to the tensor's dtype, mul and true
    # division keep it in float32. numgrad rounded it to float16 for all (x * 0.7 was an ulp
    # off in 40% of elements, x.mul_(0.7) and the gradient of x * 0.7 too) and kept bfloat16's
    # in float32 for all (x + 0.7, x < 8.4 and hinge_embedding_loss off); bfloat16's fmod and
    # remainder by a number read its float32 bits as bfloat16 (NaN))
    data = (np.random.default_rng(6).standard_normal(400) * 10).astype(np.float32)
    for name in ("float16", "bfloat16"):
        def run(m):
            x = m.tensor(data).to(getattr(m, name)).requires_grad_()
            outs = []
            for s in (0.7, 8.396163642458497, 3):
                outs += [x + s, s + x, x - s, s - x, x * s, s * x, x / s, s / x, x.fmod(s),
                         x.remainder(s), (x < s).to(x.dtype), (x.round() == s).to(x.dtype),
                         x.detach().clone().mul_(s), x.detach().clone().div_(s),
                         x.detach().clone().sub_(s), x.addcdiv(x, x + 100, value=s)]
            t = m.tensor(np.sign(data)).to(x.dtype)
            outs.append(m.nn.functional.hinge_embedding_loss(x, t, margin=8.396163642458497))
            g = m.full_like(x, 0.3)
            for f in (lambda v: v * 0.7, lambda v: v / 3.3, lambda v: 2.1 - v):
                outs += m.autograd.grad(f(x), x, g)  # (the gradients, one op each)
            return outs

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours.detach(), theirs.detach())


def test_half_rounding_division_and_pow_with_python_numbers_as_pytorch():
    # (PyTorch's div(rounding_mode=) and floor_divide keep a number on the right of a float16 or
    # bfloat16 tensor in float32, their opmath type, where numgrad rounded it to the tensor's
    # dtype first: -2.5 // 0.1 of float16 gave -26 for PyTorch's -25, 3 // (1/3) 9 for 8; pow
    # converts its number to the tensor's dtype (x ** 0.1 of float16 is pow(x, 0.09998)), where
    # numgrad took it in float32)
    data = (np.random.default_rng(7).standard_normal(400) * 10).astype(np.float32)
    data[:4] = (-2.5, -1.0, 3.0, 0.1)
    for name in ("float16", "bfloat16"):
        def run(m):
            x = m.tensor(data).to(getattr(m, name))
            outs = []
            for s in (0.1, 1 / 3, -2.3, 1e-3, 700.1):
                outs += [x // s, m.div(x, s, rounding_mode="floor"),
                         m.div(x, s, rounding_mode="trunc"), 7.3 // (x.abs() + 1),
                         x.abs() ** s, abs(s) ** x.clamp(-5, 5)]
            return outs

        for ours, theirs in zip(run(numgrad), run(torch)):
            _same(ours, theirs)


def test_an_integer_past_float16s_range_is_refused_as_pytorch():
    # (an int into float16 was not checked against its range: full(..., 70000) and masked_fill
    # gave inf, and x ** 70000 or x ** 1e6 of float16 computed, where PyTorch's conversion of
    # the number raises; 65504, float16's largest, is taken)
    for m in (numgrad, torch):
        x = m.ones(2).half()
        for f in (lambda: m.full((2,), 70000, dtype=m.float16),
                  lambda: x.masked_fill(m.tensor([True, False]), -70000), lambda: x ** 70000,
                  lambda: x ** 1e6):
            with pytest.raises(RuntimeError, match="value cannot be converted to type "
                                                   "c10::Half without overflow"):
                f()
        assert m.full((2,), 65504, dtype=m.float16).tolist() == [65504.0, 65504.0]
        assert (x ** 3).tolist() == [1.0, 1.0]


def test_a_number_past_bfloat16s_range_is_refused_as_pytorch():
    # (bfloat16, NumPy's "V2", was never checked: full(..., 1e39), masked_fill, fill_ and clamp's
    # bounds gave inf where PyTorch's conversion of the number raises; its largest finite value,
    # inf and an int that no Scalar holds are as PyTorch's)
    top = 3.3895313892515355e38
    for m in (numgrad, torch):
        x = m.ones(2, dtype=m.bfloat16)
        for f in (lambda: m.full((2,), 1e39, dtype=m.bfloat16),
                  lambda: m.full((2,), -3.4e38, dtype=m.bfloat16),
                  lambda: x.masked_fill(m.tensor([True, False]), 1e39),
                  lambda: x.clone().fill_(-1e39), lambda: x.clamp(max=3.39e38)):
            with pytest.raises(RuntimeError, match="value cannot be converted to type "
                                                   "c10::BFloat16 without overflow"):
                f()
        with pytest.raises(OverflowError, match="int too big to convert"):
            m.full((2,), 10 ** 39, dtype=m.bfloat16)
        with pytest.raises(OverflowError, match="int too big to convert"):
            m.add(x, x, alpha=10 ** 39)  # (alpha too, through the same check)
        assert m.full((2,), top, dtype=m.bfloat16).float().tolist() == [top, top]
        assert m.full((2,), float("inf"), dtype=m.bfloat16).float().tolist() == [np.inf] * 2
        assert (x + 1e39).float().tolist() == [np.inf] * 2  # (an operand, not a write: inf)


def _bits(t, name):
    """A float16/bfloat16 tensor's bits; bfloat16's NaNs as one value (PyTorch's vectorised loops
    write 0xFFFF, its scalar ones and numgrad 0x7FC0)."""
    bits = np.array(t.detach().contiguous().view(torch.int16 if isinstance(t, torch.Tensor)
                                                 else numgrad.int16).tolist(), np.int64) & 0xFFFF
    if name == "bfloat16":
        bits[((bits & 0x7F80) == 0x7F80) & ((bits & 0x7F) != 0)] = 0x7FC0
    return bits


_FUSED_VALUES = {  # (128 each: a multiple of 64, so no element in PyTorch's scalar tail loop)
    "float16": [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0 ** -24, -3 * 2.0 ** -20, 6.1e-5, 65504.0,
                -65504.0, 61000.0, -2.5, 0.1, 1 / 3, 2049.0, 1.0],
    "bfloat16": [np.nan, np.inf, -np.inf, 0.0, -0.0, 9.2e-41, -1e-39, 1.2e-38, 3.3895314e38,
                 -3.3895314e38, 3e38, -2.5, 0.1, 1 / 3, 257.0, 1.0],
}


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub", "rsub", "add_", "sub_", "xlogy"])
def test_half_alpha_arithmetic_and_xlogy_bit_for_bit_as_pytorch(op, name):
    # (PyTorch's CPU add/sub/rsub of float16 or bfloat16 with alpha round alpha to the dtype and
    # compute x + alpha * y in one fused multiply-add in float32, rounded once; numgrad rounded
    # other * alpha first (alpha in float32), and an element in ten differed by an ulp or more
    # (bfloat16's -3e38 + 3 * 2e38 overflowed). Its xlogy rounds log(y) to the dtype before the
    # product, where numgrad multiplied the float32 log. float16's NaNs as PyTorch's, sign
    # included)
    rng = np.random.default_rng(11)
    special = _FUSED_VALUES[name]
    big = 65504.0 if name == "float16" else 3.3e38
    x = np.concatenate([special, rng.uniform(-big, big, 16), rng.standard_normal(96) * 10.0 **
                        rng.integers(-4, 4, 96)]).astype(np.float32)
    y = np.concatenate([np.roll(special, 5), -rng.uniform(-big, big, 16), rng.standard_normal(96)
                        * 10.0 ** rng.integers(-4, 4, 96)]).astype(np.float32)

    def run(m):
        dt = getattr(m, name)
        a, b, outs = m.tensor(x).to(dt), m.tensor(y).to(dt), []
        if op == "xlogy":
            b1 = m.tensor(y[:1].reshape(())).to(dt)
            outs += [m.xlogy(a, b), m.xlogy(a, b.abs()), a.xlogy(b1.abs()), m.xlogy(a, 2.5),
                     m.xlogy(a, -1.0), m.xlogy(0.1, b.abs()), a.clone().xlogy_(b.abs())]
            return outs
        for alpha in (0.1, 1 / 3, -2.5, 3, 1e-3, float("inf")):
            if op.endswith("_"):
                outs += [getattr(a.clone(), op)(b, alpha=alpha),
                         getattr(a.clone(), op)(1000.7, alpha=alpha)]
                continue
            f = getattr(m, op)
            out = m.empty(x.shape, dtype=dt)
            f(a, b, alpha=alpha, out=out) if op != "rsub" else out.copy_(f(a, b, alpha=alpha))
            outs += [f(a, b, alpha=alpha), out, f(a, 1000.7, alpha=alpha),
                     f(a, b[:1].reshape(()), alpha=alpha), f(a[:64], b[64:], alpha=alpha)]
        return outs

    for ours, theirs in zip(run(numgrad), run(torch)):
        assert str(ours.dtype).replace("numgrad", "torch") == str(theirs.dtype)
        np.testing.assert_array_equal(_bits(ours, name), _bits(theirs, name))


_FORWARD_AD_OPS = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "sum": lambda m, a, b: a.sum(),
    "mean": lambda m, a, b: a.mean(0), "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b, "exp": lambda m, a, b: a.exp(),
    "tanh": lambda m, a, b: a.tanh(), "sqrt": lambda m, a, b: a.abs().sqrt(),
    "number": lambda m, a, b: (a + 2.5) * 3 - b / 7,
    "mm": lambda m, a, b: a @ b.T, "softmax": lambda m, a, b: a.softmax(1),
    "view": lambda m, a, b: a.T.reshape(-1)[2:7], "cat": lambda m, a, b: m.cat([a, b * 2]),
    "where": lambda m, a, b: m.where(a > b, a, b),
    "in_place": lambda m, a, b: a.clone().mul_(b),
    "view_write": lambda m, a, b: _write_row(a.clone(), b),
    "to_float": lambda m, a, b: a.float() * 2,
}


def _write_row(a, b):
    a[1].add_(b[0])
    return a


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_forward_ad_tangents_of_half_tensors_are_pytorchs(name):
    # (an op on float16/bfloat16 runs on the arrays widened to float32, and its forward rule ran
    # inside that call: on float32 arrays, so every tangent came back float32 with float32
    # values, and bfloat16's arrays (NumPy's "V2") were not taken for floats by the rules, so the
    # tangent of a + b, a - b and a.sum() was the primal's: [11, 22, 33] for [1, 2, 3] + [10,
    # 20, 30]. The rule now runs on the narrow arrays and result, each of its ops rounding to
    # the dtype, as PyTorch's formulas on Half/BFloat16: these are its tangents bit for bit)
    rng = np.random.default_rng(5)
    values = [rng.standard_normal((2, 4)).astype(np.float32) + 3 * (i % 2) for i in range(4)]

    def run(m, fwd):
        dt = getattr(m, name)
        x, y, tx, ty = (m.tensor(v).to(dt) for v in values)
        with fwd.dual_level():
            a, b = fwd.make_dual(x, tx), fwd.make_dual(y, ty)
            return [fwd.unpack_dual(f(m, a, b)).tangent for f in _FORWARD_AD_OPS.values()]

    for op, ours, theirs in zip(_FORWARD_AD_OPS, run(numgrad, numgrad.autograd.forward_ad),
                                run(torch, torch.autograd.forward_ad)):
        assert str(ours.dtype).replace("numgrad", "torch") == str(theirs.dtype), op
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy(), err_msg=op)

    def transforms(m):
        x = m.tensor([0.5, 1.0, 2.0, 3.0]).to(getattr(m, name))
        f = lambda v: (v.exp() * v - v.sin()).sum()
        return [m.func.jvp(f, (x,), (x.flip(0),))[1],
                m.func.jacfwd(lambda v: v.sin() * v + v)(x), m.func.hessian(f)(x)]

    for ours, theirs in zip(transforms(numgrad), transforms(torch)):
        assert str(ours.dtype).replace("numgrad", "torch") == str(theirs.dtype)
        np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-2)
