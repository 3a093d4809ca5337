"""The math family (abs exp2 log sin cos round square sqrt rsqrt clip, exp's out=), the
tile operators ^ / comparisons / abs(), and Tilus 0.2's tensor methods (to, item, tolist,
item_ptr) in the CPU interpreter, against torch at odd shapes."""

import math

import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, float64, int8, int32

_TORCH = {float16: torch.float16, bfloat16: torch.bfloat16, float32: torch.float32,
          float64: torch.float64, int32: torch.int32, int8: torch.int8}


class MathTile(tilus.Script):
    """out = fn(x.to(dtype)).to(float32) over an [m, n] tile (one block covering it)."""

    def __init__(self, fn, m, n, dtype, warps=2, approx=False, bounds=None, use_out=False):
        super().__init__()
        self.fn, self.m, self.n, self.dtype, self.warps = fn, m, n, dtype, warps
        self.approx, self.bounds, self.use_out = approx, bounds, use_out

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=float32, shape=[self.m, self.n])
        t = self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n]).to(self.dtype)
        f = getattr(self, self.fn)
        if self.bounds is not None:
            r = f(t, self.bounds[0], self.bounds[1])
        elif self.approx:
            r = f(t, approx=True)
        elif self.use_out:
            r = self.register_tensor(dtype=self.dtype, shape=[self.m, self.n], init=0)
            f(t, out=r)
        else:
            r = f(t)
        self.store_global(go, r.to(float32), offsets=[0, 0])


def _run(kernel, x):
    out = torch.full(x.shape, float("nan"))
    kernel(x, out)
    return out


_REFERENCE = {"abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2, "log": torch.log,
              "sin": torch.sin, "cos": torch.cos, "round": torch.round,
              "square": torch.square, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt}
_POSITIVE = {"log", "sqrt", "rsqrt"}
_TOL = {float16: dict(rtol=2e-3, atol=1e-3), bfloat16: dict(rtol=1.6e-2, atol=1e-2),
        float32: dict(rtol=2e-6, atol=1e-6), float64: dict(rtol=1e-12, atol=1e-12)}


def _inputs(fn, m, n):
    x = torch.randn(m, n) * 3
    if fn in _POSITIVE:
        x = x.abs() + 0.05
    if fn == "round":  # exact ties, to check ties-to-even
        x[0, : min(n, 4)] = torch.tensor([0.5, 1.5, 2.5, -0.5])[: min(n, 4)]
    return x


def _expected(fn, x, dtype):
    # torch computes fp16/bf16 through float32 and rounds once, as tilus does.
    xd = x.to(_TORCH[dtype])
    want = _REFERENCE[fn](xd.double() if dtype == float64 else xd.float())
    return want.to(_TORCH[dtype]).float()


@pytest.mark.parametrize("fn", sorted(_REFERENCE))
@pytest.mark.parametrize("dtype", [float16, bfloat16, float32, float64])
@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (13, 33)])
def test_float_functions_match_torch(fn, dtype, m, n):
    x = _inputs(fn, m, n)
    out = _run(MathTile(fn, m, n, dtype), x)
    torch.testing.assert_close(out, _expected(fn, x, dtype), **_TOL[dtype])


@pytest.mark.parametrize("fn", ["log", "sin", "cos", "sqrt"])
def test_approx_variants_compute_the_same_function(fn):
    x = _inputs(fn, 7, 9)
    out = _run(MathTile(fn, 7, 9, float32, approx=True), x)
    torch.testing.assert_close(out, _expected(fn, x, float32), **_TOL[float32])


def test_exp2_approx_flushes_subnormal_results_as_cuda_does():
    # 2^-130 and 2^-140 are float32 subnormals: kept by exp2, 0 with approx=True (ex2.approx.ftz)
    x = torch.tensor([[-130.0, -140.0, -126.0, -1.0, 0.0, 3.5, float("-inf"), float("nan")]])
    exact = _run(MathTile("exp2", 1, 8, float32), x)
    flushed = _run(MathTile("exp2", 1, 8, float32, approx=True), x)
    assert exact[0, 0] > 0 and exact[0, 1] > 0
    assert flushed[0, :2].tolist() == [0.0, 0.0]
    torch.testing.assert_close(flushed[:, 2:], torch.exp2(x[:, 2:]), equal_nan=True)


