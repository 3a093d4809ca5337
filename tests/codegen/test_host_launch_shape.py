"""The native launcher's launch-shape evaluator agrees with the interpreter's."""

import random

import pytest
import torch

from tilus import _C


def _mats(m, n, k):
    return (torch.zeros(m, k, dtype=torch.float16), torch.zeros(k, n, dtype=torch.float16),
            torch.zeros(m, n, dtype=torch.float16))


@pytest.mark.parametrize("name,cls,kwargs", [
    ("matmul_v5_splitk", "MatmulV5", dict(num_warps=4, block_m=64, block_n=128, block_k=32,
                                          num_stages=3, split_k_factor=12)),
    ("matmul_decode_splitk", "MatmulDecode", dict(num_warps=4, block_n=128, block_k=64, split_k=8,
                                                  num_stages=3)),
    ("matmul_v0_jit", "Matmul", {}),
])
def test_grid_and_workspaces_match_the_interpreter(example, name, cls, kwargs):
    kernel = getattr(example(name), cls)(**kwargs)
    program = kernel.compile(37, 1000, 4096, *_mats(37, 8, 8)).program
    rng = random.Random(0)
    for _ in range(20):
        m = rng.randint(1, 5000)
        args = [m, 1 << 20, 2 << 20, 3 << 20]  # m_size and three pointers
        expected = _C.evaluate_launch_shape(program, args)
        got = _C.host_launch_shape(program, args)
        assert got is not None
        assert tuple(got[0]) == tuple(expected[0]) and list(got[1]) == list(expected[1]), m
