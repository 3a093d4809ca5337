"""Realigned accesses on the GPU (tests/codegen/test_realigned_access.py checks which
accesses take them): a window of 64 columns read from rows of every misalignment (the
tensor 0-15 bytes off 16, an odd row length), starting before column 0, inside the row
and running past its end, through shared memory and through registers, and written to
rows of every misalignment at columns before, inside and past the end of the row,
against torch's copy of the same window. Outputs are poisoned before each call."""

import pytest
import torch

from tests.codegen.test_realigned_access import WIDTH, Window, window_reference
from tilus import float16, float32, int8

pytestmark = pytest.mark.gpu

DTYPES = {float16: torch.float16, float32: torch.float32, int8: torch.int8}


def _rows(m, n, shift, dtype, fill=None):
    size = m * n + shift
    if fill is not None:
        buffer = torch.full((size,), fill, device="cuda", dtype=dtype)
    elif dtype == torch.int8:
        buffer = torch.randint(-100, 100, (size,), device="cuda", dtype=dtype)
    else:
        buffer = torch.randn(size, device="cuda").to(dtype)
    return buffer[shift:].view(m, n)  # shift elements off the allocation's alignment


@pytest.mark.parametrize("through_shared", [True, False])
@pytest.mark.parametrize("dtype", [float16, float32, int8])
def test_every_misalignment_and_edge(dtype, through_shared):
    torch_dtype = DTYPES[dtype]
    kernel = Window(dtype, through_shared)
    m, n, ny = 21, 203, 117
    shifts = range(16 // (dtype.bits // 8))
    for shift in shifts:
        x = _rows(m, n, shift, torch_dtype)
        for col, ycol in ((-70, 0), (-13, 5), (0, -9), (5, 53), (8, 60), (150, -70), (n - 1, 1), (n + 3, 0)):
            for yshift in (0, (shift + 3) % len(shifts)):
                y = _rows(m, ny, yshift, torch_dtype, fill=77)  # poison
                expected = window_reference(x, col, y, ycol)
                kernel(m, n, col, x, ny, ycol, y)
                torch.cuda.synchronize()
                torch.testing.assert_close(y, expected, rtol=0, atol=0,
                                           msg=lambda text: f"shift {shift}/{yshift}, col {col}/{ycol}: {text}")
