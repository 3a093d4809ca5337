"""How NVRTC compilation of the 192 MatmulV5 configurations scales with parallelism:
the autotuner's build (build_all) at several thread counts, compiling in its own threads
("in process") and through its compile worker processes (the default), plus the same
sources compiled by a Python multiprocessing pool. A tool for build-time work.

    python benchmarks/nvrtc_scaling.py [--threads 1,4,8,16] [--arch sm_90a]

Prints, per run, the wall time and the median per-compile time. If per-compile time grows
with the thread count while processes keep it flat, NVRTC contends inside one process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time

from bench_autotune_build import cold_cuda_caches, load_v5

import tilus
from tilus import _C


def programs_of_all_configs(m=4096, n=4096, k=14336):
    import numpy as np

    from tilus.tuning.build import transpile_all

    tuned = load_v5()()
    a = np.zeros(1, np.float16)
    candidates, _ = transpile_all(tuned, tuned._sig, tuned._sig.jit_key([m, n, k, a, a, a]))
    return [c.compiled.program for c in candidates]


def build_with_threads(programs, arch, threads, worker):
    _C.autotune.set_compile_worker(worker)
    tilus.option.cache_dir("")
    _C.runtime.compile_cache().clear_memory()
    start = time.perf_counter()
    results = _C.autotune.build_all(programs, True, arch, threads=threads)
    wall = time.perf_counter() - start
    compile_ms = [meta["compile_ms"] for _, meta in results if meta["status"] == "ok"]
    return wall, statistics.median(compile_ms), len(compile_ms)


def _compile_one(job):
    source, name, arch = job
    start = time.perf_counter()
    _C.runtime.compile_to_cubin(source, name, arch, [], None)
    return (time.perf_counter() - start) * 1e3


def build_with_processes(sources, arch, processes):
    jobs = [(s["source"], s["name"], arch) for s in sources]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        pool.map(_compile_one, jobs[:processes])  # start-up and NVRTC load, untimed
        start = time.perf_counter()
        times = pool.map(_compile_one, jobs, chunksize=1)
        wall = time.perf_counter() - start
    return wall, statistics.median(times), len(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,4,8,16")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--serial-count", type=int, default=24)
    args = parser.parse_args()
    cold_cuda_caches()
    tilus.option.progress(False)
    programs = programs_of_all_configs()
    sources = [_C.generate_cuda(p, True) for p in programs]
    print(f"{len(programs)} programs, {os.cpu_count()} CPUs, NVRTC {_C.runtime.nvrtc_version()}")
    print(f"{'how':<22}{'programs':>9}{'wall s':>9}{'median ms':>11}")
    worker = _C.autotune.compile_worker()
    for t in (int(x) for x in args.threads.split(",")):
        subset = programs if t > 1 else programs[:: max(1, len(programs) // args.serial_count)]
        for label, path in (("in process", ""), ("workers", worker)):
            if t == 1 and path:
                continue
            wall, med, count = build_with_threads(subset, args.arch, t, path)
            print(f"{f'threads={t} {label}':<22}{count:>9}{wall:>9.2f}{med:>11.0f}")
        _C.autotune.set_compile_worker(worker)
        if t > 1:
            wall, med, count = build_with_processes(sources, args.arch, t)
            print(f"{f'processes={t}':<22}{count:>9}{wall:>9.2f}{med:>11.0f}")


if __name__ == "__main__":
    main()
