"""Scans (scan, cumsum, cumprod) in the CPU interpreter against torch at odd shapes; the
programs are shared with tests/codegen/test_reductions_source.py and tests/gpu/."""

import pytest
import torch

import tilus
from tilus import float16, float32, float64, int8, int32, int64

TORCH = {float16: torch.float16, float32: torch.float32, float64: torch.float64,
         int8: torch.int8, int32: torch.int32, int64: torch.int64}


class Scan(tilus.Script):
    """out = scan(x, dim, op, exclusive) of an [m, n] float32 tile cast to `dtype`."""

    def __init__(self, m, n, dim, op, exclusive=False, dtype=float32, warps=4, via="scan"):
        super().__init__()
        self.m, self.n, self.dim, self.op, self.exclusive = m, n, dim, op, exclusive
        self.dtype, self.warps, self.via = dtype, warps, via

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=float32, shape=[self.m, self.n])
        t = self.cast(self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n]), dtype=self.dtype)
        if self.via == "cumsum":
            r = self.cumsum(t, dim=self.dim, exclusive=self.exclusive)
        elif self.via == "cumprod":
            r = self.cumprod(t, dim=self.dim, exclusive=self.exclusive)
        else:
            r = self.scan(t, dim=self.dim, op=self.op, exclusive=self.exclusive)
        self.store_global(go, self.cast(r, dtype=float32), offsets=[0, 0])


def scan_reference(x, dim, op, exclusive=False, dtype=float32):
    t = x.to(TORCH[dtype])
    wide = t.to(torch.float64) if t.dtype.is_floating_point else t.to(torch.int64)
    if op == "add":
        r = torch.cumsum(wide, dim=dim)
    elif op == "mul":
        r = torch.cumprod(wide, dim=dim)
    elif op == "max":
        r = torch.cummax(wide, dim=dim).values
    else:
        r = torch.cummin(wide, dim=dim).values
    if exclusive:
        ident = {"add": 0, "mul": 1, "max": float("-inf"), "min": float("inf")}[op]
        r = torch.cat([torch.full_like(r.narrow(dim, 0, 1), ident), r.narrow(dim, 0, r.shape[dim] - 1)], dim=dim)
    return r.to(TORCH[dtype]).to(torch.float32)


def run_scan(m, n, dim, op, exclusive=False, dtype=float32, warps=4, via="scan", x=None, device="cpu"):
    if x is None:
        x = torch.randn(m, n, device=device) if op != "mul" else 1 + torch.randn(m, n, device=device) / 20
    out = torch.full((m, n), float("nan"), device=device)
    Scan(m, n, dim, op, exclusive, dtype, warps, via)(x, out)
    return x.cpu(), out.cpu()


@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("m,n,dim", [(5, 7, 1), (5, 7, 0), (37, 70, 1), (37, 70, 0), (64, 128, 1),
                                     (64, 128, 0), (1, 9, 1), (3, 100, -1)])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan_matches_torch(op, m, n, dim, exclusive):
    x, out = run_scan(m, n, dim, op, exclusive)
    torch.testing.assert_close(out, scan_reference(x, dim, op, exclusive), rtol=1e-5, atol=1e-5)


def test_exclusive_max_starts_at_minus_inf():
    x, out = run_scan(4, 6, 1, "max", True)
    assert torch.isinf(out[:, 0]).all() and (out[:, 0] < 0).all()
    torch.testing.assert_close(out[:, 1:], torch.cummax(x, dim=1).values[:, :-1])


@pytest.mark.parametrize("via,op", [("cumsum", "add"), ("cumprod", "mul")])
@pytest.mark.parametrize("dtype", [float16, float64, int8, int32, int64])
def test_cumsum_cumprod_of_every_dtype(via, op, dtype):
    x = torch.randint(-3, 4, (6, 13)).float()
    x, out = run_scan(6, 13, 1, op, False, dtype, via=via, x=x)
    torch.testing.assert_close(out, scan_reference(x, 1, op, False, dtype), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("op,bad,error,match", [
    ("add", dict(dim=2), ValueError, "dim=2 is not a dimension"),
    ("nand", dict(dim=1), ValueError, "op must be"),
])
def test_scan_refuses_bad_arguments(op, bad, error, match):
    class Bad(tilus.Script):
        def __call__(self, x: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            t = self.register_tensor(dtype=float32, shape=[4, 4], init=0)
            self.print_tensor("s", self.scan(t, op=op, **bad))  # MARK-scan

    with pytest.raises(error, match=match) as info:
        Bad()(torch.zeros(1))
    assert "MARK-scan" in str(info.value)
