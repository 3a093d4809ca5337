"""The read-bandwidth ceiling under the decode shapes: how fast can any kernel only read
the weight matrix of each shape (n x k fp16) from memory, L2 flushed before each run?

    python benchmarks/read_ceiling.py [--out DIR]

A Triton kernel sums the buffer (16-byte loads, four tiles in flight per iteration of a
grid-stride loop, one fp32 per program written back); the table shows the fastest of a
sweep over grid size, tile size and warps, or torch.sum if that is faster (config 0),
next to cuBLAS's time for the m = 1 matmul over the same weight. The ratio "best /
cuBLAS" is the most any decode kernel could beat cuBLAS by on that shape.
"""

import pathlib
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import median_ms, print_table, write_results  # noqa: E402


@triton.jit
def read_sum(x, out, n, TILE: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    acc = tl.zeros([TILE], dtype=tl.float32)
    # four independent tiles per iteration keep more loads in flight per thread
    for start in range(pid * 4 * TILE, n, programs * 4 * TILE):
        i = start + tl.arange(0, TILE)
        x0 = tl.load(x + i, mask=i < n, other=0.0, eviction_policy="evict_first")
        x1 = tl.load(x + i + TILE, mask=i + TILE < n, other=0.0, eviction_policy="evict_first")
        x2 = tl.load(x + i + 2 * TILE, mask=i + 2 * TILE < n, other=0.0, eviction_policy="evict_first")
        x3 = tl.load(x + i + 3 * TILE, mask=i + 3 * TILE < n, other=0.0, eviction_policy="evict_first")
        acc += (x0.to(tl.float32) + x1.to(tl.float32)) + (x2.to(tl.float32) + x3.to(tl.float32))
    tl.store(out + pid, tl.sum(acc, axis=0))


def main(argv):
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, results = [], []
    for n, k in [(4096, 4096), (12288, 4096), (14336, 4096), (4096, 14336)]:
        b = torch.randn(k, n, dtype=torch.float16, device="cuda")
        a = torch.randn(1, k, dtype=torch.float16, device="cuda")
        elems, nbytes = b.numel(), b.numel() * b.element_size()
        expected = b.float().sum().item()
        tolerance = 1e-3 * b.float().abs().sum().item()
        best = None
        for programs_per_sm in (4, 8, 16, 32):
            for tile in (512, 1024, 2048):
                for warps in (4, 8):
                    programs = sms * programs_per_sm
                    out = torch.empty(programs, dtype=torch.float32, device="cuda")

                    def run():
                        read_sum[(programs,)](b, out, elems, TILE=tile, num_warps=warps)

                    run()
                    got = out.sum().item()
                    assert abs(got - expected) <= tolerance, (got, expected)
                    ms = median_ms(run)
                    if best is None or ms < best[0]:
                        best = (ms, programs_per_sm, tile, warps)
        torch_sum_ms = median_ms(lambda: b.sum(dtype=torch.float32))
        if torch_sum_ms < best[0]:
            best = (torch_sum_ms, 0, 0, 0)  # torch's own reduction was faster
        cublas_ms = median_ms(lambda: torch.matmul(a, b))
        ms, per_sm, tile, warps = best
        gbps = nbytes / ms / 1e6
        rows.append([f"{k}x{n}", nbytes / 1e6, ms * 1e3, gbps, cublas_ms * 1e3, cublas_ms / ms])
        results.append({"k": k, "n": n, "bytes": nbytes, "read_us": ms * 1e3, "read_gbps": gbps,
                        "config": {"programs_per_sm": per_sm, "tile": tile, "warps": warps},
                        "cublas_m1_us": cublas_ms * 1e3, "ceiling_vs_cublas": cublas_ms / ms})
    print_table("read-only ceiling vs cuBLAS m=1 (L2 flushed)",
                ["weight k x n", "MB", "read us", "read GB/s", "cuBLAS m=1 us", "ceiling/cuBLAS"], rows)
    write_results("read_ceiling", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
