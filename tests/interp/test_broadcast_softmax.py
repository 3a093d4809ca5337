"""Broadcasting of register tiles in elementwise operators and where ([m, 1], [1, n] and
lower-rank tiles against [m, n]), and a softmax-like kernel (row max, subtract with
broadcast, exp, row sum, divide), in the CPU interpreter against torch. The programs
are shared with tests/codegen/test_reductions_source.py and tests/gpu/."""

import pytest
import torch

import tilus
from tilus import float16, float32


class Softmax(tilus.Script):
    """Row softmax of a [rows, n] float32 matrix, block_m rows per block; the tile is
    cast to `dtype` and back."""

    def __init__(self, n, block_m=8, dtype=float32, warps=4):
        super().__init__()
        self.n, self.block_m, self.dtype, self.warps = n, block_m, dtype, warps

    def __call__(self, rows: int, x: ~float32, out: ~float32):
        self.attrs.blocks = (rows + self.block_m - 1) // self.block_m
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[rows, self.n])
        go = self.global_view(out, dtype=float32, shape=[rows, self.n])
        row0 = self.blockIdx.x * self.block_m
        t = self.cast(self.load_global(gx, offsets=[row0, 0], shape=[self.block_m, self.n]), dtype=self.dtype)
        t = t - self.max(t, dim=1, keepdim=True)
        e = self.exp(t)
        p = e / self.sum(e, dim=1, keepdim=True)
        self.store_global(go, self.cast(p, dtype=float32), offsets=[row0, 0])


def softmax_reference(x, dtype):
    t = x.to(torch.float16 if dtype == float16 else torch.float32)
    return torch.softmax(t.float(), dim=1)


class Broadcast(tilus.Script):
    """out[m, n] = op(x[m, n], y) for y of shape `yshape` ([m, 1], [1, n], [n], [1, 1], ...);
    `swap` puts y on the left; op "where" selects x where x > y, else y."""

    def __init__(self, m, n, yshape, op="-", swap=False, warps=4):
        super().__init__()
        self.m, self.n, self.yshape, self.op, self.swap, self.warps = m, n, yshape, op, swap, warps

    def __call__(self, x: ~float32, y: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        gy = self.global_view(y, dtype=float32, shape=self.yshape)
        go = self.global_view(out, dtype=float32, shape=[self.m, self.n])
        a = self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n])
        b = self.load_global(gy, offsets=[0] * len(self.yshape), shape=self.yshape)
        if self.op == "where":
            r = self.where(a > b, a, b) if not self.swap else self.where(b < a, b, a)
        elif self.op == "-":
            r = b - a if self.swap else a - b
        elif self.op == "*":
            r = b * a if self.swap else a * b
        else:
            r = self.maximum(b, a) if self.swap else self.maximum(a, b)
        self.store_global(go, r, offsets=[0, 0])


def broadcast_reference(x, y, op, swap):
    if op == "where":
        return torch.where(y < x, y, x) if swap else torch.where(x > y, x, y)
    if op == "-":
        return y - x if swap else x - y
    if op == "*":
        return x * y
    return torch.maximum(x, y)


SHAPES = [(5, 7, [5, 1]), (5, 7, [1, 7]), (5, 7, [7]), (5, 7, [1, 1]), (5, 7, [1]),
          (37, 70, [37, 1]), (37, 70, [70]), (64, 128, [64, 1]), (64, 128, [1, 128]),
          (16, 32, [16, 1])]


@pytest.mark.parametrize("m,n,yshape", SHAPES)
@pytest.mark.parametrize("op,swap", [("-", False), ("-", True), ("*", False), ("max", True),
                                     ("where", False), ("where", True)])
def test_broadcast_matches_torch(m, n, yshape, op, swap):
    x, y = torch.randn(m, n), torch.randn(*yshape)
    out = torch.full((m, n), float("nan"))
    Broadcast(m, n, yshape, op, swap)(x, y, out)
    torch.testing.assert_close(out, broadcast_reference(x, y, op, swap))


@pytest.mark.parametrize("rows,n,block_m", [(1, 7, 8), (13, 70, 8), (64, 128, 16), (37, 33, 4)])
@pytest.mark.parametrize("dtype", [float32, float16])
def test_softmax_matches_torch(rows, n, block_m, dtype):
    x = torch.randn(rows, n) * 3
    out = torch.full((rows, n), float("nan"))
    Softmax(n, block_m, dtype)(rows, x, out)
    tol = 2e-3 if dtype == float16 else 1e-5
    torch.testing.assert_close(out, softmax_reference(x, dtype), rtol=tol, atol=tol)


class SharedRoundTrip(tilus.Script):
    """out = 2 * x for an [m, n] tile that goes through shared memory and is printed with
    its row sums subtracted and added back: an odd tile's padded layout (elements
    outside the tile) through every masked path."""

    def __init__(self, m, n, warps=4):
        super().__init__()
        self.m, self.n, self.warps = m, n, warps

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=float32, shape=[self.m, self.n])
        s = self.shared_tensor(dtype=float32, shape=[self.m, self.n])
        self.store_shared(s, self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n]))
        self.sync()
        t = self.load_shared(s)
        r = self.sum(t, dim=1, keepdim=True)
        t = (t - r) + r
        self.free_shared(s)
        self.store_global(go, t * 2.0, offsets=[0, 0])


@pytest.mark.parametrize("m,n", [(37, 70), (5, 7), (64, 128), (3, 200)])
def test_shared_round_trip(m, n):
    x = torch.randint(-20, 20, (m, n)).float()
    out = torch.full((m, n), float("nan"))
    SharedRoundTrip(m, n)(x, out)
    torch.testing.assert_close(out, 2 * x)
