"""Shared helpers for the benchmarks: timing, tables, result files."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import os
import sys
from typing import Callable, Dict, List

import torch

from tilus.utils import benchmark_func


ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_example(name: str):
    """Import examples/<name>.py as a module (its main() does not run)."""
    spec = importlib.util.spec_from_file_location(f"tilus_example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_ms(fn: Callable[[], object], warmup: int = 10, repeat: int = 50, flush_l2: bool = True) -> float:
    """Median of CUDA-event timings in milliseconds, L2 flushed before each run."""
    return benchmark_func(fn, warmup=warmup, repeat=repeat, flush_l2=flush_l2)


def print_table(title: str, headers: List[str], rows: List[List[object]]):
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
        return str(v)

    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print(f"\n## {title}")
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths)))
    for c in cells:
        print("  ".join(v.rjust(w) for v, w in zip(c, widths)))
    sys.stdout.flush()


def out_dir(argv: List[str]) -> str:
    if "--out" in argv:
        return argv[argv.index("--out") + 1]
    return os.environ.get("OUT", "/tmp")


def write_results(name: str, argv: List[str], results: List[Dict]):
    os.makedirs(out_dir(argv), exist_ok=True)
    path = os.path.join(out_dir(argv), f"{name}.json")
    with open(path, "w") as f:
        json.dump({"command": " ".join([sys.executable, os.path.relpath(sys.argv[0], ROOT)] + argv), "device": torch.cuda.get_device_name(),
                   "results": results}, f, indent=1)
    print(f"\nfull results: {path}")
