"""Matmul operands for tests: the product's entries are about unit size.

Scaling both A and B by 1/sqrt(k) (as the seed examples do for their demo) makes every
output about 1e-3, under any useful tolerance: a lost or repeated k-block would still
pass. Here A has unit variance and B variance 1/k, so C = A @ B has entries of variance
1 and one missing 32-wide k-block moves an entry by about sqrt(32 / k)."""

import math

import torch


def matmul_operands(m, n, k, dtype=torch.float16, device="cuda"):
    """Fresh uniform A [m, k] and B [k, n] in `dtype` (int8: integers in [-8, 8))."""
    if dtype == torch.int8:
        return (torch.randint(-8, 8, (m, k), dtype=torch.int8, device=device),
                torch.randint(-8, 8, (k, n), dtype=torch.int8, device=device))
    a = (torch.rand(m, k, device=device) - 0.5) * math.sqrt(12.0)
    b = (torch.rand(k, n, device=device) - 0.5) * math.sqrt(12.0 / k)
    return a.to(dtype), b.to(dtype)
