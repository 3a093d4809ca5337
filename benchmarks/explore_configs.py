"""Times hand-picked MatmulV5 configurations and prints the compiler's resource report
(registers, local memory) for each: a tool for performance work, not a benchmark.

    python benchmarks/explore_configs.py M N K [--out DIR]
"""

import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms, print_table  # noqa: E402

v5 = load_example("matmul_v5_splitk")

CONFIGS = [
    # warps, bm, bn, bk, stages, split
    (4, 128, 128, 16, 3, 1), (4, 128, 128, 32, 3, 1), (4, 128, 128, 32, 4, 1),
    (8, 128, 128, 32, 4, 1), (8, 128, 128, 32, 5, 1), (4, 64, 128, 32, 4, 1),
    (8, 128, 64, 32, 4, 1), (4, 32, 256, 32, 4, 4), (4, 32, 256, 32, 5, 12), (8, 32, 256, 32, 4, 16),
    # outside the seed's space: a warpgroup tile of 64x256 (wgmma on sm_90a)
    (8, 128, 256, 32, 3, 1), (8, 128, 256, 32, 4, 1), (8, 128, 256, 64, 3, 1), (4, 128, 128, 64, 3, 1),
]


def main(argv):
    m, n, k = (int(x) for x in argv[:3])
    a = ((torch.rand(m, k, device="cuda") - 0.5) / math.sqrt(k)).half()
    b = ((torch.rand(k, n, device="cuda") - 0.5) / math.sqrt(k)).half()
    expected = (a.float() @ b.float()).half()
    t_torch = median_ms(lambda: torch.matmul(a, b))
    rows = []
    for warps, bm, bn, bk, stages, split in CONFIGS:
        kernel = v5.MatmulV5(num_warps=warps, block_m=bm, block_n=bn, block_k=bk, num_stages=stages,
                             split_k_factor=split)
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        try:
            kernel(m, n, k, a, b, c)
            torch.testing.assert_close(c, expected, rtol=1e-2, atol=1e-2)
        except Exception as e:
            rows.append([f"{warps}w {bm}x{bn}x{bk} s{stages} k{split}", "error", str(e)[:60], "", "", ""])
            continue
        ms = median_ms(lambda: kernel(m, n, k, a, b, c))
        gpu = next(iter(kernel._tilus_compiled.values())).gpu
        lk = next(iter(gpu.variants.values())).kernel
        rows.append([f"{warps}w {bm}x{bn}x{bk} s{stages} k{split}", ms, 2 * m * n * k / ms * 1e-9,
                     t_torch / ms, lk.num_regs, lk.local_bytes])
    print_table(f"MatmulV5 configs at {m}x{n}x{k} (cuBLAS {t_torch:.3f} ms)",
                ["config", "ms", "TFLOP/s", "vs cuBLAS", "regs", "local B"], rows)
    if "--source" in argv:
        kernel = v5.MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32, num_stages=4, split_k_factor=1)
        print(kernel.source(m, n, k, a, b, c))


if __name__ == "__main__":
    main(sys.argv[1:])
