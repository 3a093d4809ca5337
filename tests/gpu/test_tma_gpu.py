"""TMA on the GPU (sm_90) against torch: load -> registers -> store round trips at odd
shapes with boxes reaching outside the tensor (zero fill) and stores clipped to it
(padding columns of a strided view stay untouched), every swizzle (none, 64B, 128B, 128B
column blocks), a rank-3 view, the multi-stage TMA + mbarrier matmul (mma.sync and
wgmma), tensor maps re-encoded when the tensors change, and the host's refusal of a
stride TMA cannot take. Outputs are poisoned with NaN before each run."""


import pytest
import torch

from tests.operands import matmul_operands

from tests.interp.test_mbarrier_tma import TmaPipelineMatmul, TmaStoreCopyTx
from tests.interp.test_tma_roundtrip import shifted_plus_one
from tests.interp.tma_scripts import TmaBatchedCopy, TmaPipelineMatmulStages, TmaRoundTrip, TwoBoxes

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                       reason="TMA needs sm_90 (Hopper)"),
]


@pytest.mark.parametrize("block_m, block_n", [(16, 16), (16, 32), (32, 64), (16, 128), (64, 128), (256, 8)])
@pytest.mark.parametrize("shift", [0, 5, -3])
@pytest.mark.parametrize("m, n, ld", [(37, 72, 80), (300, 264, 264), (1, 8, 8)])
def test_round_trip(block_m, block_n, shift, m, n, ld):
    x = torch.randn(m, ld, dtype=torch.float16, device="cuda")
    y = torch.full((m, ld), float("nan"), dtype=torch.float16, device="cuda")
    TmaRoundTrip(block_m, block_n, shift)(m, n, ld, x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y[:, :n].cpu(), shifted_plus_one(x.cpu(), m, n, shift))
    if ld > n:
        assert torch.isnan(y[:, n:]).all(), "a clipped TMA store wrote the padding columns"


def test_round_trip_matches_the_interpreter():
    m, n, ld = 45, 72, 72
    x = torch.randn(m, ld, dtype=torch.float16)
    y_cpu = torch.full((m, ld), float("nan"), dtype=torch.float16)
    TmaRoundTrip(32, 64, 5)(m, n, ld, x, y_cpu)
    y_gpu = torch.full((m, ld), float("nan"), dtype=torch.float16, device="cuda")
    TmaRoundTrip(32, 64, 5)(m, n, ld, x.cuda(), y_gpu)
    assert torch.equal(y_gpu.cpu(), y_cpu)


def test_new_tensors_get_new_tensor_maps():
    # Same shapes, other buffers: the cached maps must not send the copy to the old ones
    # (the native fast path serves the second and third calls).
    m, n = 37, 72
    kernel = TmaRoundTrip(16, 32, 0)
    x1, x2 = (torch.randn(m, n, dtype=torch.float16, device="cuda") for _ in range(2))
    y1, y2 = (torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda") for _ in range(2))
    kernel(m, n, n, x1, y1)
    kernel(m, n, n, x2, y2)
    x1.mul_(2)
    y1.fill_(float("nan"))
    kernel(m, n, n, x1, y1)
    torch.cuda.synchronize()
    torch.testing.assert_close(y1, x1 + 1)
    torch.testing.assert_close(y2, x2 + 1)
    # other extents with the same buffers: re-encoded too
    y2.fill_(float("nan"))
    kernel(20, 40, n, x2, y2)
    torch.cuda.synchronize()
    torch.testing.assert_close(y2[:20, :40], x2[:20, :40] + 1)
    assert torch.isnan(y2[20:]).all() and torch.isnan(y2[:, 40:]).all()


def test_stride_tma_cannot_take_is_refused_naming_the_parameter():
    x = torch.randn(37, 75, dtype=torch.float16, device="cuda")
    y = torch.zeros(37, 75, dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match=r"'x_ptr'.*150 bytes; ld"):
        TmaRoundTrip()(37, 72, 75, x, y)


def test_rank3_view():
    b, m, n = 3, 45, 72
    x = torch.randn(b, m, n, device="cuda")
    y = torch.full((b, m, n), float("nan"), device="cuda")
    TmaBatchedCopy()(b, m, n, x, y)
    torch.testing.assert_close(y, x * 2)


def test_interp_test_store_script():
    x = torch.randn(37, 72, dtype=torch.float16, device="cuda")
    y = torch.full((37, 72), float("nan"), dtype=torch.float16, device="cuda")
    TmaStoreCopyTx()(37, 72, x, y)
    torch.testing.assert_close(y, x + 1.0)


def _operands(m, n, k):
    a, b = matmul_operands(m, n, k)
    return a, b, torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")


@pytest.mark.parametrize("config, wgmma", [
    ((32, 32, 16, 2), False),   # 32-byte rows: mma.sync on unswizzled tiles
    ((64, 64, 32, 3), True),    # wgmma on 64B-swizzled tiles
    ((64, 128, 64, 4), True),   # B in two 128B column blocks
    ((128, 128, 64, 3), True),
])
@pytest.mark.parametrize("m, n, k", [(333, 264, 200), (64, 64, 64), (1, 8, 8)])
def test_pipelined_matmul(config, wgmma, m, n, k):
    a, b, c = _operands(m, n, k)
    kernel = TmaPipelineMatmulStages(*config)
    assert ("wgmma.mma_async" in kernel.source(m, n, k, a, b, c)) == wgmma
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=1e-2, rtol=1e-2)


