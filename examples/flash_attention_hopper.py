"""Warp-specialised flash attention forward for Hopper (sm_90a): O = softmax(Q K^T / sqrt(d)) V.

Same contract as examples/flash_attention.py: tensors [batch, seqlen, heads, head_dim],
grouped-query heads (query head h reads KV head h // (heads // kv_heads)), fp16 or bf16,
head_dim 64 or 128, causal (top-left aligned, as torch's is_causal) or not, any length.

The kernel is persistent: one block per SM takes work units (128 query rows of one head
of one sequence) dealt in a snake over the blocks, so the next unit's Q and first K/V
blocks load while the current one finishes (a block per unit paid that latency, its
epilogue and its start-up every 128 rows: 3-4 us a unit, most of the time of a short or
causal unit). Its threads are split by role and talk only through mbarriers:

* warpgroup 0 is the producer: it gives registers back (``setmaxnreg``) and one thread
  loads each unit's Q (once both consumers issued their last Q K^T of the unit before,
  ``q_empty``), then K and V block by block (``block_kv`` rows: 128, 176 or 192, tuned)
  with TMA into a ring of ``stages`` slots; K and V of a slot complete on separate
  barriers, so the first product can start while V is still landing. ``empty[s]``
  completes when both consumer warpgroups are done with slot s.
* warpgroups 1 and 2 are the consumers, 64 query rows each (one wgmma accumulator split
  between them): S = Q K^T with wgmma from shared memory; the online softmax in
  registers, in base 2 (P = exp2(S c - m c), c = log2(e) / sqrt(d)), rescaling the row
  sums l and the output O when the row max m grows; then O += P V with P straight from
  registers (wgmma's register-A form: S's accumulator fragment is P's operand fragment,
  so P never goes through shared memory).

Only the blocks that need it are masked: the last KV block of a sequence that is not a
multiple of ``block_kv``, and, when causal, the blocks that cross the diagonal; causal
units skip every KV block wholly above them and are numbered heaviest (last query block)
first, which the snake turns into an even load per block. TMA
zero-fills rows past the sequence; their results are dropped at the store.

    python examples/flash_attention_hopper.py            # CPU interpreter, small sizes
    python examples/flash_attention_hopper.py --cuda     # GPU: checks against torch, then times it
"""

import math
import os
import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32, uint32
from tilus.utils import cdiv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash_attention import OnlineSoftmax, attention_reference, check_cases, check_inputs  # noqa: E402
from matmul_warp_specialized import TmaStoreEpilogue, multiprocessor_count  # noqa: E402

__all__ = ["CONFIGS", "FlashAttentionHopper", "flash_attention", "attention_reference"]

LOG2E = 1.4426950408889634
BLOCK_Q = 128


# epilogue "tma": O staged in shared memory and stored by one TMA copy (a 32 KB tile more,
# so two stages only); "registers": each thread stores its fragment. Staging measured
# +9% at s = 1k (many short units), 0-4% behind at 4k (three stages win there), H100.
# block_kv 176 / 192 (two stages of 44 / 48 KB K and V fill shared memory): the fixed
# work of a KV step (its barriers, 16 wgmma descriptors, the loop) spread over more
# columns, +5% at 8k (+9% causal), but more of the last block masked: -2..-9% at 1k (H100).
CONFIGS = [(2, "registers", 128), (3, "registers", 128), (2, "tma", 128), (2, "registers", 176),
           (2, "registers", 192)]


