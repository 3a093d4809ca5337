"""Flash attention forward (prefill): O = softmax(Q K^T / sqrt(d)) V, one pass over K/V.

Tensors are [batch, seqlen, heads, head_dim] (the layout flash-attn and Tilus 0.2's example
use): q and o have `num_heads` heads, k and v `num_kv_heads` (grouped-query attention:
query head h reads KV head h // (num_heads // num_kv_heads)). fp16 or bf16, head_dim 64 or
128, causal (top-left aligned, as torch's is_causal) or not; any sequence length.

Each block owns `block_q` query rows of one head and walks the KV sequence in `block_kv`
steps. Q, the K and V stages and the probabilities P are shared tiles, so both products
are tensor-core dots on shared operands (wgmma on sm_90a):

* K and V arrive through a `stages`-deep copy_async ring: once block j has landed and
  the block's threads meet at the barrier, block j + stages - 1 is copied into the stage
  block j - 1 used, overlapping the dots of block j (two barriers per KV block);
* S = Q K^T reads K [block_kv, d] through a transposed shared view (`sk[i].transpose()`);
* online softmax in base 2: the row max m is kept in the units of S, and
  P = exp2(S * c - m * c) with c = log2(e) / sqrt(d) folded into one multiply-add;
  l (the row sum of P) and O are rescaled by exp2((m_old - m_new) * c) when m grows;
* P is cast to the input type and stored into a shared tile, the A operand of O += P V.

Only blocks that need it are masked: the last KV block of a sequence that is not a
multiple of block_kv (columns past the end are -inf), and, when causal, the blocks that
cross the diagonal (column > row is -inf). Causal blocks skip every KV block wholly above
the diagonal, so they do about half the work, and are launched heaviest (last query
block) first so that no long block starts late and runs alone. Rows past the end are computed from zero
padding and their stores dropped.

    python examples/flash_attention.py            # CPU tensors: the tilus interpreter, small sizes
    python examples/flash_attention.py --cuda     # GPU: checks against torch, then times it
"""

import math
import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32
from tilus.utils import benchmark_func, cdiv, check_same_device, check_tensor

LOG2E = 1.4426950408889634


# (warps, block_q, block_kv, stages). Shared memory is 2 bytes x (block_q x d for Q,
# 2 x stages x block_kv x d for the K/V ring, block_q x block_kv for P): at d=128 every
# entry fits the 227 KB one H100 block may use ((8, 128, 128, 3) would need 256 KB), and
# (4, 64, 64, 2) takes 88 KB, so two blocks share an SM when the sequence is short.
# tests/codegen/test_attention_smem.py checks the compiler's count against that limit.
CONFIGS = [(4, 64, 64, 2), (4, 64, 64, 3), (4, 64, 128, 2), (4, 64, 128, 3),
           (8, 128, 64, 2), (8, 128, 64, 3), (8, 128, 128, 2)]
SMEM_LIMIT = 232448  # bytes of dynamic shared memory one block may opt into on sm_90


class OnlineSoftmax:
    """The online-softmax step of the flash-attention scripts (a mixin of their Script;
    examples/flash_attention_hopper.py uses it too)."""

    def softmax_step(self, s, m, l, bq: int, bkv: int, kv_start: int32, q_start: int32, mask_from: int32,
                     seqlen: int32):
        """Masks the block of scores `s` [bq, bkv] where it needs it (columns past the
        sequence; above the diagonal when causal) and advances the softmax: returns the
        probabilities P, the new row max and row sum, and the factor O is rescaled by."""
        c = self.qk_scale
        if kv_start + bkv > mask_from:
            if self.causal:
                s = self.where(self.register_tensor(
                    dtype=int32, shape=[bq, bkv], init=lambda i, j: j + kv_start - i - q_start) <= 0,
                    s, float("-inf"))
            else:
                s = self.where(self.register_tensor(
                    dtype=int32, shape=[bq, bkv], init=lambda i, j: j + kv_start) < seqlen,
                    s, float("-inf"))
        m_new = self.maximum(m, self.max(s, dim=1, keepdim=True))
        m_scaled = m_new * c
        # approx: probabilities under 2^-126 are 0 (one MUFU.EX2 each, not four instructions)
        p = self.exp2(s * c - m_scaled, approx=True)
        alpha = self.exp2(m * c - m_scaled, approx=True)
        return p, m_new, l * alpha + self.sum(p, dim=1, keepdim=True), alpha


