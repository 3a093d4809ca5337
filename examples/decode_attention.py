"""Decode attention: one query token per sequence against a ragged KV cache, split-KV.

    q        [batch, num_heads, head_dim]
    k, v     [batch, max_kv, num_kv_heads, head_dim]   (a contiguous cache)
    lengths  [batch] int32, 0 <= lengths[b] <= max_kv  (tokens of sequence b in the cache)
    o        [batch, num_heads, head_dim]

A single query row leaves a long KV sequence to few blocks, so each (sequence, KV head)
is split into `num_splits` chunks of whole `block_kv` tiles, one block each. A block
takes the `group = num_heads / num_kv_heads` query heads that share its KV head (grouped
query attention reads each K/V byte once), padded to 16 rows for the tensor cores, and
runs the online softmax of examples/flash_attention.py over its chunk: K and V stream
through a copy_async ring, S = Q K^T reads K through a transposed shared view, P V
accumulates in fp32. It writes its unnormalised output with its row max m and
sum-of-exponentials l to a workspace; the combine kernel then weighs the splits,
O = sum_i 2^((m_i - M) c) o_i / sum_i 2^((m_i - M) c) l_i with M the largest m_i.
A split past the end of its sequence writes m = -inf, l = 0, o = 0 and weighs nothing.
The lengths live on the GPU, so the wrapper cannot check them without a synchronising
copy; the kernel clamps each to [0, max_kv] instead (no read past a sequence's cache, a
length past max_kv attends to the whole cache) and an empty sequence gets zeros, not the
0 / 0 of an empty softmax.

The kernel reads each K/V byte of the live tokens once; it is memory-bound, so the
number of splits is chosen to give every SM several blocks.

    python examples/decode_attention.py            # CPU tensors: the interpreter, small sizes
    python examples/decode_attention.py --cuda     # GPU: checks against torch, then times it
"""

import math
import os
import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32
from tilus.utils import benchmark_func, cdiv, check_same_device, check_tensor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash_attention import OnlineSoftmax  # noqa: E402

LOG2E = 1.4426950408889634


