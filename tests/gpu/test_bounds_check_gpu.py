"""tilus.option.debug.bounds_check on CUDA: a kernel's global access outside the tensor
passed for its pointer is skipped (a load reads 0, nothing is written around the tensor)
and reported after the launch as ScriptBoundsError naming the script line, the
instruction, the view and element, the parameter and the block and thread; correct
kernels (the matmul, softmax and norm examples) report nothing and compute the right
results. The native launch path steps aside while the option is on."""

import pytest
import torch

import tilus
from tests.gpu import bounds_kernels as bk
from tilus.lang.errors import ScriptBoundsError

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU; run `pytest -m gpu` on the device machine",
                allow_module_level=True)

PAD = 4096  # poisoned elements on each side of a tensor under test


@pytest.fixture
def checked():
    tilus.option.debug.bounds_check(True)
    yield
    tilus.option.debug.bounds_check(None)


def _inside(numel, dtype, poison):
    """A tensor of `numel` elements in the middle of a larger poisoned buffer: (buffer,
    tensor). Writes past the tensor land in the buffer, where the test sees them."""
    buf = torch.full((numel + 2 * PAD,), poison, dtype=dtype, device="cuda")
    return buf, buf[PAD:PAD + numel]


def _surroundings_untouched(buf, numel, poison):
    torch.cuda.synchronize()
    outside = torch.cat([buf[:PAD], buf[PAD + numel:]])
    if poison != poison:  # nan
        return bool(torch.isnan(outside).all())
    return bool((outside == poison).all())


def _assert_site(error, op, view, param, bug):
    assert (error.op, error.view, error.param) == (op, view, param)
    assert error.file == bk.FILE and error.line == bk.LINES[bug]
    assert f'File "{bk.FILE}", line {bk.LINES[bug]}' in str(error)


