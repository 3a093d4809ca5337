"""A boolean tile combined with a number promotes as hidet (Tilus 0.2's scalar IR) does
with a boolean: to the integer type for an int constant, to float32 for a float one, and
with a tile to the tile's type; the interpreter and CUDA compute in that type, so
`mask * 3` is 0 or 3 and `mask - 1` is -1 or 0 (not a boolean). Shared with
tests/codegen/test_bool_promotion_source.py and tests/gpu/test_bool_promotion_gpu.py."""

import pytest
import torch

import tilus
from tilus import boolean, float32, int32


class BoolArith(tilus.Script):
    """m = x > 0; y[0] = m * 3, y[1] = m - 1, y[2] = m * 2.5, y[3] = 7 + m, y[4] = m * int32(x)
    (as float32), y[5] = (m == 1)."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def __call__(self, x: ~float32, y: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        gx = self.global_view(x, dtype=float32, shape=[self.n])
        gy = self.global_view(y, dtype=float32, shape=[6, self.n])
        t = self.load_global(gx, offsets=[0], shape=[self.n])
        m = t > 0.0
        a = m * 3
        b = m - 1
        c = m * 2.5
        d = 7 + m
        e = m * self.cast(t * 4.0, dtype=int32)
        f = m == 1
        self.static_assert(a.dtype == int32 and b.dtype == int32 and d.dtype == int32, "int")
        self.static_assert(c.dtype == float32 and e.dtype == int32 and f.dtype == boolean, "float")
        for k, r in enumerate([a, b, c, d, e, f]):
            self.store_global(gy, self.cast(r, dtype=float32), offsets=[k, 0], dims=[1])


def bool_reference(x):
    m = (x > 0).to(torch.int32)
    rows = [m * 3, m - 1, m.float() * 2.5, 7 + m, m * (x * 4).to(torch.int32), (m == 1).int()]
    return torch.stack([r.float() for r in rows])


def run_bool_arith(n, device="cpu"):
    x = torch.randn(n, device=device)
    y = torch.full((6, n), float("nan"), device=device)
    BoolArith(n)(x, y)
    return x.cpu(), y.cpu()


@pytest.mark.parametrize("n", [1, 37, 64, 100])
def test_bool_tiles_promote_with_numbers(n):
    x, y = run_bool_arith(n)
    torch.testing.assert_close(y, bool_reference(x))
