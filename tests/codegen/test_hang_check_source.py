"""tilus.option.debug.hang_check: GPU builds whose mbarrier waits give up after the time
allowed, printing their script line (codegen/device/hang.cuh). What the generated waits
look like with and without it, that checked kernels compile without spills, and the
option itself. The GPU side (a hanging kernel that fails instead) is
tests/gpu/test_tma_gpu.py::test_a_wait_that_never_completes_fails_the_launch."""

import inspect
import re

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import ELF_MAGIC, require_nvrtc, rt
from tests.interp.tma_scripts import TwoBoxes
from tilus import _C
from tilus.runtime import launcher

require_nvrtc()

SECOND = 1_000_000_000


def _source(program, hang_check_ns=0):
    generated = _C.generate_cuda(program, arch="sm_90a", hang_check_ns=hang_check_ns)
    report = rt.compile_report(generated["source"], generated["name"], "sm_90a", [], None)
    assert report["cubin"][:4] == ELF_MAGIC and report["spill_bytes"] == 0, report["log"]
    return generated["source"].split('extern "C"')[1]


def _line_of(cls, text):
    source, first = inspect.getsourcelines(cls)
    return first + next(k for k, line in enumerate(source) if text in line)


def test_a_script_wait_reports_its_line():
    x = torch.zeros(128, 64, dtype=torch.float16)
    program = TwoBoxes(16384).compile(128, x, x).program
    assert "global_timer_ns" not in _source(program)
    checked = _source(program, 2 * SECOND)
    line = _line_of(TwoBoxes, "self.mbarrier.wait(bar, phase=0)")
    assert re.search(r"tilus::hang_check\(tl_done\w*, tl_wait_start\w*, 2000000000ull, "
                     f'"tma_scripts.py:{line}", ', checked)


def test_warp_specialised_matmul_waits_all_checked(example):
    """Every wait of the producer and the consumers (clusters too) gives up; the kernel
    still compiles without spills."""
    ws = example("matmul_warp_specialized")
    z = torch.zeros(8, 8, dtype=torch.float16)
    for cluster_m in (1, 2):
        kernel = ws.MatmulWarpSpecialized(block_m=128, block_n=128, stages=4, group_m=8, cluster_m=cluster_m,
                                          epilogue="tma", num_blocks=132)
        program = kernel.compile(4096, 4096, 4096, z, z, z, 1.0).program
        plain, checked = _source(program), _source(program, SECOND)
        waits = plain.count("mbarrier.try_wait")
        assert waits > 0 and checked.count("tilus::hang_check(") == waits


def test_copy_async_tma_waits_checked(example):
    """The seed's copy_async lowered to TMA waits through the checked ring wait."""
    v5 = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32, num_stages=3,
                                              split_k_factor=1)
    z = torch.zeros(4, 4, dtype=torch.float16)
    program = v5.compile(4096, 4096, 4096, z, z, z).program
    checked, plain = _source(program, SECOND), _source(program)
    # every ring wait takes the time limit and its script line; none does in the plain build
    waits = re.findall(r"tilus::copy_ring_wait\(([^;]*)\);", checked)
    assert waits and all(re.search(r', 1000000000ull, "matmul_v5_splitk\.py:\d+"$', w) for w in waits), waits
    assert plain.count("tilus::copy_ring_wait(") == len(waits) and "ull, \"" not in plain


def test_the_option_read_set_reset_refused_and_keyed(reset_build_debug_options, monkeypatch):
    assert tilus.option.debug.get_hang_check() == 0
    tilus.option.debug.hang_check(1.5)
    assert tilus.option.get_codegen().hang_check_ns == 1_500_000_000
    tilus.option.debug.hang_check(None)
    monkeypatch.setenv("TILUS_DEBUG_HANG_CHECK", "2")
    assert tilus.option.debug.get_hang_check() == 2.0
    monkeypatch.setenv("TILUS_DEBUG_HANG_CHECK", "soon")
    with pytest.raises(ValueError, match="TILUS_DEBUG_HANG_CHECK"):
        tilus.option.get_codegen()
    monkeypatch.delenv("TILUS_DEBUG_HANG_CHECK")
    for bad in (-1, "5", True):
        with pytest.raises(ValueError, match="debug.hang_check: seconds must be a number >= 0 or None"):
            tilus.option.debug.hang_check(bad)
    x = torch.zeros(128, 64, dtype=torch.float16)
    program = TwoBoxes(16384).compile(128, x, x).program
    plain = launcher.build_variant(program, True, "sm_90a")
    tilus.option.debug.hang_check(3)
    checked = launcher.build_variant(program, True, "sm_90a")
    assert checked["cache_key"] != plain["cache_key"] and "tilus::hang_check(" in checked["source"]
