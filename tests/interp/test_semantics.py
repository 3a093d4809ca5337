"""Tile semantics of the CPU interpreter."""

import numpy as np
import pytest
import torch

import tilus
from tilus import float16, float32, int8, int32
from tilus.utils import cdiv


class Copy2D(tilus.Script):
    """Copies a [rows, cols] tensor through [bm, bn] tiles; the tiles overhang the edges."""

    def __init__(self, bm, bn):
        super().__init__()
        self.bm, self.bn = bm, bn

    def __call__(self, rows: int32, cols: int32, src: ~float32, dst: ~float32):
        self.attrs.blocks = [cdiv(rows, self.bm), cdiv(cols, self.bn)]
        self.attrs.warps = 2
        gs = self.global_view(src, dtype=float32, shape=[rows, cols])
        gd = self.global_view(dst, dtype=float32, shape=[rows, cols])
        x = self.load_global(gs, offsets=[self.blockIdx.x * self.bm, self.blockIdx.y * self.bn],
                             shape=[self.bm, self.bn])
        self.store_global(gd, x * 2.0, offsets=[self.blockIdx.x * self.bm, self.blockIdx.y * self.bn])


def test_out_of_range_loads_read_zero_and_stores_are_dropped():
    src = torch.randn(13, 9)
    dst = torch.full((13, 9), float("nan"))
    Copy2D(8, 4)(13, 9, src, dst)
    torch.testing.assert_close(dst, src * 2)


def test_numpy_arrays_run_in_the_interpreter():
    src = np.random.randn(5, 7).astype(np.float32)
    dst = np.full((5, 7), np.nan, dtype=np.float32)
    Copy2D(4, 4)(5, 7, src, dst)
    np.testing.assert_allclose(dst, src * 2)


