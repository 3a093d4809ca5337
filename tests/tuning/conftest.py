from tests.autotune.conftest import cache_dir, fake_gpu  # noqa: F401 - shared fixtures
