"""A dot fed by a transposed register tile (transpose, .transpose(), permute, an
unsqueeze/permute/squeeze chain) on the GPU against torch: fresh random data, odd shapes
that are not multiples of the tile, output poisoned with NaN."""

import pytest
import torch

from tests.interp.test_dot_transposed import run_dot_transposed
from tilus import float16, float32

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("via", ["transpose", "method", "permute", "chain"])
@pytest.mark.parametrize("operand", ["a", "b"])
@pytest.mark.parametrize("dtype", [float16, float32])
@pytest.mark.parametrize("m,n,k", [(100, 75, 70), (129, 200, 97)])
def test_dot_of_a_transposed_tile(via, operand, dtype, m, n, k):
    c, ref = run_dot_transposed(via, operand, dtype, m=m, n=n, k=k, device="cuda")
    torch.testing.assert_close(c, ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("tiles", [dict(bm=128, bn=128, bk=32, warps=8), dict(bm=32, bn=64, bk=16, warps=2)])
def test_dot_of_a_transposed_tile_other_tilings(tiles):
    c, ref = run_dot_transposed("transpose", "b", float16, m=300, n=150, k=90, device="cuda", **tiles)
    torch.testing.assert_close(c, ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("via", ["method", "transpose", "permute"])
@pytest.mark.parametrize("tiles", [dict(), dict(bm=64, bn=24, bk=32, warps=4), dict(bm=32, bn=64, bk=64, warps=2),
                                   dict(bm=128, bn=128, bk=32, warps=8)])
def test_q_at_k_transposed_from_shared(via, tiles):
    """K [n, k] loaded from shared memory with plain ldmatrix and transposed in registers
    (tests/codegen/test_dot_transposed_source.py)."""
    from tests.interp.test_dot_transposed_shared import run_qk_transpose

    c, ref = run_qk_transpose(via, m=300, n=150, k=90, device="cuda", **tiles)
    torch.testing.assert_close(c, ref, rtol=2e-3, atol=2e-3)
