"""The Tensor methods and operators that ``numgrad/__init__.py`` binds at import
(``_bind_methods``), declared for type checkers: ``numgrad.Tensor`` derives from this class only
while type checking (``typing.TYPE_CHECKING``), so mypy and pyright see ``x.exp()``, ``x + 1`` and
``x.sum()`` as what they are, functions of the ops families that return ``Tensor``. A stub with no
module behind it: nothing imports it at run time. The methods' lines, up to the operators, are
written by ``benchmarks/tensor_stub.py`` from the ops' ``@export`` flags (run it after adding a
method); tests/test_typing.py checks that it names every method bound and that those lines are
the script's.
"""
from __future__ import annotations

import builtins

from . import creation as _creation, random as _random
from .ops import (  # (as _names: some families share a method's name)
    activation as _activation,
    convert as _convert,
    counting as _counting,
    cumulative_extremes as _cumulative_extremes,
    data_dependent as _data_dependent,
    division as _division,
    elementwise as _elementwise,
    exponents_and_rounding as _exponents_and_rounding,
    flat_index as _flat_index,
    float_parts as _float_parts,
    gather as _gather,
    hashing as _hashing,
    histograms as _histograms,
    incomplete_gamma as _incomplete_gamma,
    index_views as _index_views,
    index_writes as _index_writes,
    indexing as _indexing,
    inplace as _inplace,
    integer_math as _integer_math,
    linalg as _linalg,
    linalg_compositions as _linalg_compositions,
    linalg_decompositions as _linalg_decompositions,
    linalg_derived as _linalg_derived,
    linalg_determinants as _linalg_determinants,
    linalg_lu as _linalg_lu,
    linalg_norms as _linalg_norms,
    linalg_solve as _linalg_solve,
    logical_bitwise as _logical_bitwise,
    order_statistics as _order_statistics,
    predicates as _predicates,
    products as _products,
    reduction as _reduction,
    resize as _resize,
    scan as _scan,
    scatter_reductions as _scatter_reductions,
    scatter_views as _scatter_views,
    shape as _shape,
    signs_and_extrema as _signs_and_extrema,
    sorting as _sorting,
    special_functions as _special_functions,
    spectral as _spectral,
    strided as _strided,
    structure as _structure,
    ternary as _ternary,
    trigonometric as _trigonometric,
    utilities as _utilities,
)

from .tensor import Tensor

_Number = builtins.int | builtins.float | builtins.bool


