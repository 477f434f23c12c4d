"""The spin-wait of ``_workers``' threads, without the GIL: ``wait(flags, i, rounds)`` returns
when ``flags[i]`` is not 0, or after ``rounds`` rounds of the C library's ``sched_yield`` (~1 us
each here; the core goes to whatever else can run meanwhile). The call into ``sched_yield`` is
one LLVM cannot see into, so ``flags[i]`` is read anew at each round. ``wait`` is None where the
C library has no ``sched_yield``.

Matrix products handed over without the GIL (``serve``, ``run_split``): a helper thread that
spins between jobs in ``serve`` also takes the blocks of a split float32 product that the
thread computing the product posts to it (``_workers.post_products``), and computes each
with NumPy's GEMM (``blas``) from inside Numba. Handed over as a Python job, a block started
15-25 us late (the helper waited for the GIL while the posting thread ran Python up to its own
block) and ended likewise; a 512 x 64 @ 64 x 64 float32 product took 64 us on two threads
against 30 us on OpenBLAS's own two, 36 us posted here. Each posted block is a row of an int64
array (``JOB_FIELDS``) whose state the two threads change by compare-and-swap (an LLVM
``cmpxchg``, sequentially consistent): posted -> claimed -> done by the helper, or posted ->
idle by the posting thread, which then computes the block itself. So a block the helper does
not take (it stopped spinning, or is busy) is never waited for, and whichever thread computes
it, the call and its bits are the same."""
import ctypes

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from . import blas


def _register() -> bool:
    try:
        address = ctypes.cast(ctypes.CDLL(None).sched_yield, ctypes.c_void_p).value
    except (OSError, AttributeError, TypeError):
        return False
    llvm.add_symbol("numgrad_sched_yield", address)
    return True


# A posted product's row (int64): its state, whether the helper spins in ``serve`` (1) or not
# (0), the item size (4: float32, the one dtype posted), the two operands' transposition (0 or
# 1), m, n, k, the addresses and leading dimensions of a, b and c, and the address of the row
# added to each of c's rows (0: none).
(STATE, SPINNING, ITEM, TRANS_A, TRANS_B, M, N, K, A, LDA, B, LDB, C, LDC,
 ROW) = range(15)
JOB_FIELDS = 16
IDLE, POSTED, CLAIMED, DONE = 0, 1, 2, 3


@intrinsic
def _cas(typingctx, array, index, expected, new):
    """``array[index] = new`` if it is ``expected`` (int64, 1-D contiguous), atomically; whether
    it was."""
    if not (isinstance(array, types.Array) and array.dtype == types.int64 and array.ndim == 1
            and array.layout == "C"):
        return None
    sig = types.boolean(array, index, expected, new)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        old = context.cast(builder, args[2], signature.args[2], types.int64)
        value = context.cast(builder, args[3], signature.args[3], types.int64)
        pair = builder.cmpxchg(builder.gep(data, [i]), old, value, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)

    return sig, codegen


@intrinsic
def _fence(typingctx):
    """A sequentially consistent fence: the writes before it are seen before those after it."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _f32(typingctx, address):
    """``address`` (an int) as a float32 pointer."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.FloatType().as_pointer())

    return types.CPointer(types.float32)(address), codegen


@njit(cache=True, nogil=True, inline="always")
def _fill_rows(c, row, m, ldc):
    """Each of the ``m`` rows of ``c`` (flat, rows ``ldc`` apart) set to ``row``, through a view
    of each row, which LLVM vectorises (512 rows of 384: 14 us; indexed ``c[i * ldc + j]``, 87;
    a slice assignment, 58, made the posting kernel's first compilation 2.8 s, not 0.6)."""
    n = row.shape[0]
    for i in range(m):
        dst = c[i * ldc:i * ldc + n]
        for j in range(n):
            dst[j] = row[j]


@njit(cache=True, nogil=True)
def _gemm_job(job):
    """The posted product of ``job``: ``c = op(a) @ op(b)``, or where there is a row, ``c``'s
    rows set to it and then ``c += op(a) @ op(b)`` (GEMM's beta 1, PyTorch's addmm); NumPy's
    own GEMM (``blas``). float32 only (float64 products go as Python jobs: a second GEMM and
    loop here took a third more compilation from an empty cache)."""
    m, n = job[M], job[N]
    if m <= 0 or n <= 0:
        return
    ta = blas._TRANS if job[TRANS_A] else blas._NO_TRANS
    tb = blas._TRANS if job[TRANS_B] else blas._NO_TRANS
    beta = np.float32(0.0)
    if job[ROW] != 0:
        _fill_rows(carray(_f32(job[C]), (m - 1) * job[LDC] + n), carray(_f32(job[ROW]), n), m,
                   job[LDC])
        beta = np.float32(1.0)
    blas._sgemm(np.int32(blas._ROW_MAJOR), np.int32(ta), np.int32(tb), m, n, job[K],
                np.float32(1.0), np.uintp(job[A]), job[LDA], np.uintp(job[B]), job[LDB], beta,
                np.uintp(job[C]), job[LDC])


if _register():
    _sched_yield = types.ExternalFunction("numgrad_sched_yield", types.int32())

    @njit(cache=True, nogil=True)
    def wait(flags, index, rounds):
        """Until ``flags[index]`` is not 0, at most ``rounds`` rounds; whether it was set."""
        for _ in range(rounds):
            if flags[index] != 0:
                return True
            _sched_yield()
        return flags[index] != 0

    @njit(cache=True, nogil=True)
    def _handoff(flags, jobs, count, mine, rounds):
        """``serve(flags, jobs[0], rounds)`` where ``count`` is negative, else
        ``run_split(jobs, count, mine)``: one kernel (one compilation, which links
        ``_gemm_job`` once: two took 0.1-0.2 s more from an empty cache)."""
        if count < 0:
            job = jobs[0]
            job[SPINNING] = 1
            _fence()
            spun = 0
            while spun < rounds and flags[0] == 0:
                if job[STATE] == POSTED and _cas(job, STATE, POSTED, CLAIMED):
                    _gemm_job(job)
                    _fence()
                    job[STATE] = DONE
                    spun = 0
                    continue
                _sched_yield()
                spun += 1
            job[SPINNING] = 0
            _fence()
            return flags[0] != 0
        for h in range(count):
            _fence()
            jobs[h, STATE] = POSTED
        _gemm_job(mine)
        for h in range(count):
            job = jobs[h]
            if _cas(job, STATE, POSTED, IDLE):
                _gemm_job(job)
            else:
                while job[STATE] != DONE:
                    _sched_yield()
                _fence()
                job[STATE] = IDLE
        return True

    def serve(flags, job, rounds):
        """``wait(flags, 0, rounds)`` of a helper thread, which meanwhile computes the products
        posted to it in ``job`` (a row of ``JOB_FIELDS``; each product starts its rounds
        again); whether ``flags[0]`` was set (a Python job)."""
        return _handoff(flags, job.reshape(1, JOB_FIELDS), -1, job, rounds)

    def run_split(jobs, count, mine):
        """Posts the products of ``jobs[:count]`` (one row a helper, filled but idle), computes
        ``mine`` here, then each posted one its helper did not claim, and waits for those it
        did."""
        _handoff(_NO_FLAGS, jobs, count, mine, 0)

    _NO_FLAGS = np.zeros(2, np.int64)
else:  # pragma: no cover (every C library numgrad runs on has it)
    wait = serve = run_split = None
