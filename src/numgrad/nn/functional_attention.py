"""Attention in ``numgrad.nn.functional``: ``scaled_dot_product_attention`` and
``multi_head_attention_forward`` (what ``nn.MultiheadAttention`` calls), with PyTorch's signatures,
mask conventions and error messages.

``scaled_dot_product_attention`` is one op where PyTorch on the CPU runs its flash kernel
(``ops/attention.py``: its node ``ScaledDotProductFlashAttentionForCpuBackward0``, fused kernels
each way), else a composite of numgrad's ops (matmul, softmax, dropout), as PyTorch's math path,
whose node is the last op's; ``multi_head_attention_forward`` composes linear and attention."""
from __future__ import annotations

import math
import warnings

from .. import ops as _raw_ops
from ..ops import attention as _attention_op
import numgrad
from ..creation import zeros


class _Dispatching:
    """numgrad's public forms of the ops used here (``numgrad.matmul`` ...), so that a
    ``__torch_function__`` class or a vmap's batched tensor meets its own rules on the way."""

    def __getattr__(self, name):  # (found once, then an attribute of the instance)

        found = getattr(numgrad, name, None)
        found = found if found is not None else getattr(_raw_ops, name)
        setattr(self, name, found)
        return found


ops = _Dispatching()
from .._dtype import bool_ as _bool
from .._dtype import torch_name
from ..creation import zeros_like as _zeros_like
from ..tensor import Tensor
from ..ops._names import export as _export


def _dtype_name(dtype) -> str:
    """The C++ scalar-type name PyTorch's attention messages use (``double``, ``float``)."""
    return {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "bool": "bool"}.get(dtype.name, dtype.name)


