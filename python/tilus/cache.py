"""The disk caches under ``tilus.option.get_cache_dir()`` (``TILUS_CACHE_DIR``, default
``~/.cache/tilus``)::

    cubin/<2 hex>/<key>.cubin                      compiled kernels (runtime/compile_cache)
    tuning/<script>-<hash>/<gpu>/<key>.json        autotuning winners (tuning/store.py)

``python -m tilus cache info`` shows what is there; ``python -m tilus cache clear``
deletes it (``--cubins`` / ``--tuning`` for one part). Clearing only touches those two
folders, never other files in the root, and never this process's in-memory caches.
"""

from __future__ import annotations

import os
import shutil
from typing import Dict, Optional

from tilus import option

PARTS = {"cubins": "cubin", "tuning": "tuning"}


def _usage(folder: str, suffix: str) -> Dict[str, int]:
    files = size = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            if name.endswith(suffix):
                files += 1
                try:
                    size += os.path.getsize(os.path.join(parent, name))
                except OSError:
                    pass
    return {"files": files, "bytes": size}


def cache_info(root: Optional[str] = None) -> dict:
    """What the cache at `root` (default: the one in use) holds."""
    root = option.get_cache_dir() if root is None else root
    info = {"dir": root, "cubins": {"files": 0, "bytes": 0}, "tuning": {"files": 0, "bytes": 0},
            "scripts": []}
    if not root:
        return info
    info["cubins"] = _usage(os.path.join(root, "cubin"), ".cubin")
    tuning = os.path.join(root, "tuning")
    info["tuning"] = _usage(tuning, ".json")
    if os.path.isdir(tuning):
        for name in sorted(os.listdir(tuning)):
            entries = _usage(os.path.join(tuning, name), ".json")["files"]
            info["scripts"].append({"name": name, "entries": entries})
    return info


def clear_cache(root: Optional[str] = None, cubins: bool = True, tuning: bool = True) -> dict:
    """Delete the cached binaries and/or tuning results; returns what was removed."""
    root = option.get_cache_dir() if root is None else root
    removed = {}
    if not root:
        return removed
    for part, wanted in (("cubins", cubins), ("tuning", tuning)):
        folder = os.path.join(root, PARTS[part])
        if wanted and os.path.isdir(folder):
            removed[part] = _usage(folder, ".cubin" if part == "cubins" else ".json")
            shutil.rmtree(folder, ignore_errors=True)
    return removed


def format_info(info: dict) -> str:
    def mib(n):
        return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB"

    if not info["dir"]:
        return "tilus cache: memory only (TILUS_CACHE_DIR is empty)"
    lines = [f"tilus cache: {info['dir']}",
             f"  compiled kernels: {info['cubins']['files']} ({mib(info['cubins']['bytes'])})",
             f"  tuning results:   {info['tuning']['files']} ({mib(info['tuning']['bytes'])})"]
    for script in info["scripts"]:
        lines.append(f"    {script['name']}: {script['entries']} key(s)")
    return "\n".join(lines)
