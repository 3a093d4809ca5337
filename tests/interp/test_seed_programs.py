"""The seed programs compute the right answer on CPU tensors (the interpreter) at odd
shapes, compared with torch. Fresh random inputs every run; outputs poisoned first."""


import pytest
import torch

from tests.operands import matmul_operands


def _inputs(m, n, k, dtype=torch.float16):
    a, b = matmul_operands(m, n, k, dtype, device="cpu")
    c = torch.full((m, n), float("nan"), dtype=dtype)
    return a, b, c


def _reference(a, b):
    return (a.double() @ b.double()).to(a.dtype)


def test_add_one_prints_the_documented_output(example, capsys):
    example("add_one").main("cpu")
    out = capsys.readouterr().out
    assert out == (
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15.])\n"
        "tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13., 14.,\n"
        "        15., 16.])\n"
    )


@pytest.mark.parametrize("n", [1, 127, 128, 129, 1000])
def test_add_one_odd_sizes(example, n):
    kernel = example("add_one").AddOneKernel(block_n=128, warps=4)
    a = torch.randn(n + 5)  # the tail beyond n must stay untouched
    b = torch.full((n + 5,), float("nan"))
    kernel(n, a, b)
    torch.testing.assert_close(b[:n], a[:n] + 1)
    assert torch.isnan(b[n:]).all()


@pytest.mark.parametrize("m,n,k", [(37, 100, 72), (1, 128, 16), (64, 129, 33)])
def test_matmul_jit(example, m, n, k):
    kernel = example("matmul_v0_jit").Matmul()
    a, b, c = _inputs(m, n, k)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)


def test_matmul_jit_256_cubed(example):
    # (its interpreter speed is measured by benchmarks/interp_throughput.py)
    kernel = example("matmul_v0_jit").Matmul()
    a, b, c = _inputs(256, 256, 256)
    kernel(256, 256, 256, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)


def test_matmul_v1_shared(example):
    kernel = example("matmul_v1_shared").MatmulV1()
    a, b, c = _inputs(37, 100, 72)
    kernel(37, 100, 72, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)


def test_matmul_v2_autotuned_runs_first_config(example):
    module = example("matmul_v2_autotune")
    matmul = module.MatmulV2()
    a, b, c = _inputs(37, 100, 72)
    matmul(37, 100, 72, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)
    assert matmul.chosen_config(37, 100, 72, a, b, c) == {
        "num_warps": 4, "block_m": 128, "block_n": 128, "block_k": 16}


@pytest.mark.parametrize("block_m,block_n", [(128, 128), (64, 128), (32, 256)])
def test_matmul_v2_every_tile_shape(example, block_m, block_n):
    matmul = example("matmul_v2_autotune").MatmulV2(num_warps=8, block_m=block_m,
                                                    block_n=block_n, block_k=32)
    a, b, c = _inputs(37, 100, 72)
    matmul(37, 100, 72, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)


def test_matmul_v3_pipeline(example):
    kernel = example("matmul_v3_pipeline").MatmulV3(block_m=64, block_n=64, block_k=16, num_stages=3)
    a, b, c = _inputs(37, 100, 72)
    kernel(37, 100, 72, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("split_k", [1, 4, 12, 16])
@pytest.mark.parametrize("num_stages", [3, 5])
def test_matmul_v5_split_k(example, split_k, num_stages):
    module = example("matmul_v5_splitk")
    matmul = module.MatmulV5(num_warps=4, block_m=64, block_n=128, block_k=16,
                             num_stages=num_stages, split_k_factor=split_k)
    m, n, k = 37, 100, 72
    a, b, c = _inputs(m, n, k)
    matmul(m, n, k, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)
    # A second call reuses the workspace semaphores: they must have been left clean.
    a2, b2, c2 = _inputs(m, n, k)
    matmul(m, n, k, a2, b2, c2)
    torch.testing.assert_close(c2, _reference(a2, b2), rtol=1e-2, atol=1e-2)


def test_matmul_v5_autotuned_on_cpu(example):
    matmul = example("matmul_v5_splitk").MatmulV5()
    a, b, c = _inputs(37, 100, 72)
    matmul(37, 100, 72, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)


def test_fp32_simt_matmul_relu(example):
    kernel = example("matmul_relu_fp32_simt").MatmulReluSimt()
    m, n, k = 37, 100, 72
    a, b = torch.randn(m, k), torch.randn(k, n)
    c = torch.full((m, n), float("nan"))
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.double() @ b.double()).relu().float(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("split_k", [1, 4, 16])
@pytest.mark.parametrize("m,n,k", [(1, 200, 700), (37, 130, 500)])
def test_decode_split_k(example, split_k, m, n, k):
    kernel = example("matmul_decode_splitk").MatmulDecode(num_warps=4, block_n=64, block_k=64,
                                                          split_k=split_k, num_stages=3)
    a, b, c = _inputs(m, n, k)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, _reference(a, b), rtol=1e-2, atol=1e-2)
    a2, b2, c2 = _inputs(m, n, k)  # the flags were lowered again: a second call works
    kernel(m, n, k, a2, b2, c2)
    torch.testing.assert_close(c2, _reference(a2, b2), rtol=1e-2, atol=1e-2)
