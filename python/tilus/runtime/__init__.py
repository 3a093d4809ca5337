"""GPU runtime: code generation, NVRTC compilation, caching and launches."""

from __future__ import annotations

import functools

from tilus import _C
from tilus.runtime.nvrtc_paths import search_dirs

_C.runtime.set_nvrtc_search_dirs(search_dirs())


@functools.lru_cache(maxsize=None)
def driver_available() -> bool:
    """Whether a CUDA driver and at least one GPU are present."""
    return bool(_C.runtime.cuda_available())
