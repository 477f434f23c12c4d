"""Templates of the generated CUDA kernels (``kernels/codegen.py``): each module is written for one
formula ``f`` and copied for every other; numgrad never imports these modules themselves."""
