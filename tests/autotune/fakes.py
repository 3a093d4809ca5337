"""A fake GPU for tuning tests on machines without one.

The real pipeline runs (transpile every configuration, generate CUDA and compile it with
NVRTC for sm_80 on native threads, drop what does not fit, store the winner on disk);
only the GPU is replaced: `FakeBench.measure` returns a time computed from the
configuration instead of launching, and winners run in the CPU interpreter.
"""

import json
import os
import subprocess
import sys
import time

from tilus.tuning import tuner
from tilus.tuning.build import GpuTarget

FAKE_TARGET = GpuTarget(device=-1, name="Fake GPU", arch="sm_80", smem_limit=8 * 1024,
                        max_threads=1024)


def default_cost(config: dict) -> float:
    """Bigger is faster, so the winner is the largest configuration that works."""
    score = 1.0
    for value in config.values():
        if isinstance(value, int) and not isinstance(value, bool):
            score *= value
    return 1.0 / score


class FakeBench:
    cost = staticmethod(default_cost)
    fail_launch = staticmethod(lambda config: False)
    sleep_s = 0.0
    measured = []  # configurations measured in this process, in order

    def __init__(self, device, sig, values, owner, candidates, options):
        self.options = options

    def measure(self, candidate, prune_ms=0.0):
        if self.fail_launch(candidate.config):
            raise RuntimeError("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
        time.sleep(self.sleep_s)
        type(self).measured.append(dict(candidate.config))
        return self.cost(candidate.config)

    def close(self):
        pass


def install(monkeypatch=None, target=FAKE_TARGET, **bench_attrs):
    """Route every tuning through the fake GPU; returns the bench class."""
    bench = type("Bench", (FakeBench,), {k: (staticmethod(v) if callable(v) else v)
                                         for k, v in bench_attrs.items()})
    bench.measured = []
    if monkeypatch is not None:
        monkeypatch.setattr(tuner, "test_backend", (target, bench))
    else:
        tuner.test_backend = (target, bench)
    return bench


def report(path, **values):
    """Subprocesses write what they saw as JSON for the parent test to check."""
    with open(path, "w") as f:
        json.dump(values, f)


def counters():
    import tilus
    from tilus import _C

    return {"tilus": dict(tilus.autotune.STATS), "cache": _C.runtime.compile_cache().stats(),
            "pid": os.getpid()}


def start_child(script: str, cache_root, report_path, *args) -> subprocess.Popen:
    """Start tests/autotune/<script> in a new interpreter using the cache at cache_root."""
    env = dict(os.environ, TILUS_CACHE_DIR=str(cache_root), TILUS_PROGRESS="0")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), script)
    return subprocess.Popen([sys.executable, path, str(report_path), *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish_child(process: subprocess.Popen, report_path, timeout=300) -> dict:
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output
    with open(report_path) as f:
        return json.load(f)
