"""Tuning spread over GPUs (python/tilus/tuning/spread.py), scheduled over fake devices:
the real pipeline builds `Scale` with NVRTC; the benches are fakes that sleep, record
which device measured which configuration and when."""

import threading
import time

import numpy as np
import pytest

import tilus
from tilus.tuning import spread
from tests.autotune.kernels import Scale

FAKES = [(0, "Fake GPU", "sm_80"), (1, "Fake GPU", "sm_80"), (2, "Other GPU", "sm_90a"),
         (3, "Fake GPU", "sm_80")]


@pytest.fixture
def spread_on(monkeypatch):
    monkeypatch.setattr(spread, "list_devices", lambda: list(FAKES))
    tilus.option.tuning(spread=True)
    yield
    tilus.option.reset_tuning()


def test_only_identical_devices_and_only_when_asked(monkeypatch):
    monkeypatch.setattr(spread, "list_devices", lambda: list(FAKES))
    assert spread.spread_devices(1, "Fake GPU", "sm_80") == [1]  # off by default
    monkeypatch.setenv("TILUS_TUNE_SPREAD", "1")
    assert spread.spread_devices(1, "Fake GPU", "sm_80") == [1, 0, 3]
    assert spread.spread_devices(2, "Other GPU", "sm_90a") == [2]
    with pytest.raises(TypeError, match="spread must be a bool"):
        tilus.option.tuning(spread="yes")


def _recording_bench(fake_gpu, monkeypatch, sleep_s=0.15, broken_device=None):
    log, lock = [], threading.Lock()

    class Bench:
        def __init__(self, device, sig, values, owner, candidates, options):
            if device == broken_device:
                raise RuntimeError("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY")
            self.device = device
            self.closed = False

        def measure(self, candidate, prune_ms=0.0):
            start = time.monotonic()
            time.sleep(sleep_s)
            with lock:
                log.append((self.device, dict(candidate.config), start, time.monotonic(),
                            threading.current_thread().name))
            return 1.0 / (candidate.config["warps"] * candidate.config["block"])

        def close(self):
            self.closed = True

    import dataclasses

    from tests.autotune import fakes
    from tilus.tuning import tuner

    fake_gpu()  # a fresh cache directory and counters
    monkeypatch.setattr(tuner, "test_backend",
                        (dataclasses.replace(fakes.FAKE_TARGET, device=0), Bench))
    return log


def test_candidates_are_timed_once_each_spread_over_identical_devices(fake_gpu, spread_on,
                                                                     monkeypatch):
    log = _recording_bench(fake_gpu, monkeypatch)
    kernel = Scale(2.0)
    x = np.arange(100, dtype=np.float32)
    kernel(100, x)
    assert np.array_equal(x, np.arange(100, dtype=np.float32) * 2)
    configs = [tuple(sorted(c.items())) for _, c, *_ in log]
    assert len(configs) == 4 and len(set(configs)) == 4  # the four that fit, once each
    devices = {d for d, *_ in log}
    assert devices <= {0, 1, 3} and len(devices) >= 2, log  # never the other GPU model
    # The devices' threads overlapped in time.
    intervals = sorted((s, e) for _, _, s, e, _ in log)
    assert any(b[0] < a[1] for a, b in zip(intervals, intervals[1:])), intervals
    # The same winner as on one device: the largest configuration that fits.
    assert kernel.chosen_config(100, x) == {"warps": 2, "block": 64}


def test_a_device_that_cannot_set_up_leaves_its_share_to_the_others(fake_gpu, spread_on,
                                                                    monkeypatch):
    log = _recording_bench(fake_gpu, monkeypatch, sleep_s=0.01, broken_device=3)
    kernel = Scale(2.0)
    x = np.arange(100, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="could not use cuda:3"):
        kernel(100, x)
    assert {d for d, *_ in log} <= {0, 1}
    assert len(log) == 4


class _Candidate:
    def __init__(self, index):
        self.index = index
        self.config = {"i": index}


def test_scheduler_prunes_with_the_best_time_of_every_device():
    seen = []

    class Bench:
        def __init__(self, device):
            self.device = device

        def measure(self, candidate, prune_ms):
            seen.append((candidate.index, prune_ms))
            if candidate.index == 2:
                raise RuntimeError("launch failed")
            return float(candidate.index + 1)

        def close(self):
            pass

    scheduler = spread.SpreadScheduler([_Candidate(i) for i in range(6)], prune=2.0)
    scheduler.run([0], Bench)
    assert scheduler.timings == {0: 1.0, 1: 2.0, 3: 4.0, 4: 5.0, 5: 6.0}
    assert scheduler.failures[2].stage == "launch"
    assert seen[0] == (0, 0.0) and seen[1] == (1, 2.0)  # 2 x the best so far
