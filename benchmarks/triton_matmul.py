"""A plain autotuned Triton matmul (fp16 in, fp32 accumulate, fp16 out): the Triton
baseline of the benchmarks."""

import triton
import triton.language as tl


def _configs():
    out = []
    for bm, bn, bk, stages, warps in [(128, 128, 64, 4, 4), (128, 256, 64, 3, 8), (256, 128, 64, 3, 8),
                                      (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 4),
                                      (16, 128, 128, 4, 4), (16, 64, 256, 3, 4), (32, 128, 128, 4, 4)]:
        out.append(triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_stages=stages, num_warps=warps))
    return out


@triton.autotune(configs=_configs(), key=["m", "n", "k"])
@triton.jit
def _matmul(a, b, c, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, k, BK):
        a_tile = tl.load(a + rm[:, None] * k + (k0 + rk)[None, :],
                         mask=(rm[:, None] < m) & ((k0 + rk)[None, :] < k), other=0.0)
        b_tile = tl.load(b + (k0 + rk)[:, None] * n + rn[None, :],
                         mask=((k0 + rk)[:, None] < k) & (rn[None, :] < n), other=0.0)
        acc += tl.dot(a_tile, b_tile)
    tl.store(c + rm[:, None] * n + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < m) & (rn[None, :] < n))


def triton_matmul(a, b, c):
    m, k = a.shape
    n = b.shape[1]
    grid = lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))  # noqa: E731
    _matmul[grid](a, b, c, m, n, k)
    return c
