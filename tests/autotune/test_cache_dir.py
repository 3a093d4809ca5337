"""`python -m tilus cache` touches only what tilus wrote, and reports what it really did;
an empty TILUS_CACHE_DIR means memory only, in Python and in the C++ compile cache."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import tilus
from tilus import _C, option
from tilus.__main__ import main
from tilus.cache import cache_info, clear_cache

KEY = "ab" + "0" * 62
SCRIPT = "scale-0123456789abcdef"
ENTRY = "scale-n128-0123456789ab.json"


def _layout(root):
    """A cache holding one entry of each part, its writers' leftovers, and user files
    at every level of the layout. Returns (tilus's files, the user's files)."""
    cubins, gpu = root / "cubin" / "ab", root / "tuning" / SCRIPT / "Fake_GPU-sm_80"
    gpu.mkdir(parents=True)
    cubins.mkdir(parents=True)
    ours = {cubins / f"{KEY}.cubin": b"c" * 100, gpu / ENTRY: b"{}",
            gpu / (ENTRY + ".lock"): b"", cubins / f"{KEY}.cubin.tmp.123.0": b"old",
            gpu / (ENTRY + ".tmp.123.456"): b"old"}
    theirs = {root / "cubin" / "notes.txt": b"mine", cubins / "notes.txt": b"mine",
              cubins / ("cd" + "0" * 62 + ".cubin"): b"misfiled",  # not under its prefix
              root / "tuning" / "notes.txt": b"mine", root / "tuning" / SCRIPT / "a.json": b"{}",
              gpu / "results.json": b"{}", root / "tuning" / "mine" / "x" / ENTRY: b"{}"}
    for path, data in {**ours, **theirs}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    old = time.time() - 24 * 3600  # left by a writer that died long ago
    for path in ours:
        if ".tmp." in path.name:
            os.utime(path, (old, old))
    return set(ours), set(theirs)


def _files(root):
    return {p for p in root.rglob("*") if p.is_file()}


def test_clear_removes_only_tilus_files(tmp_path):
    root = tmp_path / "cache"
    ours, theirs = _layout(root)
    fresh_temp = root / "tuning" / SCRIPT / "Fake_GPU-sm_80" / (ENTRY + ".tmp.9.9")
    fresh_temp.write_bytes(b"being written")  # a writer at work right now
    removed = clear_cache(str(root))
    assert removed == {"cubins": {"files": 1, "bytes": 100, "failed": 0, "error": ""},
                       "tuning": {"files": 1, "bytes": 2, "failed": 0, "error": ""}}
    assert _files(root) == theirs | {fresh_temp}
    fresh_temp.unlink()
    clear_cache(str(root))
    assert _files(root) == theirs


def test_emptied_folders_of_the_layout_go_away(tmp_path):
    root = tmp_path / "cache"
    ours, _ = _layout(root)
    for path in _files(root) - ours:
        path.unlink()
    (root / "tuning" / "mine" / "x").rmdir()
    clear_cache(str(root))
    assert sorted(os.listdir(root)) == ["tuning"]  # the user's empty folder "mine" stays
    assert os.listdir(root / "tuning") == ["mine"]


def test_info_counts_and_lists_only_tilus_entries(tmp_path):
    root = tmp_path / "cache"
    _layout(root)
    info = cache_info(str(root))
    assert info["cubins"] == {"files": 1, "bytes": 100}
    assert info["tuning"] == {"files": 1, "bytes": 2}
    assert info["scripts"] == [{"name": SCRIPT, "entries": 1}]  # no notes.txt, no "mine"


def test_clearing_only_foreign_files_clears_nothing(tmp_path, capsys):
    root = tmp_path / "cache"
    (root / "tuning").mkdir(parents=True)
    (root / "tuning" / "notes.txt").write_text("mine")
    assert main(["cache", "clear", "--dir", str(root)]) == 0
    assert "nothing to clear" in capsys.readouterr().out
    assert (root / "tuning" / "notes.txt").read_text() == "mine"


def test_a_cache_that_cannot_be_cleared_reports_what_remains(tmp_path, monkeypatch, capsys):
    root = tmp_path / "cache"
    ours, _ = _layout(root)
    real_remove = os.remove

    def read_only(path, *args, **kwargs):  # the tests may run as root, which chmod can't stop
        if str(path).startswith(str(root)):
            raise PermissionError(13, "Permission denied", str(path))
        return real_remove(path, *args, **kwargs)

    monkeypatch.setattr(os, "remove", read_only)
    assert main(["cache", "clear", "--tuning", "--dir", str(root)]) == 1
    out = capsys.readouterr()
    assert "removed" not in out.out
    assert "could not remove 1 tuning file(s)" in out.err and "Permission denied" in out.err
    assert clear_cache(str(root))["cubins"] == {
        "files": 0, "bytes": 0, "failed": 1,
        "error": f"{root / 'cubin' / 'ab' / (KEY + '.cubin')}: Permission denied"}
    assert ours <= _files(root)


@pytest.mark.skipif(not _C.runtime.nvrtc_available(), reason="needs NVRTC")
def test_what_a_real_tuning_writes_is_recognised(fake_gpu, cache_dir):
    from .kernels import Scale

    fake_gpu()
    Scale(1.0)(100, np.zeros(100, np.float32))
    info = cache_info(str(cache_dir))
    assert info["tuning"]["files"] == 1 and info["cubins"]["files"] == 4
    assert len(info["scripts"]) == 1 and info["scripts"][0]["entries"] == 1
    removed = clear_cache(str(cache_dir))
    assert (removed["cubins"]["files"], removed["tuning"]["files"]) == (4, 1)
    assert os.listdir(cache_dir) == []


# ---------------------------------------------------------------------------- empty dir
def test_an_empty_cache_dir_variable_means_memory_only(monkeypatch):
    cache = _C.runtime.compile_cache()
    monkeypatch.setenv("TILUS_CACHE_DIR", "")
    try:
        cache.set_cache_dir(None)  # reads the variable again, in C++
        assert option.get_cache_dir() == ""
        assert cache_info()["dir"] == "" and clear_cache() == {}
    finally:
        monkeypatch.undo()
        cache.set_cache_dir(None)


def test_an_empty_cache_dir_variable_leaves_the_default_cache_alone(tmp_path):
    home = tmp_path / "home"
    default = home / ".cache" / "tilus" / "tuning" / SCRIPT / "gpu"
    default.mkdir(parents=True)
    (default / ENTRY).write_text("{}")
    env = dict(os.environ, HOME=str(home), TILUS_CACHE_DIR="")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "tilus", "cache", *args], env=env,
                              capture_output=True, text=True, check=True).stdout

    assert "memory only" in run("info")
    assert "nothing to clear in (memory only)" in run("clear")
    assert (default / ENTRY).exists()
    code = "import tilus; print(repr(tilus.option.get_cache_dir()))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "''"
    assert tilus.option.get_cache_dir() != ""  # this process is not affected
