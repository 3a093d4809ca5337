"""The device helpers compute the right values on a GPU.

Small kernels built from csrc/codegen/device/*.cuh are launched through the CUDA
driver API (ctypes, libcuda.so.1), so neither tilus._C nor cupy is needed; results
are checked against exact references written here from the PTX ISA and from the
CPU interpreter's semantics (interp/buffer.h, interp/scalar_eval.cc).
"""

from __future__ import annotations

import ctypes
import math
import random
import struct
from fractions import Fraction

import numpy as np
import pytest

from .nvrtc_ctypes import device_headers, load_nvrtc

pytestmark = pytest.mark.gpu

# ---- a minimal driver-API launcher -------------------------------------------------


class Gpu:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._check(self.lib.cuInit(0), "cuInit")
        self.device = ctypes.c_int()
        self._check(self.lib.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device),
                    "cuDevicePrimaryCtxRetain")
        self._check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(major), 75, self.device), "major")
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.device), "minor")
        suffix = "a" if major.value == 9 else ""  # the arch the code generator targets on Hopper
        self.arch = f"sm_{major.value}{minor.value}{suffix}"
        self.modules = []

    def _check(self, result, what):
        if result != 0:
            raise RuntimeError(f"{what} failed with CUresult {result}")

    def kernel(self, source: str, name: str):
        nvrtc, why = load_nvrtc()
        if nvrtc is None:
            pytest.skip(why)
        ok, log, cubin, _ = nvrtc.compile(source, self.arch, device_headers())
        assert ok, log
        module = ctypes.c_void_p()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
        self.modules.append(module)
        function = ctypes.c_void_p()
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode()),
                    "cuModuleGetFunction")
        return function

    def to_device(self, data: bytes) -> ctypes.c_uint64:
        pointer = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(len(data))),
                    "cuMemAlloc")
        self._check(self.lib.cuMemcpyHtoD_v2(pointer, data, ctypes.c_size_t(len(data))), "HtoD")
        return pointer

    def from_device(self, pointer: ctypes.c_uint64, nbytes: int) -> bytes:
        buffer = ctypes.create_string_buffer(nbytes)
        self._check(self.lib.cuMemcpyDtoH_v2(buffer, pointer, ctypes.c_size_t(nbytes)), "DtoH")
        return buffer.raw

    def launch(self, function, grid, block, *args):
        """args: device pointers (from to_device) and Python ints (passed as int32)."""
        values = [a if isinstance(a, ctypes.c_uint64) else ctypes.c_int32(a) for a in args]
        params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        self._check(self.lib.cuLaunchKernel(function, *grid, *block, 0, None, params, None),
                    "cuLaunchKernel")
        self._check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


@pytest.fixture(scope="module")
def gpu():
    try:
        return Gpu()
    except (OSError, RuntimeError) as error:
        pytest.skip(f"no usable CUDA device: {error}")


# ---- exact references ----------------------------------------------------------------

FLOAT_FORMATS = {"half": (5, 10), "bfloat16": (8, 7), "float": (8, 23), "double": (11, 52)}
INT_TYPES = {"int8_t": (8, True), "int16_t": (16, True), "int32_t": (32, True),
             "int64_t": (64, True), "uint8_t": (8, False), "uint16_t": (16, False),
             "uint32_t": (32, False), "uint64_t": (64, False)}
TYPES = ["bool", *INT_TYPES, "half", "bfloat16", "float", "double"]


def c_name(t: str) -> str:
    return t if t in ("bool", "float", "double") else f"tilus::{t}"


def size_of(t: str) -> int:
    if t in INT_TYPES:
        return INT_TYPES[t][0] // 8
    return {"bool": 1, "half": 2, "bfloat16": 2, "float": 4, "double": 8}[t]


