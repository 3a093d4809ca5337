"""tilus.option.debug.omit: GPU builds that leave the products ("mma") or the loads into
shared memory ("loads") out, to time the rest of a kernel. What the generated code keeps
and drops, that it still compiles without spills, that every wait can still complete
(arrivals that expected bytes expect none), and the option's own behaviour. The GPU
side is tests/gpu/test_omit_gpu.py."""

import re

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import ELF_MAGIC, require_nvrtc, rt
from tilus import _C, float16
from tilus.lang.errors import NativeError
from tilus.runtime import launcher

require_nvrtc()


def _mats(m, n, k):
    return torch.zeros(m, k, dtype=torch.float16), torch.zeros(k, n, dtype=torch.float16), torch.zeros(
        m, n, dtype=torch.float16)


def _body(kernel, args, arch="sm_90a", omit=""):
    generated = _C.generate_cuda(kernel.compile(*args).program, arch=arch, omit=omit)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == ELF_MAGIC and report["spill_bytes"] == 0, report["log"]
    return generated["source"].split('extern "C"')[1]


def _ws_kernel(example, **kw):
    ws = example("matmul_warp_specialized")
    kernel = ws.MatmulWarpSpecialized(block_m=128, block_n=128, stages=4, group_m=8, cluster_m=1,
                                      epilogue="tma", num_blocks=132, **kw)
    a, b = torch.zeros(8, 8, dtype=torch.float16), torch.zeros(8, 8, dtype=torch.float16)
    return kernel, (4096, 4096, 4096, a, b, torch.zeros(8, 8, dtype=torch.float16), 1.0)


def test_omitting_the_products_of_the_seed_matmul(example):
    """The seed's dot (a wgmma on sm_90a, mma.sync on sm_80) is gone; its loads, commits
    and waits stay."""
    v5 = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32, num_stages=3,
                                              split_k_factor=1)
    args = (4096, 4096, 4096, *_mats(4, 4, 4))
    full, omitted = _body(v5, args), _body(v5, args, omit="mma")
    assert "wgmma_m64n" in full and "copy_ring_expect" in full
    assert "wgmma_m64n" not in omitted and "the product left out" in omitted
    assert omitted.count("copy_ring_expect(") == full.count("copy_ring_expect(")  # loads kept
    v5_80 = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32, num_stages=3,
                                                 split_k_factor=1)
    assert "mma_m16n8k16" in _body(v5_80, args, arch="sm_80")
    dropped = _body(v5_80, args, arch="sm_80", omit="mma")
    assert "mma_m16n8k16" not in dropped and "cp_async_16" in dropped


def test_omitting_the_loads_of_the_seed_matmul(example):
    """No copy into shared memory (TMA on sm_90a, cp.async on sm_80); the commit groups
    and their waits stay, so the ring still turns."""
    v5 = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32, num_stages=3,
                                              split_k_factor=1)
    args = (4096, 4096, 4096, *_mats(4, 4, 4))
    omitted = _body(v5, args, omit="loads")
    assert "wgmma_m64n" in omitted and "copy_async left out" in omitted
    assert "copy_ring_expect(" not in omitted and "tma_load" not in omitted
    assert "copy_ring_arrive(" in omitted and "copy_ring_wait(" in omitted
    on_80 = _body(v5, args, arch="sm_80", omit="loads")
    assert "cp_async_16" not in on_80 and "cp_async_wait_group" in on_80


def test_warp_specialised_kernel_omitting_each_part(example):
    """Explicit TMA loads and wgmma.mma: without the products the producer still loads;
    without the loads every arrival that expected bytes arrives plainly (its barrier
    completes on the arrival count alone), the stores and the products stay."""
    kernel, args = _ws_kernel(example)
    full = _body(kernel, args)
    expect_tx = len(re.findall(r"mbarrier\.arrive\.expect_tx", full))
    assert expect_tx > 0 and "wgmma_desc_add(" in full
    no_mma = _body(kernel, args, omit="mma")
    assert "wgmma_desc" not in no_mma and "wgmma.mma left out" in no_mma
    assert len(re.findall(r"mbarrier\.arrive\.expect_tx", no_mma)) == expect_tx
    assert no_mma.count("tilus::tma_load_2d(") == full.count("tilus::tma_load_2d(") > 0
    no_loads = _body(kernel, args, omit="loads")
    assert "expect_tx" not in no_loads and "wgmma_desc_add(" in no_loads
    assert "tma.global_to_shared left out" in no_loads
    # the loads gone, the epilogue's TMA store kept
    assert "tma_load" not in no_loads and "tilus::tma_store_2d(" in no_loads


