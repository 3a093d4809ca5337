"""A launch whose global views reach past the tensors passed in is refused before
anything runs (always in the interpreter; behind tilus.option.check_view_bounds on the
GPU, tests/gpu/test_view_bounds_gpu.py), naming the parameter, the view's shape and the
tensor's size."""

import numpy as np
import pytest
import torch

import tilus
from tilus import _C, float32, int32


class AddOne(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [(n + 63) // 64]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])  # MARK-gy
        x = self.load_global(gx, offsets=[self.blockIdx.x * 64], shape=[64])
        self.store_global(gy, x + 1.0, offsets=[self.blockIdx.x * 64])


def test_a_too_small_output_is_refused_before_any_block_writes():
    x, y = torch.ones(100), torch.zeros(99)
    with pytest.raises(ValueError) as err:
        AddOne()(100, x, y)
    text = str(err.value)
    assert "argument 'y_ptr' is too small" in text
    assert "shape [100] of float32" in text
    assert "spans 100 elements (400 bytes), the tensor has 99 (396 bytes)" in text
    assert f"test_view_bounds.py:{_line('MARK-gy')}" in text
    assert torch.count_nonzero(y) == 0  # nothing was written (the first block used to)


def test_a_too_small_input_is_refused_too():
    with pytest.raises(ValueError, match=r"argument 'x_ptr' is too small .* the tensor has 50"):
        AddOne()(100, torch.ones(50), torch.zeros(100))


def test_tensors_at_least_as_large_as_the_views_run():
    x, y = np.arange(200, dtype=np.float32), np.zeros(200, np.float32)
    AddOne()(100, x, y)
    np.testing.assert_array_equal(y[:100], x[:100] + 1)
    assert not y[100:].any()


class Strided(tilus.Script):
    """A [rows, 4] view with a row stride of `stride` elements: it spans
    (rows - 1) * stride + 4 elements."""

    def __call__(self, rows: int32, stride: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(a_ptr, dtype=float32, shape=[rows, 4], strides=[stride, 1])
        self.store_global(g, self.load_global(g, offsets=[0, 0], shape=[2, 4]) * 2.0,
                          offsets=[0, 0])


def test_strided_views_span_to_their_last_element():
    Strided()(3, 10, torch.ones(24))  # (3 - 1) * 10 + 4 = 24 elements: fits
    with pytest.raises(ValueError, match=r"'a_ptr' is too small .*shape \[3, 4\].* spans 24 "
                                         r"elements .* the tensor has 23"):
        Strided()(3, 10, torch.ones(23))


def test_a_negative_stride_that_reaches_before_the_tensor_is_refused():
    with pytest.raises(ValueError, match=r"'a_ptr': global_view .* reaches 80 bytes before"):
        Strided()(3, -10, torch.ones(100))


class Optional(tilus.Script):
    """bias_ptr is only read when has_bias != 0: a dummy tensor is fine otherwise."""

    def __call__(self, n: int32, has_bias: int32, bias_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        y = self.load_global(gy, offsets=[0], shape=[16])
        if has_bias != 0:
            gb = self.global_view(bias_ptr, dtype=float32, shape=[n])
            self.store_global(gy, y + self.load_global(gb, offsets=[0], shape=[16]), offsets=[0])


def test_views_under_an_if_are_checked_only_when_the_if_is_taken():
    y = torch.zeros(16)
    Optional()(16, 0, torch.zeros(1), y)  # the branch is not taken: the dummy is fine
    with pytest.raises(ValueError, match=r"'bias_ptr' is too small .*shape \[16\]"):
        Optional()(16, 1, torch.zeros(1), y)
    Optional()(16, 1, torch.ones(16), y)
    assert torch.all(y == 1)


class InLoop(tilus.Script):
    def __call__(self, n: int32, a_ptr: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        for i in range(1):
            g = self.global_view(a_ptr, dtype=float32, shape=[n + i])  # MARK-loop
            self.store_global(g, self.load_global(g, offsets=[0], shape=[4]), offsets=[0])


def test_views_the_host_cannot_evaluate_are_left_to_the_access_checks():
    # The view in the loop is not checked before the launch; its accesses still are.
    InLoop()(1000, torch.ones(4))
    with pytest.raises(RuntimeError, match="out of bounds"):
        InLoop()(1000, torch.ones(2))


def test_the_extent_error_as_the_native_side_reports_it():
    program = AddOne().compile(100, torch.ones(100), torch.ones(100)).program
    # one size per parameter, -1 for scalars (and for unknown tensors: not checked)
    assert _C.view_extent_error(program, [100, 0, 0], [-1, 400, 400]) == ""
    assert _C.view_extent_error(program, [100, 0, 0], [-1, 400, -1]) == ""
    assert "'y_ptr' is too small" in _C.view_extent_error(program, [100, 0, 0], [-1, 400, 396])
    assert _C.view_extent_error(program, [0, 0, 0], [-1, 0, 0]) == ""  # empty views


def test_the_option_is_off_by_default_and_settable(monkeypatch):
    assert tilus.option.get_check_view_bounds() is False
    try:
        tilus.option.check_view_bounds(True)
        assert tilus.option.get_check_view_bounds() is True and _C.check_view_bounds()
        monkeypatch.setenv("TILUS_CHECK_VIEW_BOUNDS", "1")
        tilus.option.check_view_bounds(False)
        assert not _C.check_view_bounds()
        tilus.option.check_view_bounds(None)  # back to the environment
        assert _C.check_view_bounds()
    finally:
        monkeypatch.delenv("TILUS_CHECK_VIEW_BOUNDS")
        tilus.option.check_view_bounds(None)
    assert tilus.option.get_check_view_bounds() is False


def _line(marker: str) -> int:
    import pathlib

    lines = pathlib.Path(__file__).read_text().splitlines()
    [line] = [i + 1 for i, text in enumerate(lines) if "# " + marker in text]
    return line
