"""GPU runtime: code generation, NVRTC compilation, caching and launches."""

from __future__ import annotations

import functools

from tilus import _C
from tilus.runtime.nvrtc_paths import search_dirs

_C.runtime.set_nvrtc_search_dirs(search_dirs())


def _compile_worker_path() -> str:
    """The autotuner's compile worker process, installed next to _C; TILUS_COMPILE_WORKERS=0
    keeps every compile in the building threads."""
    import os

    if os.environ.get("TILUS_COMPILE_WORKERS", "1") == "0":
        return ""
    path = os.path.join(os.path.dirname(_C.__file__), "tilus-compile-worker")
    return path if os.access(path, os.X_OK) else ""


_C.autotune.set_compile_worker(_compile_worker_path())


@functools.lru_cache(maxsize=None)
def driver_available() -> bool:
    """Whether a CUDA driver and at least one GPU are present."""
    return bool(_C.runtime.cuda_available())