@tilus.autotune("stages, epilogue, block_kv", CONFIGS)
class FlashAttentionHopper(OnlineSoftmax, TmaStoreEpilogue, tilus.Script):
    def __init__(self, dtype, num_heads: int, num_kv_heads: int, head_dim: int, causal: bool, stages: int,
                 epilogue: str = "registers", block_kv: int = 128, num_blocks: int = None):
        super().__init__()
        if epilogue not in ("registers", "tma"):
            raise ValueError(f"epilogue must be 'registers' or 'tma', got {epilogue!r}")
        if block_kv % 16 or not 16 <= block_kv <= 256:
            raise ValueError(f"block_kv must be a multiple of 16 in [16, 256] (a wgmma's N and K, a TMA box), "
                             f"got {block_kv}")
        self.block_kv = block_kv
        self.epilogue = epilogue
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})")
        if head_dim not in (64, 128):
            raise ValueError(f"head_dim must be 64 or 128, got {head_dim}")
        self.dtype, self.num_heads, self.num_kv_heads, self.head_dim = dtype, num_heads, num_kv_heads, head_dim
        self.causal, self.stages = causal, stages
        self.group = num_heads // num_kv_heads
        self.qk_scale = LOG2E / math.sqrt(head_dim)  # exp(x / sqrt(d)) == exp2(x * qk_scale)
        self.num_blocks = num_blocks or multiprocessor_count()

    def __call__(self, batch: int32, seqlen: int32, q_ptr: tilus.void_p, k_ptr: tilus.void_p,
                 v_ptr: tilus.void_p, o_ptr: tilus.void_p):
        bq, bkv, d, stages = BLOCK_Q, self.block_kv, self.head_dim, self.stages
        q_blocks = cdiv(seqlen, bq)
        num_units = q_blocks * self.num_heads * batch
        blocks = min(num_units, self.num_blocks)
        rounds = cdiv(num_units, blocks)
        self.attrs.blocks = [blocks]
        self.attrs.warps = 12

        gq = self.global_view(q_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_heads, d])
        gk = self.global_view(k_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_kv_heads, d])
        gv = self.global_view(v_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_kv_heads, d])
        go = self.global_view(o_ptr, dtype=self.dtype, shape=[batch, seqlen, self.num_heads, d])
        sq = self.shared_tensor(dtype=self.dtype, shape=[bq, d])
        sk = self.shared_tensor(dtype=self.dtype, shape=[stages, bkv, d])
        sv = self.shared_tensor(dtype=self.dtype, shape=[stages, bkv, d])
        if self.epilogue == "tma":
            so = self.shared_tensor(dtype=self.dtype, shape=[bq, d])
        q_full = self.mbarrier.alloc(counts=[1])
        q_empty = self.mbarrier.alloc(counts=[2])  # both consumer warpgroups issued their last Q K^T
        k_full = self.mbarrier.alloc(counts=[1] * stages)
        v_full = self.mbarrier.alloc(counts=[1] * stages)
        empty = self.mbarrier.alloc(counts=[2] * stages)  # one arrival per consumer warpgroup
        kv_bytes = bkv * d * self.dtype.nbytes

        with self.warp_group(warp_begin=0, num_warps=4):  # producer
            self.setmaxnreg(40, "dec")
            with self.single_thread():
                stage: int32 = 0
                phase: uint32 = self.mbarrier.producer_initial_phase
                q_phase: uint32 = self.mbarrier.producer_initial_phase
                for r in range(rounds):
                    unit = self.unit_of_round(r, blocks)
                    if unit < num_units:
                        b, head, q_start, kv_blocks, _ = self.unit_origin(unit, batch, seqlen, q_blocks)
                        kv_head = head // self.group
                        # the next unit's Q lands while the consumers finish this one
                        self.mbarrier.wait(q_empty, phase=q_phase)
                        q_phase ^= 1
                        self.mbarrier.arrive_and_expect_tx(q_full, bq * d * self.dtype.nbytes)
                        self.tma.global_to_shared(src=gq, dst=sq, offsets=[b, q_start, head, 0], dims=[1, 3],
                                                  mbarrier=q_full)
                        for j in range(kv_blocks):
                            self.mbarrier.wait(empty[stage], phase=phase)
                            self.mbarrier.arrive_and_expect_tx(k_full[stage], kv_bytes)
                            self.tma.global_to_shared(src=gk, dst=sk[stage], offsets=[b, j * bkv, kv_head, 0],
                                                      dims=[1, 3], mbarrier=k_full[stage])
                            self.mbarrier.arrive_and_expect_tx(v_full[stage], kv_bytes)
                            self.tma.global_to_shared(src=gv, dst=sv[stage], offsets=[b, j * bkv, kv_head, 0],
                                                      dims=[1, 3], mbarrier=v_full[stage])
                            stage = (stage + 1) % stages
                            if stage == 0:
                                phase ^= 1

        with self.warp_group(warp_begin=4, num_warps=8):  # two consumer warpgroups
            self.setmaxnreg(232, "inc")
            stage: int32 = 0
            phase: uint32 = self.mbarrier.consumer_initial_phase
            q_phase: uint32 = 0
            for r in range(rounds):
                unit = self.unit_of_round(r, blocks)
                if unit < num_units:
                    b, head, q_start, kv_blocks, mask_from = self.unit_origin(unit, batch, seqlen, q_blocks)
                    self.mbarrier.wait(q_full, phase=q_phase)
                    q_phase ^= 1
                    o = self.register_tensor(dtype=float32, shape=[bq, d], init=0.0)
                    m = self.register_tensor(dtype=float32, shape=[bq, 1], init=float("-inf"))
                    l = self.register_tensor(dtype=float32, shape=[bq, 1], init=0.0)
                    for j in range(kv_blocks):
                        kv_start = j * bkv
                        self.mbarrier.wait(k_full[stage], phase=phase)
                        s = self.register_tensor(dtype=float32, shape=[bq, bkv], init=0.0)
                        self.wgmma.fence()
                        self.wgmma.mma(sq, sk[stage].transpose(), s)
                        self.wgmma.commit_group()
                        self.wgmma.wait_group(0)
                        if j == kv_blocks - 1:
                            self.release(q_empty)
                        p, m, l, alpha = self.softmax_step(s, m, l, bq, bkv, kv_start, q_start, mask_from, seqlen)
                        o = o * alpha
                        self.mbarrier.wait(v_full[stage], phase=phase)
                        self.wgmma.fence()
                        self.wgmma.mma(p.to(self.dtype), sv[stage], o)
                        self.wgmma.commit_group()
                        self.wgmma.wait_group(0)
                        self.release(empty[stage])
                        stage = (stage + 1) % stages
                        if stage == 0:
                            phase ^= 1
                    o = o * (1.0 / l)  # one division per row, not per element
                    if self.epilogue == "tma":
                        self.store_through_shared(so, go, o, [b, q_start, head, 0], dims=[1, 3])
                    else:
                        self.store_global(go, o.to(self.dtype), offsets=[b, q_start, head, 0], dims=[1, 3])
            if self.epilogue == "tma":
                with self.single_thread():
                    self.tma.wait_group(0)  # the last store has landed before the block exits

    def unit_of_round(self, r: int32, blocks: int32):
        """The work unit this block takes in round r: units are dealt to the blocks in a
        snake (0..blocks-1, then back), so with units ordered heaviest first (causal) the
        blocks that got the heaviest of one round get the lightest of the next."""
        lane = self.blockIdx.x
        if r % 2 == 1:
            lane = blocks - 1 - lane
        return r * blocks + lane

    def unit_origin(self, unit: int32, batch: int32, seqlen: int32, q_blocks: int32):
        """Unit `unit`'s sequence, query head, first query row, the number of KV blocks it
        visits and the first KV position that needs a mask. Heads vary fastest (the query
        heads of one KV head run side by side); causal units run from the last query
        block (the longest) to the first."""
        head = unit % self.num_heads
        rest = unit // self.num_heads
        b = rest % batch
        q_block = rest // batch
        if self.causal:
            q_block = q_blocks - 1 - q_block
        q_start = q_block * BLOCK_Q
        # KV blocks [0, kv_blocks) are visited; those ending past mask_from need a mask
        if self.causal:
            kv_blocks = cdiv(min(seqlen, q_start + BLOCK_Q), self.block_kv)
            mask_from = min(seqlen, q_start + 1)
        else:
            kv_blocks = cdiv(seqlen, self.block_kv)
            mask_from = seqlen
        return b, head, q_start, kv_blocks, mask_from

    def release(self, barrier):
        """One thread of each consumer warpgroup frees the slot: its wgmma waits retired
        the warpgroup's reads of K and V."""
        with self.thread_group(0, num_threads=128):
            with self.single_thread():
                self.mbarrier.arrive(barrier)
        with self.thread_group(128, num_threads=128):
            with self.single_thread():
                self.mbarrier.arrive(barrier)


