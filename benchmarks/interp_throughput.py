"""How fast the CPU interpreter runs: tile instructions per second, with and without the
debugging checks (race and uninitialised-read detection, docs/interpreter.md).

    python benchmarks/interp_throughput.py [--repeat 5] [--seeds PATH]

Workloads: MatmulV5 (examples/matmul_v5_splitk.py, the seed program's copy; the seed
itself when --seeds points at seed_examples, default ../shared/seed_examples) at 256^3
with the configuration the interpreter picks, a split-K configuration of it, and the
pipelined matmul V3 and the SIMT fp32 matmul. For each: the median wall time of a call,
the tile instructions it executes (all blocks) and instructions per second, with the
checks off and on. Target: the seed MatmulV5 at 256^3 under 2 s (it takes milliseconds).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import pathlib
import statistics
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import tilus  # noqa: E402
from tilus import _C  # noqa: E402

TARGET_S = 2.0


def load(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def matmul_inputs(m, n, k, dtype=torch.float16):
    a = ((torch.rand(m, k) - 0.5) / math.sqrt(k)).to(dtype)
    b = ((torch.rand(k, n) - 0.5) / math.sqrt(k)).to(dtype)
    return a, b, torch.empty(m, n, dtype=dtype)


def measure(call, repeat: int):
    call()  # transpile and infer layouts outside the timing
    times, counts = [], []
    for _ in range(repeat):
        before = _C.interp_instruction_count()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        counts.append(_C.interp_instruction_count() - before)
    return statistics.median(times), counts[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seeds", default=str(ROOT.parent / "shared" / "seed_examples"))
    args = parser.parse_args()

    examples = ROOT / "examples"
    seed_path = pathlib.Path(args.seeds) / "matmul_v5_splitk.py"
    v5 = load(seed_path if seed_path.exists() else examples / "matmul_v5_splitk.py", "bench_v5")
    v3 = load(examples / "matmul_v3_pipeline.py", "bench_v3")
    simt = load(examples / "matmul_relu_fp32_simt.py", "bench_simt")
    jit = load(examples / "matmul_v0_jit.py", "bench_v0")
    source = "seed" if seed_path.exists() else "examples/"

    a, b, c = matmul_inputs(256, 256, 256)
    af, bf, cf = matmul_inputs(128, 128, 128, torch.float32)
    workloads = [
        (f"MatmulV5 ({source}, interpreter's config) 256^3", lambda: v5.MatmulV5()(256, 256, 256, a, b, c)),
        ("MatmulV5 split-K 4, 64x128x16, 3 stages 256^3",
         lambda: v5.MatmulV5(num_warps=4, block_m=64, block_n=128, block_k=16, num_stages=3,
                             split_k_factor=4)(256, 256, 256, a, b, c)),
        ("MatmulV3 pipeline 64x64x16 256^3",
         lambda: v3.MatmulV3(block_m=64, block_n=64, block_k=16, num_stages=3)(256, 256, 256, a, b, c)),
        ("Matmul (V0, jit tiles) 256^3", lambda: jit.Matmul()(256, 256, 256, a, b, c)),
        ("MatmulReluSimt fp32 128^3", lambda: simt.MatmulReluSimt()(128, 128, 128, af, bf, cf)),
    ]
    header = f"{'workload':52} {'checks':7} {'ms/call':>9} {'instructions':>13} {'instr/s':>12}"
    print(header)
    print("-" * len(header))
    worst_seed = 0.0
    for name, call in workloads:
        for checks in (False, True):
            tilus.option.debug.race_check(checks)
            tilus.option.debug.uninit_check(checks)
            seconds, count = measure(call, args.repeat)
            rate = count / seconds if seconds > 0 else float("inf")
            print(f"{name:52} {'on' if checks else 'off':7} {seconds * 1e3:9.2f} {count:13d} {rate:12.3g}")
            if name.startswith("MatmulV5 (") and checks:
                worst_seed = seconds
    tilus.option.debug.race_check(None)
    tilus.option.debug.uninit_check(None)
    verdict = "ok" if worst_seed < TARGET_S else "TOO SLOW"
    print(f"\nMatmulV5 256^3 with every check: {worst_seed:.3f} s (target < {TARGET_S} s): {verdict}")


if __name__ == "__main__":
    main()
