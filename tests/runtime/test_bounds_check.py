"""tilus.option.debug.bounds_check on the host, without a GPU: the option and its
environment variable, the native flag the fast launch path reads, the separate compile
cache entries of checked and unchecked builds (the launcher's and the autotuner's builds
agree), and the error a filled device record turns into (runtime/bounds.py)."""

import struct

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import require_nvrtc
from tests.gpu import bounds_kernels as bk
from tilus import _C
from tilus.lang import errors
from tilus.runtime import bounds, launcher


@pytest.fixture
def reset_option():
    yield
    tilus.option.debug.bounds_check(None)


def test_off_by_default_and_set_through_the_option(reset_option, monkeypatch):
    monkeypatch.delenv("TILUS_DEBUG_BOUNDS_CHECK", raising=False)
    tilus.option.debug.bounds_check(None)
    assert not tilus.option.debug.get_bounds_check() and not _C.bounds_check()
    tilus.option.debug.bounds_check(True)
    assert tilus.option.debug.get_bounds_check() and _C.bounds_check()  # the native path steps aside
    tilus.option.debug.bounds_check(False)
    assert not _C.bounds_check()


@pytest.mark.parametrize("text, on", [("1", True), ("0", False), ("no", False), ("yes", True)])
def test_the_environment_variable_is_read_on_reset(reset_option, monkeypatch, text, on):
    monkeypatch.setenv("TILUS_DEBUG_BOUNDS_CHECK", text)
    tilus.option.debug.bounds_check(None)
    assert tilus.option.debug.get_bounds_check() is on


def test_a_non_bool_is_refused(reset_option):
    with pytest.raises(TypeError, match="bounds_check"):
        tilus.option.debug.bounds_check(1)


def _program():
    args = (37, 70, torch.zeros(37, 70), torch.zeros(37, 70))
    return bk.StorePastEnd().compile(*args).program


def test_checked_and_unchecked_builds_have_their_own_cache_entries(reset_option):
    require_nvrtc()
    program = _program()
    plain = launcher.build_variant(program, True, "sm_80")
    checked = launcher.build_variant(program, True, "sm_80", bounds_check=True)
    assert plain["cache_key"] != checked["cache_key"]
    assert plain["cubin"] != checked["cubin"]
    # the autotuner's parallel build keys a checked build as the launcher does
    tilus.option.debug.bounds_check(True)
    choices = tilus.option.get_codegen()
    (cubin, meta), = _C.autotune.build_all([program], True, "sm_80", wgmma=choices.wgmma,
                                           unroll_budget=choices.unroll_budget,
                                           bounds_check=tilus.option.debug.get_bounds_check())
    assert meta["status"] == "ok" and meta["cache_key"] == checked["cache_key"]
    # and generate_source shows the build the option selects
    kernel = bk.StorePastEnd()
    compiled = kernel.compile(37, 70, torch.zeros(37, 70), torch.zeros(37, 70))
    assert "tl_bounds" in launcher.generate_source(compiled, True, "sm_80")
    tilus.option.debug.bounds_check(False)
    assert "tl_bounds" not in launcher.generate_source(compiled, True, "sm_80")


class _Recorded(Exception):
    pass


@pytest.mark.parametrize("checked", [False, True])
def test_the_autotuner_builds_with_the_option(monkeypatch, checked):
    """The autotuner's parallel build is told the option (and every other code generator
    choice) as the launcher is."""
    from types import SimpleNamespace

    from tilus.tuning import build

    seen = {}

    def recording_build_all(programs, aligned, arch, **kwargs):
        seen.update(kwargs)
        raise _Recorded()

    monkeypatch.setattr(build._C.autotune, "build_all", recording_build_all)
    tilus.option.debug.bounds_check(checked)
    try:
        candidate = SimpleNamespace(compiled=SimpleNamespace(program=None))
        target = SimpleNamespace(arch="sm_80", smem_limit=0, max_threads=1024)
        with pytest.raises(_Recorded):
            build.build_candidates([candidate], target, True, "probe")
        assert seen["bounds_check"] is checked
        assert {k: seen[k] for k in tilus.option.get_codegen().binding_args()} == \
            tilus.option.get_codegen().binding_args()
    finally:
        tilus.option.debug.bounds_check(False)


def _record(site, block, thread, offset, index):
    fields = [1, site, *block, thread, offset, len(index), *(index + [0] * (4 - len(index))), 1, 0, 0, 0]
    return struct.unpack("<16q", struct.pack("<16q", *fields))


def test_a_filled_record_names_the_line_the_tensor_the_element_and_the_thread():
    program = _program()
    generated = _C.generate_cuda(program, True, "sm_80", bounds_check=True)
    store = next(k for k, s in enumerate(generated["bounds_sites"]) if s["op"] == "store_global")
    sizes = [-1, -1, 37 * 70 * 4, 37 * 70 * 4]
    error = bounds.violation_error(generated, _record(store, (2, 1, 0), 37, (37 * 70 + 33) * 4, [37, 33]),
                                   sizes, "StorePastEnd.__call__")
    assert isinstance(error, errors.ScriptBoundsError) and isinstance(error, RuntimeError)
    text = str(error)
    assert "bounds check: store_global wrote element [37, 33] of 'gy' (view shape [(rows + 1), cols])" in text
    assert "the tensor passed as 'y_ptr' holds 10360 bytes" in text
    assert "from block (2, 1, 0) thread 37" in text
    assert f'File "{bk.FILE}", line {bk.LINES["store_past_end"]}, in StorePastEnd.__call__' in text
    assert (error.op, error.view, error.param, error.index, error.block, error.thread) == (
        "store_global", "gy", "y_ptr", [37, 33], (2, 1, 0), 37)


def test_hidden_arguments_follow_the_kernel_order():
    generated = _C.generate_cuda(_program(), True, "sm_80", bounds_check=True)
    args = bounds.hidden_args(generated, [37, 70, 400, -1], 0xABC0)
    assert args == [("i64", 400), ("i64", bounds.UNKNOWN_SIZE), ("ptr", 0xABC0)]
