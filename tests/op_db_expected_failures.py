"""The OpInfos of torch 2.13's op_db that numgrad fails today (issue 35), each with its reason:
the first failing sample's dtype, index and what differs. tests/test_op_db.py fails on an
OpInfo that fails and is not listed, and on a listed one that passes: the lists only shrink.
(``python tests/_op_db.py --write`` rewrites this file from what fails now.)
"""

SAMPLES = {'as_strided_scatter': "float32 sample 0: PyTorch 2.13's gradient with respect to input is "
                       'inverted: it gives the gradient to the elements src overwrites and none to '
                       'the others (as_strided_scatter(x, s, (1,), (1,), 0) of x = [2, 5]: x.grad '
                       "[1, 0] where [0, 1] is the derivative); numgrad's is the derivative "
                       '(tests/test_composite_ops.py)',
 'chalf': 'float32 sample 0: missing name: torch.Tensor.chalf',
 'gather': 'float32 sample 3: an empty uint8 index: PyTorch checks the index dtype only when '
           'it has elements, numgrad raises its "Expected dtype int32/int64 for index" anyway',
 'hash_tensor': 'float32 sample 0: output 0 dtype int64, PyTorch uint64, a dtype numgrad lacks '
                'yet (the same 64 bits; every sample matches viewed as int64)',
 'jiterator_2inputs_2outputs': 'float32 sample 0: missing name: torch.jiterator_2inputs_2outputs',
 'jiterator_4inputs_with_extra_args': 'float32 sample 0: missing name: '
                                      'torch.jiterator_4inputs_with_extra_args',
 'jiterator_binary': 'float32 sample 0: missing name: torch.jiterator_binary',
 'jiterator_binary_return_by_ref': 'float32 sample 0: missing name: '
                                   'torch.jiterator_binary_return_by_ref',
 'jiterator_unary': 'float32 sample 0: missing name: torch.jiterator_unary',
 'nn.functional.ctc_loss': "float32 sample 0: PyTorch 2.13's float32 gradient is off by up to "
                           '8.8e-5 from the float64 gradient (its recursion runs in float32 over '
                           "50 steps); numgrad's, computed in float64, agrees with it to 1e-8; the "
                           'float64 samples pass',
 'nn.functional.layer_norm': "float32 sample 2: layer_norm over one element: the weight's gradient "
                             'is exactly 0 in numgrad, rounding noise (-2.2e-05 = 1e-7 x rstd 316) '
                             "in PyTorch's float32",
 'sparse.mm[reduce]': 'float32 sample 0: layout torch.sparse_csr',
 'sparse.sampled_addmm': 'float32 sample 0: layout torch.sparse_csr',
 'to_sparse': 'float32 sample 0: missing name: torch.Tensor.to_sparse'}

# error inputs (OpInfo#index in its error_inputs)
ERROR_INPUTS = {'__radd__#0': "accepted silently (PyTorch: Exception '')",
 '__radd__#1': "accepted silently (PyTorch: Exception '')",
 '__rand__#0': 'missing name: torch.__rand__',
 '__rand__#1': 'missing name: torch.__rand__',
 '__rdiv__#0': 'missing name: torch.__rdiv__',
 '__rdiv__#1': 'missing name: torch.__rdiv__',
 '__rmul__#0': "accepted silently (PyTorch: Exception '')",
 '__rmul__#1': "accepted silently (PyTorch: Exception '')",
 '__ror__#0': "accepted silently (PyTorch: Exception '')",
 '__ror__#1': "accepted silently (PyTorch: Exception '')",
 '__rxor__#0': 'missing name: torch.__rxor__',
 '__rxor__#1': 'missing name: torch.__rxor__',
 'amax#1': 'a tensor NumPy cannot hold (number of dimensions must be within [0, 64], got 65)',
 'amax#2': 'a tensor NumPy cannot hold (number of dimensions must be within [0, 64], got 65)',
 'amin#1': 'a tensor NumPy cannot hold (number of dimensions must be within [0, 64], got 65)',
 'amin#2': 'a tensor NumPy cannot hold (number of dimensions must be within [0, 64], got 65)',
 'aminmax#1': 'a tensor NumPy cannot hold (number of dimensions must be within [0, 64], got 65)',
 'aminmax#2': 'a tensor NumPy cannot hold (number of dimensions must be within [0, 64], got 65)',
 'dot#0': 'dtype torch.float16',
 'eq#0': 'a number as input: PyTorch raises TypeError, numgrad compares (its compiler tests, '
         'tests/test_compile_lowering.py, take numbers first through the public comparisons)',
 'ge#0': 'a number as input: PyTorch raises TypeError, numgrad compares (its compiler tests, '
         'tests/test_compile_lowering.py, take numbers first through the public comparisons)',
 'gradient#10': "a tensor on device 'meta'",
 'gradient#17': "a tensor on device 'meta'",
 'gradient#3': "a tensor on device 'meta'",
 'gt#0': 'a number as input: PyTorch raises TypeError, numgrad compares (its compiler tests, '
         'tests/test_compile_lowering.py, take numbers first through the public comparisons)',
 'jiterator_binary#0': 'missing name: torch.jiterator_binary',
 'jiterator_binary#1': 'missing name: torch.jiterator_binary',
 'jiterator_binary#2': 'missing name: torch.jiterator_binary',
 'jiterator_binary_return_by_ref#0': 'missing name: torch.jiterator_binary_return_by_ref',
 'jiterator_binary_return_by_ref#1': 'missing name: torch.jiterator_binary_return_by_ref',
 'jiterator_binary_return_by_ref#2': 'missing name: torch.jiterator_binary_return_by_ref',
 'le#0': 'a number as input: PyTorch raises TypeError, numgrad compares (its compiler tests, '
         'tests/test_compile_lowering.py, take numbers first through the public comparisons)',
 'lt#0': 'a number as input: PyTorch raises TypeError, numgrad compares (its compiler tests, '
         'tests/test_compile_lowering.py, take numbers first through the public comparisons)',
 'ne#0': 'a number as input: PyTorch raises TypeError, numgrad compares (its compiler tests, '
         'tests/test_compile_lowering.py, take numbers first through the public comparisons)',
 'vdot#0': 'vectors of two dtypes and two sizes: PyTorch checks the dtypes first ("dot : '
            'expected both vectors to have same dtype"), numgrad the sizes'}

