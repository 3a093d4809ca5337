"""Multi-stage TMA + mbarrier matmul (Hopper, sm_90a), in Tilus 0.2 spelling.

Each stage of the shared-memory ring has one mbarrier. Every thread arrives on it with
its share of the stage's bytes (arrive_and_expect_tx); thread 0 issues the two TMA loads
that complete those bytes on it; the consumers wait on the barrier with the parity of
the stage's round. While the dot works on stage ``ki % stages``, the loads of the
``stages - 1`` tiles after it are in flight. The result goes back through shared memory
with a TMA store (boxes past the matrix edge are clipped by the hardware; loads past it
read zeros, so no tile needs masking).

TMA needs 16-byte row strides: k and n must be multiples of 8 (fp16).

    python examples/matmul_tma_pipeline.py [--cuda]
"""

import math
import sys

import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import benchmark_func, cdiv


@tilus.autotune("num_warps", [4, 8])
@tilus.autotune("block_m, block_n", [(128, 128), (128, 256), (64, 128)])
@tilus.autotune("block_k", [64])
@tilus.autotune("stages", [3, 4])
class MatmulTmaPipeline(tilus.Script):
    def __init__(self, num_warps, block_m, block_n, block_k, stages):
        super().__init__()
        self.num_warps = num_warps
        self.block_m = block_m
        self.block_n = block_n
        self.block_k = block_k
        self.stages = stages

    def __call__(self, m_size: int32, n_size: int, k_size: int,
                 a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = self.num_warps
        bm, bn, bk, stages = self.block_m, self.block_n, self.block_k, self.stages
        threads = self.num_warps * 32

        offset_m: int32 = bm * self.blockIdx.x
        offset_n: int32 = bn * self.blockIdx.y
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[stages, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[stages, bk, bn])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        full = self.mbarrier.alloc(counts=[threads] * stages)
        stage_bytes_per_thread = (bm * bk + bk * bn) * 2 // threads
        num_k: int32 = cdiv(k_size, bk)

        # fill all stages but one
        for s in range(stages - 1):
            if s < num_k:
                self.mbarrier.arrive_and_expect_tx(full[s], stage_bytes_per_thread)
                self.tma.global_to_shared(src=ga, dst=sa[s], offsets=[offset_m, s * bk], mbarrier=full[s])
                self.tma.global_to_shared(src=gb, dst=sb[s], offsets=[s * bk, offset_n], mbarrier=full[s])

        for ki in range(num_k):
            # refill the stage the previous iteration read (every thread is past it: the
            # sync at the end of that iteration)
            preload = ki + stages - 1
            if preload < num_k:
                ps = preload % stages
                self.mbarrier.arrive_and_expect_tx(full[ps], stage_bytes_per_thread)
                self.tma.global_to_shared(src=ga, dst=sa[ps], offsets=[offset_m, preload * bk],
                                          mbarrier=full[ps])
                self.tma.global_to_shared(src=gb, dst=sb[ps], offsets=[preload * bk, offset_n],
                                          mbarrier=full[ps])
            stage = ki % stages
            self.mbarrier.wait(full[stage], phase=ki // stages % 2)
            a = self.load_shared(sa[stage])
            b = self.load_shared(sb[stage])
            self.dot(a, b, acc, out=acc)
            self.sync()

        self.free_shared(sa)
        self.free_shared(sb)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        sc = self.shared_tensor(dtype=float16, shape=[bm, bn])
        self.store_shared(sc, acc.to(float16))
        self.fence.proxy_async()
        self.tma.shared_to_global(sc, gc, offsets=[offset_m, offset_n])
        self.tma.commit_group()
        self.tma.wait_group(0)
        self.free_shared(sc)


def main(device: str = "cpu"):
    kernel = MatmulTmaPipeline()
    m, n, k = (4096, 4096, 4096) if device == "cuda" else (37, 72, 136)
    a = ((torch.rand(m, k, device=device) - 0.5) * math.sqrt(12.0)).half()
    b = ((torch.rand(k, n, device=device) - 0.5) * math.sqrt(12.0 / k)).half()
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
    print(f"matmul (TMA + mbarrier pipeline) {m}x{n}x{k} on {device}: ok")
    if device == "cuda":
        for name, fn in [("torch", lambda: torch.matmul(a, b)),
                         ("tilus", lambda: kernel(m, n, k, a, b, c))]:
            ms = benchmark_func(fn, warmup=5, repeat=20)
            print(f"  {name:6s} {ms:8.3f} ms  {2 * m * n * k / ms * 1e-9:8.1f} TFLOP/s")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
