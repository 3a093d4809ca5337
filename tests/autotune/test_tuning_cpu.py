"""The whole tuning pipeline on a fake GPU (tests/autotune/fakes.py): real transpiling,
real parallel NVRTC builds for sm_80, the real disk store and its lock; only the timing
is faked and winners run in the CPU interpreter. Needs NVRTC, not a GPU."""

import json
import os
import warnings

import numpy as np
import pytest

import tilus
from tilus import NoValidConfigError, _C, float32, int32
from tilus.utils import cdiv
from tilus.tuning import tuner

from . import fakes
from .kernels import Copy, Scale

pytestmark = pytest.mark.skipif(not _C.runtime.nvrtc_available(), reason="needs NVRTC")


def _x(n=100):
    return np.arange(n, dtype=np.float32)


def _as_a_new_process():
    """Script classes give back the instance (and its winners) made before for the same
    arguments; a test that plays a later process or another machine drops them."""
    tilus.script.clear_instances()


def _entries(cache_dir):
    found = []
    for parent, _, names in os.walk(cache_dir / "tuning"):
        found += [os.path.join(parent, n) for n in names]
    return sorted(found)


def test_picks_the_fastest_and_drops_configs_that_do_not_fit(fake_gpu, cache_dir):
    bench = fake_gpu()
    kernel = Scale(3.0)
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not fitting the GPU is expected: no warning
        kernel(100, x)
    np.testing.assert_array_equal(x, _x() * 3)  # exactly one run, of the winner
    assert kernel.chosen_config(100, x) == {"warps": 2, "block": 64}
    # Product order; block=65536 needs 256 KiB of shared memory: dropped before timing.
    assert bench.measured == [{"warps": 1, "block": 32}, {"warps": 1, "block": 64},
                              {"warps": 2, "block": 32}, {"warps": 2, "block": 64}]
    [row] = kernel.tuning_table()
    assert row["how"] == "tuned" and row["skipped"] == 2 and row["runtime"] == {"n": 128}
    assert tilus.autotune.STATS["tunings"] == 1
    assert _C.runtime.compile_cache().stats()["compiles"] == 4  # the unfit ones never compile
    [entry, lock] = _entries(cache_dir)
    assert lock == entry + ".lock"
    stored = json.load(open(entry))
    assert stored["config_index"] == 4 and "needs 262144 bytes" in stored["skipped"]["2"]


def test_failing_configs_are_skipped_with_one_summary_warning(fake_gpu):
    fake_gpu()
    kernel = Copy()
    x, y = _x(64), np.zeros(64, np.float32)
    with pytest.warns(RuntimeWarning) as caught:
        kernel(64, x, y)
    messages = [str(w.message) for w in caught if "skipped" in str(w.message)]
    assert len(messages) == 1
    assert "skipped 2 of 6 configurations (2 could not be generated)" in messages[0]
    assert "print_tensor of shared tensors" in messages[0]
    np.testing.assert_array_equal(y, x)
    assert kernel.chosen_config(64, x, y) == {"warps": 2, "debug": False}


def test_configs_that_fail_to_launch_are_skipped(fake_gpu):
    fake_gpu(fail_launch=lambda config: config["warps"] == 2)
    kernel = Scale(2.0)
    with pytest.warns(RuntimeWarning, match=r"2 failed to launch"):
        kernel(100, _x())
    assert kernel.chosen_config(100, _x()) == {"warps": 1, "block": 64}


def test_when_nothing_works_the_error_lists_every_config(fake_gpu):
    fake_gpu(target=fakes.GpuTarget(-1, "Tiny GPU", "sm_80", smem_limit=64, max_threads=1024))
    with pytest.raises(NoValidConfigError) as error:
        Scale(1.0)(100, _x())
    text = str(error.value)
    assert isinstance(error.value, ValueError)
    assert "no configuration of Scale can run for these arguments on Tiny GPU" in text
    # Grouped by reason, each reason once, with its configurations and their count.
    for block in (32, 64, 65536):
        reason = f"[unfit] needs {block * 4} bytes of shared memory per block"
        assert text.count(reason) == 1
        group = text[text.index(reason):].splitlines()[1]
        assert group == (f"    2 configurations: {{'warps': 1, 'block': {block}}}, "
                         f"{{'warps': 2, 'block': {block}}}")


