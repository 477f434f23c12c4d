import os

import numpy as np
import pytest

# Tests must see every failure, so no warnings are silenced here; hypothesis profiles live here.
try:
    from hypothesis import settings

    settings.register_profile("ci", max_examples=200, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover
    pass


@pytest.fixture
def rng():
    return np.random.default_rng(0)
