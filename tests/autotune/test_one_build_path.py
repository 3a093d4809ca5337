"""A kernel built by the autotuner's parallel build and the same kernel built for a
single launch go through one build entry (csrc/runtime/build.h) and so hit one compile
cache entry: the launch after a tuning compiles nothing. Needs NVRTC only."""

import numpy as np
import pytest
import torch

from tilus import _C
from tilus.runtime import launcher
from tilus.tuning.build import Candidate, GpuTarget, build_candidates, transpile_all

from .kernels import Scale

pytestmark = pytest.mark.skipif(not _C.runtime.nvrtc_available(), reason="needs NVRTC")


def _target(arch, smem_limit=8 * 1024):
    return GpuTarget(device=-1, name="test", arch=arch, smem_limit=smem_limit, max_threads=1024)


def test_a_single_build_hits_what_the_parallel_build_compiled(cache_dir):
    candidates, _ = transpile_all(Scale(2.0), [100, np.zeros(100, np.float32)])
    built, failures = build_candidates(candidates, _target("sm_80"), True, "scale")
    assert len(built) == 4 and {f.stage for f in failures.values()} == {"unfit"}
    cache = _C.runtime.compile_cache()
    before = cache.stats()
    for c in built:
        single = launcher.build_variant(c.compiled.program, True, "sm_80")
        assert single["cache_key"] == c.meta["cache_key"]
        assert single["source"] == c.meta["source"] and single["cubin"][:4] == b"\x7fELF"
    after = cache.stats()
    assert after["compiles"] == before["compiles"]
    assert after["memory_hits"] == before["memory_hits"] + len(built)


@pytest.mark.parametrize("alignment", [1 << 0, 1 << 1, 1 << 0 | 1 << 1, False])
def test_partly_aligned_builds_share_their_entry_too(cache_dir, alignment):
    """A call that misses the aligned build's assumption (n = 100 is a vector extent off a
    multiple of 16: bit 0; a misaligned x: bit 1) is tuned and launched with one build."""
    candidates, _ = transpile_all(Scale(2.0), [100, np.zeros(100, np.float32)])
    built, _ = build_candidates(candidates, _target("sm_80"), [alignment] * len(candidates), "scale")
    assert len(built) == 4
    aligned = launcher.build_variant(built[0].compiled.program, True, "sm_80")
    for c in built:
        single = launcher.build_variant(c.compiled.program, alignment, "sm_80")
        assert single["cache_key"] == c.meta["cache_key"]
    assert single["source"] != aligned["source"]  # x's view moves elements, not 16-byte vectors


def test_launches_after_the_build_check_its_shared_memory_plan(cache_dir, monkeypatch):
    # the launch's refusal of a kernel over the device's limit uses what the build laid out
    candidates, _ = transpile_all(Scale(2.0), [100, np.zeros(100, np.float32)])
    built, _ = build_candidates(candidates, _target("sm_80"), True, "scale")
    monkeypatch.setattr(_C, "generate_cuda", lambda *a, **k: pytest.fail("the plan was made again"))
    for c in built:
        c.compiled.check_shared_memory("sm_80", 8 * 1024, "the test target")
        with pytest.raises(RuntimeError, match=f"needs {c.meta['dynamic_smem']} bytes"):
            c.compiled.check_shared_memory("sm_80", c.meta["dynamic_smem"] - 1, "a smaller target")


def _v5_built_both_ways(example) -> str:
    """The seed's MatmulV5 tile built for sm_90a by the tuner and by the launch: the same
    cache entry; returns its source."""
    kernel = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32,
                                                  num_stages=3, split_k_factor=1)
    z = torch.zeros(4, 4, dtype=torch.float16)
    compiled = kernel.compile(256, 256, 256, z, z, z)
    [candidate], _ = build_candidates([Candidate(0, {}, kernel, compiled)], _target("sm_90a", 227 * 1024),
                                      True, "v5")
    single = launcher.build_variant(compiled.program, True, "sm_90a")
    assert single["cache_key"] == candidate.meta["cache_key"]
    return candidate.meta["source"]


@pytest.mark.parametrize("wgmma", ["1", "0"])
def test_both_paths_read_the_codegen_choices_alike(example, cache_dir, monkeypatch, wgmma):
    """TILUS_WGMMA / TILUS_UNROLL_BUDGET are read by the callers (tilus.option), not by
    codegen; the tuner's build and the launch read them the same way."""
    monkeypatch.setenv("TILUS_WGMMA", wgmma)
    monkeypatch.setenv("TILUS_UNROLL_BUDGET", "0")
    source = _v5_built_both_ways(example)
    assert ("wgmma.mma_async" in source) == (wgmma == "1")
    assert "#pragma unroll 3\n" in source  # the hint, followed as written
    assert _C.runtime.compile_cache().stats()["compiles"] == 1


@pytest.mark.parametrize("copy_tma", ["1", "0"])
def test_both_paths_read_copy_tma_alike(example, cache_dir, monkeypatch, copy_tma):
    """TILUS_COPY_TMA (copy_async lowered to TMA on sm_90a) reaches both builds alike; a
    choice set with tilus.option.codegen wins over the environment."""
    import tilus

    monkeypatch.setenv("TILUS_COPY_TMA", copy_tma)
    assert ("tilus::copy_ring_expect(" in _v5_built_both_ways(example)) == (copy_tma == "1")
    try:
        tilus.option.codegen(copy_tma=copy_tma == "0")
        assert tilus.option.get_codegen().copy_tma == (copy_tma == "0")
        with pytest.raises(TypeError, match="copy_tma must be a bool"):
            tilus.option.codegen(copy_tma="no")
    finally:
        tilus.option.reset_codegen()
    assert tilus.option.get_codegen().copy_tma == (copy_tma == "1")


def test_every_scalar_type_has_one_parameter_kind():
    import tilus

    kinds = {name: _C.runtime.param_kind(getattr(tilus, name)) for name in (
        "boolean", "int8", "int16", "int32", "uint8", "uint16", "uint32", "int64", "uint64",
        "float16", "bfloat16", "float32", "float64")}
    assert kinds == {"boolean": "i32", "int8": "i32", "int16": "i32", "int32": "i32",
                     "uint8": "u32", "uint16": "u32", "uint32": "u32", "int64": "i64",
                     "uint64": "u64", "float16": "f16", "bfloat16": "bf16", "float32": "f32",
                     "float64": "f64"}
    assert _C.runtime.param_kind(~tilus.float16) == "ptr"
