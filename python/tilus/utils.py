"""Helpers used inside and around scripts: ``cdiv`` and ``benchmark_func``."""

from __future__ import annotations

import statistics
from typing import Callable


def cdiv(a, b):
    """Ceiling division; works on Python ints and on runtime values inside a script."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return (a + b - 1) // b


def benchmark_func(fn: Callable[[], object], warmup: int = 10, repeat: int = 100,
                   flush_l2: bool = True) -> float:
    """Median latency of ``fn()`` in milliseconds, timed with CUDA events after
    ``warmup`` untimed runs; the L2 cache is flushed before each timed run."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("benchmark_func times GPU work with CUDA events and needs a GPU")
    for _ in range(warmup):
        fn()
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    torch.cuda.synchronize()
    for i in range(repeat):
        if flush is not None:
            flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