_TORCH_TO_TILUS = {torch.float16: float16, torch.bfloat16: bfloat16}
_SCRIPTS = {}


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    out: torch.Tensor = None, stages: int = None, epilogue: str = None,
                    block_kv: int = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v for contiguous q [b, s, h, d], k and v [b, s, h_kv, d]
    (fp16/bf16, d 64 or 128, h a multiple of h_kv); the result has q's shape. `stages`,
    `epilogue` and `block_kv` fix the ring depth, the output path and the KV block width
    (default 2, "registers" and 128 when any is given) instead of autotuning them."""
    check_inputs(q, k, v, out)
    batch, seqlen, heads, d = q.shape
    out = torch.empty_like(q) if out is None else out
    key = (q.dtype, heads, k.shape[2], d, causal, stages, epilogue, block_kv)
    if key not in _SCRIPTS:
        fixed = stages is not None or epilogue is not None or block_kv is not None
        extra = ({"stages": stages or 2, "epilogue": epilogue or "registers", "block_kv": block_kv or 128}
                 if fixed else {})
        _SCRIPTS[key] = FlashAttentionHopper(_TORCH_TO_TILUS[q.dtype], heads, k.shape[2], d, causal, **extra)
    _SCRIPTS[key](batch, seqlen, q, k, v, out)
    return out


def main(device: str):
    torch.manual_seed(0)
    if device == "cpu":
        cases = [(1, 150, 2, 1, 128, torch.float16), (2, 70, 2, 2, 64, torch.bfloat16)]
        stages = 2
    else:
        cases = [(1, 4096, 32, 8, 128, torch.float16), (2, 1023, 16, 4, 64, torch.bfloat16)]
        stages = None
    check_cases(device, lambda q, k, v, causal, out: flash_attention(q, k, v, causal, out=out, stages=stages),
                cases, "flash attention (Hopper)")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
