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
