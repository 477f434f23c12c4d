"""Sampling an input at the positions of a grid: ``nn.functional.grid_sample`` and ATen's
``grid_sampler_2d``/``grid_sampler_3d``, bilinear (trilinear in 3-D) or nearest, with the
padding modes ``zeros``, ``border`` and ``reflection`` and ``align_corners``, as ATen's
``GridSampler.h`` computes the source positions.

Composed of numgrad's ops (each corner's value gathered from the flattened input, weighted),
so the gradient reaches the input and, through the positions, the grid, as PyTorch's.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from ._names import export
import numgrad

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _ng():
    return numgrad


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``x`` reflected into [twice_low / 2, twice_high / 2] (ATen's reflect_coordinates)."""
    if twice_low == twice_high:
        return x * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = (x - low).abs()
    extra = x.fmod(span)
    flips = (x / span).floor()
    even = (flips.detach() % 2) == 0
    return _ng().where(even, extra + low, span - extra + low)


def _source(coord: Tensor, size: int, padding: int, align_corners: bool) -> Tensor:
    """The position in the input of normalised grid coordinates in [-1, 1]."""
    if align_corners:
        x = (coord + 1) / 2 * (size - 1)
    else:
        x = ((coord + 1) * size - 1) / 2
    if padding == 1:
        x = x.clamp(0, size - 1)
    elif padding == 2:
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = x.clamp(0, size - 1)
    return x


def _sample(input: Tensor, grid: Tensor, mode: int, padding: int, align_corners: bool) -> Tensor:
    ng = _ng()
    k = input.ndim - 2
    n, c = input.shape[0], input.shape[1]
    sizes = tuple(input.shape[2:])
    out = tuple(grid.shape[1:-1])
    # the grid's last dimension is (x, y[, z]): the input's dimensions from the last
    pos = [_source(grid[..., k - 1 - d], sizes[d], padding, align_corners) for d in range(k)]
    flat = input.reshape(n, c, -1)

    def tap(corner):
        """The input at integer positions ``corner`` (one per dimension), 0 outside."""
        inside = None
        index = None
        for d, p in enumerate(corner):
            ok = (p >= 0) & (p <= sizes[d] - 1)
            inside = ok if inside is None else inside & ok
            q = p.clamp(0, sizes[d] - 1).to(ng.int64)
            index = q if index is None else index * sizes[d] + q
        values = flat.gather(-1, index.reshape(n, 1, -1).expand(n, c, -1)).reshape(n, c, *out)
        return values * inside.to(input.dtype).unsqueeze(1)

    if mode == 1:
        return tap([p.detach().round() for p in pos])
    if mode != 0:
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported yet")
    low = [p.detach().floor() for p in pos]
    total = None
    for corner in range(2 ** k):
        ends = [(corner >> (k - 1 - d)) & 1 for d in range(k)]
        weight = None
        for d in range(k):
            w = (pos[d] - low[d]) if ends[d] else (low[d] + 1 - pos[d])
            weight = w if weight is None else weight * w
        value = tap([low[d] + ends[d] for d in range(k)]) * weight.unsqueeze(1)
        total = value if total is None else total + value
    return total


def _checked(name: str, input: Tensor, grid: Tensor, k: int) -> None:
    if input.ndim != k + 2 or grid.ndim != k + 2:
        raise RuntimeError(f"{name}(): expected {k + 2}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if grid.shape[-1] != k:
        raise RuntimeError(f"{name}(): expected grid to have size {k} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"{name}(): expected grid and input to have same batch size, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")


@export
def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """ATen's 2-D grid sampler (modes 0 bilinear, 1 nearest; paddings 0 zeros, 1 border,
    2 reflection)."""
    _checked("grid_sampler_2d", input, grid, 2)
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners)


@export
def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """ATen's 3-D grid sampler (trilinear or nearest)."""
    _checked("grid_sampler_3d", input, grid, 3)
    return _sample(input, grid, interpolation_mode, padding_mode, align_corners)


@export
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``grid_sampler_2d`` or ``grid_sampler_3d`` by the input's dimensions."""
    fn = grid_sampler_2d if input.ndim == 4 else grid_sampler_3d
    return fn(input, grid, interpolation_mode, padding_mode, align_corners)


@export(function=False, functional=True)
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners=None) -> Tensor:
    """``input`` (N, C, H, W) or (N, C, D, H, W) sampled at ``grid``'s normalised positions
    ((N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), x first, in [-1, 1])."""
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    return grid_sampler(input, grid, _MODES[mode], _PADDINGS[padding_mode], bool(align_corners))


def _linspace_from_neg_one(theta: Tensor, n: int, align_corners: bool):
    """The normalised coordinates of ``n`` pixel centres, as a NumPy array (ATen's
    ``linspace_from_neg_one``)."""
    ng = _ng()
    if n <= 1:
        return ng.tensor(0.0, dtype=theta.dtype).numpy()
    r = ng.linspace(-1, 1, n, dtype=theta.dtype)
    if not align_corners:
        r = r * (n - 1) / n
    return r.numpy()


@export
def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """ATen's ``affine_grid_generator``: the base grid of pixel centres (x, y[, z], 1) times
    ``theta`` transposed, so that the gradient reaches ``theta``."""
    ng = _ng()
    if len(size) == 4:
        n, _, h, w = size
        spatial = (h, w)
    else:
        n, _, d, h, w = size
        spatial = (d, h, w)
    k = len(spatial)
    base = np.empty((n, *spatial, k + 1), dtype=theta.dtype.np)
    for axis, steps in enumerate(reversed(spatial)):  # x along W, y along H, z along D
        shape = [1] * k
        shape[k - 1 - axis] = steps
        base[..., axis] = _linspace_from_neg_one(theta, steps, align_corners).reshape(shape)
    base[..., k] = 1
    grid = ng.tensor(base, device=theta.device).view(n, -1, k + 1).bmm(theta.transpose(1, 2))
    return grid.view(n, *spatial, k)


@export(function=False, functional=True)
def affine_grid(theta: Tensor, size, align_corners=None) -> Tensor:
    """The sampling grid of the affine maps ``theta`` ((N, 2, 3) for a 2-D ``size`` (N, C, H, W),
    (N, 3, 4) for a 3-D one), for ``grid_sample``: (N, H, W, 2) or (N, D, H, W, 3)."""
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
            "See the documentation of grid_sample for details.",
            stacklevel=2,
        )
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                f"Got {theta.shape}."
            )
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                f"Got {theta.shape}."
            )
        spatial_size = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if align_corners and min(spatial_size) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return affine_grid_generator(theta, size, align_corners)