def test_clusters_arrive_without_bytes_when_the_loads_are_left_out(example):
    """Clusters sharing B by multicast: no multicast load is left, and the arrivals on a
    peer's barrier (which may carry transaction bytes) carry none."""
    _, args = _ws_kernel(example)
    ws = example("matmul_warp_specialized")
    clustered = ws.MatmulWarpSpecialized(block_m=128, block_n=128, stages=4, group_m=8, cluster_m=2,
                                         epilogue="tma", num_blocks=132)
    full = _body(clustered, args)
    assert "tilus::tma_load_multicast_2d(" in full
    body = _body(clustered, args, omit="loads")
    assert "tma_load" not in body
    arrivals = [line for line in body.splitlines() if "expect_tx" in line]
    assert arrivals and all('"r"(0u)' in line for line in arrivals), arrivals


def test_the_option_read_set_reset_and_refused(reset_build_debug_options, monkeypatch):
    assert tilus.option.debug.get_omit() == ""
    tilus.option.debug.omit("mma")
    assert tilus.option.debug.get_omit() == "mma" and tilus.option.get_codegen().omit == "mma"
    tilus.option.debug.omit(None)
    monkeypatch.setenv("TILUS_DEBUG_OMIT", "loads")
    assert tilus.option.debug.get_omit() == "loads"
    monkeypatch.setenv("TILUS_DEBUG_OMIT", "wgmma")
    with pytest.raises(ValueError, match="TILUS_DEBUG_OMIT must be one of mma, loads"):
        tilus.option.get_codegen()
    monkeypatch.delenv("TILUS_DEBUG_OMIT")
    for bad in ("", "math", 1):
        with pytest.raises(ValueError, match="debug.omit: part must be 'mma', 'loads' or None"):
            tilus.option.debug.omit(bad)
    with pytest.raises(NativeError, match="omit must be '', 'mma' or 'loads'"):
        _C.generate_cuda(_small_program(), arch="sm_90a", omit="everything")
    # the bindings take the code generator's choices by their names, and no others
    for bind in (lambda **kw: _C.generate_cuda(_small_program(), arch="sm_90a", **kw),
                 lambda **kw: _C.autotune.build_all([_small_program()], True, "sm_90a", **kw)):
        with pytest.raises(TypeError, match="unexpected keyword argument 'omitt'.*omit, hang_check_ns"):
            bind(omitt="mma")


def _small_program():
    class Copy(tilus.Script):
        def __call__(self, n: tilus.int32, x: ~tilus.float16, y: ~tilus.float16):
            self.attrs.blocks = [1]
            self.attrs.warps = 1
            gx = self.global_view(x, dtype=float16, shape=[n])
            gy = self.global_view(y, dtype=float16, shape=[n])
            self.store_global(gy, self.load_global(gx, offsets=[0], shape=[32]), offsets=[0])

    return Copy().compile(32, torch.zeros(32).half(), torch.zeros(32).half()).program


def test_omitted_builds_have_their_own_cache_entries_and_script_instances(reset_build_debug_options, example):
    """The launcher and the autotuner's build key an omitted build apart from the full one,
    and a script instance made before the option changed is not reused after."""
    v5 = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=64, block_n=128, block_k=32, num_stages=3,
                                              split_k_factor=1)
    program = v5.compile(4096, 4096, 4096, *_mats(4, 4, 4)).program
    full = launcher.build_variant(program, True, "sm_90a")
    tilus.option.debug.omit("mma")
    omitted = launcher.build_variant(program, True, "sm_90a")
    assert omitted["cache_key"] != full["cache_key"] and omitted["source"] != full["source"]
    (cubin, meta), = _C.autotune.build_all([program], True, "sm_90a", omit="mma")
    assert meta["status"] == "ok" and meta["cache_key"] == omitted["cache_key"]
    ex = example("matmul_v5_splitk")
    before = ex.MatmulV5(num_warps=4, block_m=64, block_n=128, block_k=32, num_stages=3, split_k_factor=1)
    tilus.option.debug.omit(None)
    after = ex.MatmulV5(num_warps=4, block_m=64, block_n=128, block_k=32, num_stages=3, split_k_factor=1)
    assert before is not after


def test_the_interpreter_is_unaffected(reset_build_debug_options, example):
    """CPU runs compute the real result whatever the option says."""
    tilus.option.debug.omit("mma")
    v5 = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=64, block_n=64, block_k=16, num_stages=3,
                                              split_k_factor=1)
    a, b = torch.randn(70, 40).half(), torch.randn(40, 66).half()
    c = torch.empty(70, 66).half()
    v5(70, 66, 40, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)