def test_round_ties_to_even():
    x = torch.tensor([[0.5, 1.5, 2.5, -0.5, -1.5, 3.49, -2.51]])
    out = _run(MathTile("round", 1, 7, float32), x)
    assert out.tolist() == [[0.0, 2.0, 2.0, -0.0, -2.0, 3.0, -3.0]]


def test_special_values():
    x = torch.tensor([[0.0, -1.0, float("inf"), float("nan")]])
    torch.testing.assert_close(_run(MathTile("log", 1, 4, float32), x), torch.log(x), equal_nan=True)
    torch.testing.assert_close(_run(MathTile("sqrt", 1, 4, float32), x), torch.sqrt(x), equal_nan=True)
    torch.testing.assert_close(_run(MathTile("rsqrt", 1, 4, float32), x), torch.rsqrt(x), equal_nan=True)


@pytest.mark.parametrize("fn", ["abs", "square"])
@pytest.mark.parametrize("dtype", [int32, int8])
def test_integer_functions_wrap_like_torch(fn, dtype):
    x = torch.randint(-200, 200, (5, 7)).float()
    x[0, 0] = -128 if dtype == int8 else -(2**31)
    out = _run(MathTile(fn, 5, 7, dtype), x)
    info = torch.iinfo(_TORCH[dtype])
    xi = x.clamp(info.min, info.max).to(_TORCH[dtype])  # float -> int casts saturate
    want = _REFERENCE[fn](xi).float()
    assert torch.equal(out, want)


@pytest.mark.parametrize("dtype,bounds", [(float32, (-1.0, 0.5)), (float16, (-2, 2)),
                                          (bfloat16, (0.0, 1.0)), (int32, (-3, 4)),
                                          (float64, (-0.25, 0.25))])
def test_clip_matches_torch_clamp(dtype, bounds):
    x = torch.randn(9, 11) * 4
    if dtype == int32:
        x = x.round()
    out = _run(MathTile("clip", 9, 11, dtype, bounds=bounds), x)
    xd = x.to(_TORCH[dtype])
    assert torch.equal(out, xd.clamp(*bounds).float())


def test_out_writes_into_the_given_tile():
    x = torch.rand(6, 10) + 0.1
    torch.testing.assert_close(_run(MathTile("sqrt", 6, 10, float32, use_out=True), x), x.sqrt())
    torch.testing.assert_close(_run(MathTile("exp", 6, 10, float32, use_out=True), x), x.exp())


class Operators(tilus.Script):
    """Comparisons with scalars on both sides, ^ and abs() on tiles, in one kernel."""

    def __init__(self, m, n):
        super().__init__()
        self.m, self.n = m, n

    def __call__(self, a: ~int32, b: ~int32, xor: ~int32, cmp: ~int32, ab: ~int32, k: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        ga = self.global_view(a, dtype=int32, shape=[self.m, self.n])
        gb = self.global_view(b, dtype=int32, shape=[self.m, self.n])
        ta = self.load_global(ga, offsets=[0, 0], shape=[self.m, self.n])
        tb = self.load_global(gb, offsets=[0, 0], shape=[self.m, self.n])
        gx = self.global_view(xor, dtype=int32, shape=[self.m, self.n])
        self.store_global(gx, (ta ^ tb) ^ 5 ^ k, offsets=[0, 0])
        bits = ((ta < tb) ^ (3 <= ta)).to(int32) + (k > ta).to(int32) * 2 + (ta == k).to(int32) * 4
        bits = bits + (tb != 0).to(int32) * 8 + (0 >= tb).to(int32) * 16
        gc = self.global_view(cmp, dtype=int32, shape=[self.m, self.n])
        self.store_global(gc, bits, offsets=[0, 0])
        gab = self.global_view(ab, dtype=int32, shape=[self.m, self.n])
        self.store_global(gab, abs(ta - tb), offsets=[0, 0])


def expected_operators(a, b, k):
    xor = a ^ b ^ 5 ^ k
    bits = (((a < b) ^ (3 <= a)).int() + (k > a).int() * 2 + (a == k).int() * 4
            + (b != 0).int() * 8 + (0 >= b).int() * 16)
    return xor, bits, (a - b).abs()


@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (17, 9)])
def test_operators_match_torch(m, n):
    a = torch.randint(-6, 7, (m, n), dtype=torch.int32)
    b = torch.randint(-6, 7, (m, n), dtype=torch.int32)
    outs = [torch.full((m, n), -99, dtype=torch.int32) for _ in range(3)]
    Operators(m, n)(a, b, *outs, 2)
    for got, want in zip(outs, expected_operators(a, b, 2)):
        assert torch.equal(got, want)


