"""A16Wx matmul (examples/matmul_a16wx.py) beside cuBLAS fp16 (torch.matmul on the
dequantised weight) and a W4A16 Triton kernel written here, same run, same data,
medians of CUDA-event timings with L2 flushed. Decode shapes m in {1, 16} x (n, k) in
{4096x4096, 12288x4096, 14336x4096, 4096x14336}, and prefill m = 4096.

    python benchmarks/bench_a16wx.py [--out DIR] [--quick] [--types uint4b,int8,...] [--decode-only | --prefill-only]
    python benchmarks/bench_a16wx.py --k-sweep [--out DIR]   # streaming rate and fixed cost

Columns: times in ms; "GB/s" is the packed weight bytes (plus scales and zero points)
over tilus's time; "ceiling" is the same bytes over the read ceiling (a Triton kernel
that only sums the weight buffer, benchmarks/read_ceiling.py), so "vs ceiling" = 1.00
means tilus streams weights as fast as anything can read them. "x cuBLAS" is cuBLAS
time / tilus time (targets, H100: uint4 g128 m=1 >= 3.0 on the big weights, >= 2.5 at
4096x4096; m=16 >= 2.5; 8-bit m=1 >= 1.8; m=4096 >= 0.9); "x ideal" is tilus against the
byte-ratio ideal, cuBLAS time * bits / 16 over tilus time (target for 3- and 6-bit
weights: >= 0.9).
"""

from __future__ import annotations

import pathlib
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms, print_table, write_results  # noqa: E402
from read_ceiling import read_sum  # noqa: E402

import tilus  # noqa: E402
from tilus import float16  # noqa: E402

DECODE = [(4096, 4096), (12288, 4096), (14336, 4096), (4096, 14336)]


# ------------------------------------------------------------------ the Triton baseline


@triton.jit
def w4a16_triton(a, w, s, z, c, M, N, K, GROUP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, SPLIT: tl.constexpr):
    """c (+)= a @ ((q - z) * s) for uint4 weights packed two per byte along n (element
    (k, n) in the low nibble of byte (k*N + n) // 2 when n is even); fp32 atomics when
    SPLIT > 1."""
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    per = tl.cdiv(tl.cdiv(K, SPLIT), BK) * BK
    k0 = pid_k * per
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for kk in range(k0, tl.minimum(k0 + per, K), BK):
        rk = kk + tl.arange(0, BK)
        x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        idx = rk[:, None] * N + rn[None, :]
        wmask = (rk[:, None] < K) & (rn[None, :] < N)
        byte = tl.load(w + idx // 2, mask=wmask, other=0, eviction_policy="evict_first")
        q = (byte.to(tl.int32) >> ((idx % 2) * 4)) & 0xF
        g = kk // GROUP
        sc = tl.load(s + g * N + rn, mask=rn < N, other=0.0)
        zp = tl.load(z + g * N + rn, mask=rn < N, other=0.0)
        wf = (q.to(tl.float16) - zp[None, :]) * sc[None, :]
        acc += tl.dot(x, wf)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT == 1:
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=cmask)
    else:
        tl.atomic_add(c + rm[:, None] * N + rn[None, :], acc, mask=cmask)


