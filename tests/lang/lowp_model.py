"""An independent model of the low-precision types for the tests: value sets built
from the format's definition, encoding by searching for the nearest value (ties to the
even code), with numpy only. It calls nothing of tilus."""

import numpy as np

# name: (bits, exponent bits, mantissa bits, scheme); scheme "finite" (Tilus 0.2's
# sub-byte floats: every code is a number), "e4m3" (OCP E4M3FN: magnitude 0x7f is NaN),
# "ieee" (OCP E5M2: exponent all ones is inf / NaN).
FLOATS = {
    "float3_e1m1": (3, 1, 1, "finite"), "float4_e1m2": (4, 1, 2, "finite"),
    "float4_e2m1": (4, 2, 1, "finite"), "float5_e1m3": (5, 1, 3, "finite"),
    "float5_e2m2": (5, 2, 2, "finite"), "float5_e3m1": (5, 3, 1, "finite"),
    "float6_e2m3": (6, 2, 3, "finite"), "float6_e3m2": (6, 3, 2, "finite"),
    "float6_e4m1": (6, 4, 1, "finite"), "float7_e2m4": (7, 2, 4, "finite"),
    "float7_e3m3": (7, 3, 3, "finite"), "float7_e4m2": (7, 4, 2, "finite"),
    "float7_e5m1": (7, 5, 1, "finite"), "float8_e4m3": (8, 4, 3, "e4m3"),
    "float8_e5m2": (8, 5, 2, "ieee"),
}
SHORT = {"float3_e1m1": "f3e1m1", "float4_e1m2": "f4e1m2", "float4_e2m1": "f4e2m1",
         "float5_e1m3": "f5e1m3", "float5_e2m2": "f5e2m2", "float5_e3m1": "f5e3m1",
         "float6_e2m3": "f6e2m3", "float6_e3m2": "f6e3m2", "float6_e4m1": "f6e4m1",
         "float7_e2m4": "f7e2m4", "float7_e3m3": "f7e3m3", "float7_e4m2": "f7e4m2",
         "float7_e5m1": "f7e5m1", "float8_e4m3": "f8e4m3", "float8_e5m2": "f8e5m2"}
INTS = {f"{'u' if u else ''}int{b}b": (b, not u) for b in range(1, 8) for u in (False, True)}
INT_SHORT = {f"{'u' if u else ''}int{b}b": f"{'u' if u else 'i'}{b}" for b in range(1, 8) for u in (False, True)}


def decode(name, code):
    """The value of one code, as a Python float (nan for NaN codes)."""
    bits, e, m, scheme = FLOATS[name]
    sign = -1.0 if (code >> (bits - 1)) & 1 else 1.0
    mag = code & ((1 << (bits - 1)) - 1)
    ef, mf = mag >> m, mag & ((1 << m) - 1)
    bias = 2 ** (e - 1) - 1
    if scheme == "e4m3" and mag == (1 << (bits - 1)) - 1:
        return float("nan")
    if scheme == "ieee" and ef == (1 << e) - 1:
        return sign * float("inf") if mf == 0 else float("nan")
    if ef == 0:
        return sign * mf * 2.0 ** (1 - bias - m)
    return sign * (1 + mf / 2 ** m) * 2.0 ** (ef - bias)


def decode_all(name):
    bits = FLOATS[name][0]
    return np.array([decode(name, c) for c in range(1 << bits)], dtype=np.float64)


def encode(name, xs):
    """Codes of float32 values: nearest finite value, ties to the code with an even
    mantissa, saturating at the largest finite magnitude (infinities too); NaN gives
    0x7f for FP8 and the largest magnitude with the NaN's sign for the others."""
    bits, e, m, scheme = FLOATS[name]
    xs = np.asarray(xs, dtype=np.float32)
    mags = np.array([decode(name, c) for c in range(1 << (bits - 1))])
    finite = np.isfinite(mags)
    codes = np.arange(1 << (bits - 1))[finite]
    vals = mags[finite]
    maxcode = codes[np.argmax(vals)]
    out = np.empty(xs.shape, dtype=np.int64)
    for i, x in enumerate(xs.astype(np.float64).ravel()):
        neg = bool(np.signbit(x))
        sign = (1 << (bits - 1)) if neg else 0
        if np.isnan(x):
            out.flat[i] = (sign | maxcode) if scheme == "finite" else 0x7F
            continue
        a = abs(x)
        if a >= vals.max():
            out.flat[i] = sign | maxcode
            continue
        d = np.abs(vals - a)
        best = np.flatnonzero(d == d.min())
        if len(best) > 1:  # a tie: the even code (mantissa lsb 0)
            best = [b for b in best if codes[b] % 2 == 0]
        out.flat[i] = sign | codes[best[0]]
    return out


def int_range(name):
    bits, signed = INTS[name]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def int_from_float(name, xs):
    """float -> sub-byte int: truncate toward zero, saturate, NaN gives 0."""
    lo, hi = int_range(name)
    xs = np.asarray(xs, dtype=np.float64)
    t = np.where(np.isnan(xs), 0.0, np.trunc(np.nan_to_num(xs, nan=0.0, posinf=1e300, neginf=-1e300)))
    return np.clip(t, lo, hi).astype(np.int64)


def int_wrap(name, xs):
    """int -> sub-byte int: the low bits, sign-extended for signed types."""
    bits, signed = INTS[name]
    c = np.asarray(xs, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(signed & (c >= (1 << (bits - 1))), c - (1 << bits), c)


def sweep(name, seed=0):
    """float32 values to encode: every value of the format, the midpoints between
    neighbours and one float32 ulp either side of them, subnormal and huge float32,
    +-inf, NaN and random values across the range."""
    vals = decode_all(name)
    fin = np.unique(np.abs(vals[np.isfinite(vals)]))
    mids = (fin[:-1] + fin[1:]) / 2
    top = fin[-1]
    extra = np.array([top * 1.01, top * 1.5, top * 2, top * 4, 1e30, 3.0e38, 1e-30, 1e-40, 1.4e-45,
                      fin[1] / 4, fin[1] / 2, fin[1] * 0.75, np.inf, np.nan], dtype=np.float64)
    rng = np.random.default_rng(seed)
    rand = rng.uniform(-top * 1.2, top * 1.2, 2000)
    base = np.concatenate([fin, mids, extra, rand, fin[:5] * 1.0001]).astype(np.float32)
    up = np.nextafter(base, np.float32(np.inf))
    down = np.nextafter(base, np.float32(-np.inf))
    allv = np.concatenate([base, up, down])
    return np.concatenate([allv, -allv]).astype(np.float32)
