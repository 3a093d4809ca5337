"""Times fixed configurations of the warp-specialised Hopper matmul
(examples/matmul_warp_specialized.py) beside cuBLAS, rounds interleaved, best round of
each: a tool for performance work, not a benchmark. It covers the options kept out of
the tuning space (clusters sharing A along n, 64-row tiles of one k-box a slot) and
candidates not measured yet against the configurations the tuner picks.

    python benchmarks/explore_ws_variants.py m128 [--quick] [--dtypes f16,bf16] [--out DIR]
    python benchmarks/explore_ws_variants.py large [--dtypes f16,bf16] [--out DIR]

Each row is (block_m, block_n, stages, epilogue, split_k[, k_boxes]), group_m, cluster_m, cluster_n;
results checked against torch before timing (L2 flushed before each run).
"""

import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from common import load_example, median_ms, print_table, write_results  # noqa: E402

_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}

# the tuned m = 128 tiles, then 64-row tiles (cuBLAS's nvjet 64x64 2x1 and 192x64 1x2
# kernels at these shapes) and clusters sharing A
M128 = [((128, 64, 8, "registers", 2), 8, 1, 1), ((128, 112, 6, "tma", 1), 8, 1, 1),
        ((128, 64, 8, "registers", 2), 8, 1, 2), ((128, 112, 6, "tma", 1), 8, 1, 2),
        ((64, 64, 13, "tma", 1), 8, 2, 1), ((64, 64, 13, "tma", 1), 8, 1, 1), ((64, 128, 8, "tma", 1), 8, 2, 1),
        ((64, 192, 6, "tma", 1), 8, 2, 1), ((64, 224, 5, "tma", 1), 8, 2, 1), ((64, 96, 10, "tma", 1), 8, 2, 1),
        # the tuned 64x64 tile of two k-boxes a slot, and candidates for the 12288- and
        # 14336-column shapes (one tile per block there, so its epilogue is not hidden:
        # registers instead of TMA; 128 tiles of 96 columns at 12288; two k-boxes a slot,
        # so that each row of B is read 256 bytes at a time)
        ((64, 64, 7, "registers", 1, 2), 8, 1, 1), ((128, 112, 7, "registers", 1), 8, 1, 1),
        ((128, 96, 7, "registers", 1), 8, 1, 1), ((128, 96, 3, "registers", 1, 2), 8, 1, 1),
        ((128, 96, 4, "registers", 1, 2), 8, 1, 1), ((128, 112, 3, "registers", 1, 2), 8, 1, 1),
        ((128, 112, 3, "tma", 1, 2), 8, 1, 1)]
# --quick: the tuned tiles and the candidates only
M128_QUICK = [M128[0], M128[1]] + M128[10:]
LARGE = [(config, group_m, cm, cn) for config in ((128, 256, 4, "tma_halves", 1), (128, 256, 3, "tma", 1))
         for group_m in (8, 16) for cm, cn in ((1, 1), (2, 1), (1, 2))]
SHAPES = {"m128": [(128, 4096, 4096), (128, 12288, 4096), (128, 14336, 4096), (128, 4096, 14336)],
          "large": [(4096, 4096, 4096), (4096, 4096, 14336), (8192, 8192, 8192)]}


def main(argv):
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("explore_ws_variants needs an sm_90 GPU")
        return
    which = argv[0] if argv and argv[0] in SHAPES else "m128"
    names = argv[argv.index("--dtypes") + 1] if "--dtypes" in argv else "f16"
    ex = load_example("matmul_warp_specialized")
    variants = (M128_QUICK if "--quick" in argv else M128) if which == "m128" else LARGE
    results = []
    for name in names.split(","):
        dtype = _DTYPES[name]
        for m, n, k in SHAPES[which]:
            a = ((torch.rand(m, k, device="cuda") - 0.5) * math.sqrt(12.0)).to(dtype)
            b = ((torch.rand(n, k, device="cuda") - 0.5) * math.sqrt(12.0)).to(dtype)
            scale = 1.0 / math.sqrt(k)
            expected = (a.float() @ b.float().T) * scale
            bs = b * scale
            runs = []
            for config, group_m, cm, cn in variants:
                bm, bn, stages, epilogue, split_k, k_boxes = config if len(config) == 6 else (*config, 1)
                kernel = ex.MatmulWarpSpecialized(bm, bn, stages, group_m, cm, epilogue=epilogue, split_k=split_k,
                                                  dtype=ex._TORCH_TO_TILUS[dtype], cluster_n=cn, k_boxes=k_boxes)
                c = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
                kernel(m, n, k, a, b, c, scale)
                torch.testing.assert_close(c.float(), expected, rtol=3e-2, atol=3e-2)
                runs.append((kernel, c, [config, group_m, cm, cn], []))
            cublas = []
            for _ in range(3):  # interleaved: these hosts drift within a minute
                cublas.append(median_ms(lambda: torch.matmul(a, bs.T)))
                for kernel, c, _, times in runs:
                    times.append(median_ms(lambda: kernel(m, n, k, a, b, c, scale)))
            rows = []
            for _, _, key, times in runs:
                results.append({"dtype": name, "m": m, "n": n, "k": k, "variant": key, "tilus_ms": times,
                                "cublas_ms": cublas})
                rows.append([str(key), min(times), min(cublas) / min(times)])
            print_table(f"{name} {m}x{n}x{k}: cuBLAS {min(cublas):.4f} ms", ["variant", "tilus ms", "tilus/cuBLAS"],
                        rows)
    write_results(f"explore_ws_variants_{which}", argv, results)


if __name__ == "__main__":
    main(sys.argv[1:])
