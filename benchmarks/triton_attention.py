"""A Triton flash-attention forward kernel for the attention benchmark (our own code):
q, o [b, s, h, d], k, v [b, s, h_kv, d], grouped-query heads, causal or not, online
softmax in base 2; one program per (block of query rows, head, sequence)."""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
             for bm, bn, w, s in [(128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3), (128, 64, 4, 3)]],
    key=["seqlen", "HEAD_DIM", "CAUSAL"])
@triton.jit
def _fwd(q, k, v, o, seqlen, sq_s, sq_h, sk_s, sk_h, qk_scale,
         GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    head = tl.program_id(1)
    b = tl.program_id(2)
    kv_head = head // GROUP
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    q_base = q + b.to(tl.int64) * seqlen * sq_s + head * sq_h
    k_base = k + b.to(tl.int64) * seqlen * sk_s + kv_head * sk_h
    v_base = v + b.to(tl.int64) * seqlen * sk_s + kv_head * sk_h
    qt = tl.load(q_base + rows[:, None] * sq_s + dims[None, :], mask=rows[:, None] < seqlen, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    end = tl.minimum(seqlen, (pid_m + 1) * BLOCK_M) if CAUSAL else seqlen
    for start in range(0, end, BLOCK_N):
        kv_rows = start + cols
        kt = tl.load(k_base + kv_rows[None, :] * sk_s + dims[:, None], mask=kv_rows[None, :] < seqlen, other=0.0)
        s = tl.dot(qt, kt)
        valid = kv_rows[None, :] < seqlen
        if CAUSAL:
            valid = valid & (kv_rows[None, :] <= rows[:, None])
        s = tl.where(valid, s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        vt = tl.load(v_base + kv_rows[:, None] * sk_s + dims[None, :], mask=kv_rows[:, None] < seqlen, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt)
        m_i = m_new
    acc = acc / l_i[:, None]
    o_base = o + b.to(tl.int64) * seqlen * sq_s + head * sq_h
    tl.store(o_base + rows[:, None] * sq_s + dims[None, :], acc.to(o.dtype.element_ty), mask=rows[:, None] < seqlen)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    out: torch.Tensor = None) -> torch.Tensor:
    batch, seqlen, heads, d = q.shape
    out = torch.empty_like(q) if out is None else out
    grid = lambda meta: (triton.cdiv(seqlen, meta["BLOCK_M"]), heads, batch)  # noqa: E731
    _fwd[grid](q, k, v, out, seqlen, q.stride(1), q.stride(2), k.stride(1), k.stride(2),
               1.4426950408889634 / math.sqrt(d), GROUP=heads // k.shape[2], HEAD_DIM=d, CAUSAL=causal)
    return out
