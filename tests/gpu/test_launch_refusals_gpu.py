"""What a GPU cannot launch is refused before anything runs, at the script line: too
much shared memory for the device (before NVRTC compiles anything), and a grid past
the launch limits, on the first call and on the native launcher's later calls."""

import pytest
import torch

from tilus import _C
from tests.interp.test_grid_limits import Grid

pytestmark = pytest.mark.gpu


def test_too_much_shared_memory_is_refused_before_the_build(example):
    kernel = example("matmul_v3_pipeline").MatmulV3(block_m=256, block_n=256, block_k=64, num_stages=5,
                                                    num_warps=8)
    a = torch.randn(256, 256, device="cuda").half()
    c = torch.full((256, 256), float("nan"), device="cuda").half()
    compiles = _C.runtime.compile_cache().stats()["compiles"]
    device = _C.runtime.device_info(0)
    with pytest.raises(RuntimeError) as info:
        kernel(256, 256, 256, a, a, c)
    message = str(info.value)
    assert (f"the kernel needs 327680 bytes of shared memory per block" in message
            and f"more than device 0 ({device['name']}, {device['arch']}) offers a block "
                f"({device['smem_per_block_optin']})" in message), message
    assert "in MatmulV3.__call__" in message and "def __call__" in message
    assert _C.runtime.compile_cache().stats()["compiles"] == compiles  # nothing was compiled
    assert torch.isnan(c).all()


def test_a_grid_past_the_launch_limits_is_refused_at_the_blocks_line():
    x = torch.randn(32, device="cuda")
    before = x.clone()
    kernel = Grid()
    for _ in range(2):  # the second call of a fresh specialisation would take the native launcher
        with pytest.raises(ValueError) as info:
            kernel(65536, 1, x)
        assert "more than a CUDA launch takes (65535)" in str(info.value)
        assert "self.attrs.blocks = [1, y, z]" in str(info.value)
    kernel(65535, 1, x)  # fits: runs, and installs the native launcher for this specialisation
    kernel(1, 1, x)
    with pytest.raises(ValueError) as info:
        kernel(1, 65536, x)  # the native launcher hands it to the Python path
    assert "the grid's z size z evaluates to 65536" in str(info.value)
    assert "self.attrs.blocks = [1, y, z]" in str(info.value)
    torch.cuda.synchronize()
    torch.testing.assert_close(x, before + 2.0)