class TritonW4A16:
    """The Triton kernel with the fastest of a few tile configurations for the shape."""

    CONFIGS = [(16, 64, 128, 1, 4), (16, 64, 128, 4, 4), (16, 128, 128, 8, 4), (16, 64, 256, 8, 4),
               (16, 128, 64, 16, 4), (64, 128, 64, 1, 4), (128, 128, 64, 1, 8), (128, 256, 64, 1, 8)]

    def __init__(self, packed, scales, zeros, n, k, group, m):
        self.args = (packed, scales, zeros)
        self.n, self.k, self.group = n, k, group
        self.out32 = torch.empty(m, n, dtype=torch.float32, device="cuda")
        best, best_t = None, None
        for cfg in self.CONFIGS:
            if m > 64 and cfg[0] == 16 or m <= 16 and cfg[0] > 16:
                continue
            self.best = cfg
            x = torch.randn(m, k, dtype=torch.float16, device="cuda")
            try:
                t = median_ms(lambda: self(x), warmup=3, repeat=10)
            except Exception:  # noqa: BLE001 (a config that does not fit the shape)
                continue
            if best_t is None or t < best_t:
                best_t, best = t, cfg
        self.best = best

    def __call__(self, x, out=None):
        bm, bn, bk, split, warps = self.best
        m = x.shape[0]
        packed, scales, zeros = self.args
        grid = (triton.cdiv(m, bm), triton.cdiv(self.n, bn), split)
        if split == 1:
            out = out if out is not None else torch.empty(m, self.n, dtype=torch.float16, device="cuda")
            w4a16_triton[grid](x, packed, scales, zeros, out, m, self.n, self.k, GROUP=self.group, BM=bm, BN=bn,
                               BK=bk, SPLIT=1, num_warps=warps)
            return out
        self.out32.zero_()
        w4a16_triton[grid](x, packed, scales, zeros, self.out32, m, self.n, self.k, GROUP=self.group, BM=bm,
                           BN=bn, BK=bk, SPLIT=split, num_warps=warps)
        return self.out32.to(torch.float16)


# ------------------------------------------------------------------ the benchmark


