"""The native call path (_C.ScriptBase.__call__ + launch.cc): once a script has run on
the GPU with some compile-time values, later calls with them launch without entering
Python, and anything unusual still reaches the Python path and its errors."""

import pytest
import torch

pytestmark = pytest.mark.gpu


def _counting_python_path(monkeypatch, cls):
    calls = []
    python_path = cls._call

    def counted(self, args, kwargs):
        calls.append(args)
        return python_path(self, args, kwargs)

    monkeypatch.setattr(cls, "_call", counted)
    return calls


def test_repeated_calls_launch_natively_and_stay_correct(example, monkeypatch):
    kernel = example("add_one").AddOneKernel(block_n=128, warps=4)
    calls = _counting_python_path(monkeypatch, type(kernel))
    n = 1000
    a = torch.randn(n, device="cuda")
    b = torch.full((n,), float("nan"), device="cuda")
    kernel(n, a, b)  # first call: Python path compiles, launches, registers the launcher
    assert len(calls) == 1
    for size in (1000, 777, 1):  # fresh data each time; other sizes are runtime values
        a = torch.randn(size + 3, device="cuda")
        b = torch.full((size + 3,), float("nan"), device="cuda")
        kernel(size, a, b)
        torch.testing.assert_close(b[:size], a[:size] + 1)
        assert torch.isnan(b[size:]).all()
    assert len(calls) == 1  # none of the later calls entered Python


def test_unusual_calls_still_take_the_python_path(example, monkeypatch):
    kernel = example("add_one").AddOneKernel(block_n=128, warps=4)
    calls = _counting_python_path(monkeypatch, type(kernel))
    a = torch.randn(100, device="cuda")
    b = torch.full((100,), float("nan"), device="cuda")
    kernel(100, a, b)  # registers the native launcher
    b.fill_(float("nan"))
    kernel(100, a_ptr=a, b_ptr=b)  # keywords: Python path, same result
    torch.testing.assert_close(b, a + 1)
    with pytest.raises(TypeError, match=r"'a_ptr' has dtype torch.float64"):
        kernel(100, a.double(), b)
    with pytest.raises(ValueError, match=r"'a_ptr' is not contiguous"):
        kernel(50, a[::2], b)
    with pytest.raises(TypeError):
        kernel(100, a)  # a missing argument
    a_cpu, b_cpu = a.cpu(), torch.zeros(100)
    kernel(100, a_cpu, b_cpu)  # CPU tensors: the interpreter, not the launcher
    torch.testing.assert_close(b_cpu, a_cpu + 1)
    assert len(calls) == 6


def _registered_add_one(example, n):
    """add_one after a first GPU call: the kernel, its inputs and its native launcher."""
    kernel = example("add_one").AddOneKernel(block_n=128, warps=4)
    a = torch.randn(n, device="cuda")
    b = torch.full((n,), float("nan"), device="cuda")
    kernel(n, a, b)
    torch.testing.assert_close(b, a + 1)
    return kernel, a, b, next(iter(kernel._tilus_fast.values()))


def test_time_phases_reports_each_phase_and_launches(example):
    n = 1000
    kernel, a, b, launcher = _registered_add_one(example, n)
    b.fill_(float("nan"))
    phases = launcher.time_phases((n, a, b), 10)
    assert list(phases) == ["arguments", "device", "launch_shape", "stream", "launch"]
    assert all(ns > 0 for ns in phases.values())
    torch.cuda.synchronize()
    torch.testing.assert_close(b, a + 1)  # the launch phase really ran the kernel
    with pytest.raises(ValueError, match="arguments"):
        launcher.time_phases((n, a.cpu(), b), 10)  # what the fast path refuses is named


def test_tensor_queries_call_torch_directly_and_subclasses_still_work(example, monkeypatch):
    n = 513
    kernel, a, b, launcher = _registered_add_one(example, n)
    calls = _counting_python_path(monkeypatch, type(kernel))
    # torch implements dtype, is_contiguous, get_device and data_ptr in C: the launcher
    # calls those functions without the attribute lookup (csrc/bindings/tensor_query.h)
    assert launcher.direct_tensor_queries

    class Tagged(torch.Tensor):  # a subclass takes the generic C-API calls
        pass

    for x in (torch.randn(n, device="cuda"), torch.randn(n, device="cuda").as_subclass(Tagged)):
        out = torch.full((n,), float("nan"), device="cuda").as_subclass(type(x))
        kernel(n, x, out)
        torch.testing.assert_close(out.as_subclass(torch.Tensor), x.as_subclass(torch.Tensor) + 1)
    assert calls == []  # both launched natively
    # (refusals through the direct queries: test_unusual_calls_still_take_the_python_path)
