"""The build-time check of mbarrier transaction bytes (csrc/transforms/transaction_bytes.h):
an arrive_and_expect_tx whose TMA copies bring other than the bytes it expects is refused
at its script line before any GPU run (there, its wait would hang or complete early);
kernels the check cannot follow are left alone rather than refused."""

import inspect

import pytest
import torch

import tilus
from tests.interp.tma_scripts import TmaRoundTrip
from tilus import _C, float16, int32
from tilus.lang.errors import NativeError, ScriptRuntimeError, ScriptUninitializedReadError
from tilus.utils import cdiv


class TwoBoxes(tilus.Script):
    """One thread expects `expect` bytes and copies `copies` [64, 64] float16 tiles
    (8192 bytes each) on the barrier in a loop; `branch` puts the copies under a run-time
    condition, `copy_first` issues one copy before the expect."""

    def __init__(self, expect, copies=2, branch=False, copy_first=False, threads_expect=False):
        super().__init__()
        self.expect, self.copies, self.branch, self.copy_first = expect, copies, branch, copy_first
        self.threads_expect = threads_expect

    def __call__(self, m: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [cdiv(m, 64)]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, 64])
        gy = self.global_view(y_ptr, dtype=float16, shape=[m, 64])
        s = self.shared_tensor(dtype=float16, shape=[self.copies, 64, 64])
        bar = self.mbarrier.alloc(counts=[128 if self.threads_expect else 1])
        if self.threads_expect:  # every thread expects a 128th
            self.mbarrier.arrive_and_expect_tx(bar, self.expect // 128)
        with self.single_thread():
            if self.copy_first:
                self.tma.global_to_shared(src=gx, dst=s[0], offsets=[self.blockIdx.x * 64, 0], mbarrier=bar)
            if not self.threads_expect:
                self.mbarrier.arrive_and_expect_tx(bar, self.expect)
            if self.branch:
                if m > 64:
                    for i in range(self.copies):
                        self.tma.global_to_shared(src=gx, dst=s[i], offsets=[self.blockIdx.x * 64, 0], mbarrier=bar)
            else:
                for i in range(1 if self.copy_first else 0, self.copies):
                    self.tma.global_to_shared(src=gx, dst=s[i], offsets=[self.blockIdx.x * 64, 0], mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        t = self.load_shared(s[self.copies - 1])
        self.store_global(gy, t, offsets=[self.blockIdx.x * 64, 0])


def _generate(kernel):
    x = torch.zeros(128, 64, dtype=torch.float16)
    return _C.generate_cuda(kernel.compile(128, x, x).program, arch="sm_90a")


def _expect_line(cls, expect_in_threads=False):
    source, first = inspect.getsourcelines(cls)
    wanted = "self.mbarrier.arrive_and_expect_tx(bar, self.expect" + (" // 128)" if expect_in_threads else ")")
    return first + next(k for k, line in enumerate(source) if wanted in line)


def test_matching_bytes_build():
    _generate(TwoBoxes(16384))


@pytest.mark.parametrize("expect, brought, how", [(8192, 16384, "complete before all of them have landed"),
                                                   (32768, 16384, "never complete")])
def test_a_mismatch_is_refused_at_the_expect_line(expect, brought, how):
    with pytest.raises(NativeError, match=f"expects {expect} bytes on .*bring {brought} bytes: its wait would {how}") \
            as info:
        _generate(TwoBoxes(expect))
    assert info.value.kind == "ValueError" and info.value.line == _expect_line(TwoBoxes)


def test_the_copies_of_a_loop_count_once_per_trip():
    _generate(TwoBoxes(3 * 8192, copies=3))
    with pytest.raises(NativeError, match="expects 16384 bytes .* bring 24576 bytes"):
        _generate(TwoBoxes(16384, copies=3))


def test_every_thread_of_the_group_expects_its_share():
    """Tilus 0.2's scripts let each of the block's 128 threads expect a 128th of the tile."""
    _generate(TwoBoxes(16384, threads_expect=True))
    x = torch.zeros(64, 64, dtype=torch.float16)
    _C.generate_cuda(TmaRoundTrip(block_m=16, block_n=32).compile(64, 64, 64, x, x).program, arch="sm_90a")
    with pytest.raises(NativeError, match=r"expects 8192 bytes .* \(64 from each of the 128 threads running it\), "
                                          r"but the TMA copies .* bring 16384 bytes") as info:
        _generate(TwoBoxes(8192, threads_expect=True))
    assert info.value.line == _expect_line(TwoBoxes, expect_in_threads=True)


@pytest.mark.parametrize("irregular", [{"branch": True}, {"copy_first": True}])
def test_what_the_check_cannot_follow_is_left_alone(irregular):
    """Copies under a run-time branch, or one issued before its expect: the bytes that
    arrive depend on the run (or on another statement), so even a wrong count builds (the
    interpreter reports the deadlock when a run reaches it)."""
    _generate(TwoBoxes(4096, **irregular))


def test_the_interpreter_reports_what_the_check_refuses():
    """The same mismatches in CPU runs: too few bytes expected, the wait completes before
    the second tile lands and the read of it is reported; too many, a deadlock."""
    x = torch.randn(128, 64).half()
    y = torch.empty_like(x)
    TwoBoxes(16384)(128, x, y)
    assert torch.equal(x, y)
    with pytest.raises(ScriptUninitializedReadError, match=r"reads element s\[1, 0, 0\] .* before anything wrote it"):
        TwoBoxes(8192)(128, x, y)
    with pytest.raises(ScriptRuntimeError, match="deadlock: .* 16384 transaction bytes outstanding"):
        TwoBoxes(32768)(128, x, y)
