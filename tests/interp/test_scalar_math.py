"""Python's math functions on runtime scalars (Tilus 0.2's `math.exp(g[i].item())`): every
mapped function in the CPU interpreter against torch, on fresh random inputs in each
function's domain, for each operand dtype; constant operands fold; a pointer, boolean or
tile operand is a TypeError naming the function. The scripts are shared with
tests/codegen/test_scalar_math_source.py."""

import math
import random

import pytest
import torch

import tilus
from tilus import _C, bfloat16, boolean, float16, float32, float64, int32

FUNCTIONS = ["exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
             "tanh", "asinh", "acosh", "atanh", "ceil", "floor", "trunc", "isnan", "isinf"]
PREDICATES = {"isnan", "isinf"}
DTYPES = [float32, float64, float16, bfloat16, int32]
_TORCH = {float32: torch.float32, float64: torch.float64, float16: torch.float16,
          bfloat16: torch.bfloat16, int32: torch.int32}


class ScalarMath(tilus.Script):
    """y[k, j] = math.<FUNCTIONS[k]>(x[k, j]) for every function k and element j, one runtime
    scalar at a time: x's element read as a `dtype` scalar (.item()), the result (a
    boolean for isnan/isinf) stored as float32."""

    def __init__(self, n, dtype=float32):
        super().__init__()
        self.n, self.dtype = n, dtype

    def __call__(self, x: ~float32, y: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[len(FUNCTIONS), self.n])
        gy = self.global_view(y, dtype=float32, shape=[len(FUNCTIONS), self.n])
        for k, name in enumerate(FUNCTIONS):
            fn = getattr(math, name)
            for j in range(self.n):
                v: self.dtype = gx[k, j].item()
                r = self.register_tensor(dtype=float32, shape=[1], init=float(fn(v)))
                self.store_global(gy, r, offsets=[k, j])