def wrap(v: int, t: str) -> int:
    bits, signed = INT_TYPES[t]
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def encode(value, t: str) -> int:
    """Bits of `value` (int, float, Fraction) in float format t, rounded to nearest even."""
    e_bits, m_bits = FLOAT_FORMATS[t]
    width, bias = 1 + e_bits + m_bits, (1 << (e_bits - 1)) - 1
    if isinstance(value, float) and math.isnan(value):
        return ((1 << (e_bits + 1)) - 1) << (m_bits - 1)  # a quiet NaN
    negative = (math.copysign(1.0, value) < 0) if isinstance(value, float) else value < 0
    sign = int(negative) << (width - 1)
    if isinstance(value, float) and math.isinf(value):
        return sign | (((1 << e_bits) - 1) << m_bits)
    a = abs(Fraction(value))
    if a == 0:
        return sign
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, 1 - bias)
    n = round(a / Fraction(2) ** (e - m_bits))  # Fraction rounds half to even
    if n == 1 << (m_bits + 1):
        e, n = e + 1, n >> 1
    if e > bias:
        return sign | (((1 << e_bits) - 1) << m_bits)
    if n < 1 << m_bits:
        return sign | n  # subnormal
    return sign | ((e + bias) << m_bits) | (n - (1 << m_bits))


def decode(bits: int, t: str) -> float:
    if t == "double":
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    if t == "float":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    if t == "bfloat16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def is_nan_bits(bits: int, t: str) -> bool:
    return math.isnan(decode(bits, t))


def to_bytes(v, t: str) -> bytes:
    """8-byte slot holding value v (already representable in t)."""
    if t == "bool":
        raw = bytes([1 if v else 0])
    elif t in INT_TYPES:
        raw = wrap(int(v), t).to_bytes(size_of(t), "little", signed=INT_TYPES[t][1])
    else:
        raw = encode(v, t).to_bytes(size_of(t), "little")
    return raw.ljust(8, b"\0")


def from_bytes(raw: bytes, t: str):
    """The value in a slot: bool, int, or the raw bits of a float type."""
    raw = raw[: size_of(t)]
    if t == "bool":
        return raw[0]
    if t in INT_TYPES:
        return int.from_bytes(raw, "little", signed=INT_TYPES[t][1])
    return int.from_bytes(raw, "little")


def ref_cast(v, frm: str, to: str):
    """cast<to>(v) per convert.cuh; returns bool-as-int, int, or float bits."""
    is_float_from = frm in FLOAT_FORMATS
    if to == "bool":
        return int(v != 0)  # NaN != 0 is true
    if to in INT_TYPES:
        if not is_float_from:
            return wrap(int(v), to)
        if math.isnan(v):
            return 0
        bits, signed = INT_TYPES[to]
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if math.isinf(v):
            return hi if v > 0 else lo
        return min(max(math.trunc(v), lo), hi)
    if frm == "bool":
        v = int(v)
    return encode(v, to)


def same_value(got, want, t: str) -> bool:
    if t in FLOAT_FORMATS and is_nan_bits(want, t):
        return is_nan_bits(got, t)
    return got == want


INT_VALUES = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 257, 259, 2049, 2051, 32767, 32768,
              -32769, 65504, 65519, 65520, 65535, 65536, 16777217, 16842753, 2**31 - 1, 2**31,
              -2**31, 2**32 - 1, 2**53 + 1, 2**63 - 1, -2**63, 2**64 - 1, 0x0100008000000001,
              12345678901, -987654321]
FLOAT_VALUES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.5, -2.5, 127.9, 128.0, -128.9, -129.0,
                255.5, 256.0, 65504.0, 65519.99, 65520.0, 1e10, -1e10, 2.0**31, -2.0**31,
                2.0**32, 2.0**63, -2.0**63, 2.0**64, 1e30, 3e38, 1e300, -1e300, 1e-8, 6e-8,
                3e-8, 1e-40, 1e-300, math.inf, -math.inf, math.nan, 1 + 2**-11,
                1 + 2**-11 + 2**-20, 1 + 2**-8, 1 + 2**-8 + 2**-40, 1 + 2**-11 + 2**-40,
                3 + 2**-7, 0.1, -0.3, 16842753.0, 4294967295.5, -1e-45]
N = max(len(INT_VALUES), len(FLOAT_VALUES))


def inputs_of(t: str) -> list:
    """N values representable in t."""
    if t == "bool":
        base = [0, 1]
    elif t in INT_TYPES:
        base = [wrap(v, t) for v in INT_VALUES]
    else:
        base = [v if math.isnan(v) else decode(encode(v, t), t) for v in FLOAT_VALUES]
    return (base * N)[:N]


