"""The scalar formulas declared through ``numgrad.library.elementwise``, one attribute each.

A formula row names its function as ``"module:function"`` relative to ``numgrad.kernels``
(``formulas.py``), and the generated kernels and numgrad.compile's fused loops import it by that
name; a user's formula is set here (``user:<name>``) when it is declared, before anything can
import it. Its name ends in a digest of the formula's code, so that a changed formula names new
generated files and Numba's cache never serves the machine code of the old one.
"""
