import importlib.util
import os
import pathlib
import sys

import pytest

# The IR verifier runs after the builder and every pass throughout the tests, in any
# build (tilus.option.verify); TILUS_VERIFY=0 in the environment turns it off.
os.environ.setdefault("TILUS_VERIFY", "1")

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _load(path: pathlib.Path, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_example(name: str):
    """Import examples/<name>.py as a module (its main() does not run)."""
    return _load(EXAMPLES / f"{name}.py", f"tilus_example_{name}")


def load_benchmark(name: str):
    """Import benchmarks/<name>.py as a module (its main() does not run)."""
    return _load(ROOT / "benchmarks" / f"{name}.py", f"tilus_benchmark_{name}")


def script_line(cls, snippet: str) -> int:
    """The file line of the first line of `cls`'s source containing `snippet` (for
    errors that must name a script line)."""
    import inspect

    lines, first = inspect.getsourcelines(cls)
    return first + next(i for i, text in enumerate(lines) if snippet in text)


def has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; run `pytest -m gpu` on the device machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def example():
    return load_example


@pytest.fixture
def nvdisasm():
    """The path of nvdisasm (benchmarks/sass_loop.py's search). Tests that read SASS skip
    without it, but fail where NVRTC is required (CI, which installs the test extras,
    nvidia-cuda-nvdisasm among them)."""
    tool = load_benchmark("sass_loop").find_nvdisasm()
    if tool is None:
        if os.environ.get("TILUS_REQUIRE_NVRTC"):
            raise RuntimeError("nvdisasm is missing: `pip install nvidia-cuda-nvdisasm` (a test extra)")
        pytest.skip("nvdisasm not installed (pip install nvidia-cuda-nvdisasm)")
    return tool


@pytest.fixture(autouse=True)
def _fresh_script_instances():
    """Script classes give back the instance made before for the same arguments (as in Tilus
    0.2); a test starts without those of earlier tests, as a new process would (tests that
    fake another GPU or a store would otherwise get an instance tuned for the last one)."""
    yield
    import tilus.script

    tilus.script.clear_instances()


@pytest.fixture
def reset_build_debug_options(monkeypatch):
    """tilus.option.debug.omit and .hang_check unset (their environment variables away)
    for the test, and after it."""
    import tilus

    for variable in ("TILUS_DEBUG_OMIT", "TILUS_DEBUG_HANG_CHECK"):
        monkeypatch.delenv(variable, raising=False)
    tilus.option.debug.omit(None)
    tilus.option.debug.hang_check(None)
    yield
    tilus.option.debug.omit(None)
    tilus.option.debug.hang_check(None)
