"""tilus.option.debug.bounds_check in the code generator (csrc/codegen/emit_bounds.cc):
the checked CUDA of every example and of the buggy scripts compiles through NVRTC for
sm_80 and sm_90a without spills; every global access of the kernel gets a check and a
site naming its script line; off, the source is the unchecked one."""

import re

import pytest
import torch

from tests.codegen.nvrtc_compile import ELF_MAGIC, require_nvrtc
from tests.codegen.test_generated_sources import _programs
from tests.gpu import bounds_kernels as bk
from tilus import _C, float16

require_nvrtc()
rt = _C.runtime


def _buggy():
    yield bk.StorePastEnd(), (37, 70, torch.zeros(37, 70), torch.zeros(37, 70))
    yield bk.LoadBadOffset(), (300, 8, torch.zeros(300), torch.zeros(300))
    yield bk.ScatterPastEnd(), (300, 16, 4, torch.zeros(300, dtype=torch.int32),
                                torch.zeros(16, dtype=torch.int32))
    yield bk.ElementPastEnd(), (100, 103, torch.zeros(100), torch.zeros(100))
    yield bk.CopyAsyncPastEnd(), (37, 3, torch.zeros(37, 64), torch.zeros(40, 64))


def _rowwise(example):
    softmax, norms = example("softmax"), example("norms")
    x = torch.zeros(37, 70, dtype=torch.float16)
    w = torch.zeros(70, dtype=torch.float16)
    yield "softmax", softmax.Softmax(float16, 128, 4, 4, persistent=False, staged=False, long_split=1, prefetch=False), (37, 70, 132, x, x)
    yield "softmax_persistent", softmax.Softmax(float16, 128, 4, 4, persistent=True, staged=False, long_split=1, prefetch=False), (37, 70, 132, x, x)
    yield "softmax_staged", softmax.Softmax(float16, 128, 4, 4, persistent=True, staged=True, long_split=1, prefetch=False), (37, 70, 132, x, x)
    yield "softmax_loop", softmax.Softmax(float16, 32, 4, 1, persistent=False, staged=False, long_split=1, prefetch=False), (37, 70, 132, x, x)
    yield "layer_norm", norms.LayerNorm(float16, 128, 4, 4), (37, 70, x, w, w, x, 1e-5)
    yield "rms_norm", norms.RMSNorm(float16, 128, 4, 4), (37, 70, x, w, x, 1e-6)


def _compile(generated, arch):
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == ELF_MAGIC
    return report


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_checked_examples_compile_without_spills(example, arch):
    # one configuration of each example (the NVRTC compiles dominate the suite's time)
    keep = ("[" not in name or name in ("matmul_v5_splitk[4]", "matmul_v5_splitk[8w,128x128x32,s3]")
            for name, _, _ in _programs(example))
    programs = [p for p, k in zip(_programs(example), keep) if k] + list(_rowwise(example))
    for name, kernel, args in programs:
        program = kernel.compile(*args).program
        for aligned in (True,) if name.startswith("matmul") else (True, False):
            plain = _C.generate_cuda(program, aligned, arch)
            again = _C.generate_cuda(program, aligned, arch, bounds_check=False)
            # (tma_maps: a new TmaMaps object per call, over the same specs)
            assert {k: v for k, v in again.items() if k != "tma_maps"} == {
                k: v for k, v in plain.items() if k != "tma_maps"}
            assert "tl_bounds" not in plain["source"] and "bounds.cuh" not in plain["source"]
            assert not plain["bounds_sites"] and not plain["bounds_params"]
            checked = _C.generate_cuda(program, aligned, arch, bounds_check=True)
            assert checked["source"] != plain["source"]
            report = _compile(checked, arch)
            assert report["spill_bytes"] == 0, (name, aligned, report["log"])
            # every global view a parameter's tensor holds is checked: one site at least
            assert checked["bounds_sites"], name
            # the hidden parameters come last: the unchecked list is a prefix
            n = len(plain["params"])
            assert checked["params"][:n] == plain["params"]
            pointers = [i for i, (_, t, w) in enumerate(plain["params"]) if w < 0 and t.is_pointer]
            assert checked["bounds_params"] == [("size", i) for i in pointers] + [("record", -1)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_global_access_of_the_buggy_scripts_is_checked(arch):
    expected = {
        "StorePastEnd": {("load_global", "gx", "x_ptr"), ("store_global", "gy", "y_ptr")},
        "LoadBadOffset": {("load_global", "gx", "x_ptr"), ("store_global", "gy", "y_ptr")},
        "ScatterPastEnd": {("load_global", "gi", "idx_ptr"),
                           ("atomic.global_scatter_add", "gh", "hist_ptr")},
        "ElementPastEnd": {("element load", "gp", "x_ptr"), ("load_global", "gx", "x_ptr"),
                           ("store_global", "gy", "y_ptr")},
        "CopyAsyncPastEnd": {("copy_async", "gx", "x_ptr"), ("store_global", "gy", "y_ptr")},
    }
    bug = {"StorePastEnd": "store_past_end", "LoadBadOffset": "load_bad_offset",
           "ScatterPastEnd": "scatter_past_end", "ElementPastEnd": "element_past_end",
           "CopyAsyncPastEnd": "copy_async_past_end"}
    for kernel, args in _buggy():
        name = type(kernel).__name__
        program = kernel.compile(*args).program
        for aligned in (True, False):
            generated = _C.generate_cuda(program, aligned, arch, bounds_check=True)
            _compile(generated, arch)
            sites = generated["bounds_sites"]
            assert {(s["op"], s["view"], s["param"]) for s in sites} == expected[name]
            assert all(s["file"] == bk.FILE for s in sites)
            assert bk.LINES[bug[name]] in {s["line"] for s in sites}, name
            # each site reports with its own id
            source = generated["source"]
            for k in range(len(sites)):
                assert re.search(rf"bounds_(report\(tl_bounds|item\([^;]*tl_bounds), {k},", source), (name, k)


def test_view_through_an_element_address_is_checked_against_the_whole_tensor():
    kernel, args = next((k, a) for k, a in _buggy() if type(k).__name__ == "LoadBadOffset")
    source = _C.generate_cuda(kernel.compile(*args).program, True, "sm_80", bounds_check=True)["source"]
    # gx = global_view(~whole[shift]): its offset is measured from x_ptr, the tensor's start
    assert re.search(r"const long long gx_bc = \(long long\)\(\(const char\*\)gx - \(const char\*\)x_ptr\)", source)
    assert "tl_bc_size2 - (long long)" in source  # x_ptr is parameter #2


def test_off_by_default_and_the_dump_of_examples_is_unchanged(example):
    # generate_cuda's default and the option's default agree (no check): the byte-identical
    # comparison with the tree before this option is scripts/dump_generated_sources.py's job
    import tilus

    assert not tilus.option.debug.get_bounds_check()
    for name, kernel, args in list(_programs(example))[:3]:
        program = kernel.compile(*args).program
        source = _C.generate_cuda(program, True, "sm_80")["source"]
        assert "tilus/bounds.cuh" not in source and "tl_bounds" not in source, name
