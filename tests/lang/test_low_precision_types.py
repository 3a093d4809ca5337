"""The low-precision types: every name and alias imports, and every value of every type
converts both ways in the CPU interpreter exactly as the independent numpy model
(tests/lang/lowp_model.py) says."""

import numpy as np
import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, int32

from .lowp_kernels import E4M3Codes, E5M2Codes, F32Chain, I32Chain
from .lowp_model import FLOATS, INT_SHORT, INTS, SHORT, decode, decode_all, encode, int_from_float, int_wrap, sweep


@pytest.mark.parametrize("name", sorted(FLOATS) + sorted(INTS))
def test_names_and_aliases_import(name):
    short = SHORT.get(name) or INT_SHORT[name]
    t = getattr(tilus, name)
    assert getattr(tilus, short) is t or getattr(tilus, short) == t
    assert t.name == name
    exec(f"from tilus import {name}, {short}", {})


def _run_f32(kernel, x):
    x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    out = torch.full_like(x, 12345.0)
    kernel(x, out, x.numel())
    return out.numpy()


def _same(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    ok = (got[~nan] == want[~nan]) & (np.signbit(got[~nan]) == np.signbit(want[~nan]))
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, [(got[~nan][i], want[~nan][i]) for i in bad[:5]]


@pytest.mark.parametrize("name", sorted(FLOATS))
def test_float_encode_sweep(name):
    """float32 -> type -> float32 over every value, the midpoints (ties to even), one ulp
    around them, subnormals, out of range, inf and NaN."""
    x = sweep(name)
    want = [decode(name, int(c)) for c in encode(name, x)]
    _same(_run_f32(F32Chain(getattr(tilus, name), float32), x), want)


@pytest.mark.parametrize("via", [float16, bfloat16])
@pytest.mark.parametrize("name", sorted(FLOATS))
def test_float_every_value_through_16bit(name, via):
    """Every finite value decodes exactly into float16/bfloat16 (float7_e5m1's largest
    values overflow float16 to inf, as any float -> half conversion does) and encodes
    back from them to the same code."""
    vals = decode_all(name)
    vals = vals[np.isfinite(vals)]
    x = vals.astype(np.float32)
    t = getattr(tilus, name)
    want16 = torch.from_numpy(x).to(torch.float16 if via == float16 else torch.bfloat16).float().numpy()
    _same(_run_f32(F32Chain(t, via), x), want16)
    back = [decode(name, int(c)) for c in encode(name, want16)]
    _same(_run_f32(F32Chain(via, t), want16), back)


def _gpu_half(x):
    """float32 -> float16 as the GPU's cvt.rn.f16.f32 does: NaN becomes the canonical
    positive NaN (numpy keeps the sign)."""
    h = np.asarray(x, np.float32).astype(np.float16)
    return np.where(np.isnan(h), np.float16(np.nan), h)


@pytest.mark.parametrize("name", sorted(FLOATS))
def test_float_sweep_from_float16(name):
    """float32 -> float16 -> type -> bfloat16 -> float32 over the sweep and every value
    (the GPU test's f16-in chain). A negative NaN loses its sign in float16, as on the
    GPU, so the NaN-free formats give their largest positive magnitude for it."""
    x = np.concatenate([sweep(name, seed=1), decode_all(name).astype(np.float32)])
    with np.errstate(over="ignore"):
        h = _gpu_half(x)
    want = [decode(name, int(c)) for c in encode(name, h.astype(np.float32))]
    _same(_run_f32(F32Chain(float16, getattr(tilus, name), bfloat16), x), want)


@pytest.mark.parametrize("via", [float16, bfloat16])
def test_nan_sign_is_dropped_by_16bit_floats(via):
    """The GPU's conversions to float16/bfloat16 give the canonical NaN 0x7FFF whatever
    the sign; the interpreter does the same, so -NaN reaches float4_e2m1 as +6."""
    x = np.array([np.nan, -np.nan, np.inf, -np.inf], np.float32)
    _same(_run_f32(F32Chain(via, tilus.float4_e2m1), x), [6.0, 6.0, 6.0, -6.0])
    got = _run_f32(F32Chain(via, float32), x).view(np.uint32)
    assert [hex(v) for v in got[:2]] == ([hex(0x7FFFFFFF)] * 2 if via == float16 else [hex(0x7FFF0000)] * 2)


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2"])
def test_fp8_every_code_decodes(name):
    """All 256 codes, loaded from a torch float8 tensor, decode to the model's values."""
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    x = codes.view(torch.float8_e4m3fn if name == "float8_e4m3" else torch.float8_e5m2)
    out = torch.full((256,), 12345.0)
    (E4M3Codes() if name == "float8_e4m3" else E5M2Codes())(x, out, 256)
    _same(out.numpy(), decode_all(name))


@pytest.mark.parametrize("name", sorted(INTS))
def test_int_every_value(name):
    """int32 -> type wraps to the low bits; every value comes back as itself; floats
    truncate and saturate (NaN gives 0)."""
    xs = np.arange(-300, 300, dtype=np.int32)
    x = torch.from_numpy(xs)
    out = torch.zeros_like(x)
    I32Chain(getattr(tilus, name))(x, out, x.numel())
    assert np.array_equal(out.numpy(), int_wrap(name, xs))
    f = np.concatenate([np.linspace(-200, 200, 1601), [np.inf, -np.inf, np.nan, 0.5, -0.5, -0.99]])
    got = _run_f32(F32Chain(getattr(tilus, name), int32), f.astype(np.float32))
    assert np.array_equal(got, int_from_float(name, f.astype(np.float32)).astype(np.float32))
