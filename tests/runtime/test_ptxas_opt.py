"""tilus.option.debug.disable_ptxas_opt (Tilus 0.2's option): the same source compiled with
ptxas -O0, in its own compile cache entries, by the launcher and the autotuner alike."""

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import require_nvrtc
from tests.gpu import bounds_kernels as bk
from tilus import _C
from tilus.runtime import launcher


@pytest.fixture
def reset_option():
    yield
    tilus.option.debug.disable_ptxas_opt(None)


def _program():
    return bk.StorePastEnd().compile(37, 70, torch.zeros(37, 70), torch.zeros(37, 70)).program


def test_off_by_default_read_from_the_environment_and_refusing_non_bools(reset_option, monkeypatch):
    monkeypatch.delenv("TILUS_DISABLE_PTXAS_OPT", raising=False)
    tilus.option.debug.disable_ptxas_opt(None)
    assert tilus.option.debug.get_disable_ptxas_opt() is False
    tilus.option.debug.disable_ptxas_opt()  # Tilus 0.2's call: enabled=True
    assert tilus.option.debug.get_disable_ptxas_opt() is True
    monkeypatch.setenv("TILUS_DISABLE_PTXAS_OPT", "1")
    tilus.option.debug.disable_ptxas_opt(None)
    assert tilus.option.debug.get_disable_ptxas_opt() is True
    with pytest.raises(TypeError, match="disable_ptxas_opt"):
        tilus.option.debug.disable_ptxas_opt(1)


def test_the_same_source_compiles_with_O0_under_its_own_key(reset_option):
    require_nvrtc()
    program = _program()
    tilus.option.debug.disable_ptxas_opt(False)
    optimized = launcher.build_variant(program, True, "sm_80")
    tilus.option.debug.disable_ptxas_opt(True)
    plain = launcher.build_variant(program, True, "sm_80")
    assert optimized["nvrtc_options"] == [] and plain["nvrtc_options"] == ["--ptxas-options=-O0"]
    assert plain["source"] == optimized["source"]
    assert plain["cache_key"] != optimized["cache_key"] and plain["cubin"] != optimized["cubin"]
    # ptxas's own report: the -O0 build keeps every value in its own register or on the stack
    fast = _C.runtime.compile_report(optimized["source"], optimized["name"], "sm_80", [], None)
    slow = _C.runtime.compile_report(plain["source"], plain["name"], "sm_80", ["--ptxas-options=-O0"], None)
    assert slow["cubin"] == plain["cubin"] and fast["cubin"] == optimized["cubin"]
    # the autotuner's parallel build keys it as the launcher does
    (cubin, meta), = _C.autotune.build_all([program], True, "sm_80", ptxas_optimize=False)
    assert meta["status"] == "ok" and meta["cache_key"] == plain["cache_key"] and cubin == plain["cubin"]
