"""tilus.option.interpret / TILUS_INTERPRET: calls with GPU tensors run in the CPU
interpreter (issue 15, item 4). On the CPU these tests stand a GPU tensor in by a
wrapper that reports `is_cuda` and keeps its data in a host tensor; the GPU test in
tests/gpu/test_interpret_gpu.py does it with real CUDA tensors."""

import os
import subprocess
import sys

import pytest
import torch

import tilus
from tilus import f32, i32
from tilus import script as script_module


class FakeCudaTensor:
    """What host_run needs of a CUDA tensor: is_cuda, .to("cpu") and .copy_()."""

    is_cuda = True

    def __init__(self, data):
        self.data = data.clone()
        self.copies_in = 0

    def to(self, device):
        assert device == "cpu"
        return self.data.clone()

    def copy_(self, host):
        self.copies_in += 1
        self.data.copy_(host)
        return self


class AddOne(tilus.Script):
    def __call__(self, n: i32, a: ~f32, b: ~f32):
        self.attrs.blocks = (n + 63) // 64
        self.attrs.warps = 2
        ga = self.global_view(a, shape=[n], dtype=f32)
        gb = self.global_view(b, shape=[n], dtype=f32)
        x = self.load_global(ga, offsets=[self.blockIdx.x * 64], shape=[64])
        self.store_global(gb, x + 1.0, offsets=[self.blockIdx.x * 64])


@tilus.autotune("warps", [1, 2])
class TunedAddOne(tilus.Script):
    def __init__(self, warps):
        super().__init__()
        self.warps = warps

    def __call__(self, n: i32, a: ~f32, b: ~f32):
        self.attrs.blocks = (n + 31) // 32
        self.attrs.warps = self.warps
        ga = self.global_view(a, shape=[n], dtype=f32)
        gb = self.global_view(b, shape=[n], dtype=f32)
        x = self.load_global(ga, offsets=[self.blockIdx.x * 32], shape=[32])
        self.store_global(gb, x + 1.0, offsets=[self.blockIdx.x * 32])


@pytest.fixture
def interpret():
    tilus.option.interpret(True)
    yield
    tilus.option.interpret(False)


@pytest.mark.parametrize("kernel", [AddOne, TunedAddOne], ids=["script", "autotuned"])
def test_device_tensors_are_interpreted_and_what_changed_is_copied_back(interpret, kernel):
    n = 157
    a = FakeCudaTensor(torch.randn(n))
    b = FakeCudaTensor(torch.full((n,), float("nan")))
    runs = script_module.STATS["interpreter_runs"]
    kernel()(n, a, b)
    assert script_module.STATS["interpreter_runs"] > runs
    assert torch.equal(b.data, a.data + 1)
    assert b.copies_in == 1 and a.copies_in == 0  # the input was left alone


def test_a_compiled_handle_interprets_device_tensors(interpret):
    a, b = torch.randn(100), torch.zeros(100)
    handle = AddOne().compiled(100, a, b)
    da, db = FakeCudaTensor(a), FakeCudaTensor(torch.full((100,), -1.0))
    handle(100, da, db)
    assert torch.equal(db.data, a + 1)


def test_errors_name_the_script_line_as_on_the_cpu(interpret):
    # the view claims more than the tensor holds: refused before anything runs
    a = FakeCudaTensor(torch.randn(10))
    b = FakeCudaTensor(torch.zeros(10))
    with pytest.raises(ValueError, match="argument 'a' is too small"):
        AddOne()(20, a, b)
    assert b.copies_in == 0


def test_off_by_default_and_set_from_the_environment():
    assert tilus.option.get_interpret() is False
    code = "import tilus; print(tilus.option.get_interpret())"
    here = os.path.dirname(os.path.dirname(tilus.__file__))
    env = dict(os.environ, TILUS_INTERPRET="1",
               PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr
    with pytest.raises(TypeError, match="interpret"):
        tilus.option.interpret("yes")
