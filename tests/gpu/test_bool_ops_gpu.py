"""`and` / `or` of runtime integers on the GPU (tests/lang/test_bool_ops.py)."""

import pytest
import torch

from tests.lang.test_bool_ops import BoolOps

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n,m", [(5, 7), (0, 7), (5, 0), (0, 0)])
def test_and_or_of_runtime_integers_give_an_operand_gpu(n, m):
    out = torch.zeros(3, dtype=torch.int32, device="cuda")
    BoolOps()(n, m, out)
    assert out.tolist() == [n and m, n or m, int(n > 3 and m > 3)]
