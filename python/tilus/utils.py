"""Helpers used inside and around scripts: ``cdiv``, ``gcd``, ``dtype_to_torch`` and
``benchmark_func``."""

from __future__ import annotations

import statistics
from typing import Callable


def cdiv(a, b):
    """Ceiling division; works on Python ints and on runtime values inside a script."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return (a + b - 1) // b


def gcd(a: int, b: int) -> int:
    """Greatest common divisor of two Python ints (compile-time values in a script)."""
    import math

    return math.gcd(int(a), int(b))


def dtype_to_torch(dtype):
    """The torch dtype of a tilus type (``tilus.float16`` -> ``torch.float16``); a
    ValueError for a type torch has no counterpart of."""
    import torch

    from tilus.lang.types import row_of

    name = row_of(dtype).torch
    if not name or not hasattr(torch, name):
        raise ValueError(f"dtype_to_torch: torch has no type for tilus.{dtype.name}")
    return getattr(torch, name)


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
