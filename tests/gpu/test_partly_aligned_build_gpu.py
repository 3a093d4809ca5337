"""Partly aligned builds on the GPU: each call takes the build of the parameters it
misses (tests/codegen/test_partly_aligned_build.py checks the accesses), through the
Python launcher on its first call and the native one after, and every result is right."""

import pytest
import torch

from tests.codegen.test_partly_aligned_build import RowsAndColumns
from tilus.runtime.launcher import alignment_of

pytestmark = pytest.mark.gpu


def _tensors(m, k, n, b_shift):
    x, w = torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()
    b = torch.randn(n + b_shift, device="cuda").half()[b_shift:]  # b_shift elements off 16 bytes
    return x, w, b


@pytest.mark.parametrize("k, n, b_shift, missed", [(256, 256, 0, []), (256, 257, 0, ["n"]), (256, 256, 3, ["b"]),
                                                   (272, 300, 1, ["n", "b"]), (250, 256, 0, ["k"])])
def test_each_call_takes_the_build_of_what_it_misses(k, n, b_shift, missed):
    m = 5
    x, w, b = _tensors(m, k, n, b_shift)
    kernel = RowsAndColumns()
    y = torch.empty(m, n, device="cuda").half()
    z = torch.empty(m, k, device="cuda").half()
    args = (m, k, n, x, w, b, y, z)
    compiled = kernel.compile(*args)
    names = compiled.program.param_names
    runtime_args = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
    bits = alignment_of(compiled.program, runtime_args)
    assert [names[i] for i in range(len(names)) if bits >> i & 1] == missed
    for call in range(3):  # the first call builds the variant; later ones run natively
        y.fill_(float("nan"))
        z.fill_(float("nan"))
        kernel(*args)
        torch.cuda.synchronize()
        torch.testing.assert_close(z[:, :256], x[:, :256] * 2)  # the kernel's tile: 256 columns
        assert torch.isnan(z[:, 256:].float()).all()
        expected = (w[0, :256].float() + b[:256].float()).half().expand(m, 256)
        torch.testing.assert_close(y[:, :256], expected)
        assert torch.isnan(y[:, 256:].float()).all()
    assert (bits, torch.cuda.current_device()) in compiled.gpu.variants
    launcher = next(iter(kernel._tilus_fast.values()))
    assert launcher is not None and launcher(*args)  # the native path has this build too


@pytest.mark.parametrize("shift", [0, 1, 3])
def test_the_seed_matmul_with_a_misaligned_output(example, shift):
    """c one or three elements off 16 bytes: a partly aligned build whose A and B copies stay
    on TMA (sm_90) or 16-byte cp.async, and whose stores of c go element by element."""
    m, n, k = 1000, 1040, 528
    a, b = torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()
    kernel = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32,
                                                  num_stages=3, split_k_factor=1)
    buffer = torch.full((m * n + shift,), float("nan"), device="cuda").half()
    c = buffer[shift:].view(m, n)
    for _ in range(2):  # the second call goes through the native launcher
        c.fill_(float("nan"))
        kernel(m, n, k, a, b, c)
        torch.cuda.synchronize()
        torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=5e-2, rtol=1e-2)


def test_past_the_cap_calls_take_the_unaligned_build(monkeypatch):
    """With at most two partly aligned builds a device, calls missing a third and a fourth
    combination run the build that assumes nothing -- through the Python launcher on their
    first call and the native one after -- and every result is right."""
    from tilus.runtime import launcher as L

    monkeypatch.setattr(L, "MAX_PARTLY_ALIGNED", 2)
    m, k, n = 5, 256, 256
    kernel = RowsAndColumns()
    shifts = [(1, 0, 0), (0, 3, 0), (0, 0, 5), (2, 1, 0), (1, 0, 0)]  # x, w, b elements off 16 bytes
    compiled = None
    for sx, sw, sb in shifts:
        x = torch.randn(m * k + sx, device="cuda").half()[sx:].view(m, k)
        w = torch.randn(k * n + sw, device="cuda").half()[sw:].view(k, n)
        b = torch.randn(n + sb, device="cuda").half()[sb:]
        y = torch.empty(m, n, device="cuda").half()
        z = torch.empty(m, k, device="cuda").half()
        args = (m, k, n, x, w, b, y, z)
        compiled = kernel.compile(*args)
        for _ in range(2):
            y.fill_(float("nan"))
            z.fill_(float("nan"))
            kernel(*args)
            torch.cuda.synchronize()
            torch.testing.assert_close(z, x * 2)
            torch.testing.assert_close(y, (w[0].float() + b.float()).half().expand(m, n))
    gpu = compiled.gpu
    device = torch.cuda.current_device()
    assert gpu.partly_aligned_builds(device, False) == 2
    unaligned = gpu.variant(False, device, False)
    names = compiled.program.param_names
    third = sum(1 << names.index(p) for p in ("b",))
    fourth = sum(1 << names.index(p) for p in ("x", "w"))
    assert gpu.variants[(third, device)] is unaligned and gpu.variants[(fourth, device)] is unaligned