def read_ceiling_ms(buf: torch.Tensor) -> float:
    """The fastest Triton read of `buf` (read_ceiling.py's kernel, a few configurations)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = buf.view(torch.float16)
    best = None
    for per_sm in (8, 16, 32):
        for tile, warps in ((1024, 4), (2048, 8)):
            programs = sms * per_sm
            out = torch.empty(programs, dtype=torch.float32, device="cuda")
            t = median_ms(lambda: read_sum[(programs,)](x, out, x.numel(), TILE=tile, num_warps=warps))
            best = t if best is None else min(best, t)
    return best


def bench(ex, w_name, group, has_zero, m, n, k, rows, results, with_triton):
    w_dtype = getattr(tilus, w_name)
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, float16, has_zero, "cuda", seed=m + n + k)
    layer = ex.QuantizedLinear(codes, w_dtype, scales, zeros, group)
    deq = ex.dequantize(codes, w_dtype, scales, zeros, group, float16)
    x = torch.randn(m, k, dtype=torch.float16, device="cuda")
    ref = x.float() @ deq.float()
    y = layer(x)
    torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2)
    weight_bytes = layer.packed.numel() + scales.numel() * 2 * (2 if has_zero else 1)
    t = {"tilus": median_ms(lambda: layer(x, y)), "cublas": median_ms(lambda: torch.matmul(x, deq))}
    flat = layer.packed.reshape(-1)
    t["read"] = read_ceiling_ms(flat[: flat.numel() // 2 * 2])
    if with_triton:
        # the Triton kernel reads Tilus 0.2's row-major packing, not the kernel's fragment order
        tri = TritonW4A16(ex.pack_weights(codes, w_dtype), scales, zeros if zeros is not None else torch.zeros_like(scales),
                          n, k, group, m)
        torch.testing.assert_close(tri(x).float(), ref, rtol=2e-2, atol=2e-2)
        t["triton"] = median_ms(lambda: tri(x))
    gbs = weight_bytes / t["tilus"] / 1e6
    ceiling = layer.packed.numel() / t["read"] / 1e6
    rows.append([w_name, group, m, n, k, t["tilus"], t["cublas"], t.get("triton", float("nan")), gbs, ceiling,
                 t["read"] / t["tilus"] * weight_bytes / layer.packed.numel(), t["cublas"] / t["tilus"],
                 t["triton"] / t["tilus"] if "triton" in t else float("nan"),
                 t["cublas"] * w_dtype.bits / 16 / t["tilus"],
                 layer.describe(x, y)])
    print(f"  {w_name} m={m} n={n} k={k}: tilus {t['tilus']:.4f} ms, cuBLAS {t['cublas']:.4f} ms, "
          f"triton {t.get('triton', float('nan')):.4f} ms", flush=True)  # a cut-off run keeps its rows
    results.append({"weights": w_name, "group": group, "zero_points": has_zero, "m": m, "n": n, "k": k,
                    "weight_bytes": weight_bytes, **{f"{key}_ms": v for key, v in t.items()}})


def k_sweep(ex, rows, results):
    """uint4 g128 (zero points) at m = 1, n = 14336 over k: time = intercept + slope * k for
    tilus and cuBLAS (least squares). The slope is the streaming rate; the intercept what a
    call costs whatever its k (launch and timing floor, pipeline fill, epilogue), which
    bounds the ratio at small k (benchmarks/README.md, decode)."""
    ks = [2048, 4096, 8192, 16384]
    times = {"tilus": [], "cublas": []}
    for k in ks:
        codes, scales, zeros = ex.random_weights(k, 14336, tilus.uint4b, 128, float16, True, "cuda", seed=k)
        layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, 128)
        deq = ex.dequantize(codes, tilus.uint4b, scales, zeros, 128, float16)
        x = torch.randn(1, k, dtype=torch.float16, device="cuda")
        y = layer(x)
        torch.testing.assert_close(y.float(), x.float() @ deq.float(), rtol=2e-2, atol=2e-2)
        times["tilus"].append(median_ms(lambda: layer(x, y)))
        times["cublas"].append(median_ms(lambda: torch.matmul(x, deq)))
    for name, ts in times.items():
        mk = sum(ks) / len(ks)
        mt = sum(ts) / len(ts)
        slope = sum((k - mk) * (t - mt) for k, t in zip(ks, ts)) / sum((k - mk) ** 2 for k in ks)
        intercept = mt - slope * mk
        rows.append([name, *[f"{t * 1e3:.1f}" for t in ts], f"{slope * 1024 * 1e3:.2f}", f"{intercept * 1e3:.1f}"])
        results.append({"k_sweep": name, "n": 14336, "ks": ks, "ms": ts, "slope_ms_per_k": slope,
                        "intercept_ms": intercept})


def main(argv):
    if "--k-sweep" in argv:
        rows, results = [], []
        k_sweep(load_example("matmul_a16wx"), rows, results)
        print_table("uint4 g128 m=1 n=14336 over k (us; slope: us per 1024 rows, intercept: us)",
                    ["kernel", "k=2048", "k=4096", "k=8192", "k=16384", "slope", "intercept"], rows)
        write_results("bench_a16wx_k_sweep", argv, results)
        return
    quick = "--quick" in argv
    ex = load_example("matmul_a16wx")
    types = [("uint4b", 128, True)] if quick else [("uint4b", 128, True), ("int4b", 128, False),
                                                     ("int8", 128, False), ("float8_e4m3", 128, False),
                                                     ("int3b", 128, False), ("float6_e3m2", 128, False)]
    if "--types" in argv:
        wanted = argv[argv.index("--types") + 1].split(",")
        types = [t for t in types if t[0] in wanted]
    rows, results = [], []
    for w_name, group, has_zero in types:
        for m in (() if "--prefill-only" in argv else (1, 16)):
            for n, k in (DECODE[::3] if quick else DECODE):
                bench(ex, w_name, group, has_zero, m, n, k, rows, results, with_triton=w_name == "uint4b")
        if "--decode-only" not in argv:
            for n, k in ([(4096, 4096)] if quick else [(4096, 4096), (14336, 4096)]):
                bench(ex, w_name, group, has_zero, 4096, n, k, rows, results, with_triton=w_name == "uint4b")
    print_table("A16Wx matmul (ms; fp16 activations)",
                ["weights", "group", "m", "n", "k", "tilus", "cuBLAS", "triton", "GB/s", "ceiling GB/s",
                 "vs ceiling", "x cuBLAS", "x triton", "x ideal", "tilus config"], rows)
    write_results("bench_a16wx", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