def test_two_stage_matmul_of_the_interpreter_tests():
    a, b, c = _operands(45, 40, 56)
    TmaPipelineMatmul()(45, 40, 56, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=1e-2, rtol=1e-2)


def test_example_matmul_tma_pipeline():
    from examples.matmul_tma_pipeline import MatmulTmaPipeline

    a, b, c = _operands(1000, 1032, 520)
    MatmulTmaPipeline()(1000, 1032, 520, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=1e-2, rtol=1e-2)


def test_expected_bytes_checked_before_the_gpu_runs():
    """An arrive_and_expect_tx that its TMA copies cannot satisfy is refused at its line
    when the kernel is built for the GPU (it would hang there), and nothing is written;
    the matching one runs (tests/codegen/test_transaction_bytes.py has the rest)."""
    from tests.codegen.test_transaction_bytes import _expect_line
    from tilus.lang.errors import ScriptValueError

    x = torch.randn(128, 64, dtype=torch.float16, device="cuda")
    y = torch.full_like(x, float("nan"))
    with pytest.raises(ScriptValueError, match="expects 32768 bytes .* bring 16384 bytes: its wait would never "
                                               "complete") as info:
        TwoBoxes(32768)(128, x, y)
    assert info.value.line == _expect_line(TwoBoxes) and bool(y.isnan().all())
    TwoBoxes(16384)(128, x, y)
    assert torch.equal(y, x)


def test_a_wait_that_never_completes_fails_the_launch():
    """tilus.option.debug.hang_check: a wait whose bytes never come (the copies sit under
    a run-time branch that is false, which the build-time check cannot follow) gives up,
    prints its script line and traps; run in a child process, since a trap leaves the
    CUDA context unusable."""
    import inspect
    import pathlib
    import subprocess
    import sys

    source, first = inspect.getsourcelines(TwoBoxes)
    line = first + next(k for k, text in enumerate(source) if "self.mbarrier.wait(bar, phase=0)" in text)
    root = pathlib.Path(__file__).resolve().parents[2]
    code = ("import sys, torch, tilus\n"
            f"sys.path.insert(0, {str(root)!r})\n"
            "from tests.interp.tma_scripts import TwoBoxes\n"
            "tilus.option.debug.hang_check(0.5)\n"
            "x = torch.randn(64, 64, device='cuda').half()\n"
            "y = torch.empty_like(x)\n"
            "TwoBoxes(16384, branch=True)(64, x, y)\n"
            "torch.cuda.synchronize()\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert f"the mbarrier wait at tma_scripts.py:{line}" in out and "did not complete" in out, out
