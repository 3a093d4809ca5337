"""Autotuning on a real GPU: parallel builds, timing on scratch copies, the disk store
across processes. Run on the device machine with `pytest -m gpu tests/autotune`."""

import time
import warnings

import pytest

import tilus
from tilus import NoValidConfigError, _C
from tilus.arguments import prepare_runtime_args
from tilus.tuning import build as tuning_build

from tests.operands import matmul_operands

from . import fakes
from .kernels import Copy, MatmulAccumulate, Scale

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or not _C.runtime.cuda_available():
    pytest.skip("needs an NVIDIA GPU", allow_module_level=True)


def _arange(n, factor=1.0):
    return torch.arange(n, dtype=torch.float32, device="cuda") * factor


def test_in_place_kernel_is_right_after_its_first_tuned_call(cache_dir):
    m, n, k = 200, 136, 96
    a, b = matmul_operands(m, n, k)
    c = torch.rand(m, n, device="cuda")
    a0, b0, c0 = a.clone(), b.clone(), c.clone()
    kernel = MatmulAccumulate()
    kernel(m, n, k, a, b, c)  # tunes 12 candidates, each run many times, then runs once
    torch.cuda.synchronize()
    torch.testing.assert_close(c, c0 + (a.double() @ b.double()).float(), rtol=1e-2, atol=1e-2)
    assert torch.equal(a, a0) and torch.equal(b, b0)
    assert tilus.autotune.STATS["tunings"] == 1 and tilus.autotune.STATS["configs_timed"] == 12
    [row] = kernel.tuning_table()
    assert row["how"] == "tuned" and row["time_ms"] > 0
    kernel(m, n, k, a, b, c)  # the winner again, no tuning: c0 + 2 a@b
    torch.testing.assert_close(c, c0 + 2 * (a.double() @ b.double()).float(), rtol=1e-2,
                               atol=1e-2)
    assert tilus.autotune.STATS["tunings"] == 1


