"""On CUDA, tilus.option.check_view_bounds refuses a launch whose global views reach past
their tensors, on the Python path and on the native path alike, from the same extent
evaluation as the interpreter (csrc/transforms/view_extents.h); off (the default), the native
path does no extra work. A float32 scalar that would round to infinity is refused on
both paths."""

import pytest
import torch

import tilus
from tilus import float32, int32

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU; run `pytest -m gpu` on the device machine",
                allow_module_level=True)


class AddOne(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32, s: float32):
        self.attrs.blocks = [(n + 63) // 64]
        self.attrs.warps = 2
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        x = self.load_global(gx, offsets=[self.blockIdx.x * 64], shape=[64])
        self.store_global(gy, x + s, offsets=[self.blockIdx.x * 64])


@pytest.fixture
def view_bounds():
    tilus.option.check_view_bounds(True)
    yield
    tilus.option.check_view_bounds(None)


def test_a_too_small_tensor_is_refused_on_both_launch_paths(view_bounds):
    kernel = AddOne()
    x, y = torch.ones(100, device="cuda"), torch.zeros(100, device="cuda")
    kernel(100, x, y, 1.0)  # the Python path; registers the native launcher
    assert kernel._tilus_fast
    small = torch.zeros(99, device="cuda")
    for _ in range(2):  # the native path defers to Python, which raises
        with pytest.raises(ValueError, match=r"'y_ptr' is too small .*shape \[100\].* the "
                                             r"tensor has 99 \(396 bytes\)"):
            kernel(100, x, small, 1.0)
    torch.cuda.synchronize()
    assert torch.count_nonzero(small) == 0
    kernel(99, x, small, 1.0)
    torch.cuda.synchronize()
    assert torch.all(small == 2)


def test_off_the_native_path_does_not_check():
    assert not tilus.option.get_check_view_bounds()
    kernel = AddOne()
    x, y = torch.ones(128, device="cuda"), torch.zeros(128, device="cuda")
    kernel(100, x, y, 1.0)
    launcher = next(iter(kernel._tilus_fast.values()))
    assert "view_bounds" not in launcher.time_phases((100, x, y, 1.0), 100)
    tilus.option.check_view_bounds(True)
    try:
        phases = launcher.time_phases((100, x, y, 1.0), 1000)
        assert "view_bounds" in phases
    finally:
        tilus.option.check_view_bounds(None)


def test_a_float32_overflow_is_refused_on_the_native_path():
    kernel = AddOne()
    x, y = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    kernel(64, x, y, 1.0)
    with pytest.raises(ValueError, match=r"'s' = 1e\+300 does not fit in float32"):
        kernel(64, x, y, 1e300)
    kernel(64, x, y, float("inf"))
    torch.cuda.synchronize()
    assert torch.all(y == float("inf"))
