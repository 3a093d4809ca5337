"""Which side of a kernel bounds it: each kernel timed whole, built without its products
(tilus.option.debug.omit("mma"): what is left is the loads, the waits and the rest) and
built without its loads into shared memory (omit("loads"): the math on whatever shared
memory holds), in the configuration its autotuner chose, beside cuBLAS; rounds
interleaved, the best median of each. When the kernel without its products is about as
slow as the whole one, the load path bounds it; when the one without loads is, the math
does.

    python benchmarks/time_parts.py [ws-m128 | ws-large | a16wx-decode ...] [--rounds N] [--out DIR]

ws-m128 / ws-large: examples/matmul_warp_specialized.py at the m = 128 shapes of
bench_hopper_matmul.py / its large shapes (fp16); a16wx-decode: examples/matmul_a16wx.py,
uint4 group 128 with zero points, m = 1 and 16 over the four decode weights.
"""

from __future__ import annotations

import math
import pathlib
import sys

import torch

import tilus

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms, print_table, write_results  # noqa: E402

PARTS = ("", "mma", "loads")  # whole, without the products, without the loads


def _timed_parts(make_fixed, run, reference, rounds):
    """Best median (ms) of the whole kernel, of it without products and without loads, and
    of `reference`, rounds interleaved. make_fixed() builds the fixed-configuration script
    under the current option; run(script) calls it."""
    scripts = {}
    for part in PARTS:
        tilus.option.debug.omit(part or None)
        scripts[part] = make_fixed()
        run(scripts[part])  # build (and check nothing hangs) before timing
    best = {}
    try:
        for _ in range(rounds):
            for part in PARTS:
                tilus.option.debug.omit(part or None)
                best[part] = min(best.get(part, math.inf), median_ms(lambda: run(scripts[part])))
            best["ref"] = min(best.get("ref", math.inf), median_ms(reference))
    finally:
        tilus.option.debug.omit(None)
    return best


def warp_specialized(shapes, rounds, rows, results, label):
    ex = load_example("matmul_warp_specialized")
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda").half()
        b = (torch.randn(n, k, device="cuda") / math.sqrt(k)).half()
        c = torch.empty(m, n, device="cuda", dtype=torch.half)
        tuned = ex.MatmulWarpSpecialized(dtype=tilus.float16)
        config = tuned.chosen_config(m, n, k, a, b, c, 1.0)
        best = _timed_parts(lambda: ex.MatmulWarpSpecialized(dtype=tilus.float16, **config),
                            lambda s: s(m, n, k, a, b, c, 1.0), lambda: torch.matmul(a, b.T), rounds)
        _record(rows, results, label, f"{m}x{n}x{k}", best, config)


def a16wx_decode(rounds, rows, results):
    ex = load_example("matmul_a16wx")
    for m in (1, 16):
        for n, k in ((4096, 4096), (12288, 4096), (14336, 4096), (4096, 14336)):
            codes, scales, zeros = ex.random_weights(k, n, tilus.uint4b, 128, tilus.float16, True, "cuda", seed=n + k)
            layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, 128)
            deq = ex.dequantize(codes, tilus.uint4b, scales, zeros, 128, tilus.float16)
            x = torch.randn(m, k, dtype=torch.float16, device="cuda")
            y = layer(x)
            operands = (x, layer.packed, layer.scales, layer.kernel_zeros, y)
            config = layer.kernel.chosen_config(m, n, k, *operands)
            zero_dtype = tilus.uint8 if layer.zero_codes is not None else None
            best = _timed_parts(
                lambda: ex.MatmulA16Wx(tilus.float16, tilus.uint4b, 128, True, zero_dtype=zero_dtype, **config),
                lambda s: s(m, n, k, *operands), lambda: torch.matmul(x, deq), rounds)
            _record(rows, results, "a16wx-decode uint4 g128", f"{m}x{n}x{k}", best, config)


def _record(rows, results, label, shape, best, config):
    us = {key: value * 1e3 for key, value in best.items()}
    rows.append([label, shape, us[""], us["mma"], us["loads"], us["ref"], best["ref"] / best[""], str(config)])
    results.append({"kernel": label, "shape": shape, "whole_us": us[""], "without_products_us": us["mma"],
                    "without_loads_us": us["loads"], "cublas_us": us["ref"], "config": str(config)})


def main(argv):
    if not torch.cuda.is_available():
        print("time_parts needs a GPU")
        return
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    chosen = [a for a in argv if a in ("ws-m128", "ws-large", "a16wx-decode")] or ["ws-m128", "a16wx-decode"]
    hopper = torch.cuda.get_device_capability() == (9, 0)
    rows, results = [], []
    if "ws-m128" in chosen and hopper:
        warp_specialized([(128, 4096, 4096), (128, 12288, 4096), (128, 14336, 4096), (128, 4096, 14336)],
                         rounds, rows, results, "warp-specialised fp16")
    if "ws-large" in chosen and hopper:
        warp_specialized([(4096, 4096, 4096), (4096, 4096, 14336), (8192, 8192, 8192)], rounds, rows, results,
                         "warp-specialised fp16")
    if "a16wx-decode" in chosen:
        a16wx_decode(rounds, rows, results)
    print_table("whole kernel / without its products / without its loads (us; best of rounds)",
                ["kernel", "m x n x k", "whole", "no products", "no loads", "cuBLAS", "cuBLAS / whole", "config"],
                rows)
    write_results("time_parts", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
