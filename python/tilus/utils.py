"""Helpers used inside and around scripts: ``cdiv``, ``gcd``, ``dtype_to_torch``,
``benchmark_func``, and the rest of Tilus 0.2's ``tilus.utils`` arithmetic (``lcm``, ``prod``,
``idiv``, ``is_power_of_two``, ``floor_log2``, ``nbytes_from_nbits``, ``same_list``,
``dtype_from_torch``, ``clear_cache``), and ``check_tensor`` / ``check_same_device`` for the
torch-facing wrappers of kernels."""

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


def lcm(a: int, b: int) -> int:
    """Least common multiple of two Python ints."""
    return int(a) * int(b) // gcd(a, b) if a and b else 0


def prod(seq):
    """The product of the items (1 for none); Python ints, or runtime values in a script."""
    out = 1
    for v in seq:
        out = out * v
    return out


def idiv(a: int, b: int) -> int:
    """a // b, refusing a remainder (a ValueError): the exact division of two Python ints."""
    if a % b:
        raise ValueError(f"idiv: {a} is not a multiple of {b}")
    return a // b


def is_power_of_two(n: int) -> bool:
    """Whether n is a positive power of two."""
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def floor_log2(n: int) -> int:
    """The largest k with 2**k <= n (n >= 1)."""
    if n < 1:
        raise ValueError(f"floor_log2: {n} is not positive")
    return int(n).bit_length() - 1


def nbytes_from_nbits(nbits: int) -> int:
    """Bytes holding `nbits` bits."""
    return (int(nbits) + 7) // 8


def same_list(lhs, rhs) -> bool:
    """Whether two sequences hold equal items in the same order."""
    return len(lhs) == len(rhs) and all(a == b for a, b in zip(lhs, rhs))


def dtype_from_torch(torch_dtype):
    """The tilus type of a torch dtype (``torch.float16`` -> ``tilus.float16``); a
    ValueError for one tilus has no name for."""
    from tilus.lang.types import from_foreign

    dtype = from_foreign(torch_dtype)
    if dtype is None:
        raise ValueError(f"dtype_from_torch: tilus has no type for {torch_dtype}")
    return dtype


def clear_cache() -> None:
    """Delete the compiled kernels and tuning results tilus keeps on disk (the folder
    :func:`tilus.option.get_cache_dir` names); the next calls compile and tune again."""
    import shutil

    from tilus.option import get_cache_dir

    shutil.rmtree(get_cache_dir(), ignore_errors=True)


def check_tensor(t, name: str, shape, dtype, device, owner: str = "") -> None:
    """Refuses (ValueError naming `owner` and the parameter `name`) a tensor that a kernel
    reads or writes through a raw pointer unless it is contiguous and has exactly this
    shape, torch dtype and device: anything else would be misread or written past."""
    if tuple(t.shape) != tuple(shape) or t.dtype != dtype or t.device != device or not t.is_contiguous():
        prefix = f"{owner}: " if owner else ""
        raise ValueError(f"{prefix}{name} must be a contiguous {dtype} {list(shape)} tensor on {device}, got "
                         f"{'' if t.is_contiguous() else 'a non-contiguous '}{t.dtype} {list(t.shape)} on {t.device}")


def check_same_device(owner: str, **tensors) -> None:
    """Refuses (ValueError naming `owner` and the parameters) tensors a kernel takes
    together unless they all live on one device."""
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        names = list(devices)
        listed = " and ".join(names) if len(names) == 2 else ", ".join(names)
        raise ValueError(f"{owner}: {listed} must be on one device, got "
                         + ", ".join(f"{name} on {d}" for name, d in devices.items()))


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
    """Median latency of ``fn()`` in milliseconds, timed with CUDA events on torch's
    current stream after ``warmup`` untimed runs; the L2 cache is flushed before each
    timed run. The autotuner's timing (csrc/autotune/timing.h): the flush is repeated
    enough to outlast the host's work in ``fn()`` and runs the host outlasted anyway are
    timed again, so what is timed is the GPU's work, not Python's."""
    import torch

    from tilus import _C

    if not torch.cuda.is_available():
        raise RuntimeError("benchmark_func times GPU work with CUDA events and needs a GPU")
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda") if flush_l2 else None
    stream = torch.cuda.current_stream().cuda_stream
    torch.cuda.synchronize()
    timing = _C.autotune.time_runs(fn, stream, warmup, repeat,
                                   flush.data_ptr() if flush is not None else 0,
                                   flush.numel() if flush is not None else 0)
    return statistics.median(timing.times)