# the complex128 pass (OpInfos that take complex128)
COMPLEX_SAMPLES = {'as_strided_scatter': "complex128 sample 0: PyTorch 2.13's gradient with respect to input is "
                       'inverted, as in its float32 samples (see SAMPLES)',
 'chalf': 'complex128 sample 0: missing name: torch.Tensor.chalf',
 'dot': "complex128 sample 1: a conjugate view (PyTorch's lazy conj bit) as an input, which the "
        "harness's converter does not make",
 'gather': 'complex128 sample 3: an empty uint8 index, as in its float32 samples (see SAMPLES)',
 'jiterator_2inputs_2outputs': 'complex128 sample 0: missing name: '
                               'torch.jiterator_2inputs_2outputs',
 'jiterator_4inputs_with_extra_args': 'complex128 sample 0: missing name: '
                                      'torch.jiterator_4inputs_with_extra_args',
 'jiterator_binary': 'complex128 sample 0: missing name: torch.jiterator_binary',
 'jiterator_binary_return_by_ref': 'complex128 sample 0: missing name: '
                                   'torch.jiterator_binary_return_by_ref',
 'jiterator_unary': 'complex128 sample 0: missing name: torch.jiterator_unary',
 'linalg.ldl_factor': 'complex128 sample 0: raises NotImplementedError: "linalg_ldl_factor_ex" not '
                      "implemented for 'ComplexDouble'",
 'linalg.ldl_factor_ex': 'complex128 sample 0: raises NotImplementedError: "linalg_ldl_factor_ex" '
                         "not implemented for 'ComplexDouble'",
 'linalg.ldl_solve': 'complex128 sample 0: raises NotImplementedError: "linalg_ldl_solve" not '
                     "implemented for 'ComplexDouble'",
 'mm': "complex128 sample 1: a conjugate view (PyTorch's lazy conj bit) as an input, which the "
       "harness's converter does not make",
 'sparse.sampled_addmm': 'complex128 sample 0: layout torch.sparse_csr',
 'to_sparse': 'complex128 sample 0: missing name: torch.Tensor.to_sparse',
 'vdot': "complex128 sample 1: a conjugate view (PyTorch's lazy conj bit) as an input, which the "
         "harness's converter does not make"}