def test_configs_that_do_not_fit_are_dropped_silently(cache_dir):
    kernel = Scale(3.0)
    x = _arange(1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel(1000, x)
    assert torch.equal(x, _arange(1000, 3.0))
    assert kernel.chosen_config(1000, x)["block"] != 65536
    assert tilus.autotune.STATS["configs_timed"] == 4


def test_configs_that_fail_to_build_are_skipped_with_one_warning(cache_dir):
    x, y = _arange(64), torch.zeros(64, device="cuda")
    with pytest.warns(RuntimeWarning, match=r"skipped 2 of 6 configurations \(2 could not be"):
        Copy()(64, x, y)
    assert torch.equal(y, x)


def test_configs_that_fail_to_compile_are_skipped(cache_dir, monkeypatch):
    real_build_all = _C.autotune.build_all

    def build_all_with_one_nvrtc_error(programs, *args, **kwargs):
        results = real_build_all(programs, *args, **kwargs)
        message = "NVRTC compilation of scale.cu failed:\nscale.cu(3): error: injected"
        return [(message, dict(results[0][1], status="compile"))] + results[1:]

    monkeypatch.setattr(tuning_build._C.autotune, "build_all", build_all_with_one_nvrtc_error)
    x = _arange(100)
    with pytest.warns(RuntimeWarning, match="1 failed to compile"):
        Scale(2.0)(100, x)
    assert torch.equal(x, _arange(100, 2.0))


def test_when_nothing_fits_the_configs_are_grouped_under_the_reason(cache_dir):
    with pytest.raises(NoValidConfigError) as error:
        Scale(1.0, block=65536)(100, _arange(100))
    message = str(error.value)
    # one reason, said once, with the configurations it rejected counted and listed
    assert message.count("needs 262144 bytes of shared memory per block") == 1, message
    assert "2 configurations: {'warps': 1}, {'warps': 2}" in message, message


def test_keys_are_bucketed(cache_dir):
    kernel = Scale(2.0)
    for n in (1, 4096, 3500):
        x = _arange(n)
        kernel(n, x)
        assert torch.equal(x, _arange(n, 2.0))
    assert tilus.autotune.STATS["tunings"] == 2
    assert sorted(r["runtime"]["n"] for r in kernel.tuning_table()) == [1, 4096]


def test_second_process_compiles_nothing_and_tunes_nothing(cache_dir, tmp_path):
    first = fakes.finish_child(fakes.start_child("child_gpu.py", cache_dir, tmp_path / "1.json"),
                               tmp_path / "1.json")
    second = fakes.finish_child(fakes.start_child("child_gpu.py", cache_dir, tmp_path / "2.json"),
                                tmp_path / "2.json")
    assert first["correct"] and second["correct"]
    assert first["tilus"]["tunings"] == 1 and first["cache"]["compiles"] == 4
    assert second["tilus"]["tunings"] == 0 and second["tilus"]["store_hits"] == 1
    assert second["cache"]["compiles"] == 0
    assert second["cache"]["disk_hits"] == 1  # only the winner's binary is loaded
    assert second["config"] == first["config"]


def test_two_processes_tuning_at_once(cache_dir, tmp_path):
    children = [fakes.start_child("child_gpu.py", cache_dir, tmp_path / f"{i}.json")
                for i in range(2)]
    reports = [fakes.finish_child(c, tmp_path / f"{i}.json") for i, c in enumerate(children)]
    assert sorted(r["tilus"]["tunings"] for r in reports) == [0, 1]
    assert reports[0]["config"] == reports[1]["config"]
    assert all(r["correct"] for r in reports)


def test_compiled_handle(cache_dir):
    kernel = Scale(3.0)
    x = _arange(1000)
    handle = kernel.compiled(1000, x)  # tunes and builds, runs nothing on x
    torch.cuda.synchronize()
    assert torch.equal(x, _arange(1000))
    stats = _C.runtime.compile_cache().stats()
    handle(1000, x)
    assert torch.equal(x, _arange(1000, 3.0))
    assert _C.runtime.compile_cache().stats() == stats  # nothing compiled or looked up


def test_a_host_stall_is_not_timed(cache_dir):
    # A run whose host side stalls (20 ms here) outlasts its flush: the GPU would idle
    # inside the timed region. Such runs are dropped and timed again, and a stall does not
    # prune: pruning judges the first two kept runs.
    y = torch.zeros(1 << 16, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    flush = _C.autotune.ScratchBuffer(0, 64 << 20)
    calls, total = [], 0

    def run(stalls):
        calls.append(None)
        if len(calls) in stalls:
            time.sleep(0.02)
        y.add_(1)

    for stalls in ({3}, {3, 4}):  # the first timed run; the first two
        calls.clear()
        torch.cuda.synchronize()
        timing = _C.autotune.time_runs(lambda: run(stalls), stream, 2, 6, flush.address, flush.bytes,
                                       prune_ms=5.0)
        assert len(timing.times) == 6 and max(timing.times) < 5.0, timing.times
        assert timing.dropped >= len(stalls) and len(calls) == 2 + 6 + timing.dropped
        total += len(calls)
    torch.cuda.synchronize()
    assert torch.all(y == total)


def test_a_host_slower_than_one_flush_is_covered_by_more_flushes(cache_dir):
    # Every launch takes the host 0.8 ms, many times one 64 MB flush (16-25 us; up to 64
    # flushes a run cover it): without more flushes before each run, each would time about
    # 0.8 ms of host time for a kernel of microseconds.
    y = torch.zeros(1 << 16, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    flush = _C.autotune.ScratchBuffer(0, 64 << 20)

    def run():
        time.sleep(0.0008)
        y.add_(1)

    timing = _C.autotune.time_runs(run, stream, 2, 8, flush.address, flush.bytes)
    assert len(timing.times) == 8 and timing.most_flushes > 1
    # Uncovered, every run would time ~0.75 ms or more; covered, the kernel's few us, or
    # 0.21-0.25 ms when other test processes share the GPU (seen with 14). Judged on the
    # median, between the two.
    assert sorted(timing.times)[len(timing.times) // 2] < 0.45, timing.times


def test_timing_and_scratch_primitives(cache_dir):
    y = torch.zeros(1 << 20, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    flush = _C.autotune.ScratchBuffer(0, 64 << 20)
    timing = _C.autotune.time_runs(lambda: y.add_(1), stream, 2, 7, flush.address, flush.bytes)
    assert len(timing.times) == 7 and all(t > 0 for t in timing.times)
    # 2 warm-ups, 7 kept runs, and one more for each run the host outlasted (a busy host
    # with other test processes drops some: seen once in 2800 tests with 14 processes)
    assert torch.all(y == 9 + timing.dropped)
    assert _C.autotune.median([3.0, 1.0, 2.0, 10.0]) == 2.5
    # pruned: judged on its first two timed runs, timed no further
    assert len(_C.autotune.time_runs(lambda: y.add_(1), stream, 0, 5, prune_ms=1e-6).times) == 2

    x = _arange(64)
    copy = _C.autotune.ScratchBuffer(0, x.numel() * 4, x.data_ptr() + 4)
    assert copy.address % 256 == (x.data_ptr() + 4) % 256
    copy.copy_from(x.data_ptr(), stream)
    out = torch.zeros(64, device="cuda")
    script = Copy(warps=1, debug=False)
    compiled = script.compile(64, x, out)
    args, tensors = prepare_runtime_args(script._signature(), [64, x, out], "Copy")
    compiled.run_gpu([args[0], copy.address, args[2]], tensors)
    torch.cuda.synchronize()
    assert torch.equal(out, x)


def test_benchmark_func():
    y = torch.zeros(1 << 20, device="cuda")
    assert tilus.utils.benchmark_func(lambda: y.add_(1), warmup=2, repeat=5) > 0
    assert torch.all(y >= 7)  # every run ran (retimed ones more than once)

    def slow_host():  # 0.5 ms of Python before a kernel of microseconds
        time.sleep(0.0005)
        y.add_(1)

    assert tilus.utils.benchmark_func(slow_host, warmup=2, repeat=6) < 0.2


def test_seed_v5_tunes_192_configs_and_is_correct(cache_dir, example):
    v5 = example("matmul_v5_splitk").MatmulV5()
    m, n, k = 256, 256, 1024
    a, b = matmul_operands(m, n, k)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    v5(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.double() @ b.double()).half(), rtol=1e-2, atol=1e-2)
    assert tilus.autotune.STATS["configs_built"] == 192
