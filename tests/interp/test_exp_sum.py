"""exp and sum (instructions added through the per-family handlers, csrc/ops/) in the
CPU interpreter, against torch at odd shapes."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, float64, int32

_TORCH = {float16: torch.float16, bfloat16: torch.bfloat16, float32: torch.float32,
          float64: torch.float64, int32: torch.int32}


class ExpTile(tilus.Script):
    """out = exp(x) for one [m, n] tile."""

    def __init__(self, m, n, dtype, warps=2):
        super().__init__()
        self.m, self.n, self.dtype, self.warps = m, n, dtype, warps

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=float32, shape=[self.m, self.n])
        t = self.cast(self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n]), dtype=self.dtype)
        self.store_global(go, self.cast(self.exp(t), dtype=float32), offsets=[0, 0])


class SumTile(tilus.Script):
    """out = x.sum(dim, keepdim) for one [m, n] tile of dtype `dtype`, plus 1 afterwards
    (so the result also feeds an elementwise instruction)."""

    def __init__(self, m, n, dim, keepdim, dtype=float32, warps=4):
        super().__init__()
        self.m, self.n, self.dim, self.keepdim, self.dtype, self.warps = m, n, dim, keepdim, dtype, warps
        self.d = dim % 2
        self.rshape = [1, n] if self.d == 0 else [m, 1]

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=float32, shape=self.rshape)
        t = self.cast(self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n]), dtype=self.dtype)
        s = self.sum(t, dim=self.dim, keepdim=self.keepdim)
        s = self.cast(s, dtype=float32) + 1.0
        if self.keepdim:
            self.store_global(go, s, offsets=[0, 0])
        else:
            self.store_global(go, s, offsets=[0, 0], dims=[1 - self.d])


def expected_sum(x, dim, dtype):
    return x.to(_TORCH[dtype]).to(torch.float64).sum(dim=dim % 2, keepdim=True).to(torch.float32) + 1


@pytest.mark.parametrize("dtype", [float16, bfloat16, float32, float64])
@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (13, 33)])
def test_exp_matches_torch(dtype, m, n):
    x = torch.randn(m, n) * 4
    out = torch.full((m, n), float("nan"))
    ExpTile(m, n, dtype)(x, out)
    want = torch.exp(x.to(_TORCH[dtype])).float()
    torch.testing.assert_close(out, want, rtol=2e-2 if dtype in (float16, bfloat16) else 1e-6, atol=0)


@pytest.mark.parametrize("m,n,dim", [(5, 7, 0), (5, 7, 1), (5, 7, -1), (3, 100, 1), (33, 17, 0),
                                     (64, 128, 1), (64, 128, 0), (1, 9, 1)])
@pytest.mark.parametrize("keepdim", [True, False])
def test_sum_matches_torch(m, n, dim, keepdim):
    x = torch.randn(m, n)
    shape = [m, n]
    shape[dim % 2] = 1
    out = torch.full(shape, float("nan"))
    SumTile(m, n, dim, keepdim)(x, out)
    torch.testing.assert_close(out, expected_sum(x, dim, float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [float16, int32])
def test_sum_of_other_dtypes(dtype):
    x = torch.randint(-50, 50, (6, 11)).float()
    out = torch.full((6, 1), float("nan"))
    SumTile(6, 11, 1, True, dtype=dtype)(x, out)
    torch.testing.assert_close(out, expected_sum(x, 1, dtype))


class BadSum(tilus.Script):
    def __init__(self, dim, keepdim=False, dtype=float32):
        super().__init__()
        self.dim, self.keepdim, self.dtype = dim, keepdim, dtype

    def __call__(self, x: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        t = self.register_tensor(dtype=self.dtype, shape=[4, 4], init=0)
        s = self.sum(t, dim=self.dim, keepdim=self.keepdim)  # MARK-sum
        self.print_tensor("s", s)


@pytest.mark.parametrize("script,error,match", [
    (BadSum(2), ValueError, "dim=2 is not a dimension"),
    (BadSum(1, dtype=tilus.boolean), TypeError, "float or integer"),
    (BadSum("a"), TypeError, "sum: dim must be integers"),
])
def test_sum_refuses_bad_arguments_at_the_script_line(script, error, match):
    with pytest.raises(error, match=match) as info:
        script(torch.zeros(1))
    assert "MARK-sum" in str(info.value) or "test_exp_sum.py" in str(info.value)


def test_exp_refuses_integer_tiles():
    class IntExp(tilus.Script):
        def __call__(self, x: ~float32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            t = self.register_tensor(dtype=int32, shape=[4], init=0)
            self.print_tensor("e", self.exp(t))

    with pytest.raises(TypeError, match="exp: x must be a float tensor"):
        IntExp()(torch.zeros(1))


def test_the_ir_prints_sum_with_its_attributes():
    program = SumTile(5, 7, 1, False).compile(torch.zeros(5, 7), torch.zeros(5, 1)).program
    text = str(program)
    assert "sum(%" in text and "dim=1, keepdim=False" in text