# the narrow pass (float16, bfloat16, int32, int16, int8, uint8)
NARROW_SAMPLES = {
 'as_strided_scatter': 'float16 sample 0: gradient 0 [0.], PyTorch [-1.138]: PyTorch 2.13\'s gradient '
                       'with respect to input is inverted (as in the float32 pass)',
 'chalf': 'float16 sample 0: missing name: torch.Tensor.chalf (complex32, a dtype numgrad lacks)',
 'complex': 'float16 sample 0: complex() of float16 makes complex32 in PyTorch, a dtype numgrad '
            'lacks: refused with a NotImplementedError that says so',
 'gather': 'float16 sample 3: an empty uint8 index: PyTorch checks the index dtype only when it has '
           'elements, numgrad raises its "Expected dtype int32/int64 for index" (as in the float32 '
           'pass)',
 'hash_tensor': 'float16 sample 0: output 0 dtype int64, PyTorch uint64, a dtype numgrad lacks '
                '(as in the float32 pass)',
 'jiterator_2inputs_2outputs': 'float16 sample 0: missing name: torch.jiterator_2inputs_2outputs',
 'jiterator_4inputs_with_extra_args': 'float16 sample 0: missing name: '
                                      'torch.jiterator_4inputs_with_extra_args',
 'jiterator_binary': 'float16 sample 0: missing name: torch.jiterator_binary',
 'jiterator_binary_return_by_ref': 'float16 sample 0: missing name: '
                                   'torch.jiterator_binary_return_by_ref',
 'jiterator_unary': 'float16 sample 0: missing name: torch.jiterator_unary',
 'logcumsumexp': 'float16 sample 0: gradient 0 [-2.293 1.339 -1.074 -1.518], PyTorch [0. 0. 0. '
                 '0.]: along a dimension led by 1e4, PyTorch 2.13\'s float16 backward gives 0 '
                 'where its float32 and float64 ones give the sum of the cotangent (0.7 for '
                 'logcumsumexp([1e4, 4.3, -0.87]) and cotangent [0.3, -0.7, 1.1]); numgrad\'s is '
                 'that sum',
 'matrix_exp': 'float16 sample 0: output 0 values [2.454e+03 ...], PyTorch [nan nan nan nan]: '
               'PyTorch 2.13\'s CPU matrix_exp of any 2x2 or larger float16/bfloat16 matrix gives '
               'NaN, inf or constants (the identity\'s too); numgrad computes it in float32 and '
               'rounds once',
 'msort': 'float16 sample 0: gradient 0 [... 1.193 ...], PyTorch [... 0.308 ...]: 8000 float16 '
          'values of [0, 8000) (spacing 4 above 4096) have many ties, which PyTorch\'s unstable '
          'sort orders its own way: the gradient reaches another of the equal elements',
 'nn.functional.normalize': 'float16 sample 2: gradient 0 [0.0004883 0. 0.003906 0.], PyTorch '
                            '[0.0004883 0. 0. 0.001953]: p=0.5 over a dimension of size 1, whose '
                            'exact gradient is 0: both are float16 rounding noise of that 0',
 'nn.functional.soft_margin_loss': 'float16 sample 1: output 0 values [7.64], PyTorch [inf]: '
                                   'PyTorch rounds exp(-y x) to float16, which overflows to inf; '
                                   'numgrad computes log(1 + exp(-y x)) in float32 and rounds '
                                   'once (7.64)',
 'pow': 'float16 sample 3: gradient 1 [inf], PyTorch [nan]: x ** 6.77 overflows float16 for x > 5; '
        'PyTorch\'s exponent gradient multiplies that saved inf by log(x) and the cotangent, and '
        'sums +inf and -inf to NaN; numgrad saves the float32 power (finite) and its sum rounds to '
        'inf',
 'sort': 'float16 sample 0: gradient 0 [... 1.193 ...], PyTorch [... 0.308 ...]: ties among 8000 '
         'float16 values, ordered their own way by PyTorch\'s unstable sort (as msort)',
 'sparse.mm[reduce]': 'float16 sample 0: layout torch.sparse_csr',
 'tan': 'float16 sample 0: gradient 0 [-3.346 20.58 8.03 1.352], PyTorch [-3.346 20.56 8.03 1.352]: '
        'near tan\'s poles PyTorch squares its float16 output (1 + tan(x)**2 overflows to inf where '
        'numgrad, which saves the float32 output, gives 1/cos(x)**2 finite and nearer the exact '
        'value)',
 'to_sparse': 'float16 sample 0: missing name: torch.Tensor.to_sparse',
 'view_as_complex': 'float16 sample 0: view_as_complex of float16 makes complex32 in PyTorch, a '
                    'dtype numgrad lacks: refused with a NotImplementedError that says so',
}

# under vmap (``check_op_vmap``): what torch 2.13's own vmap does alike
VMAP_SAMPLES = {
 'addmv': 'int64 sample 1: a float32 result where the op on each example gives int64: beta=0.2 '
          'and alpha=0.6 with int64 operands, which vmap computes as beta * input + alpha * '
          '(mat @ vec); torch.func.vmap gives float32 there too',
 'to': 'float64 sample 1: to(memory_format=channels_last) of a 4-D example refused ("required '
       'rank 4 tensor to use channels_last format": the batch is 5-D), as torch.func.vmap '
       'refuses it',
}

