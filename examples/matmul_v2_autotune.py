"""Auto-tuned matmul (Tilus docs, "Auto-tuning"): 2 x 3 x 2 = 12 configurations.

On the GPU the first call compiles all twelve, times them and keeps the fastest; on the
CPU interpreter the first configuration that compiles is used.

    python examples/matmul_v2_autotune.py [--cuda]
"""

import math
import sys

import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import benchmark_func, cdiv


@tilus.autotune("num_warps", [4, 8])
@tilus.autotune("block_m, block_n", [(128, 128), (128, 64), (64, 128)])
@tilus.autotune("block_k", [16, 32])
class MatmulV2(tilus.Script):
    def __init__(self, num_warps, block_m, block_n, block_k):
        super().__init__()
        self.num_warps = num_warps
        self.block_m = block_m
        self.block_n = block_n
        self.block_k = block_k

    def __call__(self, m_size: int32, n_size: int, k_size: int,
                 a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = self.num_warps

        offset_m: int32 = self.block_m * self.blockIdx.x
        offset_n: int32 = self.block_n * self.blockIdx.y

        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[self.block_m, self.block_k])
        sb = self.shared_tensor(dtype=float16, shape=[self.block_k, self.block_n])
        acc = self.register_tensor(dtype=float32, shape=[self.block_m, self.block_n], init=0.0)

        for offset_k in range(0, k_size, self.block_k):
            lda = self.load_global(ga, offsets=[offset_m, offset_k], shape=[self.block_m, self.block_k])
            self.store_shared(sa, lda)
            ldb = self.load_global(gb, offsets=[offset_k, offset_n], shape=[self.block_k, self.block_n])
            self.store_shared(sb, ldb)
            self.sync()

            a = self.load_shared(sa)
            b = self.load_shared(sb)
            acc = self.dot(a, b, acc)
            self.sync()

        self.free_shared(sa)
        self.free_shared(sb)

        casted_acc = self.cast(acc, dtype=float16)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, casted_acc, offsets=[offset_m, offset_n])


def main(device: str = "cpu"):
    m, n, k = (4096, 4096, 4096) if device == "cuda" else (37, 100, 72)
    matmul = MatmulV2()
    a = (torch.rand(m, k, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0)
    b = (torch.rand(k, n, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0 / k)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    matmul(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
    print(f"matmul v2 (autotuned) {m}x{n}x{k} on {device}: ok, config "
          f"{matmul.chosen_config(m, n, k, a, b, c)}")
    if device == "cuda":
        for name, fn in [("torch", lambda: torch.matmul(a, b)),
                         ("tilus", lambda: matmul(m, n, k, a, b, c))]:
            ms = benchmark_func(fn, warmup=5, repeat=20)
            print(f"  {name:6s} {ms:8.3f} ms  {2 * m * n * k / ms * 1e-9:8.1f} TFLOP/s")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
