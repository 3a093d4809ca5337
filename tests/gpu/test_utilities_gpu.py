"""Kernel utilities and the Tilus 0.2 style programs on the GPU, against torch at odd
shapes with poisoned outputs (the interpreter twins are tests/interp/test_utilities.py
and tests/interp/test_tilus02_programs.py)."""

import pytest
import torch

from tests.interp.test_tilus02_programs import (AnnotatedMatmul, SwizzledMatmul, VectorAdd,
                                                run_matmul)
from tests.interp.test_utilities import (Assume, DivMod, InitByIndex, PrintfKernel, Threads,
                                         UsesClass)
from tilus.layout import spatial
from tilus.utils import cdiv

pytestmark = pytest.mark.gpu
I32 = torch.int32


def test_printf_prints_once_per_block(capfd):
    PrintfKernel()(42, 1.25)
    torch.cuda.synchronize()
    out = sorted(capfd.readouterr().out.splitlines())
    assert out == ["b=0/2 n=00042 x=1.250 tag 100%", "b=1/2 n=00042 x=1.250 tag 100%"]


def test_assume_that_holds():
    out = torch.full((1,), -1, dtype=I32, device="cuda")
    Assume()(12, out)
    assert out.item() == 12


@pytest.mark.parametrize("a,b", [(17, 5), (0, 3), (1000003, 97)])
def test_fast_divmod(a, b):
    out = torch.full((4,), -1, dtype=I32, device="cuda")
    DivMod()(torch.tensor([a], dtype=I32, device="cuda"), b, out)
    assert out.tolist() == [a // b, a % b, 3, 2]


def test_grid_dim_and_thread_range():
    out = torch.full((5 * 2 * 5,), -1, dtype=I32, device="cuda")
    Threads()(5, out)
    assert (out.reshape(10, 5).cpu() == torch.tensor([5, 2, 1, 0, 128], dtype=I32)).all()


@pytest.mark.parametrize("m,n,qo,ko,layout", [(7, 13, 0, 0, None), (16, 16, 3, 5, None),
                                              (5, 64, 10, 2, None),
                                              (16, 16, 1, 0, spatial(8, 8).local(2, 2))])
def test_register_tensor_init_by_index(m, n, qo, ko, layout):
    mask = torch.ones(m, n, dtype=torch.bool, device="cuda")
    val = torch.full((m, n), float("nan"), device="cuda")
    InitByIndex(m, n, layout)(qo, ko, mask, val)
    i = torch.arange(m, device="cuda")[:, None]
    j = torch.arange(n, device="cuda")[None, :]
    assert torch.equal(mask, i + qo >= j + ko)
    torch.testing.assert_close(val, (i * 100 + j).float().expand(m, n))


@pytest.mark.parametrize("n", [0, 1, 5, 9])
def test_class_members(n):
    out = torch.full((2,), -1, dtype=I32, device="cuda")
    UsesClass()(n, out)
    assert out.tolist() == [n % 3, n // 3]


@pytest.mark.parametrize("n", [1, 127, 1000, 4099])
def test_vector_add(n):
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.full((n,), float("nan"), device="cuda")
    VectorAdd()(n, a, b, c)
    torch.testing.assert_close(c, a + b)


@pytest.mark.parametrize("m,n,k", [(33, 17, 40), (200, 130, 77), (5, 3, 7)])
def test_swizzled_matmul(m, n, k):
    laps = run_matmul(SwizzledMatmul(), m, n, k, device="cuda")
    assert (laps == cdiv(k, 16) // 2).all()


@pytest.mark.parametrize("m,n,k", [(20, 37, 33), (100, 64, 48)])
def test_annotated_matmul(m, n, k):
    run_matmul(AnnotatedMatmul(), m, n, k, device="cuda")
