"""The build-time check of mbarrier transaction bytes (csrc/transforms/transaction_bytes.h):
an arrive_and_expect_tx whose TMA copies bring other than the bytes it expects is refused
at its script line before any GPU run (there, its wait would hang or complete early);
kernels the check cannot follow are left alone rather than refused."""

import inspect

import pytest
import torch

from tests.interp.tma_scripts import TmaRoundTrip, TwoBoxes
from tilus import _C
from tilus.lang.errors import NativeError, ScriptRuntimeError, ScriptUninitializedReadError


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