# ---- cast ------------------------------------------------------------------------------

PRELUDE = r"""
#include "tilus/runtime.cuh"
template <typename T> __device__ T get(const unsigned char* p) {
  T v; memcpy(&v, p, sizeof(T)); return v;
}
template <typename T> __device__ void put(unsigned char* p, T v) { memcpy(p, &v, sizeof(T)); }
"""


def test_cast_every_pair(gpu):
    lines = [PRELUDE, 'extern "C" __global__ void k(const unsigned char* in, unsigned char* out) {',
             "  int i = threadIdx.x;"]
    pairs = [(to, frm) for to in TYPES for frm in TYPES]
    for p, (to, frm) in enumerate(pairs):
        f = TYPES.index(frm)
        lines.append(f"  put<{c_name(to)}>(out + ({p} * {N} + i) * 8, "
                     f"tilus::cast<{c_name(to)}>(get<{c_name(frm)}>(in + ({f} * {N} + i) * 8)));")
    lines.append("}")
    kernel = gpu.kernel("\n".join(lines), "k")
    inputs = {t: inputs_of(t) for t in TYPES}
    src = gpu.to_device(b"".join(to_bytes(v, t) for t in TYPES for v in inputs[t]))
    out = gpu.to_device(bytes(len(pairs) * N * 8))
    gpu.launch(kernel, (1, 1, 1), (N, 1, 1), src, out)
    raw = gpu.from_device(out, len(pairs) * N * 8)
    failures = []
    for p, (to, frm) in enumerate(pairs):
        for i, v in enumerate(inputs[frm]):
            got = from_bytes(raw[(p * N + i) * 8:][:8], to)
            want = ref_cast(v, frm, to)
            if not same_value(got, want, to):
                failures.append(f"cast<{to}>({frm} {v!r}) = {got:#x}, want {want:#x}")
    assert not failures, "\n".join(failures[:40])


def test_pack_and_unpack(gpu):
    source = PRELUDE + r"""
extern "C" __global__ void k(const float* in, unsigned* out) {
  float a = in[0], b = in[1];
  out[0] = tilus::pack_half2(a, b);
  out[1] = tilus::pack_half2(tilus::to_half(a), tilus::to_half(b));
  out[2] = tilus::pack_bfloat162(a, b);
  out[3] = tilus::pack_bfloat162(tilus::to_bfloat16(a), tilus::to_bfloat16(b));
  out[4] = tilus::half2_lo(out[0]).bits | (tilus::half2_hi(out[0]).bits << 16);
  out[5] = tilus::bfloat162_lo(out[2]).bits | (tilus::bfloat162_hi(out[2]).bits << 16);
}
"""
    kernel = gpu.kernel(source, "k")
    a, b = 1 + 2**-11 + 2**-20, -3.140625
    src = gpu.to_device(struct.pack("<ff", a, b))
    out = gpu.to_device(bytes(24))
    gpu.launch(kernel, (1, 1, 1), (1, 1, 1), src, out)
    got = struct.unpack("<6I", gpu.from_device(out, 24))
    a32, b32 = decode(encode(a, "float"), "float"), decode(encode(b, "float"), "float")
    half2 = encode(a32, "half") | encode(b32, "half") << 16
    bf2 = encode(a32, "bfloat16") | encode(b32, "bfloat16") << 16
    assert got == (half2, half2, bf2, bf2, half2, bf2)


# ---- arith -----------------------------------------------------------------------------

