"""Any device (issue 16): a script called with tensors on cuda:1 compiles for and
launches on cuda:1, on cuda:1's current torch stream, through the native path too,
whichever device is current, and leaves the current device as it was. The single-GPU
part checks the same plumbing on cuda:0 with a non-default current stream."""

import pytest
import torch

import tilus
from tilus import _C, float32, int32
from tilus.utils import cdiv

pytestmark = pytest.mark.gpu


def _two_gpus():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs (run on the nvidia-h200-x2 machine)")


def _python_calls(monkeypatch, cls):
    calls = []
    python_path = cls._call

    def counted(self, args, kwargs):
        calls.append(args)
        return python_path(self, args, kwargs)

    monkeypatch.setattr(cls, "_call", counted)
    return calls


def _add_one(example):
    return example("add_one").AddOneKernel(block_n=128, warps=4)


def _check_add_one(kernel, device, n):
    a = torch.randn(n + 5, device=device)
    b = torch.full((n + 5,), float("nan"), device=device)
    kernel(n, a, b)
    torch.cuda.synchronize(device)
    torch.testing.assert_close(b[:n], a[:n] + 1)
    assert torch.isnan(b[n:]).all()


@tilus.autotune("warps", [1, 2, 4])
@tilus.autotune("block", [64, 128])
class Double(tilus.Script):
    def __init__(self, warps, block):
        super().__init__()
        self.warps, self.block = warps, block

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = self.warps
        g = self.global_view(x_ptr, dtype=float32, shape=[n])
        x = self.load_global(g, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        self.store_global(g, x * 2.0, offsets=[self.blockIdx.x * self.block])


# ---------------------------------------------------------------------------- one GPU
def test_cuda0_on_a_non_default_stream_native_path(example, monkeypatch):
    kernel = _add_one(example)
    calls = _python_calls(monkeypatch, type(kernel))
    stream = torch.cuda.Stream(device=0)
    with torch.cuda.stream(stream):
        for n in (1000, 333, 1):
            a = torch.randn(n + 3, device="cuda:0")
            b = torch.full((n + 3,), float("nan"), device="cuda:0")
            # Keep the default stream busy: a launch there would read `a` too early.
            torch.cuda._sleep(5_000_000)
            kernel(n, a, b)
            stream.synchronize()
            torch.testing.assert_close(b[:n], a[:n] + 1)
    assert len(calls) == 1  # later calls launched natively
    assert torch.cuda.current_device() == 0


def test_tensor_less_kernel_and_launch_device_use_the_current_device(example):
    from tilus.compiled import launch_device

    assert launch_device([]) == torch.cuda.current_device()
    with _C.runtime.DeviceScope(0) as switched:
        assert switched is False  # already current: nothing changed
    assert _C.runtime.device_count() == torch.cuda.device_count()


# ---------------------------------------------------------------------------- two GPUs
@pytest.mark.parametrize("current", [0, 1])
def test_cuda1_tensors_launch_on_cuda1_natively(example, monkeypatch, current):
    _two_gpus()
    kernel = _add_one(example)
    calls = _python_calls(monkeypatch, type(kernel))
    with torch.cuda.device(current):
        for n in (1000, 777, 1):
            _check_add_one(kernel, "cuda:1", n)
        assert torch.cuda.current_device() == current  # launching did not switch it
        assert len(calls) == 1
        # The same launcher serves cuda:0 too: a first call there builds cuda:0's
        # module through Python once, later ones are native.
        _check_add_one(kernel, "cuda:0", 500)
        _check_add_one(kernel, "cuda:0", 129)
        # a size of a variant cuda:1 has loaded (64, a multiple of the vector, would be
        # another variant: built once per device through Python)
        _check_add_one(kernel, "cuda:1", 777)
        assert len(calls) == 2
        assert torch.cuda.current_device() == current


def test_cuda1_current_stream_is_used(example):
    _two_gpus()
    kernel = _add_one(example)
    _check_add_one(kernel, "cuda:1", 100)  # registers the native launcher
    stream = torch.cuda.Stream(device=1)
    n = 1 << 20
    with torch.cuda.device(0), torch.cuda.stream(stream):
        a = torch.randn(n, device="cuda:1")
        b = torch.full((n,), float("nan"), device="cuda:1")
        kernel(n, a, b)
        # Only cuda:1's current stream (`stream`) orders the launch before this event.
        done = stream.record_event()
    done.synchronize()
    torch.testing.assert_close(b, a + 1)


def test_tensors_on_two_devices_are_refused_by_name(example):
    _two_gpus()
    kernel = _add_one(example)
    _check_add_one(kernel, "cuda:0", 10)
    a = torch.randn(10, device="cuda:0")
    b = torch.zeros(10, device="cuda:1")
    with pytest.raises(ValueError, match=r"different devices: 'a_ptr' on cuda:0, 'b_ptr' on cuda:1"):
        kernel(10, a, b)


@pytest.mark.parametrize("device", [0, 1])
def test_cuda_graph_capture_on_either_device(example, device):
    if device == 1:
        _two_gpus()
    kernel = _add_one(example)
    n = 4099
    a = torch.randn(n, device=f"cuda:{device}")
    b = torch.full((n,), float("nan"), device=f"cuda:{device}")
    kernel(n, a, b)  # build and load before capturing
    torch.cuda.synchronize(device)
    with torch.cuda.device(device):
        graph = torch.cuda.CUDAGraph()
        # A capture stream of this device: torch.cuda.graph's default one is made once, on
        # the device of the first capture in the process, and would capture nothing here.
        with torch.cuda.graph(graph, stream=torch.cuda.Stream(device=device)):
            kernel(n, a, b)
    for _ in range(2):
        a.copy_(torch.randn(n, device=f"cuda:{device}"))
        b.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize(device)
        torch.testing.assert_close(b, a + 1)


def test_autotuned_kernel_on_cuda1_and_tuning_spread(example):
    _two_gpus()
    tilus.option.tuning(spread=True)
    try:
        kernel = Double()
        n = 3001
        x = torch.randn(n, device="cuda:1")
        expected = x * 2
        with torch.cuda.device(0):
            kernel(n, x)  # tuned over both GPUs: x is written once, by the winner
            assert torch.cuda.current_device() == 0
        torch.cuda.synchronize(1)
        torch.testing.assert_close(x, expected)
        assert kernel.tuning_table()[0]["device"] == 1
    finally:
        tilus.option.reset_tuning()
