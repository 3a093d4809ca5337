"""self.cuda (Tilus 0.2's layout helpers): resolve_dot_config picks the warp grid Tilus 0.2
picks and gives tilus's mma block layouts on it; a dot laid out with them runs on the
tensor cores (layout inference accepts an accumulator on any warp grid) and computes the
right thing in the interpreter; default_register_layout and shared_layout."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, int8, int32
from tilus.layout import local, mma_block_layouts, shared_row_major, spatial

helpers = tilus.Script.cuda


def _registers(m, n, k, wm, wn, a=8, b=4, c=4):
    """Operand and accumulator registers a thread holds on a wm x wn grid (m16n8k16 fp16:
    an A atom is 8 halves, B 4, C 4 floats), as Tilus 0.2 counts them."""
    rm, rn, rk = m // 16 // wm, n // 8 // wn, k // 16
    return (rm * rk * a * 2 + rk * rn * b * 2 + rm * rn * c * 4) // 4


@pytest.mark.parametrize("m, n, k, warps", [(32, 32, 16, 2), (32, 64, 32, 4), (64, 64, 16, 2), (128, 128, 32, 8),
                                            (16, 256, 64, 4)])
def test_the_grid_with_the_fewest_registers_and_tilus_layouts_on_it(m, n, k, warps):
    cfg = helpers.resolve_dot_config(float16, float32, m=m, n=n, k=k, num_warps=warps)
    grids = [(wm, warps // wm) for wm in range(1, warps + 1)
             if warps % wm == 0 and (m // 16) % wm == 0 and (n // 8) % (warps // wm) == 0]
    best = min(grids, key=lambda g: _registers(m, n, k, *g))  # the first of equals, as Tilus 0.2
    ref = mma_block_layouts("m16n8k16", m, n, k, warps, warps_m=best[0])
    assert (cfg.la, cfg.lb, cfg.lc) == (ref["a"], ref["b"], ref["c"])
    assert (cfg.m, cfg.n, cfg.k, cfg.num_warps) == (m, n, k, warps)
    assert cfg.lb_T.shape == [n, k] and cfg.lb_T.coords(5, 3) == cfg.lb.coords(5, 3)[::-1]


def test_warp_grid_given_and_other_types():
    cfg = helpers.resolve_dot_config(bfloat16, float32, m=64, n=64, k=32, warp_m=4, warp_n=1)
    assert cfg.num_warps == 4 and cfg.lc == mma_block_layouts("m16n8k16", 64, 64, 32, 4, warps_m=4)["c"]
    cfg = helpers.resolve_dot_config(int8, int32, m=32, n=32, k=64, num_warps=2)
    assert cfg.la.shape == [32, 64]


def test_refusals_name_the_reason():
    with pytest.raises(ValueError, match="no mma for float32 operands"):
        helpers.resolve_dot_config(float32, float32, m=32, n=32, k=16, num_warps=1)
    with pytest.raises(ValueError, match="multiples"):
        helpers.resolve_dot_config(float16, float32, m=30, n=32, k=16, num_warps=1)
    with pytest.raises(ValueError, match="no grid of 3 warps"):
        helpers.resolve_dot_config(float16, float32, m=32, n=32, k=16, num_warps=3)
    with pytest.raises(ValueError, match="registers a thread"):
        helpers.resolve_dot_config(float16, float32, m=256, n=256, k=64, num_warps=1)
    with pytest.raises(ValueError, match="give num_warps"):
        helpers.resolve_dot_config(float16, float32, m=32, n=32, k=16, warp_m=1)


class HandLaidDot(tilus.Script):
    """C = A @ B with every tile laid out by resolve_dot_config, as Tilus 0.2 programs do."""

    def __init__(self, bm, bn, bk, warps):
        super().__init__()
        self.bm, self.bn, self.bk, self.warps = bm, bn, bk, warps
        self.mma = self.cuda.resolve_dot_config(float16, float32, m=bm, n=bn, k=bk, num_warps=warps)

    def __call__(self, m: int32, n: int32, k: int32, a: ~float16, b: ~float16, c: ~float32):
        self.attrs.blocks = [(m + self.bm - 1) // self.bm, (n + self.bn - 1) // self.bn]
        self.attrs.warps = self.warps
        ga = self.global_view(a, dtype=float16, shape=[m, k])
        gb = self.global_view(b, dtype=float16, shape=[k, n])
        acc = self.register_tensor(dtype=float32, shape=[self.bm, self.bn], layout=self.mma.lc, init=0.0)
        for kk in range(0, k, self.bk):
            ta = self.load_global(ga, offsets=[self.blockIdx.x * self.bm, kk], shape=[self.bm, self.bk])
            tb = self.load_global(gb, offsets=[kk, self.blockIdx.y * self.bn], shape=[self.bk, self.bn])
            self.annotate_layout(ta, self.mma.la)
            self.annotate_layout(tb, self.mma.lb)
            self.dot(ta, tb, acc, out=acc)
        gc = self.global_view(c, dtype=float32, shape=[m, n])
        self.store_global(gc, acc, offsets=[self.blockIdx.x * self.bm, self.blockIdx.y * self.bn])


@pytest.mark.parametrize("cfg", [(32, 32, 16, 2), (64, 64, 16, 2), (32, 128, 16, 8)])
def test_a_dot_on_tilus_02s_grid_runs_on_the_tensor_cores(cfg):
    """These grids are not the one tilus would choose (checked): the accumulator the user
    fixed still plans an mma dot, with no layout conversion and no FMA fallback."""
    kernel = HandLaidDot(*cfg)
    assert kernel.mma.lc != mma_block_layouts("m16n8k16", cfg[0], cfg[1], cfg[2], cfg[3])["c"]
    g = torch.Generator().manual_seed(sum(cfg))
    a = torch.randn(70, 48, generator=g).half()
    b = torch.randn(48, 90, generator=g).half()
    c = torch.full((70, 90), float("nan"))
    kernel(70, 90, 48, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    src = tilus._C.generate_cuda(kernel.compile(70, 90, 48, a, b, c).program, True, "sm_80")["source"]
    assert "mma_m16n8k16" in src and "fmaf" not in src and "layout conversion" not in src


def test_default_register_layout_and_shared_layout():
    lay = helpers.default_register_layout(4, float16, [64, 256])  # 128 threads, 128 elements each
    # 8 consecutive halves (16 bytes) a thread; 32 threads along the 32 chunks of a row, 4 rows
    # of threads, the 16 row blocks repeated in registers
    assert lay == local(16, 1) * spatial(4, 32) * local(1, 8)
    for t, l in [(0, 0), (1, 0), (33, 9), (127, 127)]:
        assert tuple(lay.coords(t, l)) == ((l // 8) * 4 + t // 32, (t % 32) * 8 + l % 8)
    assert tuple(helpers.default_register_layout(1, float32, [8, 8], vector_size=2).coords(1, 1)) == (0, 3)
    with pytest.raises(ValueError, match="vector_size 4"):
        helpers.default_register_layout(1, float32, [4, 8], vector_size=4)
    with pytest.raises(RuntimeError, match="do not spread"):
        helpers.default_register_layout(4, float16, [3, 5])
    assert helpers.shared_layout([16, 32]) == shared_row_major(16, 32)
