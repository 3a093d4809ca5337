"""A dot whose operand is a transpose, permute or reshape of a register tile
(`self.dot(a, self.transpose(b))`, `b.transpose()`, ...) in the CPU interpreter against
torch at odd shapes. Layout inference gives the untransposed tile the layout that the dot
wants of its transpose (tests/codegen/test_dot_transposed_source.py checks that no data
moves); the values must not change with that."""

import pytest
import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv

TORCH = {float16: torch.float16, float32: torch.float32}


class DotTransposed(tilus.Script):
    """c[m, n] = a[m, k] @ b[n, k]^T, the transpose taken on the register tile of b; with
    operand="a", c = a[k, m]^T @ b[k, n] instead."""

    def __init__(self, via, operand="b", dtype=float16, bm=64, bn=64, bk=32, warps=4):
        super().__init__()
        self.via, self.operand, self.dtype = via, operand, dtype
        self.bm, self.bn, self.bk, self.warps = bm, bn, bk, warps

    def flip(self, t):
        if self.via == "transpose":
            return self.transpose(t)
        if self.via == "method":
            return t.transpose()
        if self.via == "permute":
            return self.permute(t, [1, 0])
        # unsqueeze -> permute -> squeeze: a chain the layout is inverted through
        t3 = self.unsqueeze(t, dim=0)
        return self.squeeze(self.permute(t3, [2, 1, 0]), dim=2)

    def __call__(self, a: ~float32, b: ~float32, c: ~float32, m: int32, n: int32, k: int32):
        self.attrs.blocks = [cdiv(m, self.bm), cdiv(n, self.bn)]
        self.attrs.warps = self.warps
        bi, bj = self.blockIdx.x, self.blockIdx.y
        bm, bn, bk = self.bm, self.bn, self.bk
        if self.operand == "a":
            ga = self.global_view(a, dtype=float32, shape=[k, m])
            gb = self.global_view(b, dtype=float32, shape=[k, n])
        else:
            ga = self.global_view(a, dtype=float32, shape=[m, k])
            gb = self.global_view(b, dtype=float32, shape=[n, k])
        gc = self.global_view(c, dtype=float32, shape=[m, n])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        for kk in self.range(cdiv(k, bk)):
            if self.operand == "a":
                ta = self.cast(self.load_global(ga, offsets=[kk * bk, bi * bm], shape=[bk, bm]), dtype=self.dtype)
                tb = self.cast(self.load_global(gb, offsets=[kk * bk, bj * bn], shape=[bk, bn]), dtype=self.dtype)
                acc = self.dot(self.flip(ta), tb, acc)
            else:
                ta = self.cast(self.load_global(ga, offsets=[bi * bm, kk * bk], shape=[bm, bk]), dtype=self.dtype)
                tb = self.cast(self.load_global(gb, offsets=[bj * bn, kk * bk], shape=[bn, bk]), dtype=self.dtype)
                acc = self.dot(ta, self.flip(tb), acc)
        self.store_global(gc, acc, offsets=[bi * bm, bj * bn])


def run_dot_transposed(via, operand="b", dtype=float16, m=100, n=75, k=70, device="cpu", **tiles):
    if operand == "a":
        a, b = torch.randn(k, m, device=device), torch.randn(k, n, device=device)
        ref = a.to(TORCH[dtype]).float().T @ b.to(TORCH[dtype]).float()
    else:
        a, b = torch.randn(m, k, device=device), torch.randn(n, k, device=device)
        ref = a.to(TORCH[dtype]).float() @ b.to(TORCH[dtype]).float().T
    c = torch.full((m, n), float("nan"), device=device)  # poisoned
    DotTransposed(via, operand, dtype, **tiles)(a, b, c, m, n, k)
    return c.cpu(), ref.cpu()


@pytest.mark.parametrize("via", ["transpose", "method", "permute", "chain"])
@pytest.mark.parametrize("operand", ["a", "b"])
@pytest.mark.parametrize("dtype", [float16, float32])
def test_dot_of_a_transposed_tile_matches_torch(via, operand, dtype):
    c, ref = run_dot_transposed(via, operand, dtype)
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)
