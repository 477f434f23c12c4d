"""Convolution against PyTorch on a small CNN's shapes: batch 64, 1→16→32 channels, 8×8 images,
3×3 kernels, padding 1 (the scikit-learn digits CNN's convolutions).

    python benchmarks/conv.py [--repeat N] [--threads T] [--dtype float32|float64] [--direct]
                              [--more] [--models] [--no-first-call]

Prints the median process CPU time (``time.process_time``, all threads counted) of forward +
backward for each layer and for the two-layer stack (``conv2(relu(conv1(x))).sum()``), numgrad's
beside PyTorch's with the same thread count, and their ratio; then the first call of a fresh
process with an empty kernel cache (numgrad compiles its kernels then; PyTorch's are built in),
from just after the imports. ``--direct`` also times direct-loop Numba kernels (forward and
backward, written out below) against the im2col + BLAS path that numgrad uses.

The same workload is an asv benchmark (``Conv2dCNN``), found by ``asv run`` in this folder.

Measured on the 2-core development machine (shared with other jobs, so noisy), ms per call:

    --threads 1, float32       numgrad  PyTorch  ratio
      conv1 (1→16)               0.18     0.17    1.1
      conv2 (16→32)              2.3      0.74    3.2
      conv1, relu, conv2         2.5      0.92    2.8
      first call, fresh process  ~1000    ~180          (numgrad compiling its kernels)
    --threads 1, float64: conv2 3.5 vs 3.7, the stack 3.7 vs 3.8 (ratio 0.95)
    --threads 2, float32: the stack 6.0 vs 0.6: two BLAS threads on a busy 2-core machine spin
      for each other, and process time counts the spinning (PyTorch's float32 path is oneDNN's
      direct convolution).

    im2col + BLAS against direct loops (--direct, float32, 1 thread):
      conv1 (1→16)  forward  0.05 vs  0.5    backward  0.10 vs  1.0
      conv2 (16→32) forward  0.75 vs 15.6    backward  1.5  vs 28.1
    so the kernels are im2col into BLAS (kernels/cpu/conv.py). Of conv2's 2.3 ms, the three
    GEMMs take about 1 ms, im2col (twice: forward and the weight's gradient) and col2im 0.35 ms
    each.

``--more`` times the layers of the second round (transposed and 3-D convolutions, 3-D pooling,
interpolation, pixel shuffle; shapes in ``MORE``) the same way, and how much of a 3-D and of a
transposed convolution's step is im2col / col2im. Measured with ``--threads 1 --more`` (float32;
``numgrad.set_num_threads(1)``, ``torch.set_num_threads(1)``), ms:

      layer                                   numgrad  PyTorch  ratio
      conv_transpose2d 32→16, 8→16, k4 s2 p1    1.35     0.54    2.5
      conv3d 4→8, 8³, k3 p1                     1.19     0.68    1.7
      conv_transpose3d 8→4, 4→8, k2 s2          0.18     0.29    0.6
      max_pool3d 2, 8×8³                        0.13     0.06    2.4
      interpolate bilinear ×2, 16×16²           0.79     1.44    0.55  (2.63 with the generic
      interpolate nearest ×2, 16×16²            0.29     0.56    0.52   taps loop: unrolled now)
      pixel_shuffle 2, 64×16²                   0.48     0.68    0.7
    im2col and col2im inside a step: conv3d 0.31 + 0.28 of 1.37 ms, conv_transpose2d 0.25 +
    0.23 of 1.50 ms: about 40%, the GEMMs and the layout passes the rest, so im2col does not
    dominate; recomputing the columns in the weight's gradient (instead of keeping the
    forward's) is the one saving left there (about 15% of a step, at the columns' memory).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    from ._common import CPU_TIMER, numgrad, pin_threads
except ImportError:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import CPU_TIMER, numgrad, pin_threads  # noqa: E402

import numpy as np  # noqa: E402

BATCH, SIZE = 64, 8


def make(m, dtype: str = "float32", layers: str = "stack", seed: int = 0):
    """A forward + backward step of numgrad or PyTorch (``m``) on the CNN's convolutions:
    ``layers`` 'conv1', 'conv2' or 'stack' (conv1, ReLU, conv2)."""
    rng = np.random.default_rng(seed)
    dt = getattr(m, dtype)
    conv1 = m.nn.Conv2d(1, 16, 3, padding=1).to(dt)
    conv2 = m.nn.Conv2d(16, 32, 3, padding=1).to(dt)
    channels = 16 if layers == "conv2" else 1
    x = m.tensor(rng.standard_normal((BATCH, channels, SIZE, SIZE)).astype(dtype),
                 requires_grad=layers == "conv2")
    params = list(conv1.parameters()) + list(conv2.parameters())

    def step():
        for p in params:
            p.grad = None
        if layers == "conv1":
            y = conv1(x)
        elif layers == "conv2":
            y = conv2(x)
        else:
            y = conv2(m.nn.functional.relu(conv1(x)))
        y.sum().backward()

    return step


def median_ms(fn, repeat: int) -> float:
    time.sleep(0.3)  # (PyTorch's OpenMP threads spin a while after its last op)
    fn()
    fn()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e3


FIRST_CALL = """
import sys, time
sys.path.insert(0, {here!r})
import {module}
import conv
start = time.perf_counter()
conv.make({module}, {dtype!r})()
print(time.perf_counter() - start)
"""


def first_call_seconds(module: str, dtype: str) -> float:
    """The first forward + backward of a fresh process, from after its imports; for numgrad with
    an empty kernel cache (a temporary folder for both of its caches)."""
    here = os.path.dirname(os.path.abspath(__file__))
    folder = tempfile.mkdtemp(prefix="numgrad-conv-")
    env = dict(os.environ, NUMBA_CACHE_DIR=folder, NUMGRAD_CACHE_DIR=folder, NUMGRAD_QUIET="1")
    try:
        out = subprocess.run([sys.executable, "-c", FIRST_CALL.format(
            here=here, module=module, dtype=dtype)], env=env, check=True, capture_output=True,
            text=True).stdout.split()
        return float(out[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------- more layers (--more)
# The layers of issue 16's second round, forward + backward on small but typical shapes: a
# DCGAN generator's transposed convolution, a volume network's 3-D convolution and pooling, a
# U-Net's bilinear upsampling, an ESPCN's pixel shuffle.
MORE = {
    "conv_transpose2d 32→16, 8→16, k4 s2 p1": (
        ((16, 32, 8, 8), (32, 16, 4, 4), (16,)),
        lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1)),
    "conv3d 4→8, 8³, k3 p1": (
        ((8, 4, 8, 8, 8), (8, 4, 3, 3, 3), (8,)),
        lambda F, x, w, b: F.conv3d(x, w, b, padding=1)),
    "conv_transpose3d 8→4, 4→8, k2 s2": (
        ((8, 8, 4, 4, 4), (8, 4, 2, 2, 2), (4,)),
        lambda F, x, w, b: F.conv_transpose3d(x, w, b, stride=2)),
    "max_pool3d 2, 8×8³": (((8, 8, 8, 8, 8),), lambda F, x: F.max_pool3d(x, 2)),
    "interpolate bilinear ×2, 16×16²": (
        ((16, 16, 16, 16),), lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear")),
    "interpolate nearest ×2, 16×16²": (
        ((16, 16, 16, 16),), lambda F, x: F.interpolate(x, scale_factor=2)),
    "pixel_shuffle 2, 64×16²": (((16, 64, 16, 16),), lambda F, x: F.pixel_shuffle(x, 2)),
}

# ``--models``: the convolutions of the training steps in models.py (compare.py --models), each
# forward + backward on its own (every input's gradient computed, the MNIST conv1's too).
MODEL_LAYERS = {
    "MNIST CNN conv1 1→32, 28², batch 64": (
        ((64, 1, 28, 28), (32, 1, 3, 3), (32,)), lambda F, x, w, b: F.conv2d(x, w, b)),
    "MNIST CNN conv2 32→64, 26², batch 64": (
        ((64, 32, 26, 26), (64, 32, 3, 3), (64,)), lambda F, x, w, b: F.conv2d(x, w, b)),
    "ResNet block 64→64 p1, 32², batch 16": (
        ((16, 64, 32, 32), (64, 64, 3, 3)), lambda F, x, w: F.conv2d(x, w, padding=1)),
    "conv_transpose2d 64→32 k4 s2 p1, 16², x16": (
        ((16, 64, 16, 16), (64, 32, 4, 4), (32,)),
        lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1)),
}


def make_more(m, name: str, dtype: str = "float32", seed: int = 0, table=None):
    """A forward + backward step of numgrad or PyTorch (``m``) on ``table[name]`` (``MORE``'s
    by default)."""
    shapes, fn = (MORE if table is None else table)[name]
    rng = np.random.default_rng(seed)
    ts = [m.tensor(rng.uniform(-1, 1, s).astype(dtype), requires_grad=True) for s in shapes]

    def step():
        for t in ts:
            t.grad = None
        fn(m.nn.functional, *ts).sum().backward()

    return step


def more_against_pytorch(dtype: str, repeat: int, table=None, title="more layers") -> None:
    import torch

    table = MORE if table is None else table
    print(f"\n{title}, forward + backward, {dtype}; median process CPU ms of {repeat}")
    print(f"{'layer':<42}{'numgrad':>10}{'PyTorch':>10}{'ratio':>8}")
    for name in table:
        ours = median_ms(make_more(numgrad, name, dtype, table=table), repeat)
        theirs = median_ms(make_more(torch, name, dtype, table=table), repeat)
        print(f"{name:<42}{ours:>10.3f}{theirs:>10.3f}{ours / theirs:>8.2f}")


def im2col_share(dtype: str, repeat: int) -> None:
    """How much of a 3-D and a transposed convolution's forward + backward is im2col/col2im
    (the kernels alone, timed on the layer's arrays) against the whole step."""
    from numgrad.kernels.cpu import conv as K

    print(f"\nim2col / col2im inside a step ({dtype}, ms)")
    rng = np.random.default_rng(0)
    for name, x_shape, w_shape, stride, pads in (
            ("conv3d 4→8, 8³, k3 p1", (8, 4, 8, 8, 8), (8, 4, 3, 3, 3), (1, 1, 1), (1,) * 6),
            ("conv_transpose2d 32→16 (col2im)", (16, 16, 16, 16), (32, 16, 4, 4), (2, 2),
             (1,) * 4)):
        x = rng.uniform(-1, 1, x_shape).astype(dtype)
        kernel = w_shape[2:]
        dil = (1,) * len(kernel)
        out_sp = K._out_sp(x.shape, kernel, stride, pads, dil)
        geometry = K._geometry(kernel, stride, pads, dil, out_sp)
        rows, length = x_shape[1] * K._prod(kernel), K._prod(out_sp)
        cols = np.empty(x_shape[0] * rows * length, dtype)  # (the (N, K, L) layout, flat)
        t_im2col = median_ms(
            lambda: K._unfold_into(x, geometry, cols, rows * length, length), repeat)
        out = np.zeros(x_shape, dtype)

        def fold():
            K._fold_into(cols, geometry, out, rows * length, length)

        t_col2im = median_ms(fold, repeat)
        step = next(k for k in MORE if k.startswith(name.split(" (")[0]))
        total = median_ms(make_more(numgrad, step, dtype), repeat)
        print(f"  {name:<34} im2col {t_im2col:7.3f}  col2im {t_col2im:7.3f}  "
              f"whole step {total:7.3f}")


# ---------------------------------------------------------------------- direct loops (--direct)
def _direct_kernels():
    from numba import njit

    @njit
    def forward(x, w, b, pad, out):
        n_batch, channels, height, width = x.shape
        n_out, _, kh, kw = w.shape
        for n in range(n_batch):
            for o in range(n_out):
                for y in range(out.shape[2]):
                    for z in range(out.shape[3]):
                        acc = b[o]
                        for c in range(channels):
                            for i in range(kh):
                                iy = y - pad + i
                                if iy < 0 or iy >= height:
                                    continue
                                for j in range(kw):
                                    ix = z - pad + j
                                    if 0 <= ix < width:
                                        acc += x[n, c, iy, ix] * w[o, c, i, j]
                        out[n, o, y, z] = acc

    @njit
    def backward(grad, x, w, pad, gx, gw):
        n_batch, channels, height, width = x.shape
        n_out, _, kh, kw = w.shape
        for n in range(n_batch):
            for o in range(n_out):
                for y in range(grad.shape[2]):
                    for z in range(grad.shape[3]):
                        g = grad[n, o, y, z]
                        for c in range(channels):
                            for i in range(kh):
                                iy = y - pad + i
                                if iy < 0 or iy >= height:
                                    continue
                                for j in range(kw):
                                    ix = z - pad + j
                                    if 0 <= ix < width:
                                        gx[n, c, iy, ix] += g * w[o, c, i, j]
                                        gw[o, c, i, j] += g * x[n, c, iy, ix]

    return forward, backward


def direct_against_im2col(dtype: str, repeat: int) -> None:
    from numgrad.kernels.cpu import conv as K

    forward, backward = _direct_kernels()
    rng = np.random.default_rng(0)
    one, pads = (1, 1), (1, 1, 1, 1)
    print(f"\nim2col + BLAS against direct loops, {dtype}, ms per call (median of {repeat})")
    for cin, cout in ((1, 16), (16, 32)):
        x = rng.standard_normal((BATCH, cin, SIZE, SIZE)).astype(dtype)
        w = rng.standard_normal((cout, cin, 3, 3)).astype(dtype)
        b = rng.standard_normal(cout).astype(dtype)
        g = rng.standard_normal((BATCH, cout, SIZE, SIZE)).astype(dtype)
        out = np.empty_like(g)
        forward(x, w, b, 1, out)
        np.testing.assert_allclose(out, K.conv_forward(x, w, b, one, pads, one, 1), rtol=1e-3,
                                   atol=1e-3)

        def direct_backward():
            backward(g, x, w, 1, np.zeros_like(x), np.zeros_like(w))

        def im2col_backward():
            K.conv_backward_input(g, w, x.shape, one, pads, one, 1)
            K.conv_backward_weight(g, x, w.shape, one, pads, one, 1)

        rows = (median_ms(lambda: K.conv_forward(x, w, b, one, pads, one, 1), repeat),
                median_ms(lambda: forward(x, w, b, 1, out), repeat),
                median_ms(im2col_backward, repeat), median_ms(direct_backward, repeat))
        print(f"  {cin:>2}→{cout:<2}  forward {rows[0]:7.3f} vs {rows[1]:7.3f}   "
              f"backward {rows[2]:7.3f} vs {rows[3]:7.3f}")


# ---------------------------------------------------------------------- asv
class Conv2dCNN:
    """Forward + backward of the CNN's convolutions (batch 64, 1→16→32 channels, 8×8, 3×3,
    padding 1), one layer or the two-layer stack."""

    params = (["conv1", "conv2", "stack"], ["float32"])
    param_names = ["layers", "dtype"]
    timer = CPU_TIMER
    number = 20
    repeat = 1
    rounds = 3
    warmup_time = 0.0  # (setup has made the first call)
    _built: dict = {}  # a step per parameter set and process: asv re-runs setup before each call

    def setup(self, layers, dtype):
        pin_threads()
        if (layers, dtype) not in self._built:
            step = make(numgrad, dtype, layers)
            step()  # (the first call compiles or loads the kernels)
            self._built[layers, dtype] = step
        self.step = self._built[layers, dtype]

    def time_forward_backward(self, layers, dtype):
        self.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for PyTorch, Numba and NumPy's BLAS (default: Numba's)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--direct", action="store_true",
                        help="also time direct-loop kernels against im2col + BLAS")
    parser.add_argument("--more", action="store_true",
                        help="also time the transposed and 3-D convolutions, 3-D pooling, "
                             "interpolation and pixel shuffle against PyTorch")
    parser.add_argument("--models", action="store_true",
                        help="only the convolutions of models.py's training steps, against "
                             "PyTorch")
    parser.add_argument("--no-first-call", action="store_true",
                        help="skip the fresh-process first calls")
    args = parser.parse_args()
    import numba
    import torch

    threads = args.threads or numba.get_num_threads()
    torch.set_num_threads(threads)
    numgrad.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:  # numgrad's matrix products run in NumPy's BLAS: give its pool the same count
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads, user_api="blas")
    except ImportError:
        print("(threadpoolctl is not installed: NumPy's BLAS keeps its own thread count)")
    if args.models:
        more_against_pytorch(args.dtype, args.repeat, MODEL_LAYERS,
                             f"models.py's convolutions, {threads} threads")
        return
    print(f"convolution forward + backward, {args.dtype}, batch {BATCH}, {SIZE}x{SIZE}, "
          f"{threads} threads; median process CPU ms of {args.repeat}")
    print(f"{'layers':<28}{'numgrad':>10}{'PyTorch':>10}{'ratio':>8}")
    labels = {"conv1": "conv1 (1→16)", "conv2": "conv2 (16→32)",
              "stack": "conv1, relu, conv2"}
    for layers, label in labels.items():
        ours = median_ms(make(numgrad, args.dtype, layers), args.repeat)
        theirs = median_ms(make(torch, args.dtype, layers), args.repeat)
        print(f"{label:<28}{ours:>10.3f}{theirs:>10.3f}{ours / theirs:>8.2f}")
    if not args.no_first_call:
        ours = first_call_seconds("numgrad", args.dtype)
        theirs = first_call_seconds("torch", args.dtype)
        print(f"{'first call, fresh process':<28}{ours * 1e3:>10.0f}{theirs * 1e3:>10.0f}"
              f"{ours / theirs:>8.1f}   (ms; numgrad with an empty kernel cache)")
    if args.direct:
        direct_against_im2col(args.dtype, args.repeat)
    if args.more:
        more_against_pytorch(args.dtype, args.repeat)
        im2col_share(args.dtype, args.repeat)


if __name__ == "__main__":
    main()
