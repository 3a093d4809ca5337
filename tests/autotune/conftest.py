import pytest

import tilus
from tilus import _C


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh TILUS_CACHE_DIR for this test (and its subprocesses), with the in-memory
    compile cache and all counters emptied, and progress bars off."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TILUS_CACHE_DIR", str(root))
    monkeypatch.setenv("TILUS_PROGRESS", "0")
    cache = _C.runtime.compile_cache()
    cache.set_cache_dir(None)
    cache.clear_memory()
    cache.reset_stats()
    cache.take_warnings()
    for name in tilus.autotune.STATS:
        tilus.autotune.STATS[name] = 0
    yield root
    monkeypatch.undo()
    cache.set_cache_dir(None)


@pytest.fixture
def fake_gpu(monkeypatch, cache_dir):
    from tests.autotune import fakes

    def install(**kwargs):
        return fakes.install(monkeypatch, **kwargs)

    return install
