"""Q @ K^T as Tilus 0.2 attention writes it: K [n, k] in shared memory, loaded into
registers and transposed there (`self.dot(q, self.load_shared(sk).transpose())`). In the
interpreter against torch at odd shapes; tests/codegen/test_dot_transposed_source.py checks
that the CUDA loads K with plain ldmatrix, tests/gpu/test_dot_transposed_gpu.py runs it."""

import pytest
import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv


class QKTranspose(tilus.Script):
    """c[m, n] = a[m, k] @ b[n, k]^T over shared tiles; the transpose is taken on the
    register tile loaded from b's shared tile (`via`: the method, self.transpose, permute)."""

    def __init__(self, via="method", bm=64, bn=64, bk=32, warps=4):
        super().__init__()
        self.via, self.bm, self.bn, self.bk, self.warps = via, bm, bn, bk, warps

    def __call__(self, a: ~float16, b: ~float16, c: ~float32, m: int32, n: int32, k: int32):
        self.attrs.blocks = [cdiv(m, self.bm), cdiv(n, self.bn)]
        self.attrs.warps = self.warps
        bm, bn, bk = self.bm, self.bn, self.bk
        ga = self.global_view(a, dtype=float16, shape=[m, k])
        gb = self.global_view(b, dtype=float16, shape=[n, k])
        sa = self.shared_tensor(dtype=float16, shape=[bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[bn, bk])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        for kk in range(cdiv(k, bk)):
            self.copy_async(src=ga, dst=sa, offsets=[self.blockIdx.x * bm, kk * bk])
            self.copy_async(src=gb, dst=sb, offsets=[self.blockIdx.y * bn, kk * bk])
            self.copy_async_wait_all()
            self.sync()
            rb = self.load_shared(sb)
            if self.via == "method":
                bt = rb.transpose()
            elif self.via == "transpose":
                bt = self.transpose(rb)
            else:
                bt = self.permute(rb, [1, 0])
            acc = self.dot(self.load_shared(sa), bt, acc)
            self.sync()
        gc = self.global_view(c, dtype=float32, shape=[m, n])
        self.store_global(gc, acc, offsets=[self.blockIdx.x * bm, self.blockIdx.y * bn])


def run_qk_transpose(via="method", m=100, n=75, k=70, device="cpu", **tiles):
    a = torch.randn(m, k, device=device).half()
    b = torch.randn(n, k, device=device).half()
    c = torch.full((m, n), float("nan"), device=device)  # poisoned
    QKTranspose(via, **tiles)(a, b, c, m, n, k)
    return c.cpu(), (a.float() @ b.float().T).cpu()


@pytest.mark.parametrize("via", ["method", "transpose", "permute"])
@pytest.mark.parametrize("tiles", [dict(), dict(bm=64, bn=24, bk=32, warps=4), dict(bm=32, bn=64, bk=64, warps=2)])
def test_q_at_k_transposed_from_shared(via, tiles):
    c, ref = run_qk_transpose(via, **tiles)
    torch.testing.assert_close(c, ref, rtol=2e-3, atol=2e-3)