BINARY = ["add", "sub", "mul", "div", "mod", "min_", "max_"]
PREDICATES = ["lt", "le", "gt", "ge", "eq", "ne", "and_", "or_"]
OPS = BINARY + ["neg"] + PREDICATES + ["not_"]


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def ref_arith(op: str, a, b, t: str):
    if op in PREDICATES or op == "not_":
        return int({"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b,
                    "ne": a != b, "and_": a != 0 and b != 0, "or_": a != 0 or b != 0,
                    "not_": a == 0}[op])
    if t == "bool":
        a, b = int(a), int(b)
        r = {"add": a + b, "sub": a - b, "mul": a * b, "min_": min(a, b), "max_": max(a, b),
             "neg": -a}[op]
        return int(r != 0)
    if t in INT_TYPES:
        r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
             "div": lambda: c_div(a, b), "mod": lambda: a - b * c_div(a, b),
             "min_": lambda: min(a, b), "max_": lambda: max(a, b), "neg": lambda: -a}[op]()
        return wrap(r, t)
    # Floats: float64 then one rounding to t. For + - * / the double rounding is
    # innocuous (53 >= 2 * 24 + 2), fmod is exact, min/max pick an operand.
    x, y = np.float64(a), np.float64(b)
    with np.errstate(all="ignore"):
        r = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y, "mod": np.fmod(x, y),
             "min_": np.fmin(x, y), "max_": np.fmax(x, y), "neg": -x}[op]
    return encode(float(r), t)


def arith_pairs(t: str) -> list[tuple]:
    rng = random.Random(t)
    values = inputs_of(t)
    pairs = [(values[i], values[(i * 7 + 3) % N]) for i in range(N)]
    if t in INT_TYPES:  # integer division by zero is not defined; INT_MIN / -1 is
        bits, signed = INT_TYPES[t]
        pairs = [(a, b if b else rng.choice([3, 5, 7, -7 if signed else 11])) for a, b in pairs]
        if signed:
            pairs[:2] = [(-(1 << (bits - 1)), -1), (-(1 << (bits - 1)) + 1, -1)]
    return pairs


def test_arith_every_type(gpu):
    lines = [PRELUDE, 'extern "C" __global__ void k(const unsigned char* in, unsigned char* out) {',
             "  int i = threadIdx.x;"]
    for ti, t in enumerate(TYPES):
        c = c_name(t)
        lines.append(f"  {{ {c} a = get<{c}>(in + (({ti} * 2) * {N} + i) * 8),"
                     f" b = get<{c}>(in + (({ti} * 2 + 1) * {N} + i) * 8);")
        for oi, op in enumerate(OPS):
            if t == "bool" and op in ("div", "mod"):
                continue
            slot = f"out + (({ti} * {len(OPS)} + {oi}) * {N} + i) * 8"
            if op in PREDICATES:
                lines.append(f"    put<bool>({slot}, tilus::{op}(a, b));")
            elif op == "not_":
                lines.append(f"    put<bool>({slot}, tilus::not_(a));")
            elif op == "neg":
                lines.append(f"    put<{c}>({slot}, tilus::neg(a));")
            else:
                lines.append(f"    put<{c}>({slot}, tilus::{op}(a, b));")
        lines.append("  }")
    lines.append("}")
    kernel = gpu.kernel("\n".join(lines), "k")
    pairs = {t: arith_pairs(t) for t in TYPES}
    data = b"".join(to_bytes(p[k], t) for t in TYPES for k in (0, 1) for p in pairs[t])
    src = gpu.to_device(data)
    nbytes = len(TYPES) * len(OPS) * N * 8
    out = gpu.to_device(bytes(nbytes))
    gpu.launch(kernel, (1, 1, 1), (N, 1, 1), src, out)
    raw = gpu.from_device(out, nbytes)
    failures = []
    for ti, t in enumerate(TYPES):
        for oi, op in enumerate(OPS):
            if t == "bool" and op in ("div", "mod"):
                continue
            out_t = "bool" if op in PREDICATES or op == "not_" else t
            for i, (a, b) in enumerate(pairs[t]):
                got = from_bytes(raw[((ti * len(OPS) + oi) * N + i) * 8:][:8], out_t)
                want = ref_arith(op, a, b, t)
                if op in ("min_", "max_") and out_t in FLOAT_FORMATS and a == 0 and b == 0:
                    sign = 1 << (8 * size_of(t) - 1)  # fmin(+0, -0) may return either zero
                    got, want = got & ~sign, want & ~sign
                if not same_value(got, want, out_t):
                    failures.append(f"{op}<{t}>({a!r}, {b!r}) = {got:#x}, want {want:#x}")
    assert not failures, "\n".join(failures[:40])


# ---- memory, ldmatrix, cp.async --------------------------------------------------------


