"""Native pieces of the tuner that need no GPU: the parallel build (NVRTC only) and the
analysis of which arguments a program writes."""

import numpy as np
import pytest

import tilus
from tilus import _C, float32, int32

from .kernels import Copy, MatmulAccumulate, Scale

needs_nvrtc = pytest.mark.skipif(not _C.runtime.nvrtc_available(), reason="needs NVRTC")


def _programs(tuned, *args):
    programs = []
    for i in range(len(tuned.configs)):
        try:
            programs.append(tuned.instance(i).compile(*args).program)
        except tilus.ScriptError:
            pass
    return programs


@needs_nvrtc
def test_build_all_compiles_checks_limits_and_reports_progress(cache_dir):
    programs = _programs(Scale(2.0), 100, np.zeros(100, np.float32))
    done = []
    results = _C.autotune.build_all(programs, True, "sm_80", threads=3, smem_limit=8 * 1024,
                                    progress=done.append)
    statuses = [meta["status"] for _, meta in results]
    assert statuses == ["ok", "ok", "unfit", "ok", "ok", "unfit"]
    for payload, meta in results:
        if meta["status"] == "ok":
            assert payload[:4] == b"\x7fELF" and meta["compile_ms"] > 0
            assert meta["threads"] in (32, 64) and "__global__" in meta["source"]
        else:
            assert payload == ("needs 262144 bytes of shared memory per block; this GPU "
                               "allows 8192")
    assert done[-1] == len(programs) and done == sorted(done)
    cache = _C.runtime.compile_cache()
    assert cache.stats()["compiles"] == 4
    # The binaries sit where a launch looks: same request as runtime/launcher.py makes.
    payload, meta = results[0]
    assert cache.get_or_compile(meta["source"], meta["name"], "sm_80") == payload
    assert cache.stats()["memory_hits"] == 1


@needs_nvrtc
def test_build_all_reports_codegen_and_compile_errors(cache_dir):
    copies = _programs(Copy(), 64, np.zeros(64, np.float32), np.zeros(64, np.float32))
    results = _C.autotune.build_all(copies, True, "sm_80")
    assert [m["status"] for _, m in results] == ["codegen", "ok", "codegen", "ok"]
    assert "print_tensor of shared tensors runs only in the CPU interpreter" in results[0][0]
    [(message, meta)] = _C.autotune.build_all(copies[1:2], True, "sm_not_an_arch")
    assert meta["status"] == "compile" and "sm_not_an_arch" in message


@needs_nvrtc
def test_build_all_thread_limits_and_empty_input(cache_dir):
    assert _C.autotune.build_all([], True, "sm_80") == []
    programs = _programs(Scale(1.0), 100, np.zeros(100, np.float32))
    one_warp, two_warps = programs[0], programs[3]
    results = _C.autotune.build_all([one_warp, two_warps], True, "sm_80", threads=1,
                                    max_threads=32)
    assert [m["status"] for _, m in results] == ["ok", "unfit"]
    assert results[1][0] == "needs 64 threads per block; this GPU allows 32"


def test_build_all_progress_errors_propagate():
    programs = _programs(Scale(1.0), 100, np.zeros(100, np.float32))[:1]

    def boom(done):
        raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        _C.autotune.build_all(programs, True, "sm_80", progress=boom)


def _written(tuned, *args):
    return [list(_C.autotune.written_params(p)) for p in _programs(tuned, *args)]


def test_written_params_of_simple_kernels():
    x = np.zeros(64, np.float32)
    assert set(map(tuple, _written(Scale(1.0), 64, x))) == {(False, True)}
    assert set(map(tuple, _written(Copy(), 64, x, x))) == {(False, False, True)}
    a = np.zeros((64, 64), np.float16)
    c = np.zeros((64, 64), np.float32)
    written = _written(MatmulAccumulate(), 64, 64, 64, a, a, c)
    assert set(map(tuple, written)) == {(False, False, False, False, True)}


def test_written_params_of_split_k_ignores_its_semaphores(example):
    tuned = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=64, block_n=128,
                                                 block_k=32, num_stages=3)
    a = np.zeros((64, 64), np.float16)
    assert set(map(tuple, _written(tuned, 64, 64, 64, a, a, a))) == \
        {(False, False, False, True)}


