"""tilus.option, the compiled-kernel handle on the CPU, and `python -m tilus cache`."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tilus
from tilus import option
from tilus.cache import cache_info, clear_cache

from .kernels import Scale


def test_build_threads(monkeypatch):
    monkeypatch.setenv("TILUS_BUILD_THREADS", "3")
    assert option.get_build_threads() == 3
    option.build_threads(5)
    try:
        assert option.get_build_threads() == 5
    finally:
        option.build_threads(None)
    monkeypatch.delenv("TILUS_BUILD_THREADS")
    assert option.get_build_threads() >= 1
    with pytest.raises(ValueError, match="positive int"):
        option.build_threads(0)
    monkeypatch.setenv("TILUS_BUILD_THREADS", "many")
    with pytest.raises(ValueError, match="TILUS_BUILD_THREADS='many' is not a valid int"):
        option.get_build_threads()


def test_tuning_options(monkeypatch):
    assert option.get_tuning() == option.TuningOptions()
    monkeypatch.setenv("TILUS_TUNE_REPEAT", "25")
    monkeypatch.setenv("TILUS_TUNE_FLUSH_L2", "0")
    assert option.get_tuning().repeat == 25 and not option.get_tuning().flush_l2
    option.tuning(warmup=7, prune=0)
    try:
        assert (option.get_tuning().warmup, option.get_tuning().prune) == (7, 0.0)
    finally:
        option.reset_tuning()
    with pytest.raises(ValueError, match="repeat must be a number >= 1"):
        option.tuning(repeat=0)


def test_cache_dir_and_dump_and_progress(tmp_path, monkeypatch):
    before = option.get_cache_dir()
    option.cache_dir(tmp_path / "c")
    try:
        assert option.get_cache_dir() == str(tmp_path / "c")
        assert tilus._C.runtime.compile_cache().cache_dir() == str(tmp_path / "c")
    finally:
        option.cache_dir(None)
    assert option.get_cache_dir() == before
    monkeypatch.setenv("TILUS_DUMP_DIR", str(tmp_path / "d"))
    assert option.get_dump_dir() == str(tmp_path / "d")
    monkeypatch.setenv("TILUS_PROGRESS", "0")
    assert not option.get_progress()


def test_dump_of_a_plain_script(tmp_path):
    option.dump(str(tmp_path))
    try:
        Scale(2.0, warps=1, block=32).compile(100, np.zeros(100, np.float32))
    finally:
        option.dump(None)
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 2 and names[0].startswith("scale-") and names[0].endswith(".cu")
    assert "__global__" in (tmp_path / names[0]).read_text()


def test_compiled_handle_on_the_cpu():
    kernel = Scale(3.0, warps=1, block=32)
    x = np.arange(100, dtype=np.float32)
    handle = kernel.compiled(100, x)
    assert "compiled Scale" in repr(handle)
    np.testing.assert_array_equal(x, np.arange(100, dtype=np.float32))  # not run yet
    handle(100, x)
    np.testing.assert_array_equal(x, np.arange(100, dtype=np.float32) * 3)
    with pytest.raises(TypeError, match=r"takes 2 positional arguments \(n, x_ptr\), got 1"):
        handle(100)
    with pytest.raises(TypeError, match="argument 'x_ptr' has dtype"):
        handle(100, np.zeros(100, np.float64))


def test_compiled_handle_checks_jit_values(example):
    v5 = example("matmul_v5_splitk").MatmulV5(4, 64, 128, 32, 3, 1)
    a = np.zeros((64, 64), np.float16)
    handle = v5.compiled(64, 64, 64, a, a, a)
    with pytest.raises(ValueError, match="'n_size' is 128, but this handle was compiled for 64"):
        handle(64, 128, 64, a, a, a)


CUBIN = "ab" + "0" * 62 + ".cubin"                     # cubin/<2 hex>/<sha256>.cubin
SCRIPT = "scale-0123456789abcdef"                       # tuning/<kernel>-<16 hex>/
ENTRY = "scale-n128-0123456789ab.json"                  # <gpu>/<label>-<12 hex>.json


def test_cache_info_and_clear(tmp_path):
    root = tmp_path / "cache"
    (root / "cubin" / "ab").mkdir(parents=True)
    (root / "cubin" / "ab" / CUBIN).write_bytes(b"x" * 100)
    (root / "tuning" / SCRIPT / "gpu").mkdir(parents=True)
    (root / "tuning" / SCRIPT / "gpu" / ENTRY).write_text("{}")
    (root / "keep.txt").write_text("not ours")
    info = cache_info(str(root))
    assert info["cubins"] == {"files": 1, "bytes": 100}
    assert info["tuning"]["files"] == 1 and info["scripts"] == [{"name": SCRIPT, "entries": 1}]
    assert clear_cache(str(root), cubins=False)["tuning"]["files"] == 1
    assert not (root / "tuning").exists() and (root / "cubin").exists()
    clear_cache(str(root))
    assert sorted(os.listdir(root)) == ["keep.txt"]


def test_cache_command_line(tmp_path):
    root = tmp_path / "cache"
    (root / "tuning" / SCRIPT / "gpu").mkdir(parents=True)
    (root / "tuning" / SCRIPT / "gpu" / ENTRY).write_text("{}")
    env = dict(os.environ, TILUS_CACHE_DIR=str(root))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "tilus", "cache", *args], env=env,
                              capture_output=True, text=True, check=True).stdout

    out = run("info")
    assert str(root) in out and "tuning results:   1" in out and f"{SCRIPT}: 1 key(s)" in out
    assert "removed 1 tuning file(s)" in run("clear", "--tuning")
    assert "nothing to clear" in run("clear", "--dir", str(tmp_path / "elsewhere"))
    assert "tuning results:   0" in run("info")


@pytest.mark.parametrize("text, enabled", [("1", True), ("on", True), ("yes", True), ("0", False),
                                           ("false", False), ("", False)])
def test_static_rings_switch_reads_its_variable_as_every_other_switch(monkeypatch, text, enabled):
    """$TILUS_STATIC_RINGS: anything but 0 / false / no turns it on, unset or empty leaves it
    off; option.static_rings() overrides it either way."""
    monkeypatch.setenv("TILUS_STATIC_RINGS", text)
    assert option.get_static_rings() is enabled
    option.static_rings(not enabled)
    try:
        assert option.get_static_rings() is (not enabled)
    finally:
        option.static_rings(None)
