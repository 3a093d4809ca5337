"""copy_async lowered to TMA on sm_90a (csrc/ops/async_copy.cc): which kernels are lowered,
what the lowered copies, commits and waits look like, and that NVRTC compiles them. The
GPU runs are tests/gpu/test_copy_tma_gpu.py."""

import pytest
import torch

from tests.codegen.nvrtc_compile import ELF_MAGIC, require_nvrtc, rt
from tests.copy_tma_kernels import ManyGroups
from tilus import _C

require_nvrtc()


def _mats(m, n, k):
    return torch.zeros(m, k, dtype=torch.float16), torch.zeros(k, n, dtype=torch.float16), torch.zeros(
        m, n, dtype=torch.float16)


def _v5(example, warps=4, bm=128, bn=128, bk=32, stages=3):
    return example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                                                num_stages=stages, split_k_factor=1)


def _generate(kernel, args, arch="sm_90a", **options):
    generated = _C.generate_cuda(kernel.compile(*args).program, arch=arch, **options)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == ELF_MAGIC and report["spill_bytes"] == 0, report["log"]
    return generated


def _body(source):
    return source.split('extern "C"')[1]


def _lowered(source):
    body = _body(source)
    if "tilus::copy_ring_expect(" in body:
        assert "cp_async" not in body  # all or nothing
        return True
    assert "copy_ring" not in body
    return False


@pytest.mark.parametrize("config", [(4, 128, 128, 32, 3), (8, 128, 128, 32, 4), (4, 128, 64, 16, 3)])
def test_seed_matmul_copies_are_tma_on_sm90a(example, config):
    """Every tile of the seed's MatmulV5 is one TMA copy (B's 256-byte rows: two 128-byte
    column blocks) on one tensor map per operand, read by wgmma (the 128x128 tiles) or by
    ldmatrix (128x64x16: mma.sync)."""
    warps, bm, bn, bk, stages = config
    generated = _generate(_v5(example, *config), (1000, 1040, 528, *_mats(4, 4, 4)))
    source = generated["source"]
    assert _lowered(source)
    maps = generated["tma_maps"]
    boxes = sorted((maps.spec(k)["view"], maps.spec(k)["box"], maps.spec(k)["swizzle_bytes"]) for k in range(len(maps)))
    # A's 64-byte rows take the 64-byte swizzle; 32-byte rows none
    assert boxes == [("ga", [bm, bk], 64 if bk == 32 else 0), ("gb", [bk, 64], 128)]
    loop = source[source.index("for (int offset_k"):source.index("// free_shared(sa)")]
    # each copy adds its tile's bytes to the group's barrier before thread 0 issues it
    assert loop.count("tilus::copy_ring_expect(") == 2
    assert f"{bm * bk * 2}u);" in loop and f"{bk * bn * 2}u);" in loop
    assert loop.count("tilus::tma_load_2d(") == 1 + bn * 2 // 128
    # commit: thread 0 arrives on the group's barrier; wait_group(n): all but the newest n
    assert "if (tl_tid == 0) tilus::copy_ring_arrive(" in loop
    assert f"while (tl_copy_waited + {stages - 2} < tl_copy_committed)" in loop
    assert "fence_proxy_async_shared" not in loop  # TMA writes are the async proxy's already
    # the epilogue's generic-proxy writes (store_shared) are fenced against later TMA copies
    epilogue = source[source.index("// free_shared(sa)"):]
    store = epilogue.index("tilus::store_shared_vec")
    assert epilogue.index("fence_proxy_async_shared();  // generic shared writes", store) < epilogue.index(
        "__syncthreads();", store)
    if bk == 16:
        return
    # the dot keeps running past the copies into the other stage
    assert loop.count("wgmma_wait_group<1>") == 1 and loop.count("wgmma_wait_group<0>") == 1
    if warps == 4:  # the wait retires this warpgroup's previous dot; a barrier tells thread 0
        assert loop.index("wgmma_wait_group<1>") < loop.index("__syncthreads();") < loop.index("tma_load_2d")
    else:  # two warpgroups: both finish their dot before the loop's closing barrier
        assert loop.index("wgmma_wait_group<0>") < loop.rindex("__syncthreads();")


