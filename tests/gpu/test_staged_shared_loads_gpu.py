"""tests/interp/test_staged_shared_loads.py on CUDA: wide loads and stores of a runtime
stage of a swizzled shared tensor address every chunk through the swizzle."""

import pytest

from tests.interp.test_staged_shared_loads import CASES, run_case

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("stages,rows,n,per_thread,store_wide", CASES)
def test_staged_rows_cuda(stages, rows, n, per_thread, store_wide):
    run_case("cuda", stages, rows, n, per_thread, store_wide)
