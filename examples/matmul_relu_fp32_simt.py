"""float32 matmul with a fused ReLU, on CUDA cores (the hidet script example, in tilus).

The accumulator's register layout is given explicitly, as the hidet example does:
4 x 2 warps, each repeating 2 x 2 times a 2 x 16 arrangement of threads that each hold a
4 x 4 block, for a 64 x 256 tile per thread block.

    python examples/matmul_relu_fp32_simt.py [--cuda]
"""

import sys

import torch

import tilus
from tilus import float32, int32
from tilus.layout import local, spatial
from tilus.utils import benchmark_func, cdiv

warps_m, warps_n = 4, 2  # 4 x 2 warps
warp_m, warp_n = 2, 2  # each warp repeats 2 x 2 times
warp_map_m, warp_map_n = 2, 16  # each warp has 2 x 16 threads
thread_m, thread_n = 4, 4  # each thread holds 4 x 4 elements
block_m = warps_m * warp_m * warp_map_m * thread_m  # 64
block_n = warps_n * warp_n * warp_map_n * thread_n  # 256
block_k = 8


class MatmulReluSimt(tilus.Script):
    def __init__(self):
        super().__init__()
        self.acc_layout = (spatial(warps_m, warps_n) * local(warp_m, warp_n)
                           * spatial(warp_map_m, warp_map_n) * local(thread_m, thread_n))

    def __call__(self, m_size: int32, n_size: int32, k_size: int32,
                 a_ptr: ~float32, b_ptr: ~float32, c_ptr: ~float32):
        self.attrs.blocks = [cdiv(m_size, block_m), cdiv(n_size, block_n)]
        self.attrs.warps = warps_m * warps_n

        offset_m: int32 = self.blockIdx.x * block_m
        offset_n: int32 = self.blockIdx.y * block_n
        ga = self.global_view(a_ptr, dtype=float32, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float32, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float32, shape=[block_m, block_k])
        sb = self.shared_tensor(dtype=float32, shape=[block_k, block_n])
        acc = self.register_tensor(dtype=float32, layout=self.acc_layout, init=0.0)

        for offset_k in range(0, k_size, block_k):
            self.store_shared(sa, self.load_global(ga, offsets=[offset_m, offset_k], shape=[block_m, block_k]))
            self.store_shared(sb, self.load_global(gb, offsets=[offset_k, offset_n], shape=[block_k, block_n]))
            self.sync()
            self.dot(self.load_shared(sa), self.load_shared(sb), acc, out=acc)
            self.sync()

        relu = self.maximum(acc, self.register_tensor(dtype=float32, layout=self.acc_layout, init=0.0))
        gc = self.global_view(c_ptr, dtype=float32, shape=[m_size, n_size])
        self.store_global(gc, relu, offsets=[offset_m, offset_n])


def main(device: str = "cpu"):
    kernel = MatmulReluSimt()
    shapes = [(1024, 1024, 1024), (256, 256, 256), (32, 32, 32), (37, 100, 72)] if device == "cuda" \
        else [(37, 100, 72), (32, 32, 32)]
    for m, n, k in shapes:
        a = torch.randn(m, k, dtype=torch.float32, device=device)
        b = torch.randn(k, n, dtype=torch.float32, device=device)
        c = torch.full((m, n), float("nan"), dtype=torch.float32, device=device)
        kernel(m, n, k, a, b, c)
        expected = (a.double() @ b.double()).relu().float()
        torch.testing.assert_close(c, expected, atol=1e-4, rtol=1e-4)
        line = f"{m}x{k}x{n} on {device}: ok"
        if device == "cuda":
            t_torch = benchmark_func(lambda: torch.matmul(a, b).relu(), repeat=50)
            t_tilus = benchmark_func(lambda: kernel(m, n, k, a, b, c), repeat=50)
            line += f"  torch {t_torch:.3f} ms  tilus {t_tilus:.3f} ms"
        print(line)


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
