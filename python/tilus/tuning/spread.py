"""Tuning spread over GPUs: one process times a key's configurations on every visible
GPU identical to the key's (same name and architecture) at once.

Opt-in (``tilus.option.tuning(spread=True)``, ``TILUS_TUNE_SPREAD=1``): other work
running on those GPUs would slow some candidates and bias the choice. Each device gets
one thread and its own bench: on the key's own device the usual scratch copies of the
written arguments; on the others a copy of every tensor argument (a kernel on cuda:1
cannot read cuda:0's memory without peer access), so the user's tensors are never
written and no device reads another's memory. The threads take candidates from one
queue (a fast device simply takes more), share the best time so far for pruning, and
the timings are merged; the winner is chosen exactly as on one device. Timing waits on
CUDA events with the GIL released (_C.autotune.time_runs), so the devices overlap.

A device whose bench cannot be set up (out of memory) leaves its share to the others
with a warning; the key's own device is required.
"""

from __future__ import annotations

import threading
import warnings
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from tilus import _C, option
from tilus.tuning.build import Failure


def list_devices() -> List[Tuple[int, str, str]]:
    """(ordinal, name, arch) of every visible GPU (tests replace this)."""
    out = []
    for d in range(_C.runtime.device_count()):
        info = _C.runtime.device_info(d)
        out.append((d, info["name"], info["arch"]))
    return out


def spread_devices(home: int, name: str, arch: str) -> List[int]:
    """The devices a tuning on `home` uses: `home` first, then, when the spread option
    is on, every other visible device of the same name and architecture."""
    if not option.get_tuning().spread:
        return [home]
    return [home] + [d for d, n, a in list_devices() if d != home and (n, a) == (name, arch)]


class SpreadScheduler:
    """Hands candidates to the device threads and collects what they measured."""

    def __init__(self, candidates: Sequence, prune: float,
                 progress: Optional[Callable[[int], None]] = None):
        self._queue = list(candidates)
        self._next = 0
        self._lock = threading.Lock()
        self._prune = prune
        self._progress = progress
        self.timings: Dict[int, float] = {}
        self.failures: Dict[int, Failure] = {}
        self.measured_on: Dict[int, int] = {}  # candidate index -> device
        self.dropped: Dict[int, str] = {}      # device -> why it timed nothing

    def _take(self):
        with self._lock:
            if self._next >= len(self._queue):
                return None, 0.0
            candidate = self._queue[self._next]
            self._next += 1
            best = min(self.timings.values(), default=0.0)
            return candidate, (best * self._prune if self._prune and best else 0.0)

    def _done(self, candidate, device: int, time_ms: Optional[float], failure=None):
        with self._lock:
            if failure is None:
                self.timings[candidate.index] = time_ms
            else:
                self.failures[candidate.index] = failure
            self.measured_on[candidate.index] = device
            done = len(self.timings) + len(self.failures)
        if self._progress is not None:
            self._progress(done)

    def _work(self, device: int, make_bench: Callable[[int], object]):
        bench = make_bench(device)
        try:
            while True:
                candidate, prune_ms = self._take()
                if candidate is None:
                    return
                try:
                    self._done(candidate, device, bench.measure(candidate, prune_ms))
                except Exception as e:  # noqa: BLE001 - any launch failure skips it
                    self._done(candidate, device, None,
                               Failure("launch", f"{type(e).__name__}: {e}"))
        finally:
            bench.close()

    def run(self, devices: Sequence[int], make_bench: Callable[[int], object]):
        """Measure every candidate once, on whichever of `devices` is free first;
        make_bench(device) is called in that device's thread. Errors setting up the
        first device's bench propagate; another device's only drop that device."""
        if len(devices) == 1:
            self._work(devices[0], make_bench)
            return self
        errors: Dict[int, BaseException] = {}

        def worker(device):
            try:
                self._work(device, make_bench)
            except BaseException as e:  # noqa: BLE001 - reported below, by device
                errors[device] = e

        threads = [threading.Thread(target=worker, args=(d,), name=f"tilus-tune-cuda:{d}")
                   for d in devices[1:]]
        for t in threads:
            t.start()
        try:
            worker(devices[0])
        finally:
            for t in threads:
                t.join()
        if devices[0] in errors:
            raise errors[devices[0]]
        for device, e in errors.items():
            self.dropped[device] = f"{type(e).__name__}: {e}"
            warnings.warn(f"tilus: tuning could not use cuda:{device} ({type(e).__name__}: "
                          f"{e}); the other devices timed its share", RuntimeWarning,
                          stacklevel=3)
        # A device that failed after taking a candidate leaves it unmeasured: time it
        # on the first device now (its thread is finished).
        left = [c for c in self._queue
                if c.index not in self.timings and c.index not in self.failures]
        if left:
            self._queue, self._next = left, 0
            self._work(devices[0], make_bench)
        return self