@tilus.autotune("block_kv, stages", [(32, 4), (32, 6), (64, 3)])
class DecodeAttentionSplit(OnlineSoftmax, tilus.Script):
    def __init__(self, dtype, num_heads: int, num_kv_heads: int, head_dim: int, num_splits: int,
                 block_kv: int, stages: int, warps: int = 4):
        super().__init__()
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})")
        self.dtype, self.num_heads, self.num_kv_heads, self.head_dim = dtype, num_heads, num_kv_heads, head_dim
        self.num_splits, self.block_kv, self.stages, self.warps = num_splits, block_kv, stages, warps
        self.group = num_heads // num_kv_heads
        self.rows = max(16, 1 << (self.group - 1).bit_length())  # query rows, padded for mma
        self.qk_scale = LOG2E / math.sqrt(head_dim)
        self.causal = False  # (OnlineSoftmax: one query token sees the whole chunk)

    def __call__(self, batch: int32, max_kv: int32, q_ptr: tilus.void_p, k_ptr: tilus.void_p,
                 v_ptr: tilus.void_p, lengths_ptr: tilus.void_p, po_ptr: tilus.void_p,
                 pm_ptr: tilus.void_p, pl_ptr: tilus.void_p):
        bkv, d, stages, rows, splits = self.block_kv, self.head_dim, self.stages, self.rows, self.num_splits
        self.attrs.blocks = [splits, self.num_kv_heads, batch]
        self.attrs.warps = self.warps
        split = self.blockIdx.x
        kv_head = self.blockIdx.y
        b = self.blockIdx.z

        glen = self.global_view(lengths_ptr, dtype=int32, shape=[batch])
        length = max(min(glen[b].item(), max_kv), 0)  # never past the cache (module docstring)
        chunk = cdiv(cdiv(length, splits), bkv) * bkv
        kv_begin = split * chunk
        kv_end = min(kv_begin + chunk, length)

        gq = self.global_view(q_ptr, dtype=self.dtype, shape=[batch, self.num_heads, d])
        gk = self.global_view(k_ptr, dtype=self.dtype, shape=[batch, max_kv, self.num_kv_heads, d])
        gv = self.global_view(v_ptr, dtype=self.dtype, shape=[batch, max_kv, self.num_kv_heads, d])
        gpo = self.global_view(po_ptr, dtype=float32, shape=[batch, self.num_kv_heads, splits, rows, d])
        gpm = self.global_view(pm_ptr, dtype=float32, shape=[batch, self.num_kv_heads, splits, rows, 1])
        gpl = self.global_view(pl_ptr, dtype=float32, shape=[batch, self.num_kv_heads, splits, rows, 1])
        sk = self.shared_tensor(dtype=self.dtype, shape=[stages, bkv, d])
        sv = self.shared_tensor(dtype=self.dtype, shape=[stages, bkv, d])

        # The group's query heads; rows past the group (other groups' heads, or past the
        # last head: zeros) are computed and never stored.
        q = self.load_global(gq, offsets=[b, kv_head * self.group, 0], shape=[rows, d])
        for st in range(stages - 1):
            self.copy_async(gk, sk[st], offsets=[b, kv_begin + st * bkv, kv_head, 0], dims=[1, 3])
            self.copy_async(gv, sv[st], offsets=[b, kv_begin + st * bkv, kv_head, 0], dims=[1, 3])
            self.copy_async_commit_group()

        o = self.register_tensor(dtype=float32, shape=[rows, d], init=0.0)
        m = self.register_tensor(dtype=float32, shape=[rows, 1], init=float("-inf"))
        l = self.register_tensor(dtype=float32, shape=[rows, 1], init=0.0)
        current_stage: int32 = 0
        preload_stage: int32 = stages - 1
        for kv_start in range(kv_begin, kv_end, bkv):
            self.copy_async_wait_group(stages - 2)
            self.sync()
            preload = kv_start + (stages - 1) * bkv
            if preload < kv_end:
                self.copy_async(gk, sk[preload_stage], offsets=[b, preload, kv_head, 0], dims=[1, 3])
                self.copy_async(gv, sv[preload_stage], offsets=[b, preload, kv_head, 0], dims=[1, 3])
            self.copy_async_commit_group()

            s = self.dot(q, self.load_shared(sk[current_stage].transpose()), acc_dtype=float32)
            # the chunk's last tile: tokens past kv_end are -inf
            p, m, l, alpha = self.softmax_step(s, m, l, rows, bkv, kv_start, 0, kv_end, kv_end)
            o = self.dot(p.to(self.dtype), self.load_shared(sv[current_stage]), o * alpha)
            current_stage = (current_stage + 1) % stages
            preload_stage = (preload_stage + 1) % stages

        self.copy_async_wait_all()
        self.sync()
        self.free_shared(sk)
        self.free_shared(sv)
        if self.group == rows:
            self.store_global(gpo, o, offsets=[b, kv_head, split, 0, 0], dims=[3, 4])
            self.store_global(gpm, m, offsets=[b, kv_head, split, 0, 0], dims=[3, 4])
            self.store_global(gpl, l, offsets=[b, kv_head, split, 0, 0], dims=[3, 4])
        else:  # only the group's rows
            keep = self.register_tensor(dtype=int32, shape=[rows, 1], init=lambda i, j: i) < self.group
            self.store_global(gpo, self.where(keep, o, 0.0), offsets=[b, kv_head, split, 0, 0], dims=[3, 4])
            self.store_global(gpm, self.where(keep, m, 0.0), offsets=[b, kv_head, split, 0, 0], dims=[3, 4])
            self.store_global(gpl, self.where(keep, l, 0.0), offsets=[b, kv_head, split, 0, 0], dims=[3, 4])


