"""Explicit wgmma (Tilus 0.2's self.wgmma) in the interpreter: matmuls against torch at odd
shapes (Tilus 0.2 spelling with B stored [N, K] and passed transposed; the cp.async
pipelined example with one and two warpgroups; M-major A; A in registers; bfloat16 and
float8), results
that land only at the wait_group retiring their group, and the errors for using an
accumulator early and for blocks that are not whole warpgroups."""

import math

import pytest
import torch

import tilus
from tilus import bfloat16, float16, float32, int32, void_p
from tilus.utils import cdiv


class WgmmaBT(tilus.Script):
    """Tilus 0.2's hopper matmul shape: C = A @ B^T with B given as [N, K], one stage."""

    def __init__(self, block_m=64, block_n=64, block_k=16, warps=4, dtype=float16, wait=0):
        super().__init__()
        self.block_m, self.block_n, self.block_k, self.warps, self.dtype = block_m, block_n, block_k, warps, dtype
        self.wait = wait  # 1: the next step's copies write sa while this step's group may read it

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: void_p, b_ptr: void_p, c_ptr: ~float32):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = self.warps
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        offset_m: int32 = bm * self.blockIdx.x
        offset_n: int32 = bn * self.blockIdx.y
        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        sa = self.shared_tensor(dtype=self.dtype, shape=[bm, bk])
        sb = self.shared_tensor(dtype=self.dtype, shape=[bn, bk])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        for offset_k in range(0, k_size, bk):
            self.copy_async(src=ga, dst=sa, offsets=[offset_m, offset_k])
            self.copy_async(src=gb, dst=sb, offsets=[offset_n, offset_k])
            self.copy_async_commit_group()
            self.copy_async_wait_group(0)
            self.sync()
            self.wgmma.fence()
            self.wgmma.mma(sa, sb.transpose(), acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(self.wait)
            self.sync()
        self.wgmma.wait_group(0)
        gc = self.global_view(c_ptr, dtype=float32, shape=[m_size, n_size])
        self.store_global(gc, acc, offsets=[offset_m, offset_n])


class WgmmaAMajor(tilus.Script):
    """C = A @ B with A given transposed ([K, M], M contiguous) and B as [K, N]: both
    operands MN-major. block_n picks B's layout: 64 (128-byte rows) 128-byte swizzle, 32
    64-byte, 16 32-byte, 40 none."""

    def __init__(self, block_n=64):
        super().__init__()
        self.block_n = block_n

    def __call__(self, m_size: int32, n_size: int32, k_size: int32, at_ptr: ~float16, b_ptr: ~float16,
                 c_ptr: ~float32):
        bn = self.block_n
        self.attrs.blocks = [cdiv(m_size, 64), cdiv(n_size, bn)]
        self.attrs.warps = 4
        offset_m: int32 = 64 * self.blockIdx.x
        offset_n: int32 = bn * self.blockIdx.y
        gat = self.global_view(at_ptr, dtype=float16, shape=[k_size, m_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sat = self.shared_tensor(dtype=float16, shape=[32, 64])
        sb = self.shared_tensor(dtype=float16, shape=[32, bn])
        acc = self.register_tensor(dtype=float32, shape=[64, bn], init=0.0)
        for offset_k in range(0, k_size, 32):
            self.copy_async(src=gat, dst=sat, offsets=[offset_k, offset_m])
            self.copy_async(src=gb, dst=sb, offsets=[offset_k, offset_n])
            self.copy_async_commit_group()
            self.copy_async_wait_group(0)
            self.sync()
            self.wgmma.fence()
            self.wgmma.mma(sat.transpose(), sb, acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(0)
            self.sync()
        gc = self.global_view(c_ptr, dtype=float32, shape=[m_size, n_size])
        self.store_global(gc, acc, offsets=[offset_m, offset_n])


class WgmmaRS(tilus.Script):
    """C = A @ B^T with A loaded straight into registers (wgmma's register form) and B
    [N, K] through shared memory."""

    def __init__(self, block_m=64, block_n=64, block_k=32, warps=4, dtype=float16, wait=0):
        super().__init__()
        self.block_m, self.block_n, self.block_k, self.warps, self.dtype = block_m, block_n, block_k, warps, dtype
        self.wait = wait  # 1: the next step's load writes a while this step's group may still read it

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: void_p, b_ptr: void_p, c_ptr: ~float32):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = self.warps
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        offset_m: int32 = bm * self.blockIdx.x
        offset_n: int32 = bn * self.blockIdx.y
        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        sb = self.shared_tensor(dtype=self.dtype, shape=[bn, bk])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        for offset_k in range(0, k_size, bk):
            a = self.load_global(ga, offsets=[offset_m, offset_k], shape=[bm, bk])
            self.copy_async(src=gb, dst=sb, offsets=[offset_n, offset_k])
            self.copy_async_commit_group()
            self.copy_async_wait_group(0)
            self.sync()
            self.wgmma.fence()
            self.wgmma.mma(a, sb.transpose(), acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(self.wait)
            self.sync()
        self.wgmma.wait_group(0)
        gc = self.global_view(c_ptr, dtype=float32, shape=[m_size, n_size])
        self.store_global(gc, acc, offsets=[offset_m, offset_n])


class TwoGroups(tilus.Script):
    """Two commit groups into two accumulators, then wait_group(1): only the first has
    landed; `read_second` reads the other before its wait."""

    def __init__(self, read_second=False):
        super().__init__()
        self.read_second = read_second

    def __call__(self, a_ptr: ~float16, b_ptr: ~float16, c1_ptr: ~float32, c2_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=float16, shape=[64, 16])
        gb = self.global_view(b_ptr, dtype=float16, shape=[16, 64])
        sa = self.shared_tensor(dtype=float16, shape=[64, 16])
        sb = self.shared_tensor(dtype=float16, shape=[16, 64])
        self.store_shared(sa, self.load_global(ga, offsets=[0, 0], shape=[64, 16]))
        self.store_shared(sb, self.load_global(gb, offsets=[0, 0], shape=[16, 64]))
        self.sync()
        acc1 = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
        acc2 = self.register_tensor(dtype=float32, shape=[64, 64], init=1.0)
        self.wgmma.fence()
        self.wgmma.mma(sa, sb, acc1)
        self.wgmma.commit_group()
        self.wgmma.mma(sa, sb, acc2)
        self.wgmma.mma(sa, sb, acc2)
        self.wgmma.commit_group()
        self.wgmma.wait_group(1)
        g1 = self.global_view(c1_ptr, dtype=float32, shape=[64, 64])
        g2 = self.global_view(c2_ptr, dtype=float32, shape=[64, 64])
        self.store_global(g1, acc1, offsets=[0, 0])
        if self.read_second:
            self.store_global(g2, acc2, offsets=[0, 0])
        self.wgmma.wait_group(0)
        self.store_global(g2, acc2, offsets=[0, 0])


class TmaSlotReleasedEarly(tilus.Script):
    """One TMA slot for B, refilled every k-step; with early=True the refill is issued
    before the wait_group that retires the wgmma reading the slot (a pipeline that frees
    a slot too early)."""

    def __init__(self, early):
        super().__init__()
        self.early = early

    def __call__(self, k_size: int32, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=float16, shape=[64, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[64, k_size])
        sa = self.shared_tensor(dtype=float16, shape=[64, 16])
        sb = self.shared_tensor(dtype=float16, shape=[64, 16])
        full = self.mbarrier.alloc(counts=[1])
        acc = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
        phase: int32 = 0
        for k0 in range(0, k_size, 16):
            with self.single_thread():
                self.mbarrier.arrive_and_expect_tx(full[0], 2 * 64 * 16 * 2)
                self.tma.global_to_shared(src=ga, dst=sa, offsets=[0, k0], mbarrier=full[0])
                self.tma.global_to_shared(src=gb, dst=sb, offsets=[0, k0], mbarrier=full[0])
            self.mbarrier.wait(full[0], phase=phase)
            phase ^= 1
            self.wgmma.fence()
            self.wgmma.mma(sa, sb.transpose(), acc)
            self.wgmma.commit_group()
            if not self.early:
                self.wgmma.wait_group(0)
            self.sync()
        self.wgmma.wait_group(0)
        self.store_global(self.global_view(c_ptr, dtype=float32, shape=[64, 64]), acc, offsets=[0, 0])


class WrongWarps(tilus.Script):
    def __call__(self, a_ptr: ~float16, c_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 2
        sa = self.shared_tensor(dtype=float16, shape=[64, 16])
        sb = self.shared_tensor(dtype=float16, shape=[16, 64])
        acc = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
        self.wgmma.fence()
        self.wgmma.mma(sa, sb, acc)
        self.wgmma.commit_group()
        self.wgmma.wait_group(0)


def _rand(*shape, k, dtype=torch.float16):
    """Uniform entries of variance 1/sqrt(k): a k-long product of two has unit variance
    (small enough entries would pass any tolerance)."""
    return ((torch.rand(*shape) - 0.5) * math.sqrt(12.0) / k ** 0.25).to(dtype)


@pytest.mark.parametrize("m, n, k, bk", [(70, 100, 40, 16), (64, 64, 64, 32), (130, 37, 64, 64), (65, 70, 100, 48)])
def test_tilus02_spelling_against_torch(m, n, k, bk):
    a, b = _rand(m, k, k=k), _rand(n, k, k=k)
    c = torch.full((m, n), float("nan"))
    WgmmaBT(block_k=bk)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


def test_bfloat16_two_warpgroups():
    m, n, k = 150, 70, 48
    a, b = _rand(m, k, k=k, dtype=torch.bfloat16), _rand(n, k, k=k, dtype=torch.bfloat16)
    c = torch.full((m, n), float("nan"))
    WgmmaBT(block_m=128, block_n=64, block_k=16, warps=8, dtype=bfloat16)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


def test_float8_k32():
    m, n, k = 64, 40, 64
    a, b = _rand(m, k, k=k).to(torch.float8_e4m3fn), _rand(n, k, k=k).to(torch.float8_e4m3fn)
    c = torch.full((m, n), float("nan"))
    WgmmaBT(block_m=64, block_n=40, block_k=32, dtype=tilus.float8_e4m3)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("bn", [64, 40])
def test_m_major_a(bn):
    m, n, k = 70, 90, 64
    a, b = _rand(m, k, k=k), _rand(k, n, k=k)
    c = torch.full((m, n), float("nan"))
    WgmmaAMajor(bn)(m, n, k, a.T.contiguous(), b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("config", [(4, 64, 64, 32, 3), (8, 128, 64, 32, 4)])
def test_pipelined_example(example, config):
    kernel = example("matmul_wgmma").MatmulWgmma(*config)
    m, n, k = 150, 70, 200
    a, b = _rand(m, k, k=k), _rand(k, n, k=k)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("warps, bm, dtype", [(4, 128, float16), (8, 64, bfloat16)])
def test_register_a(warps, bm, dtype):
    m, n, k = 150, 70, 96
    tdtype = torch.float16 if dtype is float16 else torch.bfloat16
    a, b = _rand(m, k, k=k, dtype=tdtype), _rand(n, k, k=k, dtype=tdtype)
    c = torch.full((m, n), float("nan"))
    WgmmaRS(block_m=bm, warps=warps, dtype=dtype)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


def test_writing_a_register_operand_before_its_wait_is_an_error():
    # The tensor cores read a's registers until the group retires; ptxas does not keep them
    # for it, so the next step's load would overwrite them under the running wgmma (on
    # the GPU: garbage). The interpreter refuses the write and names it.
    m, n, k = 64, 64, 96
    a, b = _rand(m, k, k=k), _rand(n, k, k=k)
    with pytest.raises(RuntimeError, match=r"writes a while the wgmma.mma reading it as its register operand a "
                                           r"\(line \d+\) is still in flight") as info:
        WgmmaRS(wait=1)(m, n, k, a, b, torch.zeros(m, n))
    assert "a = self.load_global(ga" in str(info.value)


def test_copying_into_a_shared_operand_before_its_wait_is_an_error():
    # the next step's copy_async may land while the tensor cores still read sa
    m, n, k = 64, 64, 48
    a, b = _rand(m, k, k=k), _rand(n, k, k=k)
    with pytest.raises(RuntimeError, match=r"copy_async writes sa while the wgmma.mma reading sa there "
                                           r"\(line \d+\) may still run") as info:
        WgmmaBT(wait=1)(m, n, k, a, b, torch.zeros(m, n))
    assert "self.copy_async(src=ga, dst=sa" in str(info.value)


@pytest.mark.parametrize("early", [False, True])
def test_a_tma_refill_of_a_slot_still_read_is_an_error(early):
    k = 48
    a, b = _rand(64, k, k=k), _rand(64, k, k=k)
    c = torch.full((64, 64), float("nan"))
    if not early:
        TmaSlotReleasedEarly(early)(k, a, b, c)
        torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)
        return
    with pytest.raises(RuntimeError, match=r"tma.global_to_shared writes sa while the wgmma.mma reading sa "
                                           r"there \(line \d+\) may still run") as info:
        TmaSlotReleasedEarly(early)(k, a, b, c)
    assert "self.tma.global_to_shared(src=ga, dst=sa" in str(info.value)


def test_results_land_at_the_wait_of_their_group():
    a, b = _rand(64, 16, k=16), _rand(16, 64, k=16)
    c1, c2 = torch.full((64, 64), float("nan")), torch.full((64, 64), float("nan"))
    TwoGroups()(a, b, c1, c2)
    expected = a.float() @ b.float()
    torch.testing.assert_close(c1, expected, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(c2, 1.0 + 2 * expected, rtol=1e-3, atol=1e-3)


def test_reading_an_accumulator_before_its_wait_is_an_error():
    a, b = _rand(64, 16, k=16), _rand(16, 64, k=16)
    c1, c2 = torch.zeros(64, 64), torch.zeros(64, 64)
    with pytest.raises(RuntimeError, match=r"acc2 while the wgmma.mma writing it \(line \d+\) is still in flight") as info:
        TwoGroups(read_second=True)(a, b, c1, c2)
    assert "self.store_global(g2, acc2" in str(info.value)


def test_whole_warpgroups_required():
    with pytest.raises(Exception, match="whole warpgroups"):
        WrongWarps()(torch.zeros(4, dtype=torch.float16), torch.zeros(4))


class Float8NMajor(tilus.Script):
    def __call__(self, c_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        sa = self.shared_tensor(dtype=tilus.float8_e4m3, shape=[64, 32])
        sb = self.shared_tensor(dtype=tilus.float8_e4m3, shape=[32, 64])
        acc = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
        self.wgmma.fence()
        self.wgmma.mma(sa, sb, acc)
        self.wgmma.commit_group()
        self.wgmma.wait_group(0)


def test_float8_must_be_k_major():
    """As code generation refuses it (tests/codegen/test_wgmma_explicit_source.py)."""
    with pytest.raises(Exception, match=r"b \(shared\[float8_e4m3, 32x64\]\) is stored N-major") as info:
        Float8NMajor()(torch.zeros(4))
    assert "self.wgmma.mma(sa, sb, acc)" in str(info.value)



class TmaWgmma(tilus.Script):
    """C = A @ B^T for one 64 x 64 tile, k = 16: A and B by TMA, then one wgmma; without
    `wait_landed` the wgmma is issued before the mbarrier wait for the copies."""

    def __init__(self, wait_landed: bool):
        super().__init__()
        self.wait_landed = wait_landed

    def __call__(self, a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=float16, shape=[64, 16])
        gb = self.global_view(b_ptr, dtype=float16, shape=[64, 16])
        sa = self.shared_tensor(dtype=float16, shape=[64, 16])
        sb = self.shared_tensor(dtype=float16, shape=[64, 16])
        bar = self.mbarrier.alloc(counts=[1])
        acc = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx(bar, 2 * 64 * 16 * 2)
            self.tma.global_to_shared(src=ga, dst=sa, offsets=[0, 0], mbarrier=bar)
            self.tma.global_to_shared(src=gb, dst=sb, offsets=[0, 0], mbarrier=bar)
        if self.wait_landed:
            self.mbarrier.wait(bar, phase=0)
        self.wgmma.fence()
        self.wgmma.mma(sa, sb.transpose(), acc)
        self.wgmma.commit_group()
        self.wgmma.wait_group(0)
        if not self.wait_landed:
            self.mbarrier.wait(bar, phase=0)
        self.store_global(self.global_view(c_ptr, dtype=float32, shape=[64, 64]), acc, offsets=[0, 0])


def test_a_wgmma_operand_read_before_its_copy_landed_is_an_error():
    """With the wait, C = A @ B^T; issued before it, the wgmma reads shared memory the TMA
    has not written (on a GPU: whatever it held) and the interpreter says so."""
    a, b = torch.randn(64, 16).half(), torch.randn(64, 16).half()
    c = torch.zeros(64, 64)
    TmaWgmma(wait_landed=True)(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().t(), rtol=1e-3, atol=1e-3)
    with pytest.raises(Exception, match=r"wgmma.mma reads element sa\[0, 0\] of shared memory before anything "
                                        r"wrote it \(block \(0, 0, 0\)\): a copy into it not yet waited for\?"):
        TmaWgmma(wait_landed=False)(a, b, torch.zeros(64, 64))
