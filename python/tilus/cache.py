"""The disk caches under ``tilus.option.get_cache_dir()`` (``TILUS_CACHE_DIR``, default
``~/.cache/tilus``; ``""``: memory only)::

    cubin/<2 hex>/<64 hex>.cubin                       compiled kernels (runtime/compile_cache)
    tuning/<script>-<16 hex>/<gpu>/<name>-<12 hex>.json  autotuning winners (tuning/store.py)

``python -m tilus cache info`` shows what is there; ``python -m tilus cache clear``
deletes it (``--cubins`` / ``--tuning`` for one part). Users keep other files in these
folders (notes, results of their own), so both commands look only at names tilus writes:
clearing removes exactly those (and the locks and stale temporary files of their
writers), then the folders of that layout left empty. It never touches this process's
in-memory caches.
"""

from __future__ import annotations

import os
import re
import time
from typing import Dict, Iterator, List, Optional, Tuple

from tilus import option

PARTS = {"cubins": "cubin", "tuning": "tuning"}

# The names the writers use: csrc/runtime/compile_cache.cc (key = sha256 hex, temp suffix
# ".tmp.<pid>.<n>"), tilus/tuning/identity.py (script_identity, slug, entry_name) and
# tilus/tuning/store.py (".lock", ".tmp.<pid>.<thread>"). tests/autotune check that
# what a real tuning writes is recognised.
_SLUG = r"[A-Za-z0-9_.=+-]+"
_TEMP = r"\.tmp\.\d+\.\d+"
_CUBIN_DIR = re.compile(r"[0-9a-f]{2}")
_CUBIN = re.compile(r"([0-9a-f]{64})\.cubin(\.lock|" + _TEMP + ")?")
_SCRIPT_DIR = re.compile(_SLUG + r"-[0-9a-f]{16}")
_GPU_DIR = re.compile(_SLUG)
_ENTRY = re.compile(_SLUG + r"-[0-9a-f]{12}\.json(\.lock|" + _TEMP + ")?")

# A writer renames its temporary file into place right after writing it; one this old
# was left by a process that died. Younger ones may belong to a writer still at work.
STALE_TEMP_SECONDS = 600


def _dirs(folder: str, pattern: "re.Pattern") -> Iterator[str]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if pattern.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
            yield entry.path


def _files(folder: str, pattern: "re.Pattern") -> Iterator[Tuple[str, "re.Match"]]:
    """(path, match) of the files in `folder` named like `pattern` (symlinks are not
    tilus's: it never makes them)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match and entry.is_file(follow_symlinks=False):
            yield entry.path, match


def _leaf_folders(root: str, part: str) -> Iterator[Tuple[str, List[str]]]:
    """(folder holding cache files, the folders above it up to the part's own folder)."""
    top = os.path.join(root, PARTS[part])
    if part == "cubins":
        for sub in _dirs(top, _CUBIN_DIR):
            yield sub, [top]
    else:
        for script in _dirs(top, _SCRIPT_DIR):
            for gpu in _dirs(script, _GPU_DIR):
                yield gpu, [script, top]


def _kind(part: str, folder: str, match: "re.Match") -> str:
    """"entry", "temp" (a writer's temporary file) or "lock" (an entry's builder lock)."""
    if part == "cubins":
        if match.group(2):
            return "lock" if match.group(2) == ".lock" else "temp"
        # A key is stored under its first two hex digits; anything else was not written here.
        return "entry" if match.group(1)[:2] == os.path.basename(folder) else ""
    suffix = match.group(1)
    return "entry" if not suffix else "lock" if suffix == ".lock" else "temp"


def _cache_files(root: str, part: str) -> Iterator[Tuple[str, str, List[str]]]:
    for folder, parents in _leaf_folders(root, part):
        for path, match in _files(folder, _CUBIN if part == "cubins" else _ENTRY):
            kind = _kind(part, folder, match)
            if kind:
                yield path, kind, [folder] + parents


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def cache_info(root: Optional[str] = None) -> dict:
    """What the cache at `root` (default: the one in use) holds."""
    root = option.get_cache_dir() if root is None else root
    info = {"dir": root, "cubins": {"files": 0, "bytes": 0}, "tuning": {"files": 0, "bytes": 0},
            "scripts": []}
    if not root:
        return info
    scripts: Dict[str, int] = {}
    for part in PARTS:
        for path, kind, folders in _cache_files(root, part):
            if kind != "entry":
                continue
            info[part]["files"] += 1
            info[part]["bytes"] += _size(path)
            if part == "tuning":
                name = os.path.basename(folders[1])
                scripts[name] = scripts.get(name, 0) + 1
    for script in _dirs(os.path.join(root, PARTS["tuning"]), _SCRIPT_DIR):
        name = os.path.basename(script)
        info["scripts"].append({"name": name, "entries": scripts.get(name, 0)})
    return info


def clear_cache(root: Optional[str] = None, cubins: bool = True, tuning: bool = True) -> dict:
    """Delete the cached binaries and/or tuning results. Returns, per part that held
    any entry, {"files": entries removed, "bytes": their size, "failed": entries that
    could not be removed, "error": the first reason (or "")}."""
    root = option.get_cache_dir() if root is None else root
    removed = {}
    if not root:
        return removed
    now = time.time()
    for part, wanted in (("cubins", cubins), ("tuning", tuning)):
        if not wanted:
            continue
        usage = {"files": 0, "bytes": 0, "failed": 0, "error": ""}
        folders = []
        for path, kind, parents in list(_cache_files(root, part)):
            for folder in parents:
                if folder not in folders:
                    folders.append(folder)
            if kind == "temp":
                try:
                    if now - os.lstat(path).st_mtime < STALE_TEMP_SECONDS:
                        continue
                except OSError:
                    continue
            size = _size(path)
            try:
                os.remove(path)
            except FileNotFoundError:
                continue  # someone else removed it meanwhile
            except OSError as e:
                if kind == "entry":
                    usage["failed"] += 1
                    usage["error"] = usage["error"] or f"{path}: {e.strerror or e}"
                continue
            if kind == "entry":
                usage["files"] += 1
                usage["bytes"] += size
        # Deepest first; a folder still holding anything (a user's file) stays.
        for folder in sorted(folders, key=lambda f: -f.count(os.sep)):
            try:
                os.rmdir(folder)
            except OSError:
                pass
        if usage["files"] or usage["failed"]:
            removed[part] = usage
    return removed


def format_info(info: dict) -> str:
    """The text ``python -m tilus cache info`` prints for a :func:`cache_info` result."""
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
