"""Realigned accesses on the GPU (tests/codegen/test_realigned_access.py checks which
accesses take them): a window of 64 columns read from rows of every misalignment (the
tensor 0-15 elements off 16 bytes, an odd row length), starting before column 0, inside
the row and running past its end, through shared memory and through registers, against
the window cut from the tensor by torch. Outputs are poisoned before each call."""

import pytest
import torch

from tests.codegen.test_realigned_access import WIDTH, Window, window_reference
from tilus import float16, float32, int8

pytestmark = pytest.mark.gpu

DTYPES = {float16: torch.float16, float32: torch.float32, int8: torch.int8}


def _rows(m, n, shift, dtype):
    buffer = torch.randint(-100, 100, (m * n + shift,), device="cuda").to(dtype) if dtype == torch.int8 \
        else torch.randn(m * n + shift, device="cuda").to(dtype)
    return buffer[shift:].view(m, n)  # shift elements off the allocation's alignment


@pytest.mark.parametrize("through_shared", [True, False])
@pytest.mark.parametrize("dtype", [float16, float32, int8])
def test_every_misalignment_and_edge(dtype, through_shared):
    torch_dtype = DTYPES[dtype]
    kernel = Window(dtype, through_shared)
    m, n = 21, 203
    for shift in range(16 // (dtype.bits // 8)):
        x = _rows(m, n, shift, torch_dtype)
        for col in (-70, -13, 0, 5, 8, 150, n - 1, n + 3):
            y = torch.full((m, WIDTH), 77, device="cuda", dtype=torch_dtype)  # poison
            kernel(m, n, col, x, y)
            torch.cuda.synchronize()
            torch.testing.assert_close(y, window_reference(x, col), rtol=0, atol=0,
                                       msg=lambda text: f"shift {shift}, col {col}: {text}")