class DecodeAttentionCombine(tilus.Script):
    """One block per (sequence, head): the splits' outputs weighed by their softmax mass."""

    def __init__(self, dtype, num_heads: int, num_kv_heads: int, head_dim: int, num_splits: int, rows: int):
        super().__init__()
        self.dtype, self.num_heads, self.num_kv_heads, self.head_dim = dtype, num_heads, num_kv_heads, head_dim
        self.num_splits, self.rows = num_splits, rows
        self.group = num_heads // num_kv_heads
        self.qk_scale = LOG2E / math.sqrt(head_dim)

    def __call__(self, batch: int32, po_ptr: tilus.void_p, pm_ptr: tilus.void_p, pl_ptr: tilus.void_p,
                 o_ptr: tilus.void_p):
        d, splits, rows = self.head_dim, self.num_splits, self.rows
        self.attrs.blocks = [self.num_heads, batch]
        self.attrs.warps = 1 if splits * d <= 4096 else 4
        head = self.blockIdx.x
        b = self.blockIdx.y
        kv_head = head // self.group
        r = head % self.group
        gpo = self.global_view(po_ptr, dtype=float32, shape=[batch, self.num_kv_heads, splits, rows, d])
        gpm = self.global_view(pm_ptr, dtype=float32, shape=[batch, self.num_kv_heads, splits, rows, 1])
        gpl = self.global_view(pl_ptr, dtype=float32, shape=[batch, self.num_kv_heads, splits, rows, 1])
        go = self.global_view(o_ptr, dtype=self.dtype, shape=[batch, self.num_heads, d])
        po = self.load_global(gpo, offsets=[b, kv_head, 0, r, 0], shape=[splits, d], dims=[2, 4])
        pm = self.load_global(gpm, offsets=[b, kv_head, 0, r, 0], shape=[splits, 1], dims=[2, 4])
        pl = self.load_global(gpl, offsets=[b, kv_head, 0, r, 0], shape=[splits, 1], dims=[2, 4])
        top = self.max(pm, dim=0, keepdim=True)
        top = self.where(top == float("-inf"), 0.0, top)  # an empty sequence: every split weighs 0
        w = self.exp2((pm - top) * self.qk_scale)
        mass = self.sum(pl * w, dim=0, keepdim=True)
        out = self.sum(po * w, dim=0, keepdim=True) / self.where(mass == 0.0, 1.0, mass)
        self.store_global(go, out.to(self.dtype), offsets=[b, head, 0], dims=[1, 2])


_TORCH_TO_TILUS = {torch.float16: float16, torch.bfloat16: bfloat16}
_SCRIPTS = {}


