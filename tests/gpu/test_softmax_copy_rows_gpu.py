"""examples/softmax.py's `copy_rows` at fixed configurations against torch on poisoned
outputs: long rows kept in shared memory, all of a row's tiles copied by cp.async at once
(a file of its own: its kernels build in another test process than the other softmax
configurations')."""

import itertools

import pytest
import torch

from tests.gpu.test_softmax_configurations_gpu import _check

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype,n", [(torch.float16, 9001), (torch.bfloat16, 8200), (torch.float16, 50257),
                                     (torch.bfloat16, 50257), (torch.float16, 50272)])
def test_long_rows_copied_to_shared_memory_at_once_gpu(example, dtype, n):
    """`copy_rows`: a row's tiles all copied by cp.async, then reduced as they land, per
    row of a [tile / 8, 8] view (aligned rows of 8200 and 50272; shifted ones of 9001 and
    50257), kernels of one row or persistent (the next row copied while this one is
    written); every configuration must build (none refused)."""
    sm = example("softmax")

    def configs():
        walks = [(block_n, warps, persistent, 1) for block_n, warps, persistent in
                 itertools.product([4096, 8192], [8, 32], [False, True])] + [(8192, 32, True, 2)]
        for block_n, warps, persistent, split in walks:
            yield dict(block_n=block_n, block_m=1, warps=warps, persistent=persistent, staged=False,
                       row_tiles=(n + block_n - 1) // block_n, long_rows=True, long_split=split, prefetch=False,
                       shifted=n % 16 != 0, copy_rows=True)

    _check(sm, configs, 37, n, dtype, skip_refused=False)


@pytest.mark.parametrize("dtype,n", [(torch.float16, 131071), (torch.bfloat16, 131072), (torch.float32, 50257),
                                     (torch.float16, 9001)])
def test_rows_streamed_through_a_ring_gpu(example, dtype, n):
    """`streamed`: rows through a ring of tiles shorter than the row (the last ring's worth
    kept for the second pass, the rest read again), or as long (9001 in a ring of 26:
    nothing read again); rings of 2 (one tile in flight), 3, 13 and 26 tiles of 4096 (26
    at 16 bits: 208 KB, the H100's largest) and 13 of 8192 (16-bit; float32 6), aligned
    rows and shifted ones, one row a block or persistent (each row's second pass copying
    the next row's first tiles)."""
    sm = example("softmax")
    element = torch.tensor([], dtype=dtype).element_size()

    def configs():
        for tile, ring, warps, split, persistent in [
                (4096, 2, 8, 1, False), (4096, 3, 32, 1, True), (4096, 13, 16, 2, False),
                (4096, 26 // element * 2, 8, 1, False), (4096, 26 // element * 2, 16, 1, True),
                (8192, 26 // element, 16, 1, False)]:
            yield dict(block_n=tile, block_m=1, warps=warps, persistent=persistent, staged=False, row_tiles=ring,
                       long_rows=True, long_split=split, prefetch=False, shifted=n % 16 != 0, copy_rows=True,
                       streamed=True)

    _check(sm, configs, 37, n, dtype, skip_refused=False)


@pytest.mark.parametrize("dtype,n", [(torch.float16, 131071), (torch.float32, 131071), (torch.bfloat16, 65537),
                                     (torch.float16, 20000)])
def test_rows_kept_by_a_cluster_gpu(example, dtype, n):
    """`cluster_split`: each row kept by a cluster of 2, 4 or 8 blocks (sm_90), each
    holding its part of 4096-wide tiles in shared memory, meeting once through
    distributed shared memory; aligned and shifted rows, parts the row fills exactly,
    partly, and (20000 over 8 blocks of 2 tiles) not at all; then the wrapper's choice
    (cluster_split=True)."""
    sm = example("softmax")
    tiles = (n + 4095) // 4096

    def configs():
        for split, warps in [(2, 16), (4, 8), (8, 16), (8, 4)]:
            part = (tiles + split - 1) // split
            if part * 4096 * torch.tensor([], dtype=dtype).element_size() <= 128 * 1024:
                yield dict(block_n=4096, block_m=1, warps=warps, persistent=False, staged=False, row_tiles=part,
                           long_rows=True, long_split=1, prefetch=False, shifted=n % 16 != 0, copy_rows=True,
                           cluster_split=split)

    _check(sm, configs, 37, n, dtype, skip_refused=False)
    x = (torch.randn(37, n, device="cuda") * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.softmax(x, y, cluster_split=True)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), **tol)
