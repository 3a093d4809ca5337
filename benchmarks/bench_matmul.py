"""tilus vs torch (cuBLAS) vs Triton on fp16 matmuls (fp32 accumulate, fp16 out). On
sm_90 the "wgmma" column is examples/matmul_wgmma.py (explicit self.wgmma, cp.async
pipeline), beside the seed script's "tilus" column.

    python benchmarks/bench_matmul.py [--out DIR] [--quick] [--tma-only]

Prints one table per workload group (large, LLM decode and odd sizes): median CUDA-event
time, TFLOP/s, GB/s of the minimum traffic (A, B read once, C written once), and the ratio
to cuBLAS. Results are
checked against torch before timing; inputs are fresh random data. On sm_90 a last group
times the TMA + mbarrier pipeline (examples/matmul_tma_pipeline.py, autotuned over its
12 configurations) on the same shapes; --tma-only runs just that group.
"""

from __future__ import annotations

import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example as _load, median_ms, print_table, write_results  # noqa: E402


_KERNELS = {}


def tilus_kernel(m, n, k):
    """The seed MatmulV5 script autotuned over its 192 configs; for decode shapes (m <= 16)
    the decode script (examples/matmul_decode_splitk.py), autotuned over its 80."""
    name = "decode" if m <= 16 else "v5"
    if name not in _KERNELS:
        if name == "decode":
            _KERNELS[name] = _load("matmul_decode_splitk").MatmulDecode()
        else:
            _KERNELS[name] = _load("matmul_v5_splitk").MatmulV5()
    return _KERNELS[name]


def tma_kernel(m, n, k):
    """examples/matmul_tma_pipeline.py autotuned (sm_90a; k and n multiples of 8)."""
    if "tma" not in _KERNELS:
        _KERNELS["tma"] = _load("matmul_tma_pipeline").MatmulTmaPipeline()
    return _KERNELS["tma"]


def wgmma_kernel():
    """examples/matmul_wgmma.py: explicit self.wgmma with a cp.async pipeline, autotuned
    over its 16 configs (sm_90 only; None elsewhere)."""
    if torch.cuda.get_device_capability() < (9, 0):
        return None
    if "wgmma" not in _KERNELS:
        _KERNELS["wgmma"] = _load("matmul_wgmma").MatmulWgmma()
    return _KERNELS["wgmma"]


def run_workload(m, n, k, tilus_fn_factory, triton_fn):
    a = ((torch.rand(m, k, device="cuda") - 0.5) * math.sqrt(12.0)).half()
    b = ((torch.rand(k, n, device="cuda") - 0.5) * math.sqrt(12.0 / k)).half()
    expected = (a.float() @ b.float()).half()
    flops = 2.0 * m * n * k
    nbytes = 2.0 * (m * k + k * n + m * n)
    row = {"m": m, "n": n, "k": k}

    c_torch = torch.empty(m, n, dtype=torch.float16, device="cuda")
    t_torch = median_ms(lambda: torch.matmul(a, b, out=c_torch))
    row["torch_ms"] = t_torch

    kernel = tilus_fn_factory(m, n, k)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, expected, rtol=1e-2, atol=1e-2)
    row["tilus_ms"] = median_ms(lambda: kernel(m, n, k, a, b, c))
    if hasattr(kernel, "chosen_config"):
        row["tilus_script"] = type(kernel).__name__ if not hasattr(kernel, "cls") else kernel.cls.__name__
        row["tilus_config"] = kernel.chosen_config(m, n, k, a, b, c)

    wgmma = wgmma_kernel() if m > 16 else None  # decode shapes: m below one m64 slab
    if wgmma is not None:
        c_wg = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        wgmma(m, n, k, a, b, c_wg)
        torch.testing.assert_close(c_wg, expected, rtol=1e-2, atol=1e-2)
        row["wgmma_ms"] = median_ms(lambda: wgmma(m, n, k, a, b, c_wg))
        row["wgmma_config"] = wgmma.chosen_config(m, n, k, a, b, c_wg)

    if triton_fn is not None:
        c_tr = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        triton_fn(a, b, c_tr)
        torch.testing.assert_close(c_tr, expected, rtol=1e-2, atol=1e-2)
        row["triton_ms"] = median_ms(lambda: triton_fn(a, b, c_tr))
    for who in ("torch", "tilus", "wgmma", "triton"):
        if f"{who}_ms" in row:
            ms = row[f"{who}_ms"]
            row[f"{who}_tflops"] = flops / ms * 1e-9
            row[f"{who}_gbps"] = nbytes / ms * 1e-6
            row[f"{who}_vs_cublas"] = t_torch / ms
    return row


def main(argv):
    try:
        from triton_matmul import triton_matmul
    except Exception as e:  # Triton missing: say so in the table
        print(f"triton unavailable: {e}")
        triton_matmul = None
    quick = "--quick" in argv
    groups = {
        "seed and large shapes": [(4096, 4096, 4096), (4096, 4096, 14336)] + ([] if quick else [(8192, 8192, 8192)]),
        "LLM decode shapes": [(m, n, k) for m in (1, 16, 128)
                              for n, k in [(4096, 4096), (12288, 4096), (14336, 4096), (4096, 14336)]],
        # rows that are not 16-byte multiples (the unaligned build: element copies)
        "odd sizes": [(4096, 4097, 4103)] + ([] if quick else [(2048, 4095, 4095)]),
    }
    factories = {title: tilus_kernel for title in groups}
    if "--tma-only" in argv:
        groups, factories = {}, {}
    if torch.cuda.get_device_capability()[0] >= 9:
        title = "TMA + mbarrier pipeline (examples/matmul_tma_pipeline.py)"
        groups[title] = [(4096, 4096, 4096), (4096, 4096, 14336), (8192, 8192, 8192)][: 2 if quick else 3] + [
            (128, 4096, 4096), (128, 14336, 4096)]
        factories[title] = tma_kernel
    else:
        print("TMA pipeline skipped: it needs sm_90 (Hopper)")
    results = []
    for title, shapes in groups.items():
        rows = []
        for m, n, k in shapes:
            r = run_workload(m, n, k, factories[title], triton_matmul)
            r["group"] = title
            results.append(r)
            rows.append([f"{m}x{n}x{k}", r["torch_ms"], r["tilus_ms"], r.get("wgmma_ms", float("nan")),
                         r.get("triton_ms", float("nan")), r["tilus_tflops"], r["tilus_gbps"], r["tilus_vs_cublas"],
                         r.get("wgmma_vs_cublas", float("nan")), r.get("triton_vs_cublas", float("nan"))])
        print_table(title, ["m x n x k", "cuBLAS ms", "tilus ms", "wgmma ms", "triton ms", "tilus TF/s",
                            "tilus GB/s", "tilus/cuBLAS", "wgmma/cuBLAS", "triton/cuBLAS"], rows)
    write_results("bench_matmul", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