def default_splits(batch: int, kv_heads: int, max_kv: int, device) -> int:
    """Enough splits for about four blocks per SM, each at least 256 tokens long."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4
    return max(1, min(cdiv(4 * sms, batch * kv_heads), cdiv(max_kv, 256), 64))


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor,
                     out: torch.Tensor = None, num_splits: int = None, config: dict = None) -> torch.Tensor:
    """Attention of q [b, h, d] over the first lengths[i] tokens of k, v [b, max_kv, h_kv, d]
    (fp16/bf16, contiguous; lengths int32 [b]: clamped to [0, max_kv] on the GPU, an empty
    sequence's output is zeros). `config` fixes block_kv and stages instead of autotuning them."""
    if q.dtype not in _TORCH_TO_TILUS or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError("decode_attention: q, k, v must share one dtype, float16 or bfloat16")
    if (q.dim() != 3 or k.dim() != 4 or k.shape != v.shape or k.shape[0] != q.shape[0]
            or k.shape[3] != q.shape[2] or q.shape[1] % k.shape[2]):
        raise ValueError(f"decode_attention: shapes q {tuple(q.shape)}, k {tuple(k.shape)} are not [b, h, d] "
                         "and [b, max_kv, h_kv, d] with h a multiple of h_kv")
    if lengths.dtype != torch.int32 or lengths.shape != (q.shape[0],):
        raise ValueError("decode_attention: lengths must be an int32 tensor of shape [batch]")
    check_same_device("decode_attention", q=q, k=k, v=v, lengths=lengths)
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous() and lengths.is_contiguous()):
        raise ValueError("decode_attention: q, k, v and lengths must be contiguous")
    if out is not None:
        check_tensor(out, "out", q.shape, q.dtype, q.device, "decode_attention")
    batch, heads, d = q.shape
    max_kv, kv_heads = k.shape[1], k.shape[2]
    splits = num_splits or default_splits(batch, kv_heads, max_kv, q.device)
    key = (q.dtype, heads, kv_heads, d, splits, tuple(sorted((config or {}).items())))
    if key not in _SCRIPTS:
        dt = _TORCH_TO_TILUS[q.dtype]
        split = DecodeAttentionSplit(dt, heads, kv_heads, d, splits, **(config or {}))
        rows = max(16, 1 << (heads // kv_heads - 1).bit_length())
        _SCRIPTS[key] = (split, DecodeAttentionCombine(dt, heads, kv_heads, d, splits, rows), rows)
    split, combine, rows = _SCRIPTS[key]
    po = torch.empty(batch, kv_heads, splits, rows, d, dtype=torch.float32, device=q.device)
    pm = torch.empty(batch, kv_heads, splits, rows, dtype=torch.float32, device=q.device)
    pl = torch.empty_like(pm)
    out = torch.empty_like(q) if out is None else out
    split(batch, max_kv, q, k, v, lengths, po, pm, pl)
    combine(batch, po, pm, pl, out)
    return out


def decode_reference(q, k, v, lengths):
    """The same attention in float32, one sequence at a time."""
    group = q.shape[1] // k.shape[2]
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for i, n in enumerate(lengths.tolist()):
        kk = k[i, :n].float().transpose(0, 1).repeat_interleave(group, dim=0)  # [h, n, d]
        vv = v[i, :n].float().transpose(0, 1).repeat_interleave(group, dim=0)
        out[i] = torch.nn.functional.scaled_dot_product_attention(q[i].float()[:, None], kk, vv)[:, 0]
    return out


def main(device: str):
    torch.manual_seed(0)
    if device == "cpu":
        cases = [(3, 300, 8, 2, 64, torch.float16, 3), (2, 130, 4, 4, 64, torch.bfloat16, 2)]
        config = {"block_kv": 64, "stages": 3}
    else:
        cases = [(16, 65536, 32, 8, 128, torch.float16, None), (7, 5000, 32, 8, 128, torch.bfloat16, None)]
        config = None
    for batch, max_kv, heads, kv_heads, d, dtype, splits in cases:
        q = torch.randn(batch, heads, d, device=device).to(dtype)
        k = torch.randn(batch, max_kv, kv_heads, d, device=device).to(dtype)
        v = torch.randn(batch, max_kv, kv_heads, d, device=device).to(dtype)
        lengths = torch.randint(1, max_kv + 1, (batch,), dtype=torch.int32, device=device)
        lengths[0] = max_kv
        o = torch.full_like(q, float("nan"))
        decode_attention(q, k, v, lengths, out=o, num_splits=splits, config=config)
        torch.testing.assert_close(o.float(), decode_reference(q, k, v, lengths), atol=2e-2, rtol=2e-2)
        line = f"decode attention {str(dtype)[6:]:8s} b={batch} kv<={max_kv} h={heads}/{kv_heads} d={d}: ok"
        if device == "cuda":
            full = torch.full_like(lengths, max_kv)
            ms = benchmark_func(lambda: decode_attention(q, k, v, full, out=o))
            line += f"   {ms:.3f} ms  {2 * k.numel() * k.element_size() / ms * 1e-6:.0f} GB/s of K/V"
        print(line)


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