def test_a_store_past_the_end_is_skipped_and_reported(checked):
    rows, cols, bm, bn, warps = 37, 70, 16, 32, 4
    x = torch.randn(rows, cols, device="cuda")
    buf, flat = _inside(rows * cols, torch.float32, float("nan"))
    y = flat.view(rows, cols)
    with pytest.raises(ScriptBoundsError) as info:
        bk.StorePastEnd(bm, bn, warps)(rows, cols, x, y)
    e = info.value
    _assert_site(e, "store_global", "gy", "y_ptr", "store_past_end")
    assert e.index[0] == rows and 0 <= e.index[1] < cols  # the row the view has too many
    assert e.byte_offset == (rows * cols + e.index[1]) * 4 and e.tensor_bytes == rows * cols * 4
    assert e.block == (rows // bm, e.index[1] // bn, 0) and 0 <= e.thread < warps * 32
    assert f"element [{rows}, {e.index[1]}] of 'gy'" in str(e)
    assert _surroundings_untouched(buf, rows * cols, float("nan"))
    torch.testing.assert_close(y, x + 1)  # every access inside the tensor ran


def test_a_load_past_the_end_reads_zero_and_is_reported(checked):
    n, shift, block = 300, 8, 128
    buf, x = _inside(n, torch.float32, float("nan"))
    x.copy_(torch.randn(n, device="cuda"))
    y = torch.full((n,), float("nan"), device="cuda")
    with pytest.raises(ScriptBoundsError) as info:
        bk.LoadBadOffset(block)(n, shift, x, y)
    e = info.value
    _assert_site(e, "load_global", "gx", "x_ptr", "load_bad_offset")
    assert n - shift <= e.index[0] < n and e.byte_offset == (e.index[0] + shift) * 4
    assert e.block == (e.index[0] // block, 0, 0)
    torch.cuda.synchronize()
    torch.testing.assert_close(y[:n - shift], x[shift:])
    assert bool((y[n - shift:] == 0).all())  # not the poison behind x


def test_a_scatter_past_the_end_is_skipped_and_reported(checked):
    n, bins, extra = 1024, 16, 4  # whole blocks: no padding lanes adding to bin 0
    idx = torch.randint(0, bins + extra, (n,), dtype=torch.int32, device="cuda")
    idx[:3] = bins + 1  # at least one outside
    buf, hist = _inside(bins, torch.int32, -7)
    hist.zero_()
    with pytest.raises(ScriptBoundsError) as info:
        bk.ScatterPastEnd()(n, bins, extra, idx, hist)
    e = info.value
    _assert_site(e, "atomic.global_scatter_add", "gh", "hist_ptr", "scatter_past_end")
    assert bins <= e.index[0] < bins + extra
    assert _surroundings_untouched(buf, bins, -7)
    expected = torch.bincount(idx.long(), minlength=bins + extra)[:bins].to(torch.int32)
    assert torch.equal(hist, expected)


def test_an_element_read_past_the_end_reads_zero_and_is_reported(checked):
    n, pick = 100, 103
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    with pytest.raises(ScriptBoundsError) as info:
        bk.ElementPastEnd()(n, pick, x, y)
    e = info.value
    _assert_site(e, "element load", "gp", "x_ptr", "element_past_end")
    assert e.index == [pick] and e.byte_offset == pick * 4
    torch.cuda.synchronize()
    assert bool((y == 0).all())  # x[pick] read as 0


def test_a_copy_async_past_the_end_zero_fills_and_is_reported(checked):
    rows, extra = 37, 3
    x = torch.randn(rows, 64, device="cuda")
    y = torch.full((rows + extra, 64), float("nan"), device="cuda")
    with pytest.raises(ScriptBoundsError) as info:
        bk.CopyAsyncPastEnd()(rows, extra, x, y)
    e = info.value
    _assert_site(e, "copy_async", "gx", "x_ptr", "copy_async_past_end")
    assert rows <= e.index[0] < rows + extra
    torch.cuda.synchronize()
    torch.testing.assert_close(y[:rows], x)
    assert bool((y[rows:] == 0).all())


def test_the_record_is_cleared_after_a_report(checked):
    x = torch.randn(300, device="cuda")
    y = torch.zeros(300, device="cuda")
    kernel = bk.LoadBadOffset()
    for _ in range(2):  # reported each time, not only the first
        with pytest.raises(ScriptBoundsError):
            kernel(300, 8, x, y)
    kernel(300, 0, x, y)  # no shift: correct, nothing reported
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x)


def test_the_native_launch_path_steps_aside_while_the_option_is_on():
    rows, cols = 37, 70
    x = torch.randn(rows, cols, device="cuda")
    buf, flat = _inside(rows * cols, torch.float32, float("nan"))
    kernel = bk.StorePastEnd()
    kernel(rows, cols, x, flat.view(rows, cols))  # unchecked: writes into the padding
    kernel(rows, cols, x, flat.view(rows, cols))  # the native path
    assert kernel._tilus_fast
    torch.cuda.synchronize()
    assert not _surroundings_untouched(buf, rows * cols, float("nan"))
    buf.fill_(float("nan"))
    tilus.option.debug.bounds_check(True)
    try:
        with pytest.raises(ScriptBoundsError):
            kernel(rows, cols, x, flat.view(rows, cols))
        assert _surroundings_untouched(buf, rows * cols, float("nan"))
    finally:
        tilus.option.debug.bounds_check(None)
    kernel(rows, cols, x, flat.view(rows, cols))  # unchecked again, natively: no error


@pytest.mark.parametrize("m,n,k", [(37, 100, 72), (300, 520, 264), (1, 128, 64), (4096, 4096, 4096)])
def test_correct_matmuls_report_nothing(checked, example, m, n, k):
    for name, cls in (("matmul_v3_pipeline", "MatmulV3"), ("matmul_v1_shared", "MatmulV1")):
        kernel = getattr(example(name), cls)()
        a = torch.randn(m, k, device="cuda").half()
        b = torch.randn(k, n, device="cuda").half()
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        kernel(m, n, k, a, b, c)
        torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)


def test_correct_split_k_matmul_with_semaphores_reports_nothing(checked, example):
    v5 = example("matmul_v5_splitk")
    m, n, k = 300, 520, 1000
    kernel = v5.MatmulV5(num_warps=4, block_m=64, block_n=128, block_k=32, num_stages=3,
                         split_k_factor=4)
    # scaled so c is O(1): the four fp16 partial sums then round by ~1e-3, not by the
    # ~0.03 an fp16 sum of magnitude ~30 rounds by (what the tolerance is about)
    a = (torch.randn(m, k, device="cuda") / k ** 0.5).half()
    b = torch.randn(k, n, device="cuda").half()
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("m,n", [(1823, 781), (37, 3000), (5, 20000)])
def test_correct_softmax_and_norms_report_nothing(checked, example, m, n):
    sm, nm = example("softmax"), example("norms")
    x = (torch.randn(m, n, device="cuda") * 3).half()
    y = torch.full_like(x, float("nan"))
    sm.softmax(x, y)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).half(), atol=2e-2, rtol=2e-2)
    w, b = torch.randn(n, device="cuda").half(), torch.randn(n, device="cuda").half()
    z = torch.full_like(x, float("nan"))
    nm.layer_norm(x, w, b, 1e-5, out=z)
    ref = torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).half()
    torch.testing.assert_close(z, ref, atol=2e-2, rtol=2e-2)
    z.fill_(float("nan"))
    nm.rms_norm(x, w, 1e-6, out=z)
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(1, keepdim=True) + 1e-6) * w.float()).half()
    torch.testing.assert_close(z, ref, atol=2e-2, rtol=2e-2)
