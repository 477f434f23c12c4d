"""Kernels: compiled loops over plain arrays, one package per device.

A kernel never sees a Tensor. ``cpu`` holds ``numba.njit`` kernels and the thin Python wrappers that
choose between their contiguous fast paths and their general strided path.
"""