def test_ring_of_barriers_retires_its_oldest_group_when_full():
    generated = _generate(ManyGroups(groups=10), (150, torch.zeros(150, 32), torch.zeros(150, 32)))
    source = generated["source"]
    assert _lowered(source)
    # 8 barriers after the tiles (10 x 16 x 32 floats), in the dynamic shared memory the
    # launch asks for; no static shared memory
    tiles = 10 * 16 * 32 * 4
    assert f"tl_copy_ring_base = tilus::smem_u32(tl_smem) + {tiles}u;" in source
    assert generated["dynamic_smem"] == tiles + 64 and "__shared__ alignas" not in source
    commit = source.index("tilus::copy_ring_arrive(")
    assert source.index("while (tl_copy_waited + 7 < tl_copy_committed)", commit) < source.index("__syncthreads();",
                                                                                                commit)
    # the kernel lets every copy land before it exits
    tail = source[source.rindex("no TMA copy may still write"):]
    assert "while (tl_copy_waited + 0 < tl_copy_committed)" in tail


def test_a_kernel_that_fits_only_without_the_barriers_keeps_cp_async():
    """The ring's 64 bytes come on top of the tiles: at exactly 227 KB of tiles (an sm_90
    block's most) the kernel stays on cp.async; 2 KB less and it is lowered."""
    x = torch.zeros(4000, 32)
    full = _generate(ManyGroups(groups=113, pad=256), (4000, x, x))
    assert full["dynamic_smem"] == 227 * 1024 and not _lowered(full["source"])
    roomy = _generate(ManyGroups(groups=112, pad=256), (4000, x, x))
    assert roomy["dynamic_smem"] == 227 * 1024 - 2048 + 64 and _lowered(roomy["source"])


def test_kernels_that_stay_on_cp_async(example, monkeypatch):
    args = (1000, 1040, 528, *_mats(4, 4, 4))
    assert not _lowered(_generate(_v5(example), args, arch="sm_80")["source"])
    assert not _lowered(_generate(_v5(example), args, pointers_aligned=False)["source"])
    assert not _lowered(_generate(_v5(example), args, bounds_check=True)["source"])
    assert not _lowered(_generate(_v5(example), args, copy_tma=False)["source"])
    # B's rows of 100 halves (200 bytes) are no TMA stride: neither operand is lowered
    assert not _lowered(_generate(_v5(example), (1000, 100, 528, *_mats(4, 4, 4)))["source"])
    # the 32x256 tile (mma.sync) swizzles B's 512-byte rows in a way the TMA unit does not write
    assert not _lowered(_generate(_v5(example, 4, 32, 256, 32, 5), args)["source"])
    assert not _lowered(_generate(_v5(example), (1000, 100, 528, *_mats(4, 4, 4)))["source"])
    x = torch.zeros(150, 32)
    assert not _lowered(_generate(ManyGroups(in_group=True), (150, x, x))["source"])
    # the launcher's switch
    monkeypatch.setenv("TILUS_COPY_TMA", "0")
    assert not _lowered(_v5(example).source(*args, arch="sm_90a"))
    monkeypatch.setenv("TILUS_COPY_TMA", "1")
    assert _lowered(_v5(example).source(*args, arch="sm_90a"))


def test_a_partly_aligned_build_lowers_the_copies_of_its_aligned_views(example):
    """A misaligned output pointer (a partly aligned build, runtime/launcher.py alignment_of)
    leaves A's and B's copies on TMA; a misaligned operand keeps the kernel on cp.async
    (its tensor map would not encode)."""
    args = (1000, 1040, 528, *_mats(4, 4, 4))
    names = list(_v5(example).compile(*args).program.param_names)
    assert _lowered(_generate(_v5(example), args, unaligned_params=[names.index("c_ptr")])["source"])
    assert not _lowered(_generate(_v5(example), args, unaligned_params=[names.index("a_ptr")])["source"])
