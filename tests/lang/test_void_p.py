"""Tilus 0.2's untyped pointer parameter `void_p` in the CPU interpreter: any tensor dtype
binds to it, global_view(ptr, dtype=X) reads and writes its memory as X (a pointer cast
in the IR), its view bounds are checked in bytes, and misuse is refused naming the
parameter."""

import numpy as np
import pytest
import torch

import tilus
from tilus import Script, int32, void_p
from tilus.utils import cdiv


class ScaleRows(Script):
    """y = x * 2 + w, all three views of `dtype` over untyped pointers."""

    def __init__(self, dtype, block_m=16, block_n=8):
        super().__init__()
        self.dtype = dtype
        self.block_m = block_m
        self.block_n = block_n

    def __call__(self, m: int32, n: int32, x_ptr: void_p, w_ptr: void_p, y_ptr: void_p):
        self.attrs.blocks = [cdiv(m, self.block_m), cdiv(n, self.block_n)]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[m, n])
        gw = self.global_view(w_ptr, dtype=self.dtype, shape=[m, n])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[m, n])
        om = self.blockIdx.x * self.block_m
        on = self.blockIdx.y * self.block_n
        x = self.load_global(gx, offsets=[om, on], shape=[self.block_m, self.block_n])
        w = self.load_global(gw, offsets=[om, on], shape=[self.block_m, self.block_n])
        self.store_global(gy, x + x + w, offsets=[om, on])


class Bytes(Script):
    """Copies a tensor of any dtype as raw bytes: the same void_p viewed as uint8."""

    def __call__(self, nbytes: int32, src: void_p, dst: void_p):
        self.attrs.blocks = [cdiv(nbytes, 64)]
        self.attrs.warps = 1
        gs = self.global_view(src, dtype=tilus.uint8, shape=[nbytes])
        gd = self.global_view(dst, dtype=tilus.uint8, shape=[nbytes])
        r = self.load_global(gs, offsets=[self.blockIdx.x * 64], shape=[64])
        self.store_global(gd, r, offsets=[self.blockIdx.x * 64])


class ElementAddress(Script):
    """`~g[i, j]` of a view over void_p is the address of that element of the viewed dtype:
    release_semaphore writes an int32 there."""

    def __call__(self, i: int32, j: int32, x_ptr: void_p):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        g = self.global_view(x_ptr, dtype=int32, shape=[4, 5])
        self.release_semaphore(~g[i, j], value=7)


DTYPES = [(torch.float16, tilus.float16), (torch.bfloat16, tilus.bfloat16),
          (torch.float32, tilus.float32), (torch.int8, tilus.int8)]


def _random(shape, torch_dtype):
    if torch_dtype.is_floating_point:
        return torch.randn(shape).to(torch_dtype)
    return torch.randint(-40, 40, shape, dtype=torch_dtype)


@pytest.mark.parametrize("torch_dtype,dtype", DTYPES, ids=[str(d[0]) for d in DTYPES])
def test_void_p_views_any_dtype(torch_dtype, dtype):
    m, n = 37, 29
    x = _random((m, n), torch_dtype)
    w = _random((m, n), torch_dtype)
    y = torch.full((m, n), 99, dtype=torch_dtype)
    ScaleRows(dtype)(m, n, x, w, y)
    expected = (x.double() * 2 + w.double()).to(torch_dtype)
    if torch_dtype == torch.int8:
        expected = (x.int() * 2 + w.int()).to(torch.int8)  # wraps like the device
    assert torch.equal(y, expected)


def test_void_p_takes_numpy_and_dtypes_tilus_has_no_name_for():
    nbytes = 203
    src = np.random.default_rng(1).integers(0, 256, nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes, dtype=np.uint8)
    Bytes()(nbytes, src, dst)
    assert np.array_equal(src, dst)
    # complex64: no tilus dtype at all, still just bytes to a void_p
    c = torch.randn(25, dtype=torch.complex64)
    out = torch.zeros_like(c)
    Bytes()(c.numel() * 8, c, out)
    assert torch.equal(c, out)


