"""Processes that share one cache directory and start cold compile each kernel once
between them, and all get the same binary (issue 16, item 4)."""

import os
import subprocess
import sys
import time

import pytest

import tilus
from tilus import _C

if not _C.runtime.nvrtc_available():
    if os.environ.get("TILUS_REQUIRE_NVRTC"):
        raise RuntimeError("TILUS_REQUIRE_NVRTC is set but NVRTC cannot be loaded")
    pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc)", allow_module_level=True)

# A kernel big enough that a compile takes long enough for the processes to overlap.
SOURCE = 'extern "C" __global__ void k(float* x) {\n' + "".join(
    f"  x[{i}] = sinf(x[{i}]) * {i}.5f + cosf(x[{i + 1}]);\n" for i in range(400)) + "}\n"

CHILD = """
import hashlib, json, os, sys, time
from tilus import _C
gate = sys.argv[1]
source = open(sys.argv[2]).read()
open(gate + "." + str(os.getpid()), "w").close()   # ready
while not os.path.exists(gate):                    # start together
    time.sleep(0.002)
cache = _C.runtime.compile_cache()
cubin = cache.get_or_compile(source, "k.cu", "sm_80", [])
stats = cache.stats()
print(json.dumps({"sha": hashlib.sha256(cubin).hexdigest(), "compiles": stats["compiles"],
                  "disk_hits": stats["disk_hits"], "waits": stats["cross_process_waits"]}))
"""


@pytest.mark.parametrize("processes", [4])
def test_cold_processes_compile_each_kernel_once(tmp_path, processes):
    import json

    cache, gate = tmp_path / "cache", tmp_path / "go"
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    here = os.path.dirname(os.path.dirname(tilus.__file__))
    env = dict(os.environ, TILUS_CACHE_DIR=str(cache),
               PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, str(child), str(gate), str(source)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(processes)]
    deadline = time.time() + 60
    while len(list(tmp_path.glob("go.*"))) < processes and time.time() < deadline:
        time.sleep(0.01)
    gate.write_text("")
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["compiles"] for r in results) == 1, results
    assert sum(r["disk_hits"] for r in results) == processes - 1, results
    assert len({r["sha"] for r in results}) == 1, results
    # one entry on disk, whole (its header says its payload size and hash), beside its lock
    [entry] = list((cache / "cubin").glob("*/*.cubin"))
    assert entry.with_name(entry.name + ".lock").exists()
    assert not list((cache / "cubin").glob("*/*.tmp.*"))
    assert entry.stat().st_size > 64
