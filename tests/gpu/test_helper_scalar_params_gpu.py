"""tests/lang/test_helper_scalar_params.py's script on the GPU: a helper rebinding a scalar
parameter leaves the caller's runtime variable alone in the generated CUDA too."""

import pytest

from tests.lang import test_helper_scalar_params as params

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("k,m", [(5, 3), (-2, 0), (7, 1)])
def test_scalar_parameters_gpu(k, m):
    assert params.run(k, m, "cuda") == params.expected(k, m)