class Gates(tilus.Script):
    """Tilus 0.2's spelling: y[i_t, i_hv] = sqrt(exp(g[0, i_t, i_hv])) + floor(exp(g)) with
    runtime loop bounds, so every operand is a runtime value."""

    def __call__(self, g: ~float32, y: ~float32, t: int32, h: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g_g = self.global_view(g, dtype=float32, shape=[1, t, h])
        g_y = self.global_view(y, dtype=float32, shape=[t, h])
        for i_t in range(t):
            for i_hv in range(h):
                alpha: float32 = math.exp(g_g[0, i_t, i_hv].item())
                x_scalar = alpha * 1.0
                out = math.sqrt(x_scalar) + math.floor(alpha)
                self.store_global(g_y, self.register_tensor(dtype=float32, shape=[1], init=out),
                                  offsets=[i_t, i_hv])


def _uniform(gen, n, lo, hi):
    return torch.rand(n, generator=gen, dtype=torch.float64) * (hi - lo) + lo


def _domain(name, gen, n, dtype):
    """n inputs of `name` inside its domain (integers for an integer dtype)."""
    if dtype == int32:
        lo, hi = {"log": (1, 50), "sqrt": (0, 100), "asin": (-1, 1), "acos": (-1, 1),
                  "acosh": (1, 20), "atanh": (0, 0), "exp": (-8, 8), "sinh": (-5, 5),
                  "cosh": (-5, 5), "tan": (-1, 1)}.get(name, (-20, 20))
        return torch.randint(lo, hi + 1, (n,), generator=gen).double()
    if name in PREDICATES:
        x = torch.randn(n, generator=gen, dtype=torch.float64) * 10
        special = torch.tensor([math.nan, math.inf, -math.inf], dtype=torch.float64)
        pick = torch.randint(0, 4, (n,), generator=gen)  # 3: keep the finite value
        return torch.where(pick < 3, special[pick.clamp(max=2)], x)
    lo, hi = {"exp": (-8, 8), "log": (0.01, 100), "sqrt": (0, 100), "sin": (-4, 4),
              "cos": (-4, 4), "tan": (-1.4, 1.4), "asin": (-0.999, 0.999),
              "acos": (-0.999, 0.999), "atan": (-20, 20), "sinh": (-5, 5), "cosh": (-5, 5),
              "tanh": (-5, 5), "asinh": (-20, 20), "acosh": (1, 20), "atanh": (-0.99, 0.99),
              "ceil": (-20, 20), "floor": (-20, 20), "trunc": (-20, 20)}[name]
    return _uniform(gen, n, lo, hi)


def _inputs(n, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.stack([_domain(name, gen, n, dtype) for name in FUNCTIONS]).float()


def _reference(x, dtype):
    """torch's function in float64 on the operand as the kernel reads it, rounded to the
    result type (the operand's, float32 for an integer operand, boolean for predicates)."""
    operand = x.to(_TORCH[dtype]).double()
    result_type = torch.float32 if dtype == int32 else _TORCH[dtype]
    rows = []
    for k, name in enumerate(FUNCTIONS):
        r = getattr(torch, name)(operand[k])
        rows.append(r.float() if name in PREDICATES else r.to(result_type).float())
    return torch.stack(rows)


_TOL = {float32: dict(rtol=1e-6, atol=1e-6), float64: dict(rtol=1e-6, atol=1e-6),
        float16: dict(rtol=1e-3, atol=1e-3), bfloat16: dict(rtol=8e-3, atol=8e-3),
        int32: dict(rtol=1e-6, atol=1e-6)}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("n", [1, 7])
def test_every_function_against_torch(dtype, n):
    seed = random.SystemRandom().randrange(2**31)
    x = _inputs(n, dtype, seed)
    y = torch.full_like(x, math.nan)
    ScalarMath(n, dtype)(x, y)
    want = _reference(x, dtype)
    for k, name in enumerate(FUNCTIONS):
        torch.testing.assert_close(y[k], want[k], equal_nan=True, **_TOL[dtype],
                                   msg=lambda m: f"math.{name} on {dtype.name} (seed {seed}): {m}")


def test_float64_matches_python_math():
    seed = random.SystemRandom().randrange(2**31)
    x = _inputs(5, float64, seed)
    y = torch.full_like(x, math.nan)
    ScalarMath(5, float64)(x, y)
    for k, name in enumerate(FUNCTIONS):
        for j in range(5):
            want = float(getattr(math, name)(x[k, j].item()))
            assert y[k, j].item() == pytest.approx(float(torch.tensor(want).float()), rel=1e-6,
                                                   nan_ok=True), (name, seed, x[k, j].item())


def test_tilus02_spelling_with_runtime_loops():
    t, h = 3, 5
    g = torch.randn(1, t, h)
    y = torch.full((t, h), math.nan)
    Gates()(g, y, t, h)
    alpha = torch.exp(g[0].double())
    torch.testing.assert_close(y, (alpha.sqrt() + alpha.float().floor()).float(), rtol=1e-6, atol=1e-6)


def test_result_types():
    x = _C.block_idx(0)  # a runtime int32
    assert _C.math("exp", x).dtype == float32  # integers go through float32
    assert str(_C.math("exp", x)) == "exp(float32(blockIdx.x))"
    for dtype in (float16, bfloat16, float32, float64):
        v = _C.cast(x, dtype)
        assert _C.math("sin", v).dtype == dtype
        assert _C.math("isnan", v).dtype == boolean
        assert _C.math("isinf", v).kind == "math"


def test_constant_operands_fold():
    e = _C.math("exp", _C.const_float(1.0, float32))
    assert e.is_const and e.dtype == float32 and e.value == pytest.approx(math.e)
    e = _C.math("sqrt", _C.const_int(16, int32))
    assert e.is_const and e.dtype == float32 and e.value == 4.0
    e = _C.math("floor", _C.const_float(-2.5, float64))
    assert e.is_const and e.dtype == float64 and e.value == -3.0
    assert _C.math("isnan", _C.const_float(math.nan, float32)).value is True
    assert _C.math("isinf", _C.const_float(1.0, float16)).value is False


class FoldedInScript(tilus.Script):
    """Operands the builder folds to constants (blockIdx.x * 0 + 16), so the math folds too;
    a variable (even one holding a constant) and a runtime value do not."""

    def __call__(self, y: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gy = self.global_view(y, dtype=float32, shape=[2])
        b = self.blockIdx.x
        r = math.sqrt(b * 0 + 16) + math.log(math.exp(b * 0 + 2.0)) + math.floor(b * 0 - 0.5)
        self.store_global(gy, self.register_tensor(dtype=float32, shape=[1], init=r), offsets=[0])
        k = self.blockIdx.x + 16
        self.store_global(gy, self.register_tensor(dtype=float32, shape=[1], init=math.sqrt(k)),
                          offsets=[1])


def test_constant_operands_fold_in_a_script():
    y = torch.zeros(2)
    program = FoldedInScript().compile(y).program
    text = str(program)
    assert "r: float32 = 5.0" in text
    assert "init=sqrt(float32(k))" in text
    assert "exp(" not in text and "log(" not in text and "floor(" not in text
    assert text.count("sqrt(") == 1
    FoldedInScript()(y)
    assert y.tolist() == [5.0, 4.0]


class BadOperand(tilus.Script):
    def __init__(self, which):
        super().__init__()
        self.which = which

    def __call__(self, p: ~float32, i: int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        if self.which == "pointer":
            math.exp(p)
        elif self.which == "boolean":
            math.sqrt(i < 3)
        elif self.which == "tile":
            math.tanh(self.register_tensor(dtype=float32, shape=[4], init=i))
        else:
            math.log(i, 2)


@pytest.mark.parametrize("which,message", [
    ("pointer", "math.exp() needs a number, got a pointer (~float32)"),
    ("boolean", "math.sqrt() needs a number, got a boolean"),
    ("tile", "math.tanh() takes a scalar, got a"),
    ("two", "math.log() on a runtime value takes exactly one argument, got 2"),
])
def test_type_errors_name_the_function(which, message):
    with pytest.raises(TypeError) as err:
        BadOperand(which).compile(torch.zeros(1), 0)
    assert message in str(err.value)
    assert "BadOperand" in str(err.value) or "line" in str(err.value)
