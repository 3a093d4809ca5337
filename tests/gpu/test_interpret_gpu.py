"""tilus.option.interpret with real CUDA tensors: the call runs in the CPU interpreter
(also when an earlier GPU call registered a native launcher) and the results land in
the CUDA tensors; off again, the GPU runs it."""

import pytest
import torch

import tilus
from tilus import f32, i32
from tilus import script as script_module

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU; run `pytest -m gpu` on the device machine",
                allow_module_level=True)


class Scale(tilus.Script):
    def __call__(self, n: i32, a: ~f32, b: ~f32, factor: f32):
        self.attrs.blocks = (n + 127) // 128
        self.attrs.warps = 4
        ga = self.global_view(a, shape=[n], dtype=f32)
        gb = self.global_view(b, shape=[n], dtype=f32)
        x = self.load_global(ga, offsets=[self.blockIdx.x * 128], shape=[128])
        self.store_global(gb, x * factor, offsets=[self.blockIdx.x * 128])


def test_interpret_runs_cuda_tensors_on_the_host_even_after_a_native_launch():
    n = 1000
    kernel = Scale()
    a = torch.randn(n, device="cuda")
    b = torch.full((n,), float("nan"), device="cuda")
    kernel(n, a, b, 2.0)  # GPU; registers the native launcher
    kernel(n, a, b, 2.0)  # native path
    torch.testing.assert_close(b, a * 2.0)
    runs = script_module.STATS["interpreter_runs"]
    tilus.option.interpret(True)
    try:
        b.fill_(float("nan"))
        kernel(n, a, b, 3.0)
        assert script_module.STATS["interpreter_runs"] == runs + 1
        assert b.is_cuda
        torch.testing.assert_close(b, a * 3.0)
    finally:
        tilus.option.interpret(False)
    kernel(n, a, b, 4.0)
    assert script_module.STATS["interpreter_runs"] == runs + 1  # the GPU again
    torch.testing.assert_close(b, a * 4.0)
