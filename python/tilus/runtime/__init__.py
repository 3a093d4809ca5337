"""GPU runtime: code generation, NVRTC compilation and launches (see launcher.py)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def driver_available() -> bool:
    """Whether a CUDA driver and at least one GPU are present."""
    try:
        from tilus import _C

        info = _C.runtime.current_device_info()
        return bool(info)
    except Exception:
        return False