@pytest.mark.parametrize("nbytes", [1, 2, 4, 8, 16])
def test_vector_loads_and_stores(gpu, nbytes):
    source = PRELUDE + f"""
extern "C" __global__ void k(const unsigned char* g, unsigned char* out, unsigned char* out_cg) {{
  __shared__ alignas(16) unsigned char s[16 * 32];
  int i = threadIdx.x;
  unsigned char r[{nbytes}];
  tilus::load_global_vec<{nbytes}>(r, g + {nbytes} * i);
  tilus::store_shared_vec<{nbytes}>(s + {nbytes} * (31 - i), r);
  __syncthreads();
  tilus::load_shared_vec<{nbytes}>(r, s + {nbytes} * i);
  tilus::store_global_vec<{nbytes}>(out + {nbytes} * i, r);
  tilus::load_global_cg<{nbytes}>(r, g + {nbytes} * i);
  tilus::store_global_vec<{nbytes}>(out_cg + {nbytes} * i, r);
}}
"""
    kernel = gpu.kernel(source, "k")
    data = bytes(random.Random(nbytes).randrange(256) for _ in range(32 * nbytes))
    g, out, out_cg = (gpu.to_device(d) for d in (data, bytes(len(data)), bytes(len(data))))
    gpu.launch(kernel, (1, 1, 1), (32, 1, 1), g, out, out_cg)
    chunks = [data[i * nbytes:(i + 1) * nbytes] for i in range(32)]
    assert gpu.from_device(out, len(data)) == b"".join(reversed(chunks))
    assert gpu.from_device(out_cg, len(data)) == data