class _TensorMethods:
    # The ops families' methods (numgrad.ops.METHODS: a later family's name wins).
    add = _elementwise.add
    sub = _elementwise.sub
    mul = _elementwise.mul
    div = _elementwise.div
    neg = _elementwise.neg
    pow = _elementwise.pow
    exp = _elementwise.exp
    log = _elementwise.log
    sqrt = _elementwise.sqrt
    reciprocal = _elementwise.reciprocal
    tanh = _elementwise.tanh
    sigmoid = _elementwise.sigmoid
    log1p = _elementwise.log1p
    expm1 = _elementwise.expm1
    rsqrt = _elementwise.rsqrt
    sin = _elementwise.sin
    cos = _elementwise.cos
    tan = _elementwise.tan
    abs = _elementwise.abs
    absolute = _elementwise.absolute
    sign = _elementwise.sign
    floor = _elementwise.floor
    ceil = _elementwise.ceil
    round = _elementwise.round
    relu = _elementwise.relu
    eq = _elementwise.eq
    ne = _elementwise.ne
    lt = _elementwise.lt
    le = _elementwise.le
    gt = _elementwise.gt
    ge = _elementwise.ge
    greater = _elementwise.greater
    greater_equal = _elementwise.greater_equal
    less = _elementwise.less
    less_equal = _elementwise.less_equal
    not_equal = _elementwise.not_equal
    clamp = _elementwise.clamp
    maximum = _elementwise.maximum
    minimum = _elementwise.minimum
    clip = _elementwise.clip
    subtract = _elementwise.subtract
    multiply = _elementwise.multiply
    divide = _elementwise.divide
    true_divide = _elementwise.true_divide
    negative = _elementwise.negative
    clamp_min = _elementwise.clamp_min
    clamp_max = _elementwise.clamp_max
    conj = _elementwise.conj
    resolve_conj = _elementwise.resolve_conj
    resolve_neg = _elementwise.resolve_neg
    conj_physical = _elementwise.conj_physical
    angle = _elementwise.angle
    isreal = _elementwise.isreal
    positive = _elementwise.positive
    sum = _reduction.sum
    mean = _reduction.mean
    prod = _reduction.prod
    amax = _reduction.amax
    amin = _reduction.amin
    max = _reduction.max
    min = _reduction.min
    argmax = _reduction.argmax
    argmin = _reduction.argmin
    var = _reduction.var
    std = _reduction.std
    logsumexp = _reduction.logsumexp
    softmax = _reduction.softmax
    log_softmax = _reduction.log_softmax
    sum_to_size = _reduction.sum_to_size
    cov = _reduction.cov
    corrcoef = _reduction.corrcoef
    view = _shape.view
    reshape = _shape.reshape
    view_as = _shape.view_as
    reshape_as = _shape.reshape_as
    flatten = _shape.flatten
    transpose = _shape.transpose
    t = _shape.t
    permute = _shape.permute
    unsqueeze = _shape.unsqueeze
    squeeze = _shape.squeeze
    t_ = _shape.t_
    transpose_ = _shape.transpose_
    swapaxes_ = _shape.swapaxes_
    swapdims_ = _shape.swapdims_
    unsqueeze_ = _shape.unsqueeze_
    squeeze_ = _shape.squeeze_
    adjoint = _shape.adjoint
    expand = _shape.expand
    expand_as = _shape.expand_as
    narrow = _shape.narrow
    split = _shape.split
    chunk = _shape.chunk
    split_with_sizes = _shape.split_with_sizes
    unsafe_split = _shape.unsafe_split
    unsafe_split_with_sizes = _shape.unsafe_split_with_sizes
    unsafe_chunk = _shape.unsafe_chunk
    hsplit = _shape.hsplit
    vsplit = _shape.vsplit
    dsplit = _shape.dsplit
    narrow_copy = _shape.narrow_copy
    repeat = _shape.repeat
    mm = _linalg.mm
    addmm = _linalg.addmm
    mv = _linalg.mv
    dot = _linalg.dot
    bmm = _linalg.bmm
    matmul = _linalg.matmul
    vdot = _linalg.vdot
    inner = _linalg.inner
    addr = _linalg.addr
    addbmm = _linalg.addbmm
    addmm_ = _linalg.addmm_
    addbmm_ = _linalg.addbmm_
    addr_ = _linalg.addr_
    to = _convert.to
    type_as = _convert.type_as
    clone = _convert.clone
    contiguous = _convert.contiguous
    add_ = _inplace.add_
    sub_ = _inplace.sub_
    mul_ = _inplace.mul_
    div_ = _inplace.div_
    floor_divide_ = _inplace.floor_divide_
    remainder_ = _inplace.remainder_
    fmod_ = _inplace.fmod_
    clamp_ = _inplace.clamp_
    fill_ = _inplace.fill_
    zero_ = _inplace.zero_
    copy_ = _inplace.copy_
    neg_ = _inplace.neg_
    pow_ = _inplace.pow_
    exp_ = _inplace.exp_
    log_ = _inplace.log_
    sqrt_ = _inplace.sqrt_
    reciprocal_ = _inplace.reciprocal_
    tanh_ = _inplace.tanh_
    sigmoid_ = _inplace.sigmoid_
    log1p_ = _inplace.log1p_
    expm1_ = _inplace.expm1_
    rsqrt_ = _inplace.rsqrt_
    sin_ = _inplace.sin_
    cos_ = _inplace.cos_
    tan_ = _inplace.tan_
    abs_ = _inplace.abs_
    absolute_ = _inplace.absolute_
    sign_ = _inplace.sign_
    floor_ = _inplace.floor_
    ceil_ = _inplace.ceil_
    round_ = _inplace.round_
    relu_ = _inplace.relu_
    negative_ = _inplace.negative_
    conj_physical_ = _inplace.conj_physical_
    atan2_ = _inplace.atan2_
    arctan2_ = _inplace.arctan2_
    asin_ = _inplace.asin_
    acos_ = _inplace.acos_
    atan_ = _inplace.atan_
    sinh_ = _inplace.sinh_
    cosh_ = _inplace.cosh_
    asinh_ = _inplace.asinh_
    acosh_ = _inplace.acosh_
    atanh_ = _inplace.atanh_
    sinc_ = _inplace.sinc_
    deg2rad_ = _inplace.deg2rad_
    rad2deg_ = _inplace.rad2deg_
    arcsin_ = _inplace.arcsin_
    arccos_ = _inplace.arccos_
    arctan_ = _inplace.arctan_
    arcsinh_ = _inplace.arcsinh_
    arccosh_ = _inplace.arccosh_
    arctanh_ = _inplace.arctanh_
    hypot_ = _inplace.hypot_
    log2_ = _inplace.log2_
    log10_ = _inplace.log10_
    exp2_ = _inplace.exp2_
    trunc_ = _inplace.trunc_
    frac_ = _inplace.frac_
    fix_ = _inplace.fix_
    square_ = _inplace.square_
    logit_ = _inplace.logit_
    erf_ = _inplace.erf_
    erfc_ = _inplace.erfc_
    lgamma_ = _inplace.lgamma_
    digamma_ = _inplace.digamma_
    erfinv_ = _inplace.erfinv_
    i0_ = _inplace.i0_
    xlogy_ = _inplace.xlogy_
    lerp_ = _inplace.lerp_
    addcmul_ = _inplace.addcmul_
    addcdiv_ = _inplace.addcdiv_
    logical_and_ = _inplace.logical_and_
    logical_or_ = _inplace.logical_or_
    logical_xor_ = _inplace.logical_xor_
    bitwise_and_ = _inplace.bitwise_and_
    bitwise_or_ = _inplace.bitwise_or_
    bitwise_xor_ = _inplace.bitwise_xor_
    bitwise_left_shift_ = _inplace.bitwise_left_shift_
    bitwise_right_shift_ = _inplace.bitwise_right_shift_
    bitwise_not_ = _inplace.bitwise_not_
    logical_not_ = _inplace.logical_not_
    clamp_min_ = _inplace.clamp_min_
    clamp_max_ = _inplace.clamp_max_
    masked_fill = _inplace.masked_fill
    masked_fill_ = _inplace.masked_fill_
    clip_ = _inplace.clip_
    eq_ = _inplace.eq_
    ne_ = _inplace.ne_
    lt_ = _inplace.lt_
    le_ = _inplace.le_
    gt_ = _inplace.gt_
    ge_ = _inplace.ge_
    greater_ = _inplace.greater_
    greater_equal_ = _inplace.greater_equal_
    less_ = _inplace.less_
    less_equal_ = _inplace.less_equal_
    not_equal_ = _inplace.not_equal_
    subtract_ = _inplace.subtract_
    multiply_ = _inplace.multiply_
    divide_ = _inplace.divide_
    true_divide_ = _inplace.true_divide_
    float_power_ = _inplace.float_power_
    ldexp_ = _inplace.ldexp_
    polygamma_ = _inplace.polygamma_
    mvlgamma_ = _inplace.mvlgamma_
    fill_diagonal_ = _inplace.fill_diagonal_
    __getitem__ = _indexing.__getitem__
    __setitem__ = _indexing.__setitem__
    index_put = _indexing.index_put
    index_put_ = _indexing.index_put_
    logaddexp = _exponents_and_rounding.logaddexp
    logaddexp2 = _exponents_and_rounding.logaddexp2
    log2 = _exponents_and_rounding.log2
    log10 = _exponents_and_rounding.log10
    exp2 = _exponents_and_rounding.exp2
    trunc = _exponents_and_rounding.trunc
    frac = _exponents_and_rounding.frac
    fix = _exponents_and_rounding.fix
    square = _exponents_and_rounding.square
    logit = _exponents_and_rounding.logit
    float_power = _exponents_and_rounding.float_power
    ldexp = _exponents_and_rounding.ldexp
    atan2 = _trigonometric.atan2
    arctan2 = _trigonometric.arctan2
    asin = _trigonometric.asin
    acos = _trigonometric.acos
    atan = _trigonometric.atan
    sinh = _trigonometric.sinh
    cosh = _trigonometric.cosh
    asinh = _trigonometric.asinh
    acosh = _trigonometric.acosh
    atanh = _trigonometric.atanh
    sinc = _trigonometric.sinc
    deg2rad = _trigonometric.deg2rad
    rad2deg = _trigonometric.rad2deg
    arcsin = _trigonometric.arcsin
    arccos = _trigonometric.arccos
    arctan = _trigonometric.arctan
    arcsinh = _trigonometric.arcsinh
    arccosh = _trigonometric.arccosh
    arctanh = _trigonometric.arctanh
    hypot = _trigonometric.hypot
    erf = _special_functions.erf
    erfc = _special_functions.erfc
    lgamma = _special_functions.lgamma
    digamma = _special_functions.digamma
    mvlgamma = _special_functions.mvlgamma
    erfinv = _special_functions.erfinv
    i0 = _special_functions.i0
    xlogy = _special_functions.xlogy
    lerp = _ternary.lerp
    addcmul = _ternary.addcmul
    addcdiv = _ternary.addcdiv
    floor_divide = _division.floor_divide
    fmod = _division.fmod
    remainder = _division.remainder
    logical_and = _logical_bitwise.logical_and
    logical_or = _logical_bitwise.logical_or
    logical_xor = _logical_bitwise.logical_xor
    bitwise_and = _logical_bitwise.bitwise_and
    bitwise_or = _logical_bitwise.bitwise_or
    bitwise_xor = _logical_bitwise.bitwise_xor
    bitwise_left_shift = _logical_bitwise.bitwise_left_shift
    bitwise_right_shift = _logical_bitwise.bitwise_right_shift
    bitwise_not = _logical_bitwise.bitwise_not
    logical_not = _logical_bitwise.logical_not
    sgn = _signs_and_extrema.sgn
    signbit = _signs_and_extrema.signbit
    copysign = _signs_and_extrema.copysign
    fmax = _signs_and_extrema.fmax
    fmin = _signs_and_extrema.fmin
    heaviside = _signs_and_extrema.heaviside
    sgn_ = _signs_and_extrema.sgn_
    copysign_ = _signs_and_extrema.copysign_
    heaviside_ = _signs_and_extrema.heaviside_
    cumsum = _scan.cumsum
    cumprod = _scan.cumprod
    cumsum_ = _scan.cumsum_
    cumprod_ = _scan.cumprod_
    sort = _sorting.sort
    argsort = _sorting.argsort
    msort = _sorting.msort
    topk = _sorting.topk
    gather = _gather.gather
    scatter = _gather.scatter
    scatter_add = _gather.scatter_add
    scatter_ = _gather.scatter_
    scatter_add_ = _gather.scatter_add_
    index_select = _gather.index_select
    tril = _structure.tril
    triu = _structure.triu
    tril_ = _structure.tril_
    triu_ = _structure.triu_
    unfold = _structure.unfold
    diagonal = _structure.diagonal
    diag_embed = _structure.diag_embed
    diag = _structure.diag
    trace = _structure.trace
    flip = _structure.flip
    fliplr = _structure.fliplr
    flipud = _structure.flipud
    roll = _structure.roll
    outer = _structure.outer
    ger = _structure.ger
    rot90 = _structure.rot90
    diagflat = _structure.diagflat
    movedim = _structure.movedim
    moveaxis = _structure.moveaxis
    swapaxes = _structure.swapaxes
    swapdims = _structure.swapdims
    unflatten = _structure.unflatten
    repeat_interleave = _structure.repeat_interleave
    tile = _structure.tile
    broadcast_to = _structure.broadcast_to
    ravel = _structure.ravel
    take_along_dim = _structure.take_along_dim
    is_signed = _structure.is_signed
    is_conj = _structure.is_conj
    is_neg = _structure.is_neg
    is_inference = _structure.is_inference
    is_same_size = _structure.is_same_size
    get_device = _structure.get_device
    isnan = _predicates.isnan
    isfinite = _predicates.isfinite
    isinf = _predicates.isinf
    isposinf = _predicates.isposinf
    isneginf = _predicates.isneginf
    any = _predicates.any
    all = _predicates.all
    count_nonzero = _predicates.count_nonzero
    isclose = _predicates.isclose
    allclose = _predicates.allclose
    equal = _predicates.equal
    nan_to_num = _predicates.nan_to_num
    nan_to_num_ = _predicates.nan_to_num_
    nansum = _predicates.nansum
    nanmean = _predicates.nanmean
    median = _predicates.median
    nanmedian = _predicates.nanmedian
    mode = _predicates.mode
    aminmax = _predicates.aminmax
    cross = _predicates.cross
    dist = _predicates.dist
    nonzero = _data_dependent.nonzero
    nonzero_static = _data_dependent.nonzero_static
    argwhere = _data_dependent.argwhere
    masked_select = _data_dependent.masked_select
    unique = _data_dependent.unique
    unique_consecutive = _data_dependent.unique_consecutive
    hardshrink = _activation.hardshrink
    prelu = _activation.prelu
    inverse = _linalg_solve.inverse
    cholesky_solve = _linalg_solve.cholesky_solve
    cholesky_inverse = _linalg_solve.cholesky_inverse
    pinverse = _linalg_decompositions.pinverse
    cholesky = _linalg_decompositions.cholesky
    svd = _linalg_decompositions.svd
    qr = _linalg_decompositions.qr
    det = _linalg_determinants.det
    logdet = _linalg_determinants.logdet
    slogdet = _linalg_determinants.slogdet
    norm = _linalg_norms.norm
    renorm = _linalg_norms.renorm
    renorm_ = _linalg_norms.renorm_
    matrix_power = _linalg_compositions.matrix_power
    unbind = _index_views.unbind
    select = _index_views.select
    tensor_split = _index_views.tensor_split
    index_add = _index_writes.index_add
    index_copy = _index_writes.index_copy
    index_fill = _index_writes.index_fill
    index_add_ = _index_writes.index_add_
    index_copy_ = _index_writes.index_copy_
    index_fill_ = _index_writes.index_fill_
    take = _index_writes.take
    masked_scatter = _index_writes.masked_scatter
    masked_scatter_ = _index_writes.masked_scatter_
    kron = _products.kron
    baddbmm = _products.baddbmm
    addmv = _products.addmv
    baddbmm_ = _products.baddbmm_
    addmv_ = _products.addmv_
    cummax = _cumulative_extremes.cummax
    cummin = _cumulative_extremes.cummin
    logcumsumexp = _cumulative_extremes.logcumsumexp
    bincount = _counting.bincount
    histc = _counting.histc
    diff = _utilities.diff
    is_nonzero = _utilities.is_nonzero
    put = _flat_index.put
    put_ = _flat_index.put_
    triangular_solve = _linalg_derived.triangular_solve
    geqrf = _linalg_derived.geqrf
    ormqr = _linalg_derived.ormqr
    matrix_exp = _linalg_derived.matrix_exp
    orgqr = _linalg_derived.orgqr
    kthvalue = _order_statistics.kthvalue
    quantile = _order_statistics.quantile
    nanquantile = _order_statistics.nanquantile
    select_scatter = _scatter_views.select_scatter
    slice_scatter = _scatter_views.slice_scatter
    diagonal_scatter = _scatter_views.diagonal_scatter
    lu_unpack = _linalg_lu.lu_unpack
    lu = _linalg_lu.lu
    lu_solve = _linalg_lu.lu_solve
    scatter_reduce = _scatter_reductions.scatter_reduce
    index_reduce = _scatter_reductions.index_reduce
    scatter_reduce_ = _scatter_reductions.scatter_reduce_
    index_reduce_ = _scatter_reductions.index_reduce_
    frexp = _float_parts.frexp
    nextafter = _float_parts.nextafter
    nextafter_ = _float_parts.nextafter_
    gcd = _integer_math.gcd
    lcm = _integer_math.lcm
    gcd_ = _integer_math.gcd_
    lcm_ = _integer_math.lcm_
    histogram = _histograms.histogram
    igamma = _incomplete_gamma.igamma
    igammac = _incomplete_gamma.igammac
    igamma_ = _incomplete_gamma.igamma_
    igammac_ = _incomplete_gamma.igammac_
    resize_ = _resize.resize_
    resize_as_ = _resize.resize_as_
    as_strided = _strided.as_strided
    as_strided_ = _strided.as_strided_
    as_strided_scatter = _strided.as_strided_scatter
    stft = _spectral.stft
    hash_tensor = _hashing.hash_tensor
    # numgrad.random's and numgrad.creation's methods
    bernoulli = _random.bernoulli
    multinomial = _random.multinomial
    uniform_ = _random.uniform_
    normal_ = _random.normal_
    random_ = _random.random_
    bernoulli_ = _random.bernoulli_
    exponential_ = _random.exponential_
    cauchy_ = _random.cauchy_
    log_normal_ = _random.log_normal_
    geometric_ = _random.geometric_
    new_empty_strided = _creation.new_empty_strided
    new_zeros = _creation.new_zeros
    new_ones = _creation.new_ones
    new_empty = _creation.new_empty
    new_full = _creation.new_full
    new_tensor = _creation.new_tensor

    # The operators: the same functions (``x + y`` is ``numgrad.add(x, y)``).
    def __add__(self, other: Tensor | _Number) -> Tensor: ...
    def __radd__(self, other: Tensor | _Number) -> Tensor: ...
    def __sub__(self, other: Tensor | _Number) -> Tensor: ...
    def __rsub__(self, other: Tensor | _Number) -> Tensor: ...
    def __mul__(self, other: Tensor | _Number) -> Tensor: ...
    def __rmul__(self, other: Tensor | _Number) -> Tensor: ...
    def __truediv__(self, other: Tensor | _Number) -> Tensor: ...
    def __rtruediv__(self, other: Tensor | _Number) -> Tensor: ...
    def __rdiv__(self, other: Tensor | _Number) -> Tensor: ...
    def __floordiv__(self, other: Tensor | _Number) -> Tensor: ...
    def __rfloordiv__(self, other: Tensor | _Number) -> Tensor: ...
    def __mod__(self, other: Tensor | _Number) -> Tensor: ...
    def __rmod__(self, other: Tensor | _Number) -> Tensor: ...
    def __pow__(self, exponent: Tensor | _Number) -> Tensor: ...
    def __rpow__(self, other: Tensor | _Number) -> Tensor: ...
    def __matmul__(self, other: Tensor) -> Tensor: ...
    def __rmatmul__(self, other: Tensor) -> Tensor: ...
    def __iadd__(self, other: Tensor | _Number) -> Tensor: ...
    def __isub__(self, other: Tensor | _Number) -> Tensor: ...
    def __imul__(self, other: Tensor | _Number) -> Tensor: ...
    def __itruediv__(self, other: Tensor | _Number) -> Tensor: ...
    def __ifloordiv__(self, other: Tensor | _Number) -> Tensor: ...
    def __imod__(self, other: Tensor | _Number) -> Tensor: ...
    def __neg__(self) -> Tensor: ...
    def __pos__(self) -> Tensor: ...
    def __abs__(self) -> Tensor: ...
    def __invert__(self) -> Tensor: ...
    def __and__(self, other: Tensor | _Number) -> Tensor: ...
    def __rand__(self, other: Tensor | _Number) -> Tensor: ...
    def __or__(self, other: Tensor | _Number) -> Tensor: ...
    def __ror__(self, other: Tensor | _Number) -> Tensor: ...
    def __xor__(self, other: Tensor | _Number) -> Tensor: ...
    def __rxor__(self, other: Tensor | _Number) -> Tensor: ...
    def __lshift__(self, other: Tensor | _Number) -> Tensor: ...
    def __rlshift__(self, other: Tensor | _Number) -> Tensor: ...
    def __rshift__(self, other: Tensor | _Number) -> Tensor: ...
    def __rrshift__(self, other: Tensor | _Number) -> Tensor: ...
    def __iand__(self, other: Tensor | _Number) -> Tensor: ...
    def __ior__(self, other: Tensor | _Number) -> Tensor: ...
    def __ixor__(self, other: Tensor | _Number) -> Tensor: ...
    def __ilshift__(self, other: Tensor | _Number) -> Tensor: ...
    def __irshift__(self, other: Tensor | _Number) -> Tensor: ...
    def __lt__(self, other: Tensor | _Number) -> Tensor: ...
    def __le__(self, other: Tensor | _Number) -> Tensor: ...
    def __gt__(self, other: Tensor | _Number) -> Tensor: ...
    def __ge__(self, other: Tensor | _Number) -> Tensor: ...
    def __eq__(self, other: object) -> Tensor: ...  # type: ignore[override]
    def __ne__(self, other: object) -> Tensor: ...  # type: ignore[override]

    # Properties and conversions
    @property
    def T(self) -> Tensor: ...
    @property
    def mT(self) -> Tensor: ...
    @property
    def mH(self) -> Tensor: ...
    @property
    def H(self) -> Tensor: ...
    @property
    def real(self) -> Tensor: ...
    @property
    def imag(self) -> Tensor: ...
    def polygamma(self, n: builtins.int) -> Tensor: ...
    def float(self, memory_format: object = None) -> Tensor: ...
    def double(self, memory_format: object = None) -> Tensor: ...
    def half(self, memory_format: object = None) -> Tensor: ...
    def bfloat16(self, memory_format: object = None) -> Tensor: ...
    def byte(self, memory_format: object = None) -> Tensor: ...
    def char(self, memory_format: object = None) -> Tensor: ...
    def short(self, memory_format: object = None) -> Tensor: ...
    def long(self, memory_format: object = None) -> Tensor: ...
    def int(self, memory_format: object = None) -> Tensor: ...
    def bool(self, memory_format: object = None) -> Tensor: ...
    def cfloat(self, memory_format: object = None) -> Tensor: ...
    def cdouble(self, memory_format: object = None) -> Tensor: ...
    def cpu(self) -> Tensor: ...
    def cuda(self, device: object = None, non_blocking: builtins.bool = False) -> Tensor: ...