class ThroughAVariable(tilus.Script):
    """Writes through a pointer variable derived from x_ptr after a loop; reads y."""

    def __init__(self):
        super().__init__()

    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        p: ~float32 = y_ptr
        for i in range(2):
            p = x_ptr
        g = self.global_view(p, dtype=float32, shape=[n])
        r = self.global_view(y_ptr, dtype=float32, shape=[n])
        self.store_global(g, self.load_global(r, offsets=[0], shape=[32]), offsets=[0])


def test_written_params_follows_variables_conservatively():
    x = np.zeros(32, np.float32)
    program = ThroughAVariable().compile(32, x, x).program
    # p may hold y_ptr (its initial value) or x_ptr: both may be written.
    assert list(_C.autotune.written_params(program)) == [False, True, True]


@needs_nvrtc
def test_builds_compile_in_worker_processes_with_the_same_results(cache_dir):
    worker = _C.autotune.compile_worker()
    assert worker.endswith("tilus-compile-worker")  # installed next to _C
    programs = _programs(Scale(2.0), 100, np.zeros(100, np.float32))
    via_workers = _C.autotune.build_all(programs, True, "sm_80", threads=2, smem_limit=8 * 1024)
    assert _C.autotune.compile_workers_started() >= 1  # started now, or kept from an earlier build
    # Same binaries as compiled in the building threads themselves (no workers).
    _C.runtime.compile_cache().clear_memory()
    tilus.option.cache_dir("")
    try:
        _C.autotune.set_compile_worker("")
        in_threads = _C.autotune.build_all(programs, True, "sm_80", threads=2, smem_limit=8 * 1024)
    finally:
        _C.autotune.set_compile_worker(worker)
    assert [r[0] for r in via_workers] == [r[0] for r in in_threads]
    # A compile error crosses the process boundary with NVRTC's message.
    copies = _programs(Copy(), 64, np.zeros(64, np.float32), np.zeros(64, np.float32))
    [(message, meta)] = _C.autotune.build_all(copies[1:2], True, "sm_not_an_arch")
    assert meta["status"] == "compile" and "sm_not_an_arch" in message


@needs_nvrtc
def test_an_unusable_worker_executable_falls_back_to_compiling_in_the_thread(cache_dir, tmp_path):
    worker = _C.autotune.compile_worker()
    broken = tmp_path / "tilus-compile-worker"
    broken.write_text("#!/bin/sh\nexit 3\n")  # starts, then dies without answering
    broken.chmod(0o755)
    programs = _programs(Scale(2.0), 100, np.zeros(100, np.float32))
    try:
        _C.autotune.set_compile_worker(str(broken))
        results = _C.autotune.build_all(programs, True, "sm_80", threads=2, smem_limit=8 * 1024)
    finally:
        _C.autotune.set_compile_worker(worker)
    assert [m["status"] for _, m in results] == ["ok", "ok", "unfit", "ok", "ok", "unfit"]
    assert all(p[:4] == b"\x7fELF" for p, m in results if m["status"] == "ok")


@needs_nvrtc
def test_a_forked_child_builds_with_its_own_workers(cache_dir):
    import multiprocessing

    programs = _programs(Scale(2.0), 100, np.zeros(100, np.float32))
    parent = _C.autotune.build_all(programs, True, "sm_80", threads=2, smem_limit=8 * 1024)
    started_before_fork = _C.autotune.compile_workers_started()
    assert started_before_fork >= 1

    def child(queue):
        _C.runtime.compile_cache().clear_memory()
        tilus.option.cache_dir("")
        results = _C.autotune.build_all(programs, True, "sm_80", threads=2, smem_limit=8 * 1024)
        queue.put(([r[0] for r in results], _C.autotune.compile_workers_started()))

    queue = multiprocessing.get_context("fork").Queue()
    process = multiprocessing.get_context("fork").Process(target=child, args=(queue,))
    process.start()
    cubins, started_in_child = queue.get(timeout=120)
    process.join(timeout=60)
    assert process.exitcode == 0
    assert cubins == [r[0] for r in parent]
    assert started_in_child > started_before_fork  # it did not talk to the parent's workers
    # and the parent's own workers still answer (a compile, not a cache hit)
    _C.runtime.compile_cache().clear_memory()
    tilus.option.cache_dir("")
    again = _C.autotune.build_all(programs[:1], True, "sm_80", threads=1)
    assert again[0][0] == parent[0][0]
    assert _C.autotune.compile_workers_started() == started_before_fork
