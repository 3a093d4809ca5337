"""The persistent warp-specialised Hopper matmul (examples/matmul_warp_specialized.py:
TMA producer, two wgmma consumer warpgroups, TMA-store epilogue, 2-block clusters with
B multicast, autotuned) beside cuBLAS and a Triton kernel, same run, same data.

    python benchmarks/bench_hopper_matmul.py [--out DIR] [--quick] [--decode-only] [--dtypes f16,bf16,f8]

C = A @ B^T with A [m, k] and B [n, k] (both K-major, as FP8 tensor cores need):
float16 and bfloat16 against ``torch.matmul(a, b.T)``, float8_e4m3 (per-tensor scales,
float16 out) against ``torch._scaled_mm``. The Triton kernel below is written for the
same layout and dtypes (tl.dot of K-major tiles, a persistent-free autotuned grid).
Median CUDA-event times with the L2 flushed before each run; results checked against
torch first. Needs sm_90a.
"""

from __future__ import annotations

import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms, print_table, write_results  # noqa: E402

_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f8": torch.float8_e4m3fn}


def triton_tn_matmul():
    """An autotuned Triton C = (A @ B^T) * scale for K-major A and B (None without Triton)."""
    try:
        import triton
        import triton.language as tl
    except Exception as e:  # Triton missing: the table says so
        print(f"triton unavailable: {e}")
        return None

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                                        (128, 256, 128, 3, 8), (128, 128, 128, 4, 8), (64, 256, 64, 4, 4)]]

    @triton.autotune(configs=configs, key=["m", "n", "k"])
    @triton.jit
    def kernel(a, b, c, m, n, k, scale, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, k, BK):
            a_tile = tl.load(a + rm[:, None] * k + (k0 + rk)[None, :],
                             mask=(rm[:, None] < m) & ((k0 + rk)[None, :] < k), other=0.0)
            b_tile = tl.load(b + rn[:, None] * k + (k0 + rk)[None, :],
                             mask=(rn[:, None] < n) & ((k0 + rk)[None, :] < k), other=0.0)
            acc = tl.dot(a_tile, tl.trans(b_tile), acc)
        acc = acc * scale
        tl.store(c + rm[:, None] * n + rn[None, :], acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < m) & (rn[None, :] < n))

    def run(a, b, c, scale):
        m, k = a.shape
        n = b.shape[0]
        kernel[lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))](a, b, c, m, n, k, scale)
        return c

    return run


def run_workload(ex, triton_fn, dtype, m, n, k):
    a = ((torch.rand(m, k, device="cuda") - 0.5) * math.sqrt(12.0)).to(dtype)
    b = ((torch.rand(n, k, device="cuda") - 0.5) * math.sqrt(12.0)).to(dtype)
    scale = 1.0 / math.sqrt(k)
    out_dtype = torch.bfloat16 if dtype == torch.bfloat16 else torch.float16
    expected = (a.float() @ b.float().T) * scale
    row = {"dtype": str(dtype).replace("torch.", ""), "m": m, "n": n, "k": k}
    if dtype == torch.float8_e4m3fn:
        sa = torch.tensor(scale, device="cuda")
        sb = torch.tensor(1.0, device="cuda")
        peer = lambda: torch._scaled_mm(a, b.T, scale_a=sa, scale_b=sb, out_dtype=torch.float16)  # noqa: E731
    else:
        bs = b * scale  # cuBLAS gets the scale folded into b: no extra pass in its time
        peer = lambda: torch.matmul(a, bs.T)  # noqa: E731
    torch.testing.assert_close(peer().float(), expected, rtol=3e-2, atol=3e-2)
    row["torch_ms"] = median_ms(peer)

    c = torch.full((m, n), float("nan"), dtype=out_dtype, device="cuda")
    ex.matmul(a, b, scale, out=c)
    torch.testing.assert_close(c.float(), expected, rtol=3e-2, atol=3e-2)
    row["tilus_ms"] = median_ms(lambda: ex.matmul(a, b, scale, out=c))
    script = ex._SCRIPTS[dtype]
    row["tilus_config"] = script.chosen_config(m, n, k, a, b, c, scale)

    if triton_fn is not None:
        c_tr = torch.full((m, n), float("nan"), dtype=out_dtype, device="cuda")
        triton_fn(a, b, c_tr, scale)
        torch.testing.assert_close(c_tr.float(), expected, rtol=3e-2, atol=3e-2)
        row["triton_ms"] = median_ms(lambda: triton_fn(a, b, c_tr, scale))
    for who in ("torch", "tilus", "triton"):
        if f"{who}_ms" in row:
            row[f"{who}_tflops"] = 2.0 * m * n * k / row[f"{who}_ms"] * 1e-9
            row[f"{who}_vs_cublas"] = row["torch_ms"] / row[f"{who}_ms"]
    return row


def main(argv):
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("bench_hopper_matmul needs an sm_90 GPU (TMA, wgmma, clusters)")
        return
    ex = load_example("matmul_warp_specialized")
    triton_fn = triton_tn_matmul()
    quick = "--quick" in argv
    names = "f16,bf16,f8"
    if "--dtypes" in argv:
        names = argv[argv.index("--dtypes") + 1]
    large = [(4096, 4096, 4096), (4096, 4096, 14336), (8192, 8192, 8192)]
    decode = [(128, 4096, 4096), (128, 12288, 4096), (128, 14336, 4096), (128, 4096, 14336)]
    results = []
    for name in names.split(","):
        dtype = _DTYPES[name]
        shapes = large[:2] if quick else large + (decode if dtype != torch.float8_e4m3fn else [])
        if "--decode-only" in argv:  # the m = 128 shapes alone
            shapes = decode if dtype != torch.float8_e4m3fn else []
        rows = []
        for m, n, k in shapes:
            r = run_workload(ex, triton_fn, dtype, m, n, k)
            results.append(r)
            rows.append([f"{m}x{n}x{k}", r["torch_ms"], r["tilus_ms"], r.get("triton_ms", float("nan")),
                         r["tilus_tflops"], r["tilus_vs_cublas"], r.get("triton_vs_cublas", float("nan")),
                         str(r["tilus_config"])])
        peer = "torch._scaled_mm" if dtype == torch.float8_e4m3fn else "cuBLAS"
        print_table(f"{name}: C = A @ B^T (examples/matmul_warp_specialized.py)",
                    ["m x n x k", f"{peer} ms", "tilus ms", "triton ms", "tilus TF/s", f"tilus/{peer}",
                     f"triton/{peer}", "tilus config"], rows)
    write_results("bench_hopper_matmul", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
