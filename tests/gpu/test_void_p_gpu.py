"""void_p parameters and tfloat32 on the GPU: both launch paths (the first call goes
through Python, the second through the native launcher, which must take a void_p of
any dtype without falling back), outputs poisoned before each run, checked against
torch and the numpy model of cvt.rna.tf32.f32."""

import pytest
import torch

import tilus
from tests.lang.test_tfloat32 import DotTf32, MulAddTf32, RoundTf32, numpy_tf32
from tests.lang.test_void_p import Bytes, ScaleRows

pytestmark = pytest.mark.gpu


def _counting_python_path(monkeypatch, cls):
    calls = []
    python_path = cls._call

    def counted(self, args, kwargs):
        calls.append(args)
        return python_path(self, args, kwargs)

    monkeypatch.setattr(cls, "_call", counted)
    return calls


def _random(shape, torch_dtype):
    if torch_dtype.is_floating_point:
        return torch.randn(shape, device="cuda").to(torch_dtype)
    return torch.randint(-40, 40, shape, dtype=torch_dtype, device="cuda")


def _expected(x, w):
    if x.dtype == torch.int8:
        return (x.int() * 2 + w.int()).to(torch.int8)
    return (x.double() * 2 + w.double()).to(x.dtype)


@pytest.mark.parametrize("torch_dtype,dtype", [(torch.float16, tilus.float16),
                                               (torch.bfloat16, tilus.bfloat16),
                                               (torch.float32, tilus.float32),
                                               (torch.int8, tilus.int8)])
def test_void_p_both_launch_paths(torch_dtype, dtype, monkeypatch):
    kernel = ScaleRows(dtype, block_m=16, block_n=16)
    calls = _counting_python_path(monkeypatch, type(kernel))
    for m, n in ((37, 29), (64, 48), (5, 131)):
        x, w = _random((m, n), torch_dtype), _random((m, n), torch_dtype)
        y = torch.full((m, n), 123, dtype=torch_dtype, device="cuda")  # poisoned
        kernel(m, n, x, w, y)
        assert torch.equal(y, _expected(x, w))
    # n = 29 and 131 take the unaligned build, n = 48 the aligned one (n % 16 decides:
    # csrc/transforms/vector_extents.h); each build's first call is the Python path's,
    # the third call (the unaligned build again) launched natively.
    assert len(calls) == 2


def test_void_p_native_launcher_takes_mixed_dtypes(monkeypatch):
    kernel = Bytes()
    calls = _counting_python_path(monkeypatch, type(kernel))
    for src in (torch.randn(50, device="cuda"), torch.randn(33, device="cuda").half(),
                torch.randint(0, 255, (71,), dtype=torch.uint8, device="cuda"),
                torch.randn(9, device="cuda", dtype=torch.complex64)):
        nbytes = src.numel() * src.element_size()
        dst = torch.full((nbytes,), 0xA5, dtype=torch.uint8, device="cuda")
        kernel(nbytes, src, dst)
        assert torch.equal(dst, src.view(torch.uint8))
    assert len(calls) == 1


def test_void_p_view_bounds_on_the_native_path():
    kernel = ScaleRows(tilus.float16, block_m=16, block_n=16)
    m, n = 20, 30
    x = torch.randn(m, n, device="cuda").half()
    y = torch.zeros(m, n, device="cuda", dtype=torch.float16)
    before = tilus.option.get_check_view_bounds()
    tilus.option.check_view_bounds(True)
    try:
        kernel(m, n, x, x, y)  # registers the native launcher
        small = torch.zeros(m * n, dtype=torch.int8, device="cuda")  # half the bytes
        with pytest.raises(ValueError, match=r"'x_ptr' is too small"):
            kernel(m, n, small, x, y)
        same_bytes = torch.randn(m, n, device="cuda").half().view(torch.int16)
        y.fill_(float("nan"))
        kernel(m, n, same_bytes, x, y)
        assert torch.equal(y, (same_bytes.view(torch.float16).double() * 2 + x.double()).half())
    finally:
        tilus.option.check_view_bounds(before)


def test_tf32_cast_bit_exact_on_the_gpu():
    n = 1000 + 7
    x = torch.randn(n) * 100
    x[:4] = torch.tensor([1 + 2**-11, -(1 + 2**-11), 1 + 2**-11 - 2**-23, 3.4e38])
    xg = x.cuda()
    y = torch.full((n,), float("nan"), device="cuda")
    kernel = RoundTf32()
    for _ in range(2):  # Python path, then native
        y.fill_(float("nan"))
        kernel(n, xg, y)
        expected = torch.from_numpy(numpy_tf32(x.numpy()))
        assert torch.equal(y.cpu().view(torch.int32), expected.view(torch.int32))


@pytest.mark.parametrize("tile", [(16, 16, 8), (32, 32, 16), (64, 32, 16)])
def test_tf32_dot_on_the_gpu(tile):
    # mma.sync m16n8k8 tf32: products of the rounded operands, float32 sums
    m, n, k = 37, 29, 19
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda")
    DotTf32(*tile)(m, n, k, a, b, c)
    at = torch.from_numpy(numpy_tf32(a.cpu().numpy().ravel()).reshape(m, k)).double()
    bt = torch.from_numpy(numpy_tf32(b.cpu().numpy().ravel()).reshape(k, n)).double()
    torch.testing.assert_close(c.cpu().double(), at @ bt, rtol=1e-5, atol=1e-5)


def test_tf32_tile_arithmetic_on_the_gpu():
    n = 333
    x = torch.randn(n) * 10
    y = torch.full((n,), float("nan"), device="cuda")
    MulAddTf32()(n, x.cuda(), y)
    t = numpy_tf32(x.numpy())
    expected = torch.from_numpy(numpy_tf32(numpy_tf32(t * t) + t))
    assert torch.equal(y.cpu().view(torch.int32), expected.view(torch.int32))
