"""Triton baselines of the row-wise benchmarks: fused softmax, layer norm and RMS norm,
each row handled by one program with the whole row in registers (the approach of
Triton's tutorials), in the input dtype with float32 arithmetic."""

import torch
import triton
import triton.language as tl


def _warps(block: int) -> int:
    return 4 if block <= 2048 else (8 if block <= 8192 else 16)


@triton.jit
def _softmax_kernel(x, y, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    out = e / tl.sum(e, axis=0)
    tl.store(y + row * stride + cols, out.to(y.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor, y: torch.Tensor):
    m, n = x.shape
    block = triton.next_power_of_2(n)
    _softmax_kernel[(m,)](x, y, n, x.stride(0), BLOCK=block, num_warps=_warps(block))


@triton.jit
def _layer_norm_kernel(x, w, b, y, n, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    v = tl.load(x + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(v, axis=0) / n
    d = tl.where(mask, v - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    wv = tl.load(w + cols, mask=mask, other=0.0).to(tl.float32)
    bv = tl.load(b + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y + row * stride + cols, (d * rstd * wv + bv).to(y.dtype.element_ty), mask=mask)


def layer_norm(x, w, b, y, eps: float):
    m, n = x.shape
    block = triton.next_power_of_2(n)
    _layer_norm_kernel[(m,)](x, w, b, y, n, x.stride(0), eps, BLOCK=block, num_warps=_warps(block))


@triton.jit
def _rms_norm_kernel(x, w, y, n, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    v = tl.load(x + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / n + eps)
    wv = tl.load(w + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y + row * stride + cols, (v * rstd * wv).to(y.dtype.element_ty), mask=mask)


def rms_norm(x, w, y, eps: float):
    m, n = x.shape
    block = triton.next_power_of_2(n)
    _rms_norm_kernel[(m,)](x, w, y, n, x.stride(0), eps, BLOCK=block, num_warps=_warps(block))
