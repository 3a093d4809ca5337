"""Tensor sizes in scripts (Tilus 0.2's `x.size` and `x.nbytes`): elements, and bytes with
sub-byte types packed. A TMA pipeline expects `sa.nbytes + sb.nbytes` transaction bytes,
the count the interpreter checks against what the copies bring."""

import pytest
import torch

import tilus
from tilus import float16, float32, int32, uint32
from tilus.utils import cdiv

BM, BN, BK = 32, 16, 16


class ExpectsTheTilesBytes(tilus.Script):
    """C = A @ B^T, each k step's two tiles brought by TMA under one mbarrier whose
    expected transaction bytes are the shared tiles' nbytes."""

    def __call__(self, m: int32, n: int32, k: int32, a: ~float16, b: ~float16, c: ~float32):
        self.attrs.blocks = [cdiv(m, BM), cdiv(n, BN)]
        self.attrs.warps = 4
        ga = self.global_view(a, dtype=float16, shape=[m, k])
        gb = self.global_view(b, dtype=float16, shape=[n, k])
        sa = self.shared_tensor(dtype=float16, shape=[BM, BK])
        sb = self.shared_tensor(dtype=float16, shape=[BN, BK])
        self.static_assert(sa.size == BM * BK and sa.nbytes == BM * BK * 2, "sizes of sa")
        acc = self.register_tensor(dtype=float32, shape=[BM, BN], init=0.0)
        barrier = self.mbarrier.alloc(counts=[1])
        phase: uint32 = 0
        for k0 in range(0, k, BK):
            with self.single_thread():
                self.mbarrier.arrive_and_expect_tx(barrier, transaction_bytes=sa.nbytes + sb.nbytes)
                self.tma.global_to_shared(src=ga, dst=sa, offsets=[self.blockIdx.x * BM, k0],
                                          mbarrier=barrier)
                self.tma.global_to_shared(src=gb, dst=sb, offsets=[self.blockIdx.y * BN, k0],
                                          mbarrier=barrier)
                self.mbarrier.wait(barrier, phase=phase)
            self.sync()
            self.dot(self.load_shared(sa), self.load_shared(sb).transpose(), acc, out=acc)
            self.sync()
            phase ^= 1
        gc = self.global_view(c, dtype=float32, shape=[m, n])
        self.store_global(gc, acc, offsets=[self.blockIdx.x * BM, self.blockIdx.y * BN])


def test_tma_transaction_bytes_from_nbytes():
    m, n, k = 45, 37, 40
    a, b = torch.randn(m, k).half(), torch.randn(n, k).half()
    c = torch.full((m, n), float("nan"))
    ExpectsTheTilesBytes()(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


class Sizes(tilus.Script):
    def __init__(self, dtype, shape):
        super().__init__()
        self.dtype, self.shape = dtype, shape

    def __call__(self, n: int32, out: ~int32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        s = self.shared_tensor(dtype=self.dtype, shape=self.shape)
        r = self.register_tensor(dtype=self.dtype, shape=self.shape)
        g = self.global_view(out, dtype=int32, shape=[n, 4])
        values = [s.size, s.nbytes, r.size, r.nbytes, g.size, g.nbytes]
        self.free_shared(s)
        go = self.global_view(out, dtype=int32, shape=[6])
        for i, v in enumerate(values):
            self.store_global(go, self.register_tensor(dtype=int32, shape=[1], init=v), offsets=[i])


@pytest.mark.parametrize("dtype,shape,nbytes", [
    (tilus.float16, [8, 16], 256),
    (tilus.uint4b, [16, 30], 240),
    (tilus.int3b, [8, 8], 24),
    (tilus.float6_e3m2, [4, 4], 12),
])
def test_size_and_nbytes(dtype, shape, nbytes):
    n = 3  # the global view [n, 4] of int32: its sizes are runtime values
    out = torch.full((n * 4,), -1, dtype=torch.int32)
    Sizes(dtype, shape)(n, out)
    elements = shape[0] * shape[1]
    assert out[:6].tolist() == [elements, nbytes, elements, nbytes, n * 4, n * 16]
