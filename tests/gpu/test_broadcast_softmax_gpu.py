"""Broadcasting of register tiles and a softmax-like kernel on the GPU against torch:
fresh random data, odd shapes, 1 to 8 warps, outputs poisoned with NaN."""

import pytest
import torch

from tests.interp.test_broadcast_softmax import (SHAPES, Broadcast, Softmax, broadcast_reference,
                                                 softmax_reference)
from tilus import float16, float32

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("m,n,yshape", SHAPES)
@pytest.mark.parametrize("op,swap", [("-", False), ("-", True), ("*", False), ("max", True),
                                     ("where", False), ("where", True)])
def test_broadcast(m, n, yshape, op, swap, warps):
    x = torch.randn(m, n, device="cuda")
    y = torch.randn(*yshape, device="cuda")
    out = torch.full((m, n), float("nan"), device="cuda")
    Broadcast(m, n, yshape, op, swap, warps)(x, y, out)
    torch.testing.assert_close(out, broadcast_reference(x, y, op, swap))


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("rows,n,block_m", [(1, 7, 8), (13, 70, 8), (64, 128, 16), (37, 33, 4),
                                            (100, 256, 32), (5, 1000, 2)])
@pytest.mark.parametrize("dtype", [float32, float16])
def test_softmax(rows, n, block_m, dtype, warps):
    x = torch.randn(rows, n, device="cuda") * 3
    out = torch.full((rows, n), float("nan"), device="cuda")
    Softmax(n, block_m, dtype, warps)(rows, x, out)
    tol = 5e-3 if dtype == float16 else 1e-5
    torch.testing.assert_close(out, softmax_reference(x, dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("m,n", [(37, 70), (5, 7), (64, 128), (3, 200), (33, 17)])
def test_shared_round_trip_of_odd_tiles(m, n, warps):
    from tests.interp.test_broadcast_softmax import SharedRoundTrip

    x = torch.randint(-20, 20, (m, n), device="cuda").float()
    out = torch.full((m, n), float("nan"), device="cuda")
    SharedRoundTrip(m, n, warps)(x, out)
    torch.testing.assert_close(out, 2 * x)
