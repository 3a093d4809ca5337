"""tilus.tfloat32: a float32-stored type with 10 mantissa bits. float32 -> tfloat32 rounds
as the GPU's cvt.rna.tf32.f32 (nearest, ties away from zero); the interpreter's result is
compared bit for bit with an independent numpy model."""

import numpy as np
import pytest
import torch

import tilus
from tilus import Script, int32
from tilus.utils import cdiv


class RoundTf32(Script):
    def __call__(self, n: int32, x: ~tilus.float32, y: ~tilus.float32):
        self.attrs.blocks = [cdiv(n, 64)]
        self.attrs.warps = 2
        gx = self.global_view(x, dtype=tilus.float32, shape=[n])
        gy = self.global_view(y, dtype=tilus.float32, shape=[n])
        r = self.load_global(gx, offsets=[self.blockIdx.x * 64], shape=[64])
        t = self.cast(r, dtype=tilus.tfloat32)
        self.store_global(gy, self.cast(t, dtype=tilus.float32), offsets=[self.blockIdx.x * 64])


class MulAddTf32(Script):
    """y = float32(tf32(x) * tf32(x) + tf32(x)): tile arithmetic on tfloat32 computes in
    float32 and rounds back to tfloat32 after each operation."""

    def __call__(self, n: int32, x: ~tilus.float32, y: ~tilus.float32):
        self.attrs.blocks = [cdiv(n, 64)]
        self.attrs.warps = 2
        gx = self.global_view(x, dtype=tilus.float32, shape=[n])
        gy = self.global_view(y, dtype=tilus.float32, shape=[n])
        t = self.cast(self.load_global(gx, offsets=[self.blockIdx.x * 64], shape=[64]),
                      dtype=tilus.tfloat32)
        self.store_global(gy, self.cast(t * t + t, dtype=tilus.float32),
                          offsets=[self.blockIdx.x * 64])


