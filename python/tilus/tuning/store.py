"""The disk store of tuning results: ``<cache>/tuning/<script>/<gpu>/<key>.json``.

Each entry is one small JSON file holding the winning configuration of one tuning key
(and what the tuning saw). The rules, in the order they matter:

* Readers never see half a file: entries are written to a temporary name in the same
  directory and renamed into place.
* Two processes never tune the same key at once: whoever misses takes an exclusive
  ``fcntl`` lock on ``<key>.json.lock``, looks again (the other may have just finished),
  and only then tunes and writes. The loser of the race waits and reuses the winner's
  entry; it compiles and times nothing.
* A damaged or unreadable entry is reported with a warning and tuned again (and
  overwritten).
* A directory that cannot be written (read-only, not a directory, no space) degrades to
  memory only, with one warning; tuning still works.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
import warnings
from contextlib import contextmanager
from typing import Callable, Optional, Tuple

FORMAT = 1

_warned = set()
_warned_lock = threading.Lock()


def _warn_once(key: str, message: str):
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=2)


class DamagedEntry(Exception):
    """A stored entry exists but cannot be used; the message says why."""


class TuningStore:
    """Entries of one tuned script under `root` (``<cache>/tuning/<script id>``); a root
    of None keeps nothing on disk."""

    def __init__(self, root: Optional[str]):
        self.root = root

    def path(self, *parts: str) -> Optional[str]:
        return None if self.root is None else os.path.join(self.root, *parts)

    # ------------------------------------------------------------------ reading
    def read(self, path: str, validate: Callable[[dict], object], report: bool = True):
        """validate(entry) for the entry at `path`; None when there is none. A damaged
        entry (unreadable, not JSON, or rejected by validate with DamagedEntry) is
        reported (when `report`) and treated as missing."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if report:
                self._damaged(path, f"cannot read it: {e.strerror or e}")
            return None
        try:
            # Bytes that are not UTF-8 are damage like any other (UnicodeDecodeError is
            # a ValueError), so the entry is tuned again and rewritten.
            entry = json.loads(data.decode("utf-8"))
            if not isinstance(entry, dict) or entry.get("format") != FORMAT:
                raise DamagedEntry(f"not a format-{FORMAT} tuning entry")
            return validate(entry)
        except (ValueError, DamagedEntry) as e:  # json.JSONDecodeError is a ValueError
            if report:
                self._damaged(path, str(e) or type(e).__name__)
            return None

    def _damaged(self, path: str, why: str):
        warnings.warn(f"tilus: tuning cache entry {path} is damaged ({why}); tuning again",
                      RuntimeWarning, stacklevel=2)

    # ------------------------------------------------------------------ writing
    def _unwritable(self, why: str):
        _warn_once(f"unwritable:{self.root}",
                   f"tilus: tuning cache directory {self.root} is not writable ({why}); tuning "
                   "results are kept in memory only. Set TILUS_CACHE_DIR to a writable "
                   "directory to keep them across runs.")

    @contextmanager
    def lock(self, path: str):
        """Holds an exclusive lock for the entry at `path`; yields False (and holds
        nothing) when the directory cannot be used."""
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            self._unwritable(e.strerror or str(e))
            yield False
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield True
        finally:
            os.close(fd)  # closing releases the lock

    def write(self, path: str, entry: dict) -> bool:
        temp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
        try:
            with open(temp, "w", encoding="utf-8") as f:
                json.dump(dict(entry, format=FORMAT), f, indent=1, sort_keys=True)
            os.replace(temp, path)
            return True
        except OSError as e:
            try:
                os.remove(temp)
            except OSError:
                pass
            if e.errno == errno.EISDIR:
                self._damaged(path, "it is a directory")
            else:
                self._unwritable(e.strerror or str(e))
            return False

    # ------------------------------------------------------------------ the protocol
    def get_or_create(self, path: Optional[str], validate: Callable[[dict], object],
                      create: Callable[[], Tuple[dict, object]]) -> Tuple[object, bool]:
        """(value, from_store). validate(entry) turns a stored entry into the value (or
        raises DamagedEntry); create() tunes and returns (entry to store, value). At most
        one process at a time runs create() for one path."""
        if path is None:
            return create()[1], False
        found = self.read(path, validate)
        if found is not None:
            return found, True
        with self.lock(path) as locked:
            if locked:
                # Another process may have written it while we waited; a damaged entry
                # was reported by the first read already.
                found = self.read(path, validate, report=False)
                if found is not None:
                    return found, True
            entry, value = create()
            if locked:
                self.write(path, entry)
        return value, False
