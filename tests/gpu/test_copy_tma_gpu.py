"""copy_async lowered to TMA on sm_90a (csrc/ops/async_copy.cc) against torch and the
cp.async build: the seed's MatmulV5 at odd shapes (partial tiles zero-filled by the TMA
unit), more commit groups in flight than the ring of barriers holds, fresh tensors per
launch (tensor maps re-encoded), and a misaligned view that must take the cp.async
build. On other GPUs the same programs run on cp.async."""

import pytest
import torch

from tests.copy_tma_kernels import ManyGroups
from tests.operands import matmul_operands
from tilus import _C

pytestmark = pytest.mark.gpu

HOPPER = _C.runtime.cuda_available() and _C.runtime.arch_string() == "sm_90a"


def _v5(example, warps, bm, bn, bk, stages):
    return example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                                                num_stages=stages, split_k_factor=1)


@pytest.mark.parametrize("copy_tma", ["1", "0"])
@pytest.mark.parametrize("config", [(4, 128, 128, 32, 3), (8, 128, 128, 32, 4), (4, 128, 64, 16, 3)])
@pytest.mark.parametrize("m,n,k", [(1000, 1040, 528), (300, 520, 1000), (4096, 4096, 4096)])
def test_seed_matmul_with_tma_copies(example, monkeypatch, copy_tma, config, m, n, k):
    monkeypatch.setenv("TILUS_COPY_TMA", copy_tma)
    kernel = _v5(example, *config)
    a, b = matmul_operands(m, n, k, torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    assert ("tilus::copy_ring_expect(" in kernel.source(m, n, k, a, b, c)) == (HOPPER and copy_tma == "1")
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.double() @ b.double()).half(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("groups", [3, 8, 10, 17])
def test_more_groups_in_flight_than_the_ring_holds(groups):
    rows = groups * 16 - 7  # the last slot's tail lies past the tensor
    kernel = ManyGroups(groups=groups)
    for _ in range(2):  # fresh tensors: the tensor maps follow the pointers
        x = torch.randn(rows, 32, device="cuda")
        y = torch.full((rows, 32), float("nan"), device="cuda")
        kernel(rows, x, y)
        assert torch.equal(y, x)
    assert ("copy_ring" in kernel.source(rows, x, y)) == HOPPER


def test_a_misaligned_view_runs_the_cp_async_build():
    rows = 150
    base = torch.randn(rows * 32 + 1, device="cuda")
    x = base[1:].view(rows, 32)  # 4 bytes past a 16-byte boundary: no TMA
    y = torch.full((rows, 32), float("nan"), device="cuda")
    ManyGroups(groups=10)(rows, x, y)
    assert torch.equal(y, x)


def test_copies_inside_a_thread_group():
    rows = 150
    x = torch.randn(rows, 32, device="cuda")
    y = torch.full((rows, 32), float("nan"), device="cuda")
    ManyGroups(groups=10, in_group=True)(rows, x, y)
    assert torch.equal(y, x)
