"""Reductions (sum max min any all) over one or several dimensions, in the CPU
interpreter against torch at odd shapes; the programs are shared with
tests/codegen/test_reductions_source.py and tests/gpu/test_reductions_gpu.py."""

import pytest
import torch

import tilus
from tilus import bfloat16, boolean, float16, float32, float64, int8, int16, int32, int64, uint8

TORCH = {float16: torch.float16, bfloat16: torch.bfloat16, float32: torch.float32,
         float64: torch.float64, int8: torch.int8, int16: torch.int16, int32: torch.int32,
         int64: torch.int64, uint8: torch.uint8}


def reduced_shape(shape, dims, keepdim):
    dims = [d % len(shape) for d in ([dims] if isinstance(dims, int) else dims)]
    return [1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims]


class Reduce(tilus.Script):
    """out = op(x, dim, keepdim) for one [m, n] float32 tile cast to `dtype` (any/all:
    of x > 0), stored as float32 (a tile of the result's shape)."""

    def __init__(self, op, m, n, dim, keepdim, dtype=float32, warps=4, use_out=False):
        super().__init__()
        self.op, self.m, self.n, self.dim, self.keepdim = op, m, n, dim, keepdim
        self.dtype, self.warps, self.use_out = dtype, warps, use_out
        self.rshape = reduced_shape([m, n], [0, 1] if dim is None else dim, keepdim)

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=float32, shape=self.rshape)
        t = self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n])
        if self.op in ("any", "all"):
            t = t > 0.0
        else:
            t = self.cast(t, dtype=self.dtype)
        fn = getattr(self, self.op)
        if self.use_out:
            r = self.register_tensor(dtype=boolean if self.op in ("any", "all") else self.dtype,
                                     shape=self.rshape)
            fn(t, dim=self.dim, keepdim=self.keepdim, out=r)
        else:
            r = fn(t, dim=self.dim, keepdim=self.keepdim)
        self.store_global(go, self.cast(r, dtype=float32), offsets=[0] * len(self.rshape))


def expected(op, x, dim, keepdim, dtype=float32):
    dims = [0, 1] if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    t = x > 0 if op in ("any", "all") else x.to(TORCH[dtype])
    integer = not t.dtype.is_floating_point and op not in ("any", "all")
    if op == "sum":
        t = t.to(torch.int64 if integer else torch.float64)
    for d in sorted((d % 2 for d in dims), reverse=True):
        if op == "sum":
            t = t.sum(dim=d, keepdim=keepdim)
        elif op == "max":
            t = t.amax(dim=d, keepdim=keepdim)
        elif op == "min":
            t = t.amin(dim=d, keepdim=keepdim)
        elif op == "any":
            t = t.any(dim=d, keepdim=keepdim)
        else:
            t = t.all(dim=d, keepdim=keepdim)
    if op == "sum":
        t = t.to(TORCH[dtype])  # rounds (floats) or wraps (integers) like the kernel
    return t.to(torch.float32)


def run(op, m, n, dim, keepdim, dtype=float32, warps=4, x=None, use_out=False):
    if x is None:
        x = torch.randn(m, n) * 8
    kernel = Reduce(op, m, n, dim, keepdim, dtype, warps, use_out)
    out = torch.full(kernel.rshape, float("nan"))
    kernel(x, out)
    return x, out


@pytest.mark.parametrize("op", ["sum", "max", "min", "any", "all"])
@pytest.mark.parametrize("m,n,dim", [(5, 7, 0), (5, 7, 1), (5, 7, -1), (3, 100, 1), (33, 17, 0),
                                     (64, 128, 1), (64, 128, 0), (1, 9, 1), (37, 70, 1)])
@pytest.mark.parametrize("keepdim", [True, False])
def test_reduction_matches_torch(op, m, n, dim, keepdim):
    x, out = run(op, m, n, dim, keepdim)
    torch.testing.assert_close(out, expected(op, x, dim, keepdim), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["sum", "max", "min", "any", "all"])
@pytest.mark.parametrize("dim,keepdim", [(None, True), ((0, 1), True), ((1, 0), True), ([-1, 0], True)])
def test_reduction_over_several_dims(op, dim, keepdim):
    x, out = run(op, 6, 11, dim, keepdim)
    torch.testing.assert_close(out, expected(op, x, dim, keepdim), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", [float16, bfloat16, float64, int8, int16, int32, int64, uint8])
def test_max_min_of_every_dtype(op, dtype):
    x = torch.randint(0 if dtype == uint8 else -100, 100, (6, 11)).float()
    x, out = run(op, 6, 11, 1, True, dtype, x=x)
    torch.testing.assert_close(out, expected(op, x, 1, True, dtype))


@pytest.mark.parametrize("dtype", [float16, bfloat16, float64, int8, int32, int64])
def test_sum_of_every_dtype(dtype):
    x = torch.randint(-50, 50, (6, 11)).float()
    x, out = run("sum", 6, 11, 1, True, dtype, x=x)
    torch.testing.assert_close(out, expected("sum", x, 1, True, dtype))


def test_int8_sum_wraps():
    x = torch.full((3, 9), 100.0)
    _, out = run("sum", 3, 9, 1, True, int8, x=x)
    assert out.flatten().tolist() == [float(torch.tensor(900).to(torch.int8))] * 3


@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_wins_as_in_torch(op):
    x = torch.randn(4, 9)
    x[1, 3] = float("nan")
    _, out = run(op, 4, 9, 1, True, x=x)
    assert torch.isnan(out[1, 0]) and not torch.isnan(out[[0, 2, 3]]).any()


@pytest.mark.parametrize("op", ["sum", "max", "any"])
def test_out_receives_the_result(op):
    x, out = run(op, 5, 7, 1, True, use_out=True)
    torch.testing.assert_close(out, expected(op, x, 1, True), rtol=1e-5, atol=1e-5)


class BadReduce(tilus.Script):
    def __init__(self, op, dim, keepdim=False, dtype=float32, out_shape=None):
        super().__init__()
        self.op, self.dim, self.keepdim, self.dtype, self.out_shape = op, dim, keepdim, dtype, out_shape

    def __call__(self, x: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        t = self.register_tensor(dtype=self.dtype, shape=[4, 4], init=0)
        o = None if self.out_shape is None else self.register_tensor(dtype=self.dtype, shape=self.out_shape)
        s = getattr(self, self.op)(t, dim=self.dim, keepdim=self.keepdim, out=o)  # MARK-reduce
        self.print_tensor("s", s)


@pytest.mark.parametrize("script,error,match", [
    (BadReduce("max", 2), ValueError, "max: dim=2 is not a dimension"),
    (BadReduce("min", (1, -1)), ValueError, "listed twice"),
    (BadReduce("max", 1, dtype=boolean), TypeError, "float or integer"),
    (BadReduce("any", 1), TypeError, "any: x must be a boolean tensor"),
    (BadReduce("all", "a", dtype=boolean), TypeError, "all: dim must be integers"),
    (BadReduce("sum", 1, keepdim=1), TypeError, "keepdim must be True or False"),
    (BadReduce("max", 1, out_shape=[4, 1]), TypeError, "cannot assign"),
])
def test_bad_arguments_name_the_script_line(script, error, match):
    with pytest.raises(error, match=match) as info:
        script(torch.zeros(1))
    assert "MARK-reduce" in str(info.value)