# forward mode (``check_op_jvp``): torch.func.jvp's tangents
JVP_SAMPLES = {
 'logcumsumexp': 'complex128 sample 0: tangent 0 finite, PyTorch [nan+nanj ...]: the sample holds '
                 'a 1e4, and PyTorch 2.13\'s complex forward formula overflows on it, every '
                 'tangent NaN (its float64 one, and its complex one of small values, are finite); '
                 'numgrad\'s matches central differences to 1e-6',
 'triangular_solve': 'float64 sample 0: PyTorch 2.13\'s jvp uses the whole tangent dA, where the '
                     'op reads only A\'s upper (or lower) triangle; numgrad\'s uses that '
                     'triangle: it matches central differences to 2e-9, and PyTorch\'s does too '
                     'given triu(dA) (its OpInfo tests pass a triangular A through '
                     'gradcheck_wrapper_triangular_input)',
}

# forward mode in float16 and bfloat16 (``check_op_jvp`` on ``NARROW_JVP_DTYPE_NAMES``)
NARROW_JVP_SAMPLES = {
 '_softmax_backward_data': 'float16 sample 0: tangent 0 [... -1.531 ...], PyTorch [... -1.539 ...] '
                           '(8 units in the last place): numgrad\'s _softmax_backward_data is a '
                           'composite of float16 ops, and its tangent rounds at each as they do; '
                           'PyTorch 2.13\'s formula calls its own kernel, which computes in '
                           'float32 and rounds once',
 'complex': 'float16 sample 0: complex() of float16 makes complex32 in PyTorch, a dtype numgrad '
            'lacks: refused with a NotImplementedError that says so',
 'frexp': 'float16 sample 0: tangent 0 dtype float16, PyTorch float32: PyTorch 2.13\'s formula '
          'self_t / exponent.exp2() divides by a float32 power of the int32 exponent, so its '
          'mantissa\'s tangent is float32; numgrad\'s has the mantissa\'s dtype (the values '
          'alike)',
 'matrix_exp': 'float16 sample 0: tangent 0 [2.692e+03 ...], PyTorch [nan nan nan nan]: PyTorch '
               '2.13\'s CPU matrix_exp of float16/bfloat16 matrices gives NaN (as in the narrow '
               'pass)',
 'msort': 'float16 sample 0: ties among 8000 float16 values, ordered their own way by PyTorch\'s '
          'unstable sort: the tangent of another of the equal elements (as in the narrow pass)',
 'nn.functional.layer_norm': 'float16 sample 2: tangent 0 [-1.314], PyTorch [nan]: a layer of one '
                             'element, whose tangent is the bias\'s (PyTorch\'s float32 one '
                             'too); PyTorch 2.13\'s float16 formula overflows on its rstd of '
                             '1/sqrt(eps) and gives NaN',
 'nn.functional.normalize': 'float16 sample 2: p=0.5 over a dimension of size 1, whose exact '
                            'tangent is 0: both are float16 rounding noise of that 0 (as in the '
                            'narrow pass)',
 'renorm': 'float16 sample 0: tangent 0 dtype float16, PyTorch float32: PyTorch 2.13\'s renorm_jvp '
           'takes the norm in float32 (the accumulate type) and returns its float32 where(); '
           'numgrad\'s tangent has the input\'s dtype (the values alike)',
 'sort': 'float16 sample 0: ties among 8000 float16 values, ordered their own way by PyTorch\'s '
         'unstable sort (as msort)',
 'std[unbiased]': 'float16 sample 2: tangent 0 dtype float16, PyTorch float32: of an empty input, '
                  'PyTorch 2.13\'s tangent is a float32 zero; numgrad\'s a float16 zero',
 'std_mean[unbiased]': 'float16 sample 2: tangent 0 dtype float16, PyTorch float32: of an empty '
                       'input (as std[unbiased])',
 'topk': 'bfloat16 sample 1: 250 bfloat16 values of which 216 differ: ties, ordered their own way '
         'by PyTorch: the tangent of another of the equal elements (as sort)',
 'var[unbiased]': 'float16 sample 2: tangent 0 dtype float16, PyTorch float32: of an empty input '
                  '(as std[unbiased])',
 'var_mean[unbiased]': 'float16 sample 2: tangent 0 dtype float16, PyTorch float32: of an empty '
                       'input (as std[unbiased])',
 'view_as_complex': 'float16 sample 0: view_as_complex of float16 makes complex32 in PyTorch, a '
                    'dtype numgrad lacks: refused with a NotImplementedError that says so',
}

# double backward (``check_op_gradgrad``): second derivatives of random cotangents
GRADGRAD_SAMPLES = {}