def numpy_tf32(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest, ties away from zero, to 10 mantissa bits, written on the value's
    magnitude (not on its bit pattern): m = |x| / ulp, rounded half away, times ulp."""
    x = x.astype(np.float32)
    out = np.empty_like(x)
    for k, v in enumerate(x.tolist()):
        if not np.isfinite(v) or v == 0.0:
            out[k] = v
            continue
        mag = abs(v)
        e = max(int(np.floor(np.log2(mag))), -126)  # subnormals share the smallest exponent
        while 2.0 ** e > mag:  # log2 rounding at the edges
            e -= 1
        while 2.0 ** (e + 1) <= mag and e >= -126:
            e += 1
        ulp = 2.0 ** (max(e, -126) - 10)
        q = mag / ulp
        r = np.floor(q + 0.5)  # q >= 0: ties go up, away from zero
        res = r * ulp
        out[k] = np.float32(np.copysign(res, v)) if res < 2.0 ** 128 else np.copysign(np.inf, v)
    return out


def test_exports_and_table_row():
    from tilus.hidet.ir.dtypes import tf32 as hidet_tf32

    t = tilus.tfloat32
    assert t.name == "tfloat32" and t.bits == 32 and t.is_float
    assert tilus.tf32 == t == hidet_tf32
    row = tilus.lang.types.row_of(t)
    assert (row.exponent_bits, row.mantissa_bits, row.torch) == (8, 10, "")


def _special_values():
    bits = []
    for mant in (0x1000, 0x0FFF, 0x1001, 0x3000, 0x2000, 0x7FF000, 0x7FFFFF, 0x1FFF):
        for exp in (1, 100, 127, 200, 254):
            bits.append((exp << 23) | mant)
    bits += [0x00001000, 0x00003000, 0x00000FFF, 0x007FF000, 0x7F7FF000, 0x7F7FFFFF,
             0x00000000, 0x7F800000]
    bits = np.array(bits, dtype=np.uint32)
    return np.concatenate([bits, bits | 0x80000000]).view(np.float32)


def test_cast_rounds_like_cvt_rna_bit_for_bit():
    rng = np.random.default_rng(12)
    x = np.concatenate([_special_values(),
                        rng.standard_normal(300).astype(np.float32) * 1000,
                        rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    x = x[np.isfinite(x)]
    n = len(x)  # not a multiple of the tile
    y = np.full(n + 5, np.nan, dtype=np.float32)
    RoundTf32()(n, np.ascontiguousarray(x), y)
    expected = numpy_tf32(x)
    assert np.array_equal(y[:n].view(np.uint32), expected.view(np.uint32))
    assert np.isnan(y[n:]).all()
    # ties: exactly half an ulp goes away from zero; one bit less goes down
    assert y[0].view(np.uint32) == (1 << 23) | 0x2000


def test_infinities_and_nan_survive():
    x = np.array([np.inf, -np.inf, np.nan], dtype=np.float32)
    y = np.zeros(3, dtype=np.float32)
    RoundTf32()(3, x, y)
    assert y[0] == np.inf and y[1] == -np.inf and np.isnan(y[2])


def test_torch_float32_tensors_feed_tf32_kernels():
    x = torch.randn(77)
    y = torch.empty(77)
    RoundTf32()(77, x, y)
    assert torch.equal(y, torch.from_numpy(numpy_tf32(x.numpy())))


class DotTf32(Script):
    """c = tf32(a) @ tf32(b) with float32 accumulation, a, b, c float32 in memory."""

    def __init__(self, bm=16, bn=16, bk=8):
        super().__init__()
        self.bm, self.bn, self.bk = bm, bn, bk

    def __call__(self, m: int32, n: int32, k: int32, a: ~tilus.float32, b: ~tilus.float32,
                 c: ~tilus.float32):
        self.attrs.blocks = [cdiv(m, self.bm), cdiv(n, self.bn)]
        self.attrs.warps = 1
        ga = self.global_view(a, dtype=tilus.float32, shape=[m, k])
        gb = self.global_view(b, dtype=tilus.float32, shape=[k, n])
        gc = self.global_view(c, dtype=tilus.float32, shape=[m, n])
        om = self.blockIdx.x * self.bm
        on = self.blockIdx.y * self.bn
        acc = self.register_tensor(dtype=tilus.float32, shape=[self.bm, self.bn], init=0.0)
        for ok in range(cdiv(k, self.bk)):
            ra = self.load_global(ga, offsets=[om, ok * self.bk], shape=[self.bm, self.bk])
            rb = self.load_global(gb, offsets=[ok * self.bk, on], shape=[self.bk, self.bn])
            self.dot(self.cast(ra, dtype=tilus.tfloat32), self.cast(rb, dtype=tilus.tfloat32),
                     acc, out=acc)
        self.store_global(gc, acc, offsets=[om, on])


def test_dot_multiplies_tf32_rounded_operands():
    m, n, k = 37, 29, 19
    a, b = torch.randn(m, k), torch.randn(k, n)
    c = torch.full((m, n), float("nan"))
    DotTf32()(m, n, k, a, b, c)
    at = torch.from_numpy(numpy_tf32(a.numpy().ravel()).reshape(m, k)).double()
    bt = torch.from_numpy(numpy_tf32(b.numpy().ravel()).reshape(k, n)).double()
    torch.testing.assert_close(c.double(), at @ bt, rtol=1e-5, atol=1e-5)
    # and it is not the float32 product: the operands were rounded
    assert (c.double() - a.double() @ b.double()).abs().max() > 1e-4


def test_tile_arithmetic_rounds_to_tf32_after_each_operation():
    n = 101
    x = (np.random.default_rng(3).standard_normal(n) * 10).astype(np.float32)
    y = np.full(n, np.nan, dtype=np.float32)
    MulAddTf32()(n, x, y)
    t = numpy_tf32(x)
    expected = numpy_tf32(numpy_tf32(t * t) + t)  # float32 ops, each rounded to tf32
    assert np.array_equal(y.view(np.uint32), expected.view(np.uint32))
