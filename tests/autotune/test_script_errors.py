"""A mistake in an autotuned script that every configuration makes alike is raised once,
as the script error it is (file, line, source, caret); only failures that differ between
configurations are listed, grouped by reason."""

import pathlib
import warnings

import numpy as np
import pytest

import tilus
from tilus import NoValidConfigError, _C, float32, int32
from tilus.utils import cdiv

THIS_FILE = str(pathlib.Path(__file__).resolve())
SOURCE = pathlib.Path(__file__).read_text().splitlines()
needs_nvrtc = pytest.mark.skipif(not _C.runtime.nvrtc_available(), reason="needs NVRTC")


def line_of(marker: str) -> int:
    [line] = [i + 1 for i, text in enumerate(SOURCE) if "# " + marker in text]
    return line


# 4 x 4 x 4 x 3 = 192 configurations, as many as a real matmul space.
@tilus.autotune("a", [1, 2, 4, 8])
@tilus.autotune("b", [1, 2, 4, 8])
@tilus.autotune("c", [1, 2, 4, 8])
@tilus.autotune("warps", [1, 2, 4])
class Typo(tilus.Script):
    def __init__(self, a, b, c, warps):
        super().__init__()
        self.a, self.b, self.c, self.warps = a, b, c, warps

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, 32)]
        self.attrs.warps = self.warps
        g = self.global_view(x_ptr, dtype=float32, shape=[n])
        x = self.load_globl(g, offsets=[self.blockIdx.x * 32], shape=[32])  # MARK-typo
        self.store_global(g, x, offsets=[self.blockIdx.x * 32])


def _assert_typo_error(err):
    e = err.value
    assert not isinstance(e, NoValidConfigError)
    assert isinstance(e, tilus.ScriptError) and isinstance(e, AttributeError)
    assert pathlib.Path(e.file).resolve() == pathlib.Path(THIS_FILE)
    assert e.line == line_of("MARK-typo")
    text = str(e)
    assert "load_globl" in text and "MARK-typo" in text
    assert text.count("load_globl") <= 3  # the message and the source line, not 192 times
    assert "configuration" not in text
    source, caret = text.splitlines()[-2:]
    assert set(caret.strip()) == {"^"}
    assert source[caret.index("^"):].startswith("self.load_globl")


def test_the_same_script_error_in_every_config_is_raised_once_on_the_cpu():
    x = np.ones(64, np.float32)
    with pytest.raises(AttributeError) as err:
        Typo()(64, x)
    _assert_typo_error(err)
    np.testing.assert_array_equal(x, 1)


@needs_nvrtc
def test_the_same_script_error_in_every_config_is_raised_once_when_tuning(fake_gpu):
    fake_gpu()
    with pytest.raises(AttributeError) as err:
        Typo()(64, np.ones(64, np.float32))
    _assert_typo_error(err)


@tilus.autotune("warps", [1, 2])
@tilus.autotune("block", [32, 64])
class AlwaysPrintsShared(tilus.Script):
    """print_tensor of a shared tensor transpiles but has no CUDA form: the same codegen
    error in every configuration."""

    def __init__(self, warps, block):
        super().__init__()
        self.warps, self.block = warps, block

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = self.warps
        g = self.global_view(x_ptr, dtype=float32, shape=[n])
        s = self.shared_tensor(dtype=float32, shape=[self.block])
        self.store_shared(s, self.load_global(g, offsets=[0], shape=[self.block]))
        self.print_tensor("s", s)  # MARK-print
        self.free_shared(s)


@needs_nvrtc
def test_the_same_codegen_error_in_every_config_is_raised_once(fake_gpu):
    fake_gpu()
    with pytest.raises(tilus.ScriptError) as err:
        AlwaysPrintsShared()(64, np.ones(64, np.float32))
    e = err.value
    assert not isinstance(e, NoValidConfigError)
    assert pathlib.Path(e.file).resolve() == pathlib.Path(THIS_FILE)
    assert e.line == line_of("MARK-print")
    assert "print_tensor" in str(e) and "configuration" not in str(e)


@tilus.autotune("warps", [0, 64])
@tilus.autotune("block", [8, 16, 32])
class BadWarps(tilus.Script):
    def __init__(self, warps, block):
        super().__init__()
        self.warps, self.block = warps, block

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = self.warps  # MARK-warps
        g = self.global_view(x_ptr, dtype=float32, shape=[n])
        x = self.load_global(g, offsets=[0], shape=[self.block])
        self.store_global(g, x, offsets=[0])


def test_failures_that_differ_between_configs_are_grouped_by_reason():
    with pytest.raises(NoValidConfigError) as err:
        BadWarps()(64, np.ones(64, np.float32))
    text = str(err.value)
    assert "all 6 configurations failed, by reason:" in text
    where = f"(test_script_errors.py:{line_of('MARK-warps')})"
    for warps in (0, 64):
        [heading] = [line for line in text.splitlines() if f"got {warps}" in line]
        assert heading.startswith("  [script] ") and heading.endswith(where)
        group = text.splitlines()[text.splitlines().index(heading) + 1]
        assert group == ("    3 configurations: " + ", ".join(
            f"{{'warps': {warps}, 'block': {b}}}" for b in (8, 16, 32)))