class OverlongView(tilus.Script):
    def __call__(self, n: int32, src: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        # Under a condition on the block index the host cannot check the view's extent
        # before the launch (tests/runtime/test_view_bounds.py): the access check must.
        if self.blockIdx.x == 0:
            g = self.global_view(src, dtype=float32, shape=[n * 4])  # MARK-overlong
            x = self.load_global(g, offsets=[0], shape=[16])
            self.store_global(g, x, offsets=[0])


def test_access_outside_the_argument_buffer_is_an_error():
    src = torch.zeros(8)
    with pytest.raises(RuntimeError, match="out of bounds"):
        OverlongView()(8, src)


class Deadlock(tilus.Script):
    def __call__(self, sem_value: int32, out: ~int32):
        self.attrs.blocks = [1, 1, 2]
        self.attrs.warps = 1
        sems = self.global_tensor(dtype=int32, shape=[1], requires_clean=True)
        # every block waits for a value nobody ever releases
        self.lock_semaphore(~sems[0], value=sem_value)  # MARK-deadlock
        self.release_semaphore(~sems[0], value=0)


def test_a_semaphore_wait_that_can_never_succeed_is_reported():
    out = torch.zeros(1, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="deadlock") as err:
        Deadlock()(5, out)
    assert "MARK-deadlock" in str(err.value)


class ReverseOrder(tilus.Script):
    """Blocks release in reverse order of their index: block z waits for z + 1, so the
    interpreter must suspend blocks and resume them (they run as cooperative tasks)."""

    def __call__(self, nblocks: int32, out: ~int32):
        self.attrs.blocks = [1, 1, nblocks]
        self.attrs.warps = 1
        sems = self.global_tensor(dtype=int32, shape=[1], requires_clean=True)
        g = self.global_view(out, dtype=int32, shape=[nblocks])
        turn = nblocks - 1 - self.blockIdx.z
        self.lock_semaphore(~sems[0], value=turn)
        counter = self.load_global(g, offsets=[0], shape=[1])
        self.store_global(g, counter + 1, offsets=[0])
        self.sync()
        self.release_semaphore(~sems[0], value=(turn + 1) % nblocks)


def test_blocks_wait_for_each_other_across_the_grid():
    out = torch.zeros(6, dtype=torch.int32)
    ReverseOrder()(6, out)
    assert out[0].item() == 6


class IntDot(tilus.Script):
    def __call__(self, a_ptr: ~int8, b_ptr: ~int8, c_ptr: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=int8, shape=[16, 32])
        gb = self.global_view(b_ptr, dtype=int8, shape=[32, 8])
        gc = self.global_view(c_ptr, dtype=int32, shape=[16, 8])
        a = self.load_global(ga, offsets=[0, 0], shape=[16, 32])
        b = self.load_global(gb, offsets=[0, 0], shape=[32, 8])
        c = self.dot(a, b, self.register_tensor(dtype=int32, shape=[16, 8], init=0))
        self.store_global(gc, c, offsets=[0, 0])


def test_int8_dot_accumulates_in_int32():
    a = torch.randint(-128, 128, (16, 32), dtype=torch.int8)
    b = torch.randint(-128, 128, (32, 8), dtype=torch.int8)
    c = torch.full((16, 8), -1, dtype=torch.int32)
    IntDot()(a, b, c)
    assert torch.equal(c, a.int() @ b.int())


class Fp16Accumulate(tilus.Script):
    def __call__(self, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=float16, shape=[16, 16])
        gb = self.global_view(b_ptr, dtype=float16, shape=[16, 8])
        gc = self.global_view(c_ptr, dtype=float16, shape=[16, 8])
        acc = self.register_tensor(dtype=float16, shape=[16, 8], init=0.0)
        self.dot(self.load_global(ga, offsets=[0, 0], shape=[16, 16]),
                 self.load_global(gb, offsets=[0, 0], shape=[16, 8]), acc, out=acc)
        self.store_global(gc, acc, offsets=[0, 0])


def test_fp16_accumulator_rounds_to_fp16():
    a = torch.randn(16, 16).half()
    b = torch.randn(16, 8).half()
    c = torch.full((16, 8), float("nan")).half()
    Fp16Accumulate()(a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=2e-3, atol=2e-3)


class CopyAsyncOrder(tilus.Script):
    """Reads shared memory before and after waiting for a copy group."""

    def __call__(self, src: ~float32, dst: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gs = self.global_view(src, dtype=float32, shape=[8])
        gd = self.global_view(dst, dtype=float32, shape=[16])
        s = self.shared_tensor(dtype=float32, shape=[8])
        self.store_shared(s, self.register_tensor(dtype=float32, shape=[8], init=-1.0))
        self.copy_async(src=gs, dst=s, offsets=[0])
        self.copy_async_commit_group()
        before = self.load_shared(s)  # the copy is still in flight
        self.copy_async_wait_group(0)
        after = self.load_shared(s)
        self.store_global(gd, before, offsets=[0])
        self.store_global(gd, after, offsets=[8])


def test_copy_async_lands_at_wait_group():
    src = torch.randn(8)
    dst = torch.full((16,), float("nan"))
    # The script reads the buffer while the copy is in flight on purpose, which the IR
    # verifier refuses (tests/lang/test_verifier.py): it is off for this build.
    tilus.option.verify(False)
    try:
        CopyAsyncOrder()(src, dst)
    finally:
        tilus.option.verify(None)
    assert torch.all(dst[:8] == -1.0)
    torch.testing.assert_close(dst[8:], src)


class Elementwise(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        go = self.global_view(out_ptr, dtype=float32, shape=[4, n])
        x = self.load_global(gx, offsets=[0], shape=[32])
        y = self.load_global(gy, offsets=[0], shape=[32])
        self.store_global(go, (x - y) * 2.0 / (y + 3.0), offsets=[0, 0])
        self.store_global(go, self.where(x > y, x, y), offsets=[1, 0])
        self.store_global(go, 1.0 - self.maximum(x, y), offsets=[2, 0])
        self.store_global(go, -self.cast(self.cast(x * 10.0, dtype=int32), dtype=float32),
                          offsets=[3, 0])


def test_elementwise_operations():
    n = 29
    x, y = torch.randn(n), torch.rand(n)
    out = torch.full((4, n), float("nan"))
    Elementwise()(n, x, y, out)
    torch.testing.assert_close(out[0], (x - y) * 2.0 / (y + 3.0))
    torch.testing.assert_close(out[1], torch.where(x > y, x, y))
    torch.testing.assert_close(out[2], 1.0 - torch.maximum(x, y))
    torch.testing.assert_close(out[3], -(x * 10.0).to(torch.int32).float())


class _DLPackOnly:
    """Exposes only the DLPack protocol of a numpy array (as JAX arrays do)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_objects_are_accepted():
    src = np.random.randn(5, 7).astype(np.float32)
    dst = np.full((5, 7), np.nan, dtype=np.float32)
    Copy2D(4, 4)(5, 7, _DLPackOnly(src), _DLPackOnly(dst))
    np.testing.assert_allclose(dst, src * 2)
    with pytest.raises(TypeError, match="'dst' has dtype float64"):
        Copy2D(4, 4)(5, 7, _DLPackOnly(src), _DLPackOnly(np.zeros((5, 7))))


class SelfProduct(tilus.Script):
    """C = A @ A: one tensor is both operands, so it needs the mma A and B layouts at
    once; the CUDA backend converts it through shared memory for one of them."""

    def __call__(self, a_ptr: ~float16, c_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=float16, shape=[32, 32])
        gc = self.global_view(c_ptr, dtype=float32, shape=[32, 32])
        a = self.load_global(ga, offsets=[0, 0], shape=[32, 32])
        c = self.dot(a, a, self.register_tensor(dtype=float32, shape=[32, 32], init=0.0))
        self.store_global(gc, c, offsets=[0, 0])


def test_one_tensor_as_both_dot_operands():
    a = (torch.randn(32, 32) / 4).half()
    c = torch.full((32, 32), float("nan"))
    SelfProduct()(a, c)
    torch.testing.assert_close(c, a.float() @ a.float(), rtol=1e-3, atol=1e-3)


class ReadsPastItsArgument(tilus.Script):
    """The view of `a` claims 16 elements but `a` holds 8; `b` lies right behind it."""

    def __call__(self, a: ~float32, b: ~float32, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        if self.blockIdx.x == 0:  # hides the view from the launcher's up-front check
            ga = self.global_view(a, dtype=float32, shape=[16])
            go = self.global_view(out, dtype=float32, shape=[16])
            x = self.load_global(ga, offsets=[0], shape=[16])  # MARK-past-a
            self.store_global(go, x, offsets=[0])


def test_a_view_may_not_reach_into_the_neighbouring_argument():
    # a and b are adjacent halves of one allocation: every address the view of a
    # touches lies in *some* argument, but the upper half is not a's.
    storage = torch.arange(16, dtype=torch.float32)
    a, b = storage[:8], storage[8:]
    out = torch.zeros(16)
    with pytest.raises(RuntimeError) as err:
        ReadsPastItsArgument()(a, b, out)
    message = str(err.value)
    assert "out of bounds" in message and "MARK-past-a" in message
    assert "'a'" in message and "ga" in message and "[8]" in message
    assert torch.all(out == 0)


class StoresPastItsArgument(tilus.Script):
    def __call__(self, n: int32, a: ~float32, b: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        if self.blockIdx.x == 0:  # hides the view from the launcher's up-front check
            ga = self.global_view(a, dtype=float32, shape=[n])
            x = self.register_tensor(dtype=float32, shape=[16], init=7.0)
            self.store_global(ga, x, offsets=[0])  # MARK-store-past-a


def test_a_store_through_an_overlong_view_stays_in_its_argument():
    storage = torch.zeros(16)
    a, b = storage[:8], storage[8:]
    StoresPastItsArgument()(8, a, b)
    assert torch.all(a == 7) and torch.all(b == 0)
    a.zero_()
    with pytest.raises(RuntimeError) as err:
        StoresPastItsArgument()(12, a, b)
    assert "MARK-store-past-a" in str(err.value) and "'a'" in str(err.value)
    assert torch.all(b == 0)


class SemaphorePastItsView(tilus.Script):
    def __call__(self, sems: ~int32, other: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        if self.blockIdx.x == 0:  # hides the view from the launcher's up-front check
            g = self.global_view(sems, dtype=int32, shape=[8])
            self.release_semaphore(~g[6], value=3)  # MARK-sem


def test_a_semaphore_address_stays_in_its_argument():
    storage = torch.zeros(8, dtype=torch.int32)
    sems, other = storage[:4], storage[4:]
    with pytest.raises(RuntimeError) as err:
        SemaphorePastItsView()(sems, other)
    assert "MARK-sem" in str(err.value) and "'sems'" in str(err.value)
    assert torch.all(other == 0)
