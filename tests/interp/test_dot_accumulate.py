"""`o = o + self.dot(a, b)` and its spellings (Tilus 0.2's `self.assign(o, o + self.dot(p, v,
acc_dtype=f32))`, `o += ...`, the dot on the left, o read in between) in the interpreter
against torch at odd shapes."""

import pytest
import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv


class AccumulateDots(tilus.Script):
    def __init__(self, spelling, bm=64, bn=64, bk=32, warps=4):
        super().__init__()
        self.spelling, self.bm, self.bn, self.bk, self.warps = spelling, bm, bn, bk, warps

    def __call__(self, a: ~float16, b: ~float16, c: ~float32, m: int32, n: int32, k: int32):
        self.attrs.blocks = [cdiv(m, self.bm), cdiv(n, self.bn)]
        self.attrs.warps = self.warps
        bm, bn, bk = self.bm, self.bn, self.bk
        ga = self.global_view(a, dtype=float16, shape=[m, k])
        gb = self.global_view(b, dtype=float16, shape=[k, n])
        o = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        for kk in range(cdiv(k, bk)):
            ta = self.load_global(ga, offsets=[self.blockIdx.x * bm, kk * bk], shape=[bm, bk])
            tb = self.load_global(gb, offsets=[kk * bk, self.blockIdx.y * bn], shape=[bk, bn])
            if self.spelling == "assign":
                self.assign(o, o + self.dot(ta, tb, acc_dtype=float32))
            elif self.spelling == "rebind":
                o = o + self.dot(ta, tb, acc_dtype=float32)
            elif self.spelling == "augmented":
                o += self.dot(ta, tb, acc_dtype=float32)
            elif self.spelling == "dot_first":
                o = self.dot(ta, tb, acc_dtype=float32) + o
            else:  # o read between the dot and the sum: accumulated apart
                t = self.dot(ta, tb, acc_dtype=float32)
                scaled = o * 1.0
                o = scaled + t
        gc = self.global_view(c, dtype=float32, shape=[m, n])
        self.store_global(gc, o, offsets=[self.blockIdx.x * bm, self.blockIdx.y * bn])


SPELLINGS = ["assign", "rebind", "augmented", "dot_first", "apart"]


def run_accumulate(spelling, m=100, n=75, k=70, device="cpu", **tiles):
    a = torch.randn(m, k, device=device).half()
    b = torch.randn(k, n, device=device).half()
    c = torch.full((m, n), float("nan"), device=device)  # poisoned
    AccumulateDots(spelling, **tiles)(a, b, c, m, n, k)
    return c.cpu(), (a.float() @ b.float()).cpu()


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_accumulated_dots_match_torch(spelling):
    c, ref = run_accumulate(spelling)
    torch.testing.assert_close(c, ref, rtol=2e-3, atol=2e-3)