@_export
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + bias) @ value`` over the last two dimensions, as
    PyTorch: ``bias`` is ``attn_mask`` when it is a float tensor, ``-inf`` where a bool
    ``attn_mask`` is False, ``-inf`` above the diagonal with ``is_causal``; ``scale`` defaults to
    ``1 / sqrt(E)``; rows whose every key is masked give 0 (PyTorch's safe softmax); dropout
    with probability ``dropout_p`` is applied to the attention weights (always, as PyTorch's
    functional form); ``enable_gqa`` repeats the key and value heads (dim -3) to the query's.

    Where PyTorch on the CPU runs its flash kernel (4-D inputs of one head size, no dropout, a
    2-D or 4-D mask that needs no gradient), this is one op and one node,
    ``ScaledDotProductFlashAttentionForCpuBackward0`` (``ops/attention.py``); elsewhere, and on
    CUDA, a composite of matmul and softmax, as PyTorch's math path."""
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
            f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_dtype_name(query.dtype)} key.dtype: {_dtype_name(key.dtype)} and value.dtype: "
            f"{_dtype_name(value.dtype)} instead.")
    if query.dim() > 2 and not (query.dtype.is_floating_point or query.dtype.is_complex):
        raise RuntimeError(  # (PyTorch's, from the float scale tensor it multiplies by)
            f"expected scalar type Float but found {torch_name(query._data.dtype)}")
    if attn_mask is not None and attn_mask.dtype != _bool and attn_mask.dtype != query.dtype:
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_dtype_name(attn_mask.dtype)} and  query.dtype: "
            f"{_dtype_name(query.dtype)} instead.")
    if dropout_p < 0.0 or dropout_p > 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if _flash(query, key, value, attn_mask, dropout_p, enable_gqa):
        if attn_mask is not None:
            _check_mask_shape(attn_mask, query, key)
        return _attention_op.flash_attention(query, key, value, attn_mask, is_causal, scale)
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True")
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.size(-3), key.size(-3), value.size(-3)
        if hk != hv or hq % hk != 0:
            raise RuntimeError(  # (PyTorch 2.13's words, cut short as they are)
                "Number of heads in key and value must divide the number of heads in ")
        if hk != hq:
            key = key.repeat_interleave(hq // hk, dim=-3)
            value = value.repeat_interleave(hq // hv, dim=-3)
    scale_factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    weights = _attention_op.attention_weights(query, key, attn_mask, is_causal, scale_factor)
    if dropout_p > 0.0:
        weights = numgrad.nn.functional.dropout(weights, dropout_p, True)
    return ops.matmul(weights, value)


def _flash(query, key, value, mask, dropout_p, enable_gqa) -> bool:
    """Whether PyTorch 2.13 on the CPU would take its flash kernel (its ``use_flash_attention_cpp``
    checks): 4-D CPU float inputs of one head size, the batch equal, the heads equal or grouped
    with ``enable_gqa``, no dropout, a 2-D or 4-D mask that needs no gradient, no empty size, the
    last dimensions of stride 1; plain tensors (a vmap's batched tensors, which reach here when a
    caller such as ``multi_head_attention_forward`` calls this function directly, and subclasses
    take the composite, whose ops dispatch)."""
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4 or dropout_p != 0.0:
        return False
    if not (type(query) is type(key) is type(value) is Tensor) or \
            (mask is not None and type(mask) is not Tensor):
        return False  # (a vmap's batched tensor or a subclass: the composite's dispatching ops)
    if query.device.type != "cpu" or not query.dtype.is_floating_point:
        return False
    b, hq, length, e = query.shape
    kb, hk, s, ke = key.shape
    if (value.shape[0], value.shape[3]) != (b, e) or (kb, ke) != (b, e) or \
            tuple(value.shape[1:3]) != (hk, s):
        return False
    if hk != hq and not (enable_gqa and hq % hk == 0):
        return False
    if not (b and hq and length and s and e):
        return False
    if any(t.stride(-1) != 1 for t in (query, key, value)):
        return False
    return mask is None or (mask.dim() in (2, 4) and not mask.requires_grad)


def _check_mask_shape(mask, query, key) -> None:
    """PyTorch's broadcasting error where ``mask`` does not broadcast to the scores."""
    scores = (query.shape[0], query.shape[1], query.shape[2], key.shape[2])
    shape = tuple(mask.shape)
    for i in range(1, len(shape) + 1):
        a, m = scores[-i], shape[-i]
        if m != 1 and m != a:
            raise RuntimeError(
                f"The size of tensor a ({a}) must match the size of tensor b ({m}) at "
                f"non-singleton dimension {4 - i}")


# ------------------------------------------------------------------ multi-head attention
def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """PyTorch's ``F._canonical_mask``: a bool mask as a float one (``-inf`` where True)."""
    if mask is not None:
        is_float = mask.dtype.is_floating_point
        if mask.dtype != _bool and not is_float:
            raise AssertionError(f"only bool and floating types of {mask_name} are supported")
        if check_other and other_type is not None and mask.dtype != other_type:
            warnings.warn(
                f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same "
                "type for both instead.", UserWarning, stacklevel=2)
        if not is_float:
            mask = _zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _linear(x, w, b):
    return numgrad.nn.functional.linear(x, w, b)


def _in_projection_packed(q, k, v, w, b=None):
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = _linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
            proj = proj.contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = _linear(q, w_q, b_q)
        kv = _linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2)
        kv = kv.squeeze(-2).contiguous()
        return q_proj, kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    if w_q.shape != (Eq, Eq):
        raise AssertionError(f"expecting query weights shape of {(Eq, Eq)}, but got {w_q.shape}")
    if w_k.shape != (Eq, Ek):
        raise AssertionError(f"expecting key weights shape of {(Eq, Ek)}, but got {w_k.shape}")
    if w_v.shape != (Eq, Ev):
        raise AssertionError(f"expecting value weights shape of {(Eq, Ev)}, but got {w_v.shape}")
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                    f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor")


def _pad_last(mask):
    return numgrad.nn.functional.pad(mask, (0, 1))


@_export
def multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,
        key_padding_mask=None, need_weights=True, attn_mask=None,
        use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
        v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
        is_causal=False):
    """PyTorch's ``F.multi_head_attention_forward``, step for step: inputs ``(L, N, E)`` (or
    unbatched ``(L, E)``); returns the attention output and, with ``need_weights``, the
    attention weights (averaged over the heads with ``average_attn_weights``)."""
    dropout = numgrad.nn.functional.dropout

    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                f"{value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(
                    f"use_separate_proj_weight is True but {name}_proj_weight is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, b_q, b_k, b_v)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            correct = (tgt_len, src_len)
            if tuple(attn_mask.shape) != correct:
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{correct}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            correct = (bsz * num_heads, tgt_len, src_len)
            if tuple(attn_mask.shape) != correct:
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                    f"{correct}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = ops.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ops.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    else:
        if bias_k is not None:
            raise AssertionError("bias_k is set but bias_v is None")
        if bias_v is not None:
            raise AssertionError("bias_v is set but bias_k is None")
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads:
            raise AssertionError(
                f"expecting static_k.size(0) of {bsz * num_heads}, but got {static_k.size(0)}")
        if static_k.size(2) != head_dim:
            raise AssertionError(
                f"expecting static_k.size(2) of {head_dim}, but got {static_k.size(2)}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads:
            raise AssertionError(
                f"expecting static_v.size(0) of {bsz * num_heads}, but got {static_v.size(0)}")
        if static_v.size(2) != head_dim:
            raise AssertionError(
                f"expecting static_v.size(2) of {head_dim}, but got {static_v.size(2)}")
        v = static_v
    if add_zero_attn:
        shape = (bsz * num_heads, 1, head_dim)
        k = ops.cat([k, zeros(shape, dtype=k.dtype, device=k.device)], dim=1)
        v = ops.cat([v, zeros(shape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.size(1)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(
                f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(
                f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            -1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        E = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        weights = ops.matmul(q_scaled, k.transpose(-2, -1))
        if attn_mask is not None:
            weights = attn_mask + weights
        weights = ops.softmax(weights, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = ops.matmul(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = _linear(out, out_proj_weight, out_proj_bias)
        out = out.reshape(tgt_len, bsz, out.size(1))
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None
