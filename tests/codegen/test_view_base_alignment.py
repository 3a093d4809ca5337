"""A global view whose pointer is an element address (`self.global_view(~g[i], ...)`,
Tilus 0.2's `g[i].item_ptr()`) is only as aligned as that address: the aligned build
assumes 16 bytes for kernel parameters, and a view at an offset not known to be a
multiple of 16 bytes must not be read or written with 16-byte vectors (a misaligned
vector access faults on the GPU). codegen/emitter.h GlobalInfo::align_bytes."""

import pytest
import torch

import tilus
from tilus import _C, float16, int32


class ShiftedCopy(tilus.Script):
    """y[0:256] = x[off * scale : off * scale + 256] through a view at &x[off * scale]."""

    def __init__(self, scale: int):
        super().__init__()
        self.scale = scale

    def __call__(self, n: int32, x: ~float16, y: ~float16, off: int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        whole = self.global_view(x, dtype=float16, shape=[n])
        shifted = self.global_view(~whole[off * self.scale], dtype=float16, shape=[n])
        gy = self.global_view(y, dtype=float16, shape=[n])
        t = self.load_global(shifted, offsets=[0], shape=[256])
        self.store_global(gy, t, offsets=[0])


class RowView(tilus.Script):
    """y[0:256] = x[row, 0:256] through a one-dimensional view at &x[row, 0]: rows of n
    elements, n a vector extent (a multiple of 16 in the aligned build)."""

    def __call__(self, m: int32, n: int32, x: ~float16, y: ~float16, row: int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float16, shape=[m, n])
        line = self.global_view(~gx[row, 0], dtype=float16, shape=[n])
        gy = self.global_view(y, dtype=float16, shape=[n])
        self.store_global(gy, self.load_global(line, offsets=[0], shape=[256]), offsets=[0])


def _source(script, *args):
    return _C.generate_cuda(script.compile(*args).program, True, "sm_80")["source"]


def test_a_view_at_an_unknown_element_offset_is_read_as_realigned_runs():
    """No 16-byte vector at an address of unknown alignment: two aligned loads a run."""
    x = torch.zeros(512).half()
    source = _source(ShiftedCopy(1), 512, x, x, 3)
    assert "load_global_vec<" not in source, source
    assert "load_realigned_16<false>(shifted + (tl_tid * 8)" in source
    assert "store_global_vec<16>" in source  # y's view is the parameter itself


@pytest.mark.parametrize("scale, width", [(2, 4), (4, 8), (8, 16), (16, 16)])
def test_a_view_at_a_known_multiple_moves_vectors_that_wide(scale, width):
    """&x[off * scale]: scale elements of 2 bytes are what the pointer is a multiple of.
    Runs known only 4-byte aligned are read as realigned 16-byte runs instead (two loads a
    run rather than four)."""
    x = torch.zeros(4096).half()
    source = _source(ShiftedCopy(scale), 4096, x, x, 3)
    if width == 4:
        assert "load_realigned_16<false>(shifted + (tl_tid * 8)" in source, source
        assert "load_global_vec<" not in source
        return
    assert f"load_global_vec<{width}>" in source, source
    assert "load_realigned_16" not in source
    assert not any(f"load_global_vec<{w}>" in source for w in (4, 8, 16) if w > width)


def test_a_view_at_a_row_start_keeps_the_rows_alignment():
    x = torch.zeros(8, 256).half()
    source = _source(RowView(), 8, 256, x, x[0], 5)
    assert "load_global_vec<16>" in source, source


def test_the_interpreter_reads_the_shifted_view():
    x = torch.randn(600).half()
    y = torch.full((600,), float("nan")).half()
    ShiftedCopy(1)(600, x, y, 3)
    assert torch.equal(y[:256], x[3:259])
