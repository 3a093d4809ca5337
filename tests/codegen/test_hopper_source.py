"""The CUDA generated for Hopper's mbarriers, proxy fences and bulk groups compiles with
NVRTC (mbarriers on sm_80 and sm_90a; transaction counts, fences and bulk groups on
sm_90a) and sm_80 refuses the sm_90a-only instructions at their script line. TMA copies:
tests/codegen/test_tma_source.py."""

import os

import pytest
import torch

import tilus
from tilus import _C, float32, int32, uint32
from tilus.lang.errors import NativeError
from tests.codegen.nvrtc_compile import require_nvrtc

rt = _C.runtime

require_nvrtc()


def _generate(kernel, args, arch):
    return _C.generate_cuda(kernel.compile(*args).program, True, arch)


def _compile(kernel, args, arch):
    generated = _generate(kernel, args, arch)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == b"\x7fELF"
    return generated["source"]


class BarrierRounds(tilus.Script):
    """Block-wide rounds over two barriers: arrive, wait, flip the phase."""

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        bars = self.mbarrier.alloc(counts=[128, 256])
        phase: uint32 = self.mbarrier.consumer_initial_phase
        for i in range(n):
            self.mbarrier.arrive(bars[0])
            self.mbarrier.arrive(bars[1], count=2)
            self.mbarrier.wait(bars[0], phase=phase)
            self.mbarrier.wait(bars[i % 2], phase=phase)
            phase ^= 1


class ExpectTx(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        bar = self.mbarrier.alloc()
        self.mbarrier.arrive_and_expect_tx(bar, 0)
        self.mbarrier.wait(bar, phase=0)
        self.fence.proxy_async()
        self.fence.proxy_async("global")
        self.fence.proxy_async_release()
        self.tma.commit_group()
        self.tma.wait_group(0, read=True)
        self.tma.wait_group(1)


def _z():
    return torch.zeros(4, dtype=torch.float32)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_mbarrier_rounds_compile(arch):
    src = _compile(BarrierRounds(), (3, _z()), arch)
    assert "mbarrier.init.shared.b64" in src
    assert ("try_wait.parity" if arch == "sm_90a" else "test_wait.parity") in src
    assert ("fence.mbarrier_init" in src) == (arch == "sm_90a")


def test_expect_tx_fences_and_bulk_groups_compile_on_sm90a():
    src = _compile(ExpectTx(), (_z(),), "sm_90a")
    for text in ("mbarrier.arrive.expect_tx.shared.b64", "fence.proxy.async.shared::cta",
                 "fence.proxy.async.global", "cp.async.bulk.commit_group",
                 "cp.async.bulk.wait_group.read 0", "cp.async.bulk.wait_group 1"):
        assert text in src, text


def test_sm80_refuses_expect_tx_at_the_script_line():
    with pytest.raises(NativeError, match="needs sm_90a") as info:
        _generate(ExpectTx(), (_z(),), "sm_80")
    assert info.value.kind == "NotImplementedError" and info.value.line > 0
    assert "self.mbarrier.arrive_and_expect_tx(bar, 0)" in info.value.text


def test_ir_prints_the_hopper_instructions():
    text = str(ExpectTx().compile(_z()).program)
    assert "mbarrier_alloc(counts=[128])" in text
    assert "mbarrier_arrive_expect_tx(" in text and "tma_wait_group(0, read=True)" in text
    assert "fence_proxy_async(space=global)" in text
