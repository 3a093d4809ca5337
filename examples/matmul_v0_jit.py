"""Matmul with JIT constants (Tilus Script docs, section 2.2).

n_size and k_size are `int` parameters: compile-time constants, one specialisation per
(n, k) pair; m_size is `int32`: a runtime value that never causes a recompile.

    python examples/matmul_v0_jit.py [--cuda]
"""

import math
import sys

import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv


class Matmul(tilus.Script):
    def __init__(self):
        super().__init__()
        self.block_m = 64
        self.block_n = 128
        self.block_k = 16

    def __call__(self, m_size: int32, n_size: int, k_size: int,
                 a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [
            cdiv(m_size, self.block_m),  # the x dimension size of the grid
            cdiv(n_size, self.block_n),  # the y dimension size of the grid
        ]
        self.attrs.warps = 4

        offset_m: int32 = self.block_m * self.blockIdx.x
        offset_n: int32 = self.block_n * self.blockIdx.y

        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        acc = self.register_tensor(dtype=float32, shape=[self.block_m, self.block_n], init=0.0)

        for k in range(cdiv(k_size, self.block_k)):
            offset_k = k * self.block_k
            a = self.load_global(ga, offsets=[offset_m, offset_k], shape=[self.block_m, self.block_k])
            b = self.load_global(gb, offsets=[offset_k, offset_n], shape=[self.block_k, self.block_n])
            self.dot(a, b, acc, out=acc)

        acc_f16 = self.cast(acc, dtype=float16)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, acc_f16, offsets=[offset_m, offset_n])


def main(device: str = "cpu"):
    kernel = Matmul()
    shapes = [(4096, 4096), (4096, 12288)] if device == "cuda" else [(72, 100), (256, 136)]
    for k_size, n_size in shapes:
        for m_size in [1, 4, 8, 16, 37]:
            a = torch.randn(m_size, k_size, dtype=torch.float16, device=device)
            b = torch.randn(k_size, n_size, dtype=torch.float16, device=device) / math.sqrt(k_size)
            c = torch.full((m_size, n_size), float("nan"), dtype=torch.float16, device=device)
            kernel(m_size, n_size, k_size, a, b, c)
            expected = (a.float() @ b.float()).half()
            torch.testing.assert_close(c, expected, rtol=1e-2, atol=1e-2)
            print(f"m={m_size:5d} n={n_size:5d} k={k_size:5d}: ok")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