@tilus.autotune("warps, block_q, block_kv, stages", CONFIGS)
class FlashAttention(OnlineSoftmax, tilus.Script):
    def __init__(self, dtype, num_heads: int, num_kv_heads: int, head_dim: int, causal: bool,
                 warps: int, block_q: int, block_kv: int, stages: int):
        super().__init__()
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})")
        if head_dim % 16 or stages < 2:
            raise ValueError("head_dim must be a multiple of 16 and stages at least 2")
        self.dtype, self.num_heads, self.num_kv_heads, self.head_dim = dtype, num_heads, num_kv_heads, head_dim
        self.causal = causal
        self.warps, self.block_q, self.block_kv, self.stages = warps, block_q, block_kv, stages
        self.group = num_heads // num_kv_heads
        self.qk_scale = LOG2E / math.sqrt(head_dim)  # exp(x / sqrt(d)) == exp2(x * qk_scale)

    def __call__(self, batch: int32, seqlen: int32, q_ptr: tilus.void_p, k_ptr: tilus.void_p,
                 v_ptr: tilus.void_p, o_ptr: tilus.void_p):
        bq, bkv, d, stages = self.block_q, self.block_kv, self.head_dim, self.stages
        # Blocks launch in the order of a one-dimensional x (a 2-D grid would be run in
        # bands of 8 along x, codegen's L2 order for tiled products): heads vary fastest,
        # so the query heads of one KV head run side by side, then the query blocks. A
        # causal block's work grows with its query block, so those run from the last (the
        # longest) to the first: the SMs start on the heaviest blocks and the short ones
        # fill the tail.
        q_blocks = cdiv(seqlen, bq)
        self.attrs.blocks = [q_blocks * self.num_heads, 1, batch]
        self.attrs.warps = self.warps
        head = self.blockIdx.x % self.num_heads
        q_block = self.blockIdx.x // self.num_heads
        if self.causal:
            q_block = q_blocks - 1 - q_block
        q_start = q_block * bq
        b = self.blockIdx.z
        kv_head = head // self.group

        gq = self.global_view(q_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_heads, d])
        gk = self.global_view(k_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_kv_heads, d])
        gv = self.global_view(v_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_kv_heads, d])
        go = self.global_view(o_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_heads, d])
        sq = self.shared_tensor(dtype=self.dtype, shape=[bq, d])
        sk = self.shared_tensor(dtype=self.dtype, shape=[stages, bkv, d])
        sv = self.shared_tensor(dtype=self.dtype, shape=[stages, bkv, d])
        sp = self.shared_tensor(dtype=self.dtype, shape=[bq, bkv])

        # KV blocks [0, kv_end) are visited; those ending past mask_from need a mask.
        if self.causal:
            kv_end = min(seqlen, q_start + bq)
            mask_from = min(seqlen, q_start + 1)
        else:
            kv_end = seqlen
            mask_from = seqlen

        # Q, then stages - 1 KV stages are in flight before the loop.
        self.copy_async(gq, sq, offsets=[b, q_start, head, 0], dims=[1, 3])
        self.copy_async_commit_group()
        for st in range(stages - 1):
            self.copy_async(gk, sk[st], offsets=[b, st * bkv, kv_head, 0], dims=[1, 3])
            self.copy_async(gv, sv[st], offsets=[b, st * bkv, kv_head, 0], dims=[1, 3])
            self.copy_async_commit_group()

        o = self.register_tensor(dtype=float32, shape=[bq, d], init=0.0)
        m = self.register_tensor(dtype=float32, shape=[bq, 1], init=float("-inf"))
        l = self.register_tensor(dtype=float32, shape=[bq, 1], init=0.0)
        current_stage: int32 = 0
        preload_stage: int32 = stages - 1
        for kv_start in range(0, kv_end, bkv):
            # Block j has landed once at most stages - 2 newer groups are in flight. After
            # the barrier every thread is done with block j - 1, so its stage (and P's
            # tile) may be overwritten: it takes block j + stages - 1.
            self.copy_async_wait_group(stages - 2)
            self.sync()
            preload = kv_start + (stages - 1) * bkv
            if preload < kv_end:
                self.copy_async(gk, sk[preload_stage], offsets=[b, preload, kv_head, 0], dims=[1, 3])
                self.copy_async(gv, sv[preload_stage], offsets=[b, preload, kv_head, 0], dims=[1, 3])
            self.copy_async_commit_group()

            s = self.dot(self.load_shared(sq), self.load_shared(sk[current_stage].transpose()),
                         acc_dtype=float32)
            p, m, l, alpha = self.softmax_step(s, m, l, bq, bkv, kv_start, q_start, mask_from, seqlen)
            o = o * alpha
            self.store_shared(sp, p.to(self.dtype))
            self.sync()
            o = self.dot(self.load_shared(sp), self.load_shared(sv[current_stage]), o)
            current_stage = (current_stage + 1) % stages
            preload_stage = (preload_stage + 1) % stages

        self.copy_async_wait_all()
        self.free_shared(sq)
        self.free_shared(sk)
        self.free_shared(sv)
        self.free_shared(sp)
        o = o * (1.0 / l)  # one division per row, not per element
        self.store_global(go, o.to(self.dtype), offsets=[b, q_start, head, 0], dims=[1, 3])


