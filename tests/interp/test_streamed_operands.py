"""Two dots over K and V tiles loaded from shared memory, as Tilus 0.2's attention writes
them (`s = self.dot(q, self.load_shared(sk).transpose())`, some register work, then
`self.dot(p, self.load_shared(sv), acc)`). On CUDA the emitter loads such large operand
tiles one k step at a time inside the dot's loop (CudaEmitter::find_streamed_operands);
these are the semantics it must keep, in the interpreter against torch at odd shapes.
tests/codegen/test_streamed_operands_source.py checks where the loads go and the spills,
tests/gpu/test_streamed_operands_gpu.py runs the same kernels on the GPU."""

import pytest
import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv


class TwoDotsOverSharedTiles(tilus.Script):
    """o[m, d] = sum over key blocks of ((q k^T) * 0.125).to(f16) @ v, for q [m, d] and
    k, v [n, d]. `between`: what stands between V's load and its dot: "registers" (the
    scaling and cast only), "store" (also a barrier and a shared-memory store, into K's
    tile: V's load must then stay where it is), "sync" (a barrier: it does not change the tiles)."""

    def __init__(self, d=128, bq=64, bkv=64, warps=4, between="registers"):
        super().__init__()
        self.d, self.bq, self.bkv, self.warps, self.between = d, bq, bkv, warps, between

    def __call__(self, q: ~float16, k: ~float16, v: ~float16, o: ~float32, m: int32, n: int32):
        d, bq, bkv = self.d, self.bq, self.bkv
        self.attrs.blocks = [cdiv(m, bq)]
        self.attrs.warps = self.warps
        gq = self.global_view(q, dtype=float16, shape=[m, d])
        gk = self.global_view(k, dtype=float16, shape=[n, d])
        gv = self.global_view(v, dtype=float16, shape=[n, d])
        rq = self.load_global(gq, offsets=[self.blockIdx.x * bq, 0], shape=[bq, d])
        sk = self.shared_tensor(dtype=float16, shape=[bkv, d])
        sv = self.shared_tensor(dtype=float16, shape=[bkv, d])
        acc = self.register_tensor(dtype=float32, shape=[bq, d], init=0.0)
        for j in range(cdiv(n, bkv)):
            self.copy_async(src=gk, dst=sk, offsets=[j * bkv, 0])
            self.copy_async(src=gv, dst=sv, offsets=[j * bkv, 0])
            self.copy_async_wait_all()
            self.sync()
            rk = self.load_shared(sk)
            s = self.dot(rq, rk.transpose())  # [bq, bkv] float32
            rv = self.load_shared(sv)
            p = (s * 0.125).to(float16)
            if self.between == "store":  # after every thread read K
                self.sync()
                self.store_shared(sk, self.register_tensor(dtype=float16, shape=[bkv, d], init=0.0))
            elif self.between == "sync":
                self.sync()
            acc = self.dot(p, rv, acc)
            self.sync()
        go = self.global_view(o, dtype=float32, shape=[m, d])
        self.store_global(go, acc, offsets=[self.blockIdx.x * bq, 0])


def run_two_dots(m=70, n=100, device="cpu", **config):
    d = config.get("d", 128)
    q, k, v = (torch.randn(rows, d, device=device).half() for rows in (m, n, n))
    o = torch.full((m, d), float("nan"), device=device)  # poisoned
    TwoDotsOverSharedTiles(**config)(q, k, v, o, m, n)
    p = ((q.float() @ k.float().T) * 0.125).half().float()
    return o.cpu(), (p @ v.float()).cpu()


@pytest.mark.parametrize("between", ["registers", "store", "sync"])
@pytest.mark.parametrize("config", [dict(), dict(d=64, bq=32, bkv=64, warps=2)])
def test_two_dots_over_shared_tiles(between, config):
    o, ref = run_two_dots(m=37, n=70, between=between, **config)
    torch.testing.assert_close(o, ref, rtol=2e-2, atol=2e-2)
