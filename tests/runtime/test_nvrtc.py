"""NVRTC compilation and the compile cache (tilus._C.runtime). Needs NVRTC, not a GPU."""

from __future__ import annotations

import importlib.util
import os

import pytest

from tilus._C import runtime

ELF_MAGIC = b"\x7fELF"

GOOD_KERNEL = r"""
extern "C" __global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
"""

BAD_KERNEL = r"""extern "C" __global__ void broken(float* out) {
  int fine = 1;
  float value = undefined_thing_xyz + 1.0f;
  out[0] = value + fine;
}
"""


def _candidate_nvrtc_dirs() -> list[str]:
    """The places the tilus package searches, computed here so the test stands alone."""
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "lib64"))
    dirs.append("/usr/local/cuda/lib64")
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        dirs += [os.path.join(root, "cu13", "lib"), os.path.join(root, "cuda_nvrtc", "lib")]
    torch_spec = importlib.util.find_spec("torch")
    if torch_spec and torch_spec.origin:
        dirs.append(os.path.join(os.path.dirname(torch_spec.origin), "lib"))
    return dirs


@pytest.fixture(scope="module", autouse=True)
def nvrtc():
    if not runtime.nvrtc_available():
        runtime.set_nvrtc_search_dirs(_candidate_nvrtc_dirs())  # a failed load is retried
    try:
        runtime.nvrtc_version()
    except RuntimeError as error:
        pytest.skip(f"NVRTC cannot be loaded: {error}")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The process-wide cache, pointed at a fresh directory through TILUS_CACHE_DIR."""
    cache = runtime.compile_cache()
    # read before TILUS_CACHE_DIR changes: a cache that has not resolved its folder yet
    # resolves it on this call, and would hand the next test this test's folder
    previous_dir = cache.cache_dir()
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("TILUS_CACHE_DIR", str(cache_dir))
    cache.set_cache_dir(None)  # re-reads TILUS_CACHE_DIR
    cache.clear_memory()
    cache.reset_stats()
    cache.take_warnings()
    yield cache
    cache.set_cache_dir(previous_dir)
    cache.clear_memory()
    cache.take_warnings()


def test_nvrtc_version():
    major, minor = runtime.nvrtc_version()
    assert major >= 11 and minor >= 0
    assert os.path.exists(runtime.nvrtc_library_path()) or "libnvrtc" in runtime.nvrtc_library_path()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compile_to_cubin_gives_elf(arch):
    cubin = runtime.compile_to_cubin(GOOD_KERNEL, "add_one.cu", arch)
    assert isinstance(cubin, bytes)
    assert cubin[:4] == ELF_MAGIC
    assert b"add_one" in cubin


def test_compile_with_options_and_headers():
    headers = [("tilus/test_twice.cuh", "#pragma once\n__device__ inline float twice(float x) { return 2 * x; }\n")]
    source = '#include "tilus/test_twice.cuh"\n' + GOOD_KERNEL.replace("+= 1.0f", "= twice(data[i])")
    cubin = runtime.compile_to_cubin(source, "twice.cu", "sm_80", ["--use_fast_math", "-lineinfo"], headers)
    assert cubin[:4] == ELF_MAGIC


def test_compile_error_shows_log_and_source_line():
    with pytest.raises(RuntimeError) as info:
        runtime.compile_to_cubin(BAD_KERNEL, "broken.cu", "sm_80")
    message = str(info.value)
    assert isinstance(info.value, runtime.CompileError)
    assert 'identifier "undefined_thing_xyz" is undefined' in message  # NVRTC's log
    assert "broken.cu(3): error" in message
    assert "broken.cu:3:" in message
    assert "float value = undefined_thing_xyz + 1.0f;" in message  # the offending line
    assert "int fine = 1;" in message  # with context


def test_cache_memory_hit_returns_identical_bytes(cache, tmp_path):
    assert cache.cache_dir() == str(tmp_path / "cache")
    first = cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80")
    second = cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80")
    assert first[:4] == ELF_MAGIC
    assert first == second
    stats = cache.stats()
    assert stats["compiles"] == 1
    assert stats["memory_hits"] == 1
    assert stats["disk_hits"] == 0
    path = cache.entry_path(cache.key(GOOD_KERNEL, "add_one.cu", "sm_80"))
    assert path.startswith(str(tmp_path / "cache" / "cubin"))
    assert os.path.isfile(path)
    with open(path, "rb") as f:
        assert f.read(8) == b"TILUSBIN"


def test_cache_key_covers_arch_and_options(cache):
    key = cache.key(GOOD_KERNEL, "add_one.cu", "sm_80")
    assert len(key) == 64
    assert key == cache.key(GOOD_KERNEL, "add_one.cu", "sm_80")
    assert key != cache.key(GOOD_KERNEL, "add_one.cu", "sm_90a")
    assert key != cache.key(GOOD_KERNEL, "add_one.cu", "sm_80", ["--use_fast_math"])
    assert key != cache.key(GOOD_KERNEL + "\n", "add_one.cu", "sm_80")


def test_cache_disk_hit_in_fresh_process(cache, tmp_path):
    first = cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80")
    fresh = runtime.CompileCache(str(tmp_path / "cache"))  # stands in for a new process
    assert fresh.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80") == first
    assert fresh.stats()["disk_hits"] == 1
    assert fresh.stats()["compiles"] == 0


def test_cache_rebuilds_corrupted_disk_entry(cache, tmp_path):
    first = cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80")
    path = cache.entry_path(cache.key(GOOD_KERNEL, "add_one.cu", "sm_80"))
    size = os.path.getsize(path)
    with open(path, "r+b") as f:  # flip bytes in the middle of the cubin
        f.seek(size // 2)
        chunk = f.read(16)
        f.seek(size // 2)
        f.write(bytes(b ^ 0xFF for b in chunk))
    cache.clear_memory()
    rebuilt = cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80")
    assert rebuilt == first
    stats = cache.stats()
    assert stats["corrupt_entries"] == 1
    assert stats["compiles"] == 2
    assert stats["disk_hits"] == 0
    warnings = cache.take_warnings()
    assert any("damaged" in w and path in w for w in warnings)
    # The entry on disk is good again.
    fresh = runtime.CompileCache(str(tmp_path / "cache"))
    assert fresh.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80") == first
    assert fresh.stats()["disk_hits"] == 1


def test_cache_rebuilds_truncated_disk_entry(cache):
    first = cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80")
    path = cache.entry_path(cache.key(GOOD_KERNEL, "add_one.cu", "sm_80"))
    os.truncate(path, 30)
    cache.clear_memory()
    assert cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80") == first
    assert cache.stats()["corrupt_entries"] == 1


def test_unwritable_cache_dir_falls_back_to_memory(cache, tmp_path, monkeypatch):
    # A directory below a regular file can never be created, even when running as root.
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("x")
    monkeypatch.setenv("TILUS_CACHE_DIR", str(blocker / "cache"))
    cache.set_cache_dir(None)
    cubin = cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80")
    assert cubin[:4] == ELF_MAGIC
    warnings = cache.warnings()
    assert len(warnings) == 1
    assert "not writable" in warnings[0] and "memory only" in warnings[0]
    assert cache.stats()["disk_write_failures"] == 1
    assert cache.get_or_compile(GOOD_KERNEL, "add_one.cu", "sm_80") == cubin
    assert cache.stats()["memory_hits"] == 1
    assert cache.take_warnings() == warnings
    assert cache.warnings() == []


def test_cache_compile_error_propagates(cache):
    with pytest.raises(runtime.CompileError, match="undefined_thing_xyz"):
        cache.get_or_compile(BAD_KERNEL, "broken.cu", "sm_80")
    assert cache.stats()["compiles"] == 0


def test_arch_string_for_capabilities():
    assert runtime.arch_string((9, 0)) == "sm_90a"
    assert runtime.arch_string((10, 0)) == "sm_100a"
    assert runtime.arch_string((8, 0)) == "sm_80"
    assert runtime.arch_string((8, 6)) == "sm_86"


def test_cuda_available_never_raises():
    assert runtime.cuda_available() in (True, False)


# 140 values live per thread in a 256-thread block: under __launch_bounds__(256) alone
# ptxas (NVRTC 13.0 and 13.5) keeps the array in local memory at 32 registers.
HEAVY_KERNEL = """#include "tilus/runtime.cuh"
extern "C" __global__ void TILUS_LAUNCH_BOUNDS(256) heavy(const float* x, float* y) {
  float v[140];
  #pragma unroll
  for (int i = 0; i < 140; ++i) v[i] = x[threadIdx.x + i * blockDim.x];
  #pragma unroll
  for (int r = 0; r < 4; ++r) {
    #pragma unroll
    for (int i = 0; i < 140; ++i) v[i] = v[i] * v[(i + r + 1) % 140] + 1.0f;
  }
  #pragma unroll
  for (int i = 0; i < 140; ++i) y[threadIdx.x + i * blockDim.x] = v[i];
}
"""


def test_compile_report_gives_ptxas_statistics():
    report = runtime.compile_report(GOOD_KERNEL, "add_one.cu", "sm_90a")
    assert report["cubin"][:4] == ELF_MAGIC
    assert 0 < report["registers"] <= 32
    assert report["spill_bytes"] == 0 and not report["min_blocks_retry"]
    assert "Used %d registers" % report["registers"] in report["log"]


def test_a_spilling_kernel_is_recompiled_for_one_block_per_sm_and_the_better_cubin_kept():
    plain = runtime.compile_report(HEAVY_KERNEL.replace("TILUS_LAUNCH_BOUNDS(256)", "__launch_bounds__(256)"),
                                   "heavy.cu", "sm_90a")  # what the policy's first compile sees
    forced = runtime.compile_report(HEAVY_KERNEL, "heavy.cu", "sm_90a", ["-DTILUS_MIN_BLOCKS_PER_SM=1"])
    chosen = runtime.compile_report(HEAVY_KERNEL, "heavy.cu", "sm_90a")
    assert not plain["min_blocks_retry"] and not forced["min_blocks_retry"]  # no macro / define given
    assert plain["spill_bytes"] > 0 and plain["registers"] < 255
    assert 0 <= forced["spill_bytes"] < plain["spill_bytes"]
    assert chosen["min_blocks_retry"]
    assert (chosen["spill_bytes"], chosen["registers"]) == (forced["spill_bytes"], forced["registers"])


def test_a_retry_that_does_not_help_keeps_the_first_cubin():
    # 1024 threads: 64 registers per thread whatever the bounds say, so both compiles spill alike
    full_block = HEAVY_KERNEL.replace("TILUS_LAUNCH_BOUNDS(256)", "TILUS_LAUNCH_BOUNDS(1024)")
    plain = runtime.compile_report(full_block.replace("TILUS_LAUNCH_BOUNDS(1024)", "__launch_bounds__(1024)"),
                                   "full.cu", "sm_90a")
    chosen = runtime.compile_report(full_block, "full.cu", "sm_90a")
    assert chosen["spill_bytes"] > 0 and chosen["registers"] <= 64 and not chosen["min_blocks_retry"]
    assert chosen["cubin"] == plain["cubin"]


def test_a_min_blocks_value_given_by_the_caller_is_kept():
    # (256, 2): at most 128 registers; the policy must not replace the caller's 2 by 1
    given = runtime.compile_report(HEAVY_KERNEL, "heavy.cu", "sm_90a", ["-DTILUS_MIN_BLOCKS_PER_SM=2"])
    assert given["registers"] <= 128 and not given["min_blocks_retry"]