def test_buckets_tune_separately_and_share(fake_gpu):
    bench = fake_gpu()
    kernel = Scale(1.0)
    for n in (1, 4096, 3500):
        kernel(n, _x(n))
    assert tilus.autotune.STATS["tunings"] == 2  # 3500 reuses the winner of 4096
    assert sorted(row["runtime"]["n"] for row in kernel.tuning_table()) == [1, 4096]
    assert len(bench.measured) == 8


def test_custom_key(monkeypatch, fake_gpu):
    fake_gpu()
    monkeypatch.setattr(Scale, "_tilus_tune_key", staticmethod(lambda n, x: n > 1000),
                        raising=False)
    kernel = Scale(1.0)
    for n in (1, 50, 999, 4096):
        kernel(n, _x(n))
    assert tilus.autotune.STATS["tunings"] == 2
    assert sorted(r["runtime"]["custom"] for r in kernel.tuning_table()) == ["False", "True"]


def test_autotune_key_decorator(fake_gpu):
    fake_gpu()

    @tilus.autotune_key(lambda n, x: n // 1000)
    class Keyed(Scale):
        pass

    kernel = Keyed(1.0)
    for n in (1, 999, 1000):
        kernel(n, _x(n))
    assert tilus.autotune.STATS["tunings"] == 2
    with pytest.raises(TypeError, match="expected a function"):
        tilus.autotune_key(3)
    with pytest.raises(TypeError, match="decorates a tilus.Script subclass"):
        tilus.autotune_key(len)(int)


def test_later_calls_only_look_the_winner_up(monkeypatch, fake_gpu):
    fake_gpu()
    kernel = Scale(2.0)
    kernel(100, _x())

    def no_more_tuning(*args):
        raise AssertionError("tuned twice")

    monkeypatch.setattr(tuner, "choose", no_more_tuning)
    x = _x()
    kernel(100, x)
    np.testing.assert_array_equal(x, _x() * 2)


def test_chosen_config_and_compiled_do_not_run_the_kernel(fake_gpu):
    fake_gpu()
    kernel = Scale(5.0)
    x = _x()
    assert kernel.chosen_config(100, x) == {"warps": 2, "block": 64}
    handle = kernel.compiled(100, x)
    np.testing.assert_array_equal(x, _x())
    handle(100, x)
    np.testing.assert_array_equal(x, _x() * 5)


def test_second_process_compiles_and_tunes_nothing(cache_dir, tmp_path):
    first = fakes.finish_child(fakes.start_child("child.py", cache_dir, tmp_path / "1.json"),
                               tmp_path / "1.json")
    second = fakes.finish_child(fakes.start_child("child.py", cache_dir, tmp_path / "2.json"),
                                tmp_path / "2.json")
    assert first["correct"] and second["correct"]
    assert first["tilus"]["tunings"] == 1 and first["cache"]["compiles"] == 4
    assert second["tilus"]["tunings"] == 0 and second["tilus"]["store_hits"] == 1
    assert second["tilus"]["configs_built"] == 0
    assert second["cache"]["compiles"] == 0
    assert second["config"] == first["config"]
    assert second["table"][0]["how"] == "stored"


def test_two_processes_tuning_at_once_tune_once(cache_dir, tmp_path):
    children = [fakes.start_child("child.py", cache_dir, tmp_path / f"{i}.json", 0.2)
                for i in range(2)]
    reports = [fakes.finish_child(c, tmp_path / f"{i}.json") for i, c in enumerate(children)]
    assert sorted(r["tilus"]["tunings"] for r in reports) == [0, 1]
    assert sorted(r["tilus"]["store_hits"] for r in reports) == [0, 1]
    assert reports[0]["config"] == reports[1]["config"]
    assert all(r["correct"] for r in reports)
    entries = [e for e in _entries(cache_dir) if not e.endswith(".lock")]
    assert len(entries) == 1 and ".tmp." not in entries[0]
    json.load(open(entries[0]))


def test_a_corrupt_entry_is_rebuilt_with_a_warning(fake_gpu, cache_dir):
    fake_gpu()
    Scale(1.0)(100, _x())
    [entry] = [e for e in _entries(cache_dir) if e.endswith(".json")]
    good = json.load(open(entry))
    for damage in ("{not json", json.dumps(dict(good, config_index=99)),
                   json.dumps(dict(good, config="{'warps': 3}")), ""):
        with open(entry, "w") as f:
            f.write(damage)
        tunings = tilus.autotune.STATS["tunings"]
        _as_a_new_process()
        with pytest.warns(RuntimeWarning, match="is damaged"):
            Scale(1.0)(100, _x())
        assert tilus.autotune.STATS["tunings"] == tunings + 1
        assert json.load(open(entry))["config_index"] == good["config_index"]


def test_an_entry_that_is_not_utf8_is_rebuilt_with_a_warning(fake_gpu, cache_dir):
    fake_gpu()
    Scale(1.0)(100, _x())
    [entry] = [e for e in _entries(cache_dir) if e.endswith(".json")]
    good = json.load(open(entry))
    with open(entry, "wb") as f:
        f.write(b'{"format": 1, "config": "\xff\xfe"}')
    _as_a_new_process()
    with pytest.warns(RuntimeWarning, match="is damaged .*can't decode byte 0xff"):
        Scale(1.0)(100, _x())
    assert tilus.autotune.STATS["tunings"] == 2
    assert json.load(open(entry))["config_index"] == good["config_index"]  # rewritten
    _as_a_new_process()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Scale(1.0)(100, _x())
    assert tilus.autotune.STATS["store_hits"] == 1


def test_an_unreadable_entry_is_reported_and_tuning_still_works(fake_gpu, cache_dir):
    fake_gpu()
    Scale(1.0)(100, _x())
    [entry] = [e for e in _entries(cache_dir) if e.endswith(".json")]
    os.remove(entry)
    os.mkdir(entry)  # reading and replacing it both fail
    x = _x()
    _as_a_new_process()
    with pytest.warns(RuntimeWarning, match="is damaged") as caught:
        Scale(1.0)(100, x)  # same script, same key: the entry is that directory
    np.testing.assert_array_equal(x, _x())
    assert any("cannot read it" in str(w.message) for w in caught)
    assert any("it is a directory" in str(w.message) for w in caught)


def test_a_read_only_cache_dir_falls_back_to_memory(fake_gpu, tmp_path, monkeypatch):
    fake_gpu()
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    tilus.option.cache_dir(str(blocker / "cache"))
    try:
        x = _x()
        with pytest.warns(RuntimeWarning, match="not writable"):
            Scale(4.0)(100, x)
        np.testing.assert_array_equal(x, _x() * 4)
    finally:
        tilus.option.cache_dir(None)


def test_the_store_is_keyed_by_script_gpu_and_key(fake_gpu, cache_dir):
    fake_gpu()
    Scale(1.0)(100, _x())
    Scale(2.0)(100, _x())  # other constructor arguments: another script identity
    fake_gpu(target=fakes.GpuTarget(-1, "Other GPU", "sm_90a", 8 * 1024, 1024))
    _as_a_new_process()  # another machine
    Scale(1.0)(100, _x())
    entries = [os.path.relpath(e, cache_dir / "tuning") for e in _entries(cache_dir)
               if e.endswith(".json")]
    assert len(entries) == 3
    assert len({e.split(os.sep)[0] for e in entries}) == 2
    assert {e.split(os.sep)[1] for e in entries} == {"Fake_GPU-sm_80", "Other_GPU-sm_90a"}
    assert all(os.path.basename(e).startswith("scale-n128-") for e in entries)


def test_dump_writes_ir_and_source_of_every_config(fake_gpu, tmp_path):
    fake_gpu()
    tilus.option.dump(str(tmp_path / "dump"))
    try:
        Scale(1.0)(100, _x())
    finally:
        tilus.option.dump(None)
    folder = tmp_path / "dump" / "scale"
    names = sorted(os.listdir(folder))
    assert "0000.ir" in names and "0000.cu" in names and "configs.txt" in names
    assert "extern \"C\" __global__" in (folder / "0001.cu").read_text()
    assert "unfit: needs 262144 bytes" in (folder / "configs.txt").read_text()


def test_cpu_without_fake_gpu_runs_the_first_config_that_compiles(cache_dir):
    kernel = Copy()
    x, y = _x(64), np.zeros(64, np.float32)
    kernel(64, x, y)
    np.testing.assert_array_equal(y, x)
    assert kernel.chosen_config(64, x, y) == {"warps": 1, "debug": True}
    assert kernel.tuning_table()[0]["how"] == "first-that-compiles"
    assert tilus.autotune.STATS["tunings"] == 0 and not _entries(cache_dir)


@tilus.autotune("block", [16, 32, 64])
class PickyCopy(tilus.Script):
    """y = x; __init__ refuses blocks below `smallest`, as user scripts do."""

    def __init__(self, smallest, block):
        super().__init__()
        if block < smallest:
            raise ValueError(f"block {block} is below {smallest}")
        self.block = block

    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        x = self.load_global(gx, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        self.store_global(gy, x, offsets=[self.blockIdx.x * self.block])


def test_cpu_drops_configs_whose_init_raises(cache_dir):
    kernel = PickyCopy(32)
    x, y = _x(100), np.zeros(100, np.float32)
    kernel(100, x, y)
    np.testing.assert_array_equal(y, x)
    assert kernel.chosen_config(100, x, y) == {"block": 32}
    assert kernel.tuning_table()[0]["skipped"] == 1
    with pytest.raises(NoValidConfigError, match="block 64 is below 128"):
        PickyCopy(128)(100, x, y)


def test_argument_errors_name_the_parameter(fake_gpu):
    fake_gpu()
    kernel = Scale(2.0)
    x = _x()
    kernel(n=100, x_ptr=x)  # keywords work like positional arguments
    np.testing.assert_array_equal(x, _x() * 2)
    with pytest.raises(TypeError, match=r"takes 2 arguments \(n, x_ptr\) but 1 were given"):
        kernel(100)
    with pytest.raises(TypeError, match="argument 'n' is int32, got list"):
        kernel([100], x)
    with pytest.raises(TypeError, match="argument 'x_ptr' has dtype float64"):
        kernel(100, np.zeros(100))
    assert tilus.autotune.STATS["tunings"] == 1


def test_an_unhashable_custom_key_is_reported(monkeypatch, fake_gpu):
    fake_gpu()
    monkeypatch.setattr(Scale, "_tilus_tune_key", staticmethod(lambda n, x: [n]), raising=False)
    with pytest.raises(TypeError, match=r"the tuning key \[100\] is not hashable"):
        Scale(1.0)(100, _x())


class _FirstRow(tilus.Script):
    """Copies 32 elements of x's first row; span="all" views all m rows of x, which for a
    large m spans more elements than 32-bit offsets reach (the view's sizes are int32)."""

    def __init__(self, span):
        super().__init__()
        self.span = span

    def __call__(self, m: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[m if self.span == "all" else 1, 32])
        gy = self.global_view(y_ptr, dtype=float32, shape=[1, 32])
        self.store_global(gy, self.load_global(gx, offsets=[0, 0], shape=[1, 32]), offsets=[0, 0])


FirstRowOf = tilus.autotune("span", ["row", "all"])(type("FirstRowOf", (_FirstRow,), {}))
AllRowsFirst = tilus.autotune("span", ["all", "row"])(type("AllRowsFirst", (_FirstRow,), {}))


def test_configs_whose_views_pass_32_bit_offsets_are_unfit_not_timed(fake_gpu):
    bench = fake_gpu(cost=lambda config: 0.5 if config["span"] == "all" else 1.0)  # "all" would win
    x, y = _x(32), np.zeros(32, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # expected for these arguments: no warning
        FirstRowOf()(2**27, x, y)
    np.testing.assert_array_equal(y, x)
    assert bench.measured == [{"span": "row"}]
    [row] = FirstRowOf().tuning_table()
    assert row["skipped"] == 1
    FirstRowOf()(1000, _x(32000), y)  # another key: both fit, and "all" is faster
    assert bench.measured[1:] == [{"span": "row"}, {"span": "all"}]
    assert FirstRowOf().chosen_config(1000, _x(32000), y) == {"span": "all"}


def test_the_cpu_rule_passes_over_configs_whose_views_pass_32_bit_offsets():
    x, y = _x(32), np.zeros(32, np.float32)
    AllRowsFirst()(2**27, x, y)  # the first configuration ("all") would be refused
    np.testing.assert_array_equal(y, x)
    assert AllRowsFirst().chosen_config(2**27, x, y) == {"span": "row"}