def test_the_program_casts_the_untyped_parameter():
    m, n = 5, 8
    x = torch.zeros(m, n, dtype=torch.float16)
    program = ScaleRows(tilus.float16).compile(m, n, x, x, x).program
    text = str(program)
    assert "x_ptr: void_p" in text
    assert "global_view(~float16(x_ptr), dtype=float16" in text
    # writes are traced through the cast: the tuner copies y_ptr (by bytes), not x_ptr
    assert list(tilus._C.autotune.written_params(program)) == [False, False, False, False, True]


def test_view_bounds_are_checked_in_bytes():
    m, n = 37, 29
    kernel = ScaleRows(tilus.float16)
    # m*n int8 bytes hold only half the float16 view: refused before anything runs
    small = torch.zeros(m * n, dtype=torch.int8)
    with pytest.raises(ValueError, match=r"argument 'x_ptr' is too small .*\(2146 bytes\).*\(1073 bytes\)"):
        kernel(m, n, small, torch.zeros(m, n, dtype=torch.float16),
               torch.zeros(m, n, dtype=torch.float16))
    # the same bytes as int16 are exactly enough, whatever the tensor's own dtype
    x = torch.randn(m, n).half().view(torch.int16)  # float16 bits in an int16 tensor
    y = torch.zeros(m, n, dtype=torch.int16)
    kernel(m, n, x, torch.zeros(m, n, dtype=torch.int16), y)
    assert torch.equal(y.view(torch.float16), (x.view(torch.float16).double() * 2).half())


def test_wrong_uses_name_the_parameter():
    kernel = ScaleRows(tilus.float32)
    x = torch.zeros(4, 4)
    with pytest.raises(TypeError, match=r"argument 'w_ptr' is the integer 0x3, which is not the address of CUDA memory"):
        kernel(4, 4, x, 3, x)  # an integer is an address (Tilus 0.2's data_ptr()), of GPU memory only
    with pytest.raises(TypeError, match=r"argument 'w_ptr' expects a tensor of any dtype \(parameter void_p\), got str"):
        kernel(4, 4, x, "3", x)
    with pytest.raises(TypeError, match=r"~void_p is not a type"):
        ~void_p

    class PointerToVoid(Script):
        def __call__(self, x: "~void_p"):  # a string, as under `from __future__ import annotations`
            self.attrs.blocks = [1]
            self.attrs.warps = 1

    with pytest.raises(tilus.ScriptError, match=r"parameter 'x'.*~void_p is not a type"):
        PointerToVoid()(x)


def test_a_typed_pointer_still_needs_its_own_dtype():
    class Typed(Script):
        def __call__(self, x: ~tilus.float16):
            self.attrs.blocks = [1]
            self.attrs.warps = 1
            self.global_view(x, dtype=tilus.float32, shape=[4])

    with pytest.raises(tilus.ScriptError, match=r"points to float16 but dtype=float32"):
        Typed()(torch.zeros(4, dtype=torch.float16))


def test_element_address_of_a_void_view():
    x = torch.zeros(4, 5, dtype=torch.int32)
    ElementAddress()(2, 3, x)
    expected = torch.zeros(4, 5, dtype=torch.int32)
    expected[2, 3] = 7
    assert torch.equal(x, expected)
    # the memory is bytes: a float32 tensor sees the int32 7 written into its bits
    f = torch.zeros(4, 5)
    ElementAddress()(1, 4, f)
    assert f.view(torch.int32)[1, 4] == 7 and int(f.view(torch.int32).sum()) == 7


def test_exports():
    from tilus.hidet.ir.type import void_p as hidet_void_p

    assert tilus.void_p is void_p and hidet_void_p == void_p
    assert void_p.is_pointer and void_p.is_void and void_p.name == "void_p"
    assert void_p != ~tilus.uint8 and hash(void_p) != hash(~tilus.uint8)
    assert void_p.c_name == "void*"
    import pickle

    assert pickle.loads(pickle.dumps(void_p)) == void_p