@pytest.mark.parametrize("bypass_l1", ["false", "true"])
def test_realigned_loads_take_the_bytes_asked_for(gpu, bypass_l1):
    """load_realigned_16 at every misalignment of the run and every byte range [lo, hi)
    it is asked for: the run's bytes inside the range, zeros outside."""
    cases = [(s, lo, hi) for s in range(16) for lo in range(17) for hi in range(lo, 17)] + [(5, 9, 3)]
    source = PRELUDE + f"""
extern "C" __global__ void k(const unsigned char* g, const int* cases, unsigned char* out, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint4 v = tilus::load_realigned_16<{bypass_l1}>(g + 64 + cases[3 * i], cases[3 * i + 1], cases[3 * i + 2]);
  memcpy(out + 16 * i, &v, 16);
}}
"""
    kernel = gpu.kernel(source, "k")
    data = bytes(random.Random(7).randrange(1, 256) for _ in range(128))  # no zero bytes
    flat = np.array(cases, dtype=np.int32).ravel().tobytes()
    g, c, out = gpu.to_device(data), gpu.to_device(flat), gpu.to_device(bytes(16 * len(cases)))
    gpu.launch(kernel, ((len(cases) + 127) // 128, 1, 1), (128, 1, 1), g, c, out, len(cases))
    got = gpu.from_device(out, 16 * len(cases))
    for n, (s, lo, hi) in enumerate(cases):
        want = bytes(data[64 + s + b] if lo <= b < hi else 0 for b in range(16))
        assert got[16 * n:16 * n + 16] == want, (s, lo, hi)


def test_ldmatrix_fragments(gpu):
    source = PRELUDE + r"""
extern "C" __global__ void k(const unsigned short* in, unsigned* out) {
  __shared__ alignas(16) unsigned short s[32 * 8];
  int lane = threadIdx.x;
  for (int j = 0; j < 8; ++j) s[lane * 8 + j] = in[lane * 8 + j];
  __syncthreads();
  tilus::uint32_t a = tilus::smem_u32(&s[lane * 8]), r[14];
  tilus::ldmatrix_x1(r + 0, a);
  tilus::ldmatrix_x2(r + 1, a);
  tilus::ldmatrix_x4(r + 3, a);
  tilus::ldmatrix_x1_trans(r + 7, a);
  tilus::ldmatrix_x2_trans(r + 8, a);
  tilus::ldmatrix_x4_trans(r + 10, a);
  for (int j = 0; j < 14; ++j) out[lane * 14 + j] = r[j];
}
"""
    kernel = gpu.kernel(source, "k")
    m = np.arange(32 * 8, dtype=np.uint16).reshape(4, 8, 8) * 3 + 1  # matrix i = rows 8i..8i+7
    src, out = gpu.to_device(m.tobytes()), gpu.to_device(bytes(32 * 14 * 4))
    gpu.launch(kernel, (1, 1, 1), (32, 1, 1), src, out)
    got = np.frombuffer(gpu.from_device(out, 32 * 14 * 4), dtype=np.uint32).reshape(32, 14)

    def frag(i, lane, trans):  # PTX ISA ldmatrix: lane l holds row l/4, cols 2(l%4)+{0,1}
        r, c = lane // 4, 2 * (lane % 4)
        lo, hi = (m[i, c, r], m[i, c + 1, r]) if trans else (m[i, r, c], m[i, r, c + 1])
        return int(lo) | int(hi) << 16

    for lane in range(32):
        want = [frag(i, lane, t) for t, count in ((False, 1), (False, 2), (False, 4),
                                                  (True, 1), (True, 2), (True, 4))
                for i in range(count)]
        assert list(got[lane]) == want, lane


def test_cp_async_zero_fills_past_the_end(gpu):
    source = PRELUDE + r"""
extern "C" __global__ void k(const float* g, float* out, int n16, int n8, int n4, int pending) {
  __shared__ alignas(16) float s[32 * 4 + 32 * 2 + 32];
  int i = threadIdx.x;
  for (int j = 0; j < 7; ++j) s[i * 7 + j] = -1.0f;  // make zero fill visible
  __syncthreads();
  int left16 = (n16 - 4 * i) * 4, left8 = (n8 - 2 * i) * 4, left4 = (n4 - i) * 4;
  int b16 = left16 < 0 ? 0 : (left16 > 16 ? 16 : left16);
  int b8 = left8 < 0 ? 0 : (left8 > 8 ? 8 : left8);
  int b4 = left4 < 0 ? 0 : (left4 > 4 ? 4 : left4);
  tilus::cp_async_16(tilus::smem_u32(&s[4 * i]), b16 > 0 ? g + 4 * i : g, b16);
  tilus::cp_async_commit_group();
  tilus::cp_async_8(tilus::smem_u32(&s[128 + 2 * i]), b8 > 0 ? g + 2 * i : g, b8);
  tilus::cp_async_commit_group();
  tilus::cp_async_4(tilus::smem_u32(&s[192 + i]), b4 > 0 ? g + i : g, b4);
  tilus::cp_async_commit_group();
  tilus::cp_async_wait_group<2>();
  tilus::cp_async_wait_group(pending);
  tilus::cp_async_wait_all();
  __syncthreads();
  for (int j = 0; j < 7; ++j) out[i * 7 + j] = s[i * 7 + j];
}
"""
    kernel = gpu.kernel(source, "k")
    g = np.arange(1, 129, dtype=np.float32)
    n16, n8, n4 = 70, 41, 20
    src, out = gpu.to_device(g.tobytes()), gpu.to_device(bytes(224 * 4))
    gpu.launch(kernel, (1, 1, 1), (32, 1, 1), src, out, n16, n8, n4, 1)
    got = np.frombuffer(gpu.from_device(out, 224 * 4), dtype=np.float32)
    want = np.concatenate([np.where(np.arange(128) < n16, g[:128], 0),
                           np.where(np.arange(64) < n8, g[:64], 0),
                           np.where(np.arange(32) < n4, g[:32], 0)]).astype(np.float32)
    np.testing.assert_array_equal(got, want)


# ---- mma ---------------------------------------------------------------------------------

# PTX ISA "Matrix Fragments for mma.m16n8k16 / m16n8k32"; g = lane / 4, q = lane % 4.
def a_coord(lane, i, k32):
    g, q = lane // 4, lane % 4
    if k32:
        return g + 8 * (4 <= i < 8 or i >= 12), 4 * q + (i & 3) + 16 * (i >= 8)
    return g + 8 * (i in (2, 3, 6, 7)), 2 * q + (i & 1) + 8 * (i >= 4)


def b_coord(lane, i, k32):
    g, q = lane // 4, lane % 4
    if k32:
        return 4 * q + (i & 3) + 16 * (i >= 4), g
    return 2 * q + (i & 1) + 8 * (i >= 2), g


def c_coord(lane, i):
    return lane // 4 + 8 * (i >= 2), 2 * (lane % 4) + (i & 1)


def fragments(matrix, coord, count, k32):
    return np.array([[matrix[coord(lane, i, k32)] for i in range(count)] for lane in range(32)])


MMA_CASES = {
    # name: (element dtype for a/b, accumulator kind, k)
    "mma_m16n8k16_f16_f32": (np.float16, "f32", 16),
    "mma_m16n8k16_f16_f16": (np.float16, "f16", 16),
    "mma_m16n8k16_bf16_f32": ("bf16", "f32", 16),
    "mma_m16n8k32_s8_s32": (np.int8, "s32", 32),
    "mma_m16n8k32_u8_s32": (np.uint8, "s32", 32),
}


@pytest.mark.parametrize("name", list(MMA_CASES))
def test_mma(gpu, name):
    elem, acc, k = MMA_CASES[name]
    k32 = k == 32
    rng = np.random.default_rng(k + len(name))
    if elem in (np.int8,):
        a, b = rng.integers(-128, 128, (16, k)), rng.integers(-128, 128, (k, 8))
    elif elem in (np.uint8,):
        a, b = rng.integers(0, 256, (16, k)), rng.integers(0, 256, (k, 8))
    else:  # small integers: every product and sum is exact in f16, bf16 and f32
        a, b = rng.integers(-3, 4, (16, k)), rng.integers(-3, 4, (k, 8))
    c = rng.integers(-50, 50, (16, 8))
    want = a.astype(np.int64) @ b.astype(np.int64) + c

    def as_bits(x):  # element bit patterns of the a/b operand type
        if elem == "bf16":
            return np.array([[encode(float(v), "bfloat16") for v in row] for row in x],
                            dtype=np.uint16)
        return x.astype(elem).view(np.uint16 if elem == np.float16 else np.uint8)

    a_frag = fragments(as_bits(a), a_coord, 16 if k32 else 8, k32)
    b_frag = fragments(as_bits(b), b_coord, 8 if k32 else 4, k32)
    c_frag = np.array([[c[c_coord(lane, i)] for i in range(4)] for lane in range(32)])
    def words(f):  # packed registers: the lowest index in the lowest bits (little endian)
        return np.ascontiguousarray(f).view(np.uint32)

    a_words, b_words = words(a_frag), words(b_frag)
    if acc == "f32":
        c_words, d_type, d_count = c_frag.astype(np.float32).view(np.uint32), "float", 4
    elif acc == "f16":
        c_words, d_type, d_count = words(c_frag.astype(np.float16)), "tilus::uint32_t", 2
    else:
        c_words, d_type, d_count = c_frag.astype(np.int32).view(np.uint32), "tilus::int32_t", 4
    c_type = d_type
    source = PRELUDE + f"""
extern "C" __global__ void k(const tilus::uint32_t* a, const tilus::uint32_t* b,
                             const {c_type}* c, {d_type}* d) {{
  int lane = threadIdx.x;
  tilus::uint32_t ra[4], rb[2];
  {d_type} acc[4];
  for (int j = 0; j < 4; ++j) ra[j] = a[lane * 4 + j];
  for (int j = 0; j < 2; ++j) rb[j] = b[lane * 2 + j];
  for (int j = 0; j < {d_count}; ++j) acc[j] = c[lane * {d_count} + j];
  tilus::{name}(acc, ra, rb, acc);  // d aliases c
  for (int j = 0; j < {d_count}; ++j) d[lane * {d_count} + j] = acc[j];
}}
"""
    kernel = gpu.kernel(source, "k")
    pa, pb = gpu.to_device(a_words.tobytes()), gpu.to_device(b_words.tobytes())
    pc, pd = gpu.to_device(c_words.tobytes()), gpu.to_device(bytes(32 * d_count * 4))
    gpu.launch(kernel, (1, 1, 1), (32, 1, 1), pa, pb, pc, pd)
    raw = gpu.from_device(pd, 32 * d_count * 4)
    if acc == "f32":
        d_frag = np.frombuffer(raw, dtype=np.float32).reshape(32, 4)
    elif acc == "f16":
        d_frag = np.frombuffer(raw, dtype=np.float16).reshape(32, 4)
    else:
        d_frag = np.frombuffer(raw, dtype=np.int32).reshape(32, 4)
    got = np.zeros((16, 8), dtype=np.int64)
    for lane in range(32):
        for i in range(4):
            got[c_coord(lane, i)] = int(d_frag[lane, i])
    np.testing.assert_array_equal(got, want)


# ---- semaphores ------------------------------------------------------------------------


def test_semaphore_orders_blocks(gpu):
    """Block z of each column waits for z, updates a shared partial, hands on z + 1.

    The update is not commutative (v = 3v + z + 1), so any block running out of
    order, or reading a stale partial, changes the result.
    """
    source = PRELUDE + r"""
extern "C" __global__ void k(tilus::int32_t* partial, tilus::int32_t* sem) {
  int z = blockIdx.z, x = blockIdx.x, t = threadIdx.x;
  if (z > 0) tilus::lock_semaphore(sem + x, z);
  tilus::int32_t v;
  tilus::load_global_cg<4>(&v, partial + x * 64 + t);
  v = v * 3 + z + 1;
  tilus::store_global_vec<4>(partial + x * 64 + t, &v);
  tilus::release_semaphore(sem + x, z + 1);
}
"""
    kernel = gpu.kernel(source, "k")
    columns, splits = 4, 8
    start = np.arange(columns * 64, dtype=np.int32)
    partial, sem = gpu.to_device(start.tobytes()), gpu.to_device(bytes(columns * 4))
    gpu.launch(kernel, (columns, 1, splits), (64, 1, 1), partial, sem)
    want = start.astype(np.int64)
    for z in range(splits):
        want = want * 3 + z + 1
    got = np.frombuffer(gpu.from_device(partial, columns * 64 * 4), dtype=np.int32)
    np.testing.assert_array_equal(got, want.astype(np.int32))
    assert list(np.frombuffer(gpu.from_device(sem, columns * 4), dtype=np.int32)) == [splits] * 4


# ---- wgmma descriptors -----------------------------------------------------------------


def _descriptor(address: int, leading: int, stride: int, swizzle: int) -> int:
    """The PTX ISA's matrix descriptor: bits 0-13 the start address (mod 256 KB) / 16,
    16-29 the leading byte offset / 16, 32-45 the stride byte offset / 16, 62-63 the
    swizzle mode."""
    return (((address % (1 << 18)) >> 4) | ((leading >> 4) & 0x3FFF) << 16 | ((stride >> 4) & 0x3FFF) << 32
            | swizzle << 62)


def test_descriptor_add_equals_a_descriptor_of_the_sum(gpu):
    """The emitters build one descriptor per tile and add each instruction's offset to it
    (wgmma_desc_add): for tiles anywhere in a block's 227 KB, with the high address bits
    of a cluster block of rank > 0, the sum is the descriptor of the instruction's own
    address."""
    source = PRELUDE + r"""
extern "C" __global__ void k(const unsigned* bases, const unsigned* offsets, unsigned long long* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  out[t] = tilus::wgmma_desc_add(tilus::wgmma_desc(bases[t], 4096, 1024, 1), offsets[t]);
}
"""
    kernel = gpu.kernel(source, "k")
    rng = random.Random(7)
    limit = 227 * 1024
    bases, offsets = [], []
    for _ in range(4096):
        tile = rng.randrange(0, limit - 1024, 1024)
        offset = rng.randrange(0, limit - tile, 16)
        rank = rng.randrange(0, 16)
        bases.append((rank << 24) + tile)  # a cluster block's shared window: its rank in the high bits
        offsets.append(offset)
    n = len(bases)
    out = gpu.to_device(bytes(8 * n))
    gpu.launch(kernel, ((n + 127) // 128, 1, 1), (128, 1, 1), gpu.to_device(np.array(bases, np.uint32).tobytes()),
               gpu.to_device(np.array(offsets, np.uint32).tobytes()), out, n)
    got = np.frombuffer(gpu.from_device(out, 8 * n), dtype=np.uint64)
    want = np.array([_descriptor(b + o, 4096, 1024, 1) for b, o in zip(bases, offsets)], dtype=np.uint64)
    np.testing.assert_array_equal(got, want)
