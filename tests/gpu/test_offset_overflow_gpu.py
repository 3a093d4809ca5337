"""On the GPU a view past its 32-bit offsets is refused on every call: the first (the
Python path) and the later ones the native launcher takes, which hands such arguments to
the Python path (tests/interp/test_offset_overflow.py has the script)."""

import pytest
import torch

from tests.interp.test_offset_overflow import Rows

pytestmark = pytest.mark.gpu


def test_a_view_past_32_bit_offsets_is_refused_on_every_call():
    x = torch.randn(1, 32, device="cuda").half()
    y = torch.zeros(1, 32, device="cuda").half()
    kernel = Rows()
    with pytest.raises(ValueError, match="spans 4294967296 elements, more than the 32-bit element offsets"):
        kernel(65536, 65536, x, y)
    kernel(1, 32, x, y)  # fits: runs, and installs the native launcher
    kernel(1, 32, x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x)
    y.zero_()
    with pytest.raises(ValueError, match="spans 4294967296 elements"):
        kernel(65536, 65536, x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, torch.zeros_like(y))
