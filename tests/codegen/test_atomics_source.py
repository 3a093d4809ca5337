"""The CUDA generated for the atomics, scatter stores and random numbers compiles (NVRTC,
sm_80 and sm_90a) for every supported dtype, and says what it does: the scope's atomic
function, the replica leader, the fences of a non-relaxed sem, Philox."""

import os
import re

import pytest
import torch

from tests.interp.test_atomics import CasMax, Elementwise, Histogram, Scatter, SharedHistogram
from tests.interp.test_random import Words
from tilus import _C, bfloat16, float16, float32, float64, int32, int64, uint32
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc

rt = _C.runtime

require_nvrtc()

ARCHS = ["sm_80", "sm_90a"]


def _source(kernel, args, arch):
    return kernel_source(kernel, args, arch)


def _f64(*shape):
    return torch.zeros(*shape, dtype=torch.float64)


@pytest.mark.parametrize("arch", ARCHS)
def test_histograms_compile(arch):
    i32 = lambda n: torch.zeros(n, dtype=torch.int32)
    # nothing reads the old counts: the global adds are reds, the shared one an atomic
    src = _source(Histogram(128), (1000, 38, i32(1000), i32(38)), arch)
    assert "tilus::red_add<2>(" in src and "tilus::atomic_add" not in src
    src = _source(SharedHistogram(64, 9), (100, i32(100), i32(9)), arch)
    assert "tilus::atomic_add<0>(" in src and "tilus::red_add<2>(" in src


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", ["add", "sub"])
def test_global_adds_without_old_values_are_reds(arch, op):
    """A global add or sub whose old values nothing reads is a PTX red, for every dtype
    (bfloat16 has none: its atomic runs and the old value is dropped); reading them keeps
    the atomic."""
    args = (8, 9, _f64(8, 9), _f64(5, 7), _f64(5, 7), _f64(5, 7))
    for dtype in [int32, uint32, int64, float32, float64, float16, bfloat16]:
        src = _source(Elementwise("global", op, dtype, 5, 7, keep_old=False), args, arch)
        assert f"tilus::red_{op}<2>(" in src and f"tilus::atomic_{op}<2>(" not in src, dtype
        kept = _source(Elementwise("global", op, dtype, 5, 7), args, arch)
        assert f"tilus::atomic_{op}<2>(" in kept and "tilus::red_" not in kept, dtype


@pytest.mark.parametrize("arch", ARCHS)
def test_aligned_float_reds_are_vectors(arch):
    """float32 reds of consecutive elements a thread holds become one red.v2/v4 (sm_90;
    before it red_add_vec issues one red each) when the column offset and the row
    stride keep the vector aligned; an odd offset stays scalar."""
    def reds(offset, cols):
        src = _source(Elementwise("global", "add", float32, 8, 16, offset=offset, keep_old=False),
                      (16, cols, _f64(16, cols), _f64(8, 16), _f64(8, 16), _f64(8, 16)), arch)
        return set(re.findall(r"tilus::red_add\w*<[0-9, ]+>", src))
    assert reds((1, 4), 32) == {"tilus::red_add_vec<2, 4>"}
    assert reds((1, 3), 32) == {"tilus::red_add<2>"}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op,dtypes", [
    ("add", [int32, uint32, int64, float32, float64, float16, bfloat16]),
    ("sub", [int32, int64, float32, float16, bfloat16]),
    ("min", [int32, uint32, int64]), ("max", [int32, int64]),
    ("exch", [int32, int64, float32, float64]), ("cas", [int32, uint32, int64, float32, float64])])
def test_elementwise_compiles_for_each_dtype(arch, space, op, dtypes):
    for dtype in dtypes:
        _source(Elementwise(space, op, dtype, 5, 7), (8, 9, _f64(8, 9), _f64(5, 7), _f64(5, 7), _f64(5, 7)), arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op", ["add", "sub", "min", "max", None])
def test_scatter_compiles(arch, space, op):
    dtype = int32 if op in ("min", "max") else float32
    src = _source(Scatter(space, op, dtype, 6, 5, 4, 5, 0),
                  (_f64(4, 5), torch.zeros(6, 5, dtype=torch.int32), _f64(6, 5), _f64(6, 5)), arch)
    assert "(unsigned long long)(tl_index" in src  # out-of-range indices are dropped


def test_a_replicated_tile_is_applied_once_and_old_values_are_shared():
    # 8 elements over 4 warps: 128 threads hold them, so replicas exist.
    src = _source(Histogram(8), (100, 6, torch.zeros(100, dtype=torch.int32),
                                 torch.zeros(6, dtype=torch.int32)), "sm_80")
    assert "if ((tl_tid" in src  # only the replica leader issues the atomic
    src = _source(CasMax(8, float32, 3), (3, torch.zeros(3, 8), torch.zeros(8)), "sm_80")
    assert "tilus::atomic_cas<2>(" in src
    assert "the replicas read the leaders' old values" in src


def _acq_rel_add(n, scope):
    """An acq_rel atomic add of ones to an int32 [n] at `scope`."""
    import tilus

    class AcqRelAdd(tilus.Script):
        def __call__(self, g: ~int32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            gg = self.global_view(g, dtype=int32, shape=[n])
            v = self.register_tensor(dtype=int32, shape=[n], init=1)
            self.atomic.global_add(gg, v, sem="acq_rel", scope=scope)

    return AcqRelAdd(), (torch.zeros(n, dtype=torch.int32),)


def test_sem_adds_fences_at_the_scope():
    src = _source(*_acq_rel_add(32, "sys"), "sm_90a")
    assert src.count("tilus::atomic_fence<3>();") == 2
    assert "tilus::atomic_add<3>(" in src


@pytest.mark.parametrize("scope,fence", [("cta", "fence.acq_rel.cta"), ("gpu", "fence.acq_rel.gpu"),
                                         ("sys", "fence.acq_rel.sys")])
def test_sem_fences_are_acquire_release_not_sequentially_consistent(scope, fence):
    # release/acquire is what sem= promises; the SC fence (__threadfence, membar.gl) made
    # every split-K block of the A16Wx matmul wait on MEMBAR.SC at its end (ncu, H100)
    from tests.codegen.nvrtc_ctypes import device_headers, load_nvrtc

    compiler, why = load_nvrtc()
    if compiler is None:
        pytest.skip(why)
    src = _source(*_acq_rel_add(1, scope), "sm_80")
    ok, log, _, ptx = compiler.compile(src, "sm_80", device_headers())
    assert ok, log
    assert ptx.count(fence) == 2, ptx
    assert "fence.sc" not in ptx and "membar" not in ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("offset_dtype", [int32, int64, uint32])
def test_random_compiles(arch, offset_dtype):
    src = _source(Words(37, offset_dtype), (5, torch.zeros(37, dtype=torch.int64),
                                            torch.zeros(5, 37, dtype=torch.int64), torch.zeros(2, 37)), arch)
    assert "tilus::philox_word(" in src and "tilus::normal_from_bits(" in src