class Items(tilus.Script):
    """item() of a reduced tile and of global elements, item_ptr() and ~g[i, j]."""

    def __init__(self, m, n):
        super().__init__()
        self.m, self.n = m, n

    def __call__(self, x: ~float32, out: ~float32, flag: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        gx = self.global_view(x, dtype=float32, shape=[self.m, self.n])
        go = self.global_view(out, dtype=float32, shape=[self.m, self.n])
        gf = self.global_view(flag, dtype=int32, shape=[2])
        t = self.load_global(gx, offsets=[0, 0], shape=[self.m, self.n])
        total = self.sum(self.sum(t, dim=1, keepdim=True), dim=0, keepdim=True)
        s = total.item()
        (s2,) = total.tolist()
        corner = gx[self.m - 1, self.n - 1].item()
        y = t - s + s2 * 0.5
        if corner > 0.0:
            y = y * 2.0
        self.store_global(go, y, offsets=[0, 0])
        self.release_semaphore(gf[1].item_ptr(), value=7)
        self.release_semaphore(~gf[0], value=3)


@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (12, 33)])
def test_item_tolist_and_item_ptr(m, n):
    x = torch.randn(m, n)
    out = torch.full((m, n), float("nan"))
    flag = torch.zeros(2, dtype=torch.int32)
    Items(m, n)(x, out, flag)
    s = x.double().sum().float()
    want = x - s + s * 0.5
    if x[-1, -1] > 0:
        want = want * 2
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert flag.tolist() == [3, 7]


# ---- errors name the script line


class BadFunction(tilus.Script):
    def __init__(self, fn, dtype, **kw):
        super().__init__()
        self.fn, self.dtype, self.kw = fn, dtype, kw

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[4])
        t = self.load_global(gx, offsets=[0], shape=[4]).to(self.dtype)
        r = getattr(self, self.fn)(t, **self.kw)  # MARK-bad-function
        self.store_global(self.global_view(out, dtype=float32, shape=[4]), r.to(float32), offsets=[0])


@pytest.mark.parametrize("fn,dtype,kw,error,match", [
    ("exp2", int32, {}, TypeError, "exp2: x must be a float tensor, got int32"),
    ("sqrt", tilus.boolean, {}, TypeError, "must be a float tensor"),
    ("abs", tilus.boolean, {}, TypeError, "abs: x must be a float or integer tensor, got boolean"),
    ("rsqrt", float32, {"approx": True}, TypeError, "unexpected keyword argument 'approx'"),
    ("log", float32, {"approx": 1}, TypeError, "approx must be True or False"),
])
def test_errors_name_the_line(fn, dtype, kw, error, match):
    with pytest.raises(error, match=match) as err:
        BadFunction(fn, dtype, **kw)(torch.ones(4), torch.zeros(4))
    assert "MARK-bad-function" in str(err.value)


class BadOperators(tilus.Script):
    def __init__(self, case):
        super().__init__()
        self.case = case

    def __call__(self, x: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[4])
        t = self.load_global(gx, offsets=[0], shape=[4])
        if self.case == "xor":
            t = t ^ 1  # MARK-bad-operator
        elif self.case == "item":
            v = t.item()  # MARK-bad-operator
        elif self.case == "item_ptr":
            p = t[0].item_ptr()  # MARK-bad-operator
        elif self.case == "expr_item_ptr":
            p = (gx[0] + 1.0).item_ptr()  # MARK-bad-operator
        self.store_global(self.global_view(out, dtype=float32, shape=[4]), t, offsets=[0])


@pytest.mark.parametrize("case,error,match", [
    ("xor", TypeError, "needs integer or boolean operands, got float32"),
    ("item", ValueError, r"item\(\) needs a tensor with exactly one element"),
    ("item_ptr", TypeError, r"item_ptr\(\) needs a global or shared tensor, got a register tensor"),
    ("expr_item_ptr", TypeError, r"item_ptr\(\) applies to a tensor element"),
])
def test_operator_errors_name_the_line(case, error, match):
    with pytest.raises(error, match=match) as err:
        BadOperators(case)(torch.ones(4), torch.zeros(4))
    assert "MARK-bad-operator" in str(err.value)


def test_math_constants_are_what_the_docstrings_say():
    # exp2's docstring example uses log2(e); keep the literal honest.
    assert abs(1.4426950408889634 - 1 / math.log(2)) < 1e-15
