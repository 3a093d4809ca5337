"""What issue 14's decode targets ask of the memory, from bench_a16wx.py result files (no
GPU needed): for each decode row, the most any kernel that reads its packed weights, scales
and zero points once could beat cuBLAS by ("reach": cuBLAS time over the read ceiling of
those bytes, both timed in the same run with L2 flushed), the row's target, the share of the
read ceiling's speed that target asks for, and the share tilus reached.

    python benchmarks/a16wx_reach.py benchmarks/results/h100_bench_a16wx_decode*.json

A target above 1.00 of the ceiling cannot be met by any kernel under this timing (the
timing floor, ~4.4 us on these GPUs, weighs on the small weights and the ceiling alike).
"""

from __future__ import annotations

import json
import sys
from typing import Dict, List, Optional

BITS = {"uint4b": 4, "int4b": 4, "int8": 8, "float8_e4m3": 8, "int3b": 3, "float6_e3m2": 6}


def target(row: Dict) -> Optional[float]:
    """Issue 14's target for a decode row, as x cuBLAS (None: the issue sets none)."""
    name, m, n, k = row["weights"], row["m"], row["n"], row["k"]
    if name == "uint4b":
        if m == 16:
            return 2.5
        return 2.5 if (n, k) == (4096, 4096) else 3.0
    if name in ("int8", "float8_e4m3"):
        return 1.8 if m == 1 else None
    if name in ("int3b", "float6_e3m2"):
        return 0.9 * 16 / BITS[name]  # 0.9 of the byte-ratio ideal
    return None


def reach_rows(results: List[Dict]) -> List[Dict]:
    """The decode rows (m <= 16) that have a target, with reach and shares."""
    rows = []
    for r in results:
        if r["m"] > 16 or target(r) is None:
            continue
        packed = r["k"] * r["n"] * BITS[r["weights"]] / 8
        # the ceiling timed the packed bytes alone; scales and zero points read at its rate
        read_all = r["read_ms"] * r["weight_bytes"] / packed
        reach = r["cublas_ms"] / read_all
        rows.append({"weights": r["weights"], "m": r["m"], "n": r["n"], "k": r["k"],
                     "x_cublas": r["cublas_ms"] / r["tilus_ms"], "reach": reach, "target": target(r),
                     "target_share": target(r) / reach, "tilus_share": read_all / r["tilus_ms"]})
    return rows


def main(paths: List[str]) -> None:
    if not paths:
        sys.exit(__doc__)
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        print(f"{path} ({data.get('device', '?')})")
        print(f"  {'weights':12} {'m':>2} {'n x k':>11} {'x cuBLAS':>8} {'reach':>6} {'target':>6} "
              f"{'target/ceiling':>14} {'tilus/ceiling':>13}")
        for r in reach_rows(data["results"]):
            print(f"  {r['weights']:12} {r['m']:>2} {str(r['n']) + 'x' + str(r['k']):>11} {r['x_cublas']:8.2f} "
                  f"{r['reach']:6.2f} {r['target']:6.2f} {r['target_share']:14.2f} {r['tilus_share']:13.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