_TORCH_TO_TILUS = {torch.float16: float16, torch.bfloat16: bfloat16}
_SCRIPTS = {}


def check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor = None,
                 owner: str = "flash_attention"):
    """Refuses what the attention kernels cannot take, naming the parameter (they read
    and write through raw pointers: a mismatch would read or write past a tensor)."""
    if q.dtype not in _TORCH_TO_TILUS or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"{owner}: q, k, v must share one dtype, float16 or bfloat16")
    if q.dim() != 4 or k.shape != v.shape or k.shape[::3] != q.shape[::3] or k.shape[1] != q.shape[1]:
        raise ValueError(f"{owner}: shapes q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
                         " are not [b, s, h, d] and [b, s, h_kv, d]")
    check_same_device(owner, q=q, k=k, v=v)
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError(f"{owner}: q, k and v must be contiguous")
    if out is not None:
        check_tensor(out, "out", q.shape, q.dtype, q.device, owner)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    out: torch.Tensor = None, config: dict = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v for contiguous q [b, s, h, d], k and v [b, s, h_kv, d]
    (fp16/bf16, h a multiple of h_kv); the result has q's shape. `config` fixes the tuning
    parameters (warps, block_q, block_kv, stages) instead of autotuning them."""
    check_inputs(q, k, v, out)
    batch, seqlen, heads, d = q.shape
    out = torch.empty_like(q) if out is None else out
    key = (q.dtype, heads, k.shape[2], d, causal, tuple(sorted((config or {}).items())))
    if key not in _SCRIPTS:
        _SCRIPTS[key] = FlashAttention(_TORCH_TO_TILUS[q.dtype], heads, k.shape[2], d, causal, **(config or {}))
    _SCRIPTS[key](batch, seqlen, q, k, v, out)
    return out


def attention_reference(q, k, v, causal=False):
    """The same attention in float32 through torch (layout [b, s, h, d])."""
    group = q.shape[2] // k.shape[2]
    qt, kt, vt = (x.float().transpose(1, 2) for x in (q, k, v))
    kt, vt = kt.repeat_interleave(group, dim=1), vt.repeat_interleave(group, dim=1)
    o = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    return o.transpose(1, 2)


def check_cases(device: str, attention, cases, title: str):
    """Runs `attention(q, k, v, causal, out=o)` on each (batch, seqlen, heads, kv_heads,
    d, dtype) case, causal and not, against torch, and times it on the GPU."""
    for batch, seqlen, heads, kv_heads, d, dtype in cases:
        q = torch.randn(batch, seqlen, heads, d, device=device).to(dtype)
        k = torch.randn(batch, seqlen, kv_heads, d, device=device).to(dtype)
        v = torch.randn(batch, seqlen, kv_heads, d, device=device).to(dtype)
        for causal in (False, True):
            o = torch.full_like(q, float("nan"))
            attention(q, k, v, causal, out=o)
            torch.testing.assert_close(o.float(), attention_reference(q, k, v, causal), atol=2e-2, rtol=2e-2)
            line = (f"{title} {str(dtype)[6:]:8s} b={batch} s={seqlen} h={heads}/{kv_heads} d={d} "
                    f"{'causal' if causal else 'full':6s}: ok")
            if device == "cuda":
                ms = benchmark_func(lambda: attention(q, k, v, causal, out=o))
                flops = 4 * batch * heads * seqlen * seqlen * d * (0.5 if causal else 1.0)
                line += f"   {ms:.3f} ms  {flops / ms * 1e-9:.1f} TFLOP/s"
            print(line)


def main(device: str):
    torch.manual_seed(0)
    if device == "cpu":
        cases = [(1, 37, 4, 2, 64, torch.float16), (2, 70, 2, 1, 64, torch.bfloat16)]
        config = {"warps": 4, "block_q": 64, "block_kv": 64, "stages": 2}
    else:
        cases = [(1, 4096, 32, 8, 128, torch.float16), (2, 1023, 16, 4, 64, torch.bfloat16)]
        config = None
    check_cases(device, lambda q, k, v, causal, out: flash_attention(q, k, v, causal, out=out, config=config),
                cases, "flash attention")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
