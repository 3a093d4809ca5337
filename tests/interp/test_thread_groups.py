"""Thread groups (Tilus 0.2's thread_group / single_thread / single_warp / warp_group) in
the interpreter: warp-specialised producer/consumer pipelines against torch at odd
shapes, tilus.Pipeline, the thread ranges a group sees, the build-time refusals and the
deadlock report."""
import re

import pytest
import torch

import tilus
from tests.conftest import script_line
from tilus import float16, float32, int32, uint32
from tilus.utils import cdiv
from tilus.lang.errors import ScriptError


class WarpSpecializedMatmul(tilus.Script):
    """C = A @ B on 8 warps: warp 0 loads k-tiles with TMA into a ring of stages, warps
    4..7 (one warpgroup) multiply them; they talk only through mbarriers."""

    def __init__(self, block_m=32, block_n=32, block_k=16, stages=2):
        super().__init__()
        self.block_m, self.block_n, self.block_k, self.stages = block_m, block_n, block_k, stages

    def __call__(self, m_size: int32, n_size: int32, k_size: int32, a_ptr: ~float16,
                 b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = 8
        bm, bn, bk, ns = self.block_m, self.block_n, self.block_k, self.stages
        m0: int32 = self.blockIdx.x * bm
        n0: int32 = self.blockIdx.y * bn
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[ns, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[ns, bk, bn])
        full = self.mbarrier.alloc(counts=[32] * ns)    # the producer warp arrives
        empty = self.mbarrier.alloc(counts=[128] * ns)  # the consumer warpgroup arrives
        num_k: int32 = cdiv(k_size, bk)
        with self.single_warp(0):
            stage: int32 = 0
            phase: uint32 = self.mbarrier.producer_initial_phase
            for ki in range(num_k):
                self.mbarrier.wait(empty[stage], phase=phase)
                self.mbarrier.arrive_and_expect_tx(full[stage], (bm * bk + bk * bn) * 2 // 32)
                self.tma.global_to_shared(src=ga, dst=sa[stage], offsets=[m0, ki * bk],
                                          mbarrier=full[stage])
                self.tma.global_to_shared(src=gb, dst=sb[stage], offsets=[ki * bk, n0],
                                          mbarrier=full[stage])
                stage = (stage + 1) % ns
                if stage == 0:
                    phase ^= 1
        with self.warp_group(warp_begin=4, num_warps=4):
            acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
            cstage: int32 = 0
            cphase: uint32 = self.mbarrier.consumer_initial_phase
            for ki in range(num_k):
                self.mbarrier.wait(full[cstage], phase=cphase)
                a = self.load_shared(sa[cstage])
                b = self.load_shared(sb[cstage])
                self.dot(a, b, acc, out=acc)
                self.mbarrier.arrive(empty[cstage])
                cstage = (cstage + 1) % ns
                if cstage == 0:
                    cphase ^= 1
            gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
            self.store_global(gc, acc.to(float16), offsets=[m0, n0])


@pytest.mark.parametrize("m, n, k, stages", [(45, 37, 53, 2), (70, 33, 100, 3), (32, 32, 16, 2)])
def test_warp_specialized_matmul_matches_torch(m, n, k, stages):
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    WarpSpecializedMatmul(stages=stages)(m, n, k, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=2e-2)


class PipelineRowSums(tilus.Script):
    """out[r] = x[r, :].sum() * 2 + 1 per block of rows: one producer thread copies column
    tiles into a tilus.Pipeline's stages (TMA, completing on the stage's barrier), the
    consumer warpgroup accumulates them; Pipeline keeps the stage counters and phases."""

    def __init__(self, block_r=16, block_c=32, stages=3):
        super().__init__()
        self.block_r, self.block_c, self.stages = block_r, block_c, stages

    def __call__(self, rows: int32, cols: int32, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [cdiv(rows, self.block_r)]
        self.attrs.warps = 8
        br, bc = self.block_r, self.block_c
        r0: int32 = self.blockIdx.x * br
        gx = self.global_view(x_ptr, dtype=float32, shape=[rows, cols])
        buf = self.shared_tensor(dtype=float32, shape=[self.stages, br, bc])
        pipe = tilus.Pipeline(self.stages, producer_arrive_count=32, consumer_arrive_count=128)
        num_c: int32 = cdiv(cols, bc)
        with self.warp_group(0, 4):
            with self.single_warp(0):
                for ci in range(num_c):
                    pipe.producer_acquire()
                    self.mbarrier.arrive_and_expect_tx(pipe.producer_release_barrier(),
                                                       br * bc * 4 // 32)
                    self.tma.global_to_shared(src=gx, dst=buf[pipe.producer_stage],
                                              offsets=[r0, ci * bc],
                                              mbarrier=pipe.producer_release_barrier())
                    pipe.producer_advance()
        with self.warp_group(4, 4):
            acc = self.register_tensor(dtype=float32, shape=[br, bc], init=0.0)
            for ci in range(num_c):
                pipe.consumer_acquire()
                acc += self.load_shared(buf[pipe.consumer_stage])
                self.mbarrier.arrive(pipe.consumer_release_barrier())
                pipe.consumer_advance()
            total = self.sum(acc, dim=1, keepdim=True) * 2.0 + 1.0
            gout = self.global_view(out_ptr, dtype=float32, shape=[rows, 1])
            self.store_global(gout, total, offsets=[r0, 0])


@pytest.mark.parametrize("rows, cols, stages", [(37, 101, 3), (16, 32, 2), (50, 200, 4)])
def test_pipeline_producer_consumer_matches_torch(rows, cols, stages):
    x = torch.randn(rows, cols, dtype=torch.float32)
    out = torch.full((rows, 1), float("nan"), dtype=torch.float32)
    PipelineRowSums(stages=stages)(rows, cols, x, out)
    torch.testing.assert_close(out, x.sum(dim=1, keepdim=True) * 2 + 1, atol=1e-4, rtol=1e-4)


class GroupRanges(tilus.Script):
    """Writes current_thread_begin / end / num_threads as seen in nested groups."""

    def __call__(self, out_ptr: ~int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 12
        g = self.global_view(out_ptr, dtype=int32, shape=[4, 3])
        with self.warp_group(4, 8):
            with self.thread_group(128, num_threads=64):
                b = self.register_tensor(dtype=int32, shape=[1, 1], init=self.current_thread_begin)
                e = self.register_tensor(dtype=int32, shape=[1, 1], init=self.current_thread_end)
                n = self.register_tensor(dtype=int32, shape=[1, 1], init=self.current_num_threads)
                self.store_global(g, b, offsets=[0, 0])
                self.store_global(g, e, offsets=[0, 1])
                self.store_global(g, n, offsets=[0, 2])
            with self.single_thread(5):
                self.printf("begin %d\n", self.current_thread_begin)
        with self.single_warp(1):
            x = self.register_tensor(dtype=int32, shape=[1, 3], init=self.current_thread_begin)
            self.store_global(g, x, offsets=[1, 0])


def test_current_thread_range_follows_the_group(capfd):
    out = torch.full((4, 3), -1, dtype=torch.int32)
    GroupRanges()(out)
    assert out[0].tolist() == [256, 320, 64]
    assert out[1].tolist() == [32, 32, 32]
    assert out[2:].eq(-1).all()
    assert "begin 133" in capfd.readouterr().out


def _build(script_cls, *args):
    return script_cls()(*args)


class TmaInOneThread(tilus.Script):
    """Tilus 0.2 programs issue TMA copies from `with self.single_thread():` (its Hopper
    matmul examples do): one thread loads, arrives with the bytes, and every thread waits."""

    def __call__(self, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float32, shape=[16, 16])
        gy = self.global_view(y_ptr, dtype=float32, shape=[16, 16])
        s = self.shared_tensor(dtype=float32, shape=[16, 16])
        bar = self.mbarrier.alloc(counts=[1])
        with self.single_thread():
            self.mbarrier.arrive_and_expect_tx(bar, 16 * 16 * 4)
            self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        self.store_global(gy, self.load_shared(s) + 1.0, offsets=[0, 0])


def test_tma_copy_issued_by_one_thread():
    x = torch.randn(16, 16)
    y = torch.full((16, 16), float("nan"))
    TmaInOneThread()(x, y)
    torch.testing.assert_close(y, x + 1.0)


class SetMaxNRegNotAligned(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        with self.warp_group(2, 4):
            self.setmaxnreg(232, "inc")


class SetMaxNRegBadCount(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        with self.warp_group(4, 4):
            self.setmaxnreg(100, "inc")


class GroupOutsideBlock(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        with self.warp_group(2, 4):
            self.sync()


class TileAcrossGroups(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        g = self.global_view(x_ptr, dtype=float32, shape=[16])
        t = self.load_global(g, offsets=[0], shape=[16])
        with self.warp_group(4, 4):
            self.store_global(g, t + 1.0, offsets=[0])


class ClusterSyncInAGroup(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [2]
        self.attrs.cluster_blocks = [2]
        self.attrs.warps = 8
        with self.warp_group(0, 4):
            self.cluster.sync()


@pytest.mark.parametrize("script, pattern", [
    (SetMaxNRegNotAligned, r"setmaxnreg must be issued by whole warpgroups .* threads \[64, 192\)"),
    # the other warpgroup never arrives: a hang on the GPU, refused when the script is built
    (ClusterSyncInAGroup, r"cluster_sync is reached by every thread of the block; it cannot run inside a "
                          r"thread group \(threads \[0, 128\) here\)"),
    (SetMaxNRegBadCount, r"multiple of 8 in \[24, 256\], got 100"),
    (GroupOutsideBlock, r"warps \[2, 6\) are not inside the current thread group of 128 threads"),
    (TileAcrossGroups, r"runs on 128 threads but reads .* held by 256 threads"),
])
def test_wrong_thread_group_is_refused_with_the_line(script, pattern):
    x = torch.zeros(16, 16, dtype=torch.float32)
    with pytest.raises(Exception) as info:
        script()(x)
    message = str(info.value)
    assert re.search(pattern, message, re.S), message
    assert "test_thread_groups.py" in message


class SetMaxNRegOk(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        g = self.global_view(x_ptr, dtype=float32, shape=[8])
        with self.warp_group(0, 4):
            self.setmaxnreg(40, "dec")
        with self.warp_group(4, 4):
            self.setmaxnreg(232, "inc")
            t = self.load_global(g, offsets=[0], shape=[8])
            self.store_global(g, t * 3.0, offsets=[0])


def test_setmaxnreg_in_warpgroups_runs():
    x = torch.randn(8)
    expect = x * 3
    SetMaxNRegOk()(x)
    torch.testing.assert_close(x, expect)


class ProducerNeverArrives(tilus.Script):
    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        bar = self.mbarrier.alloc(counts=[128])
        with self.warp_group(0, 4):
            self.mbarrier.wait(bar, phase=0)
        with self.warp_group(4, 4):
            self.mbarrier.wait(bar, phase=0)


def test_groups_waiting_on_each_other_report_a_deadlock():
    with pytest.raises(RuntimeError, match=r"deadlock: thread group \[0, 128\) waits on mbarrier 0"):
        ProducerNeverArrives()(torch.zeros(4))


class ProducerWaitsOnLaterConsumer(tilus.Script):
    """A producer ring whose consumer starts only after the producer finished: a statement
    every thread runs (`between`) separates the two groups."""

    def __init__(self, between: str):
        super().__init__()
        self.between = between

    def __call__(self, x_ptr: ~float32, n: int32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        g = self.global_view(x_ptr, dtype=float32, shape=[128])
        full = self.mbarrier.alloc(counts=[1, 1])
        empty = self.mbarrier.alloc(counts=[128, 128])
        with self.warp_group(0, 4):
            phase: uint32 = self.mbarrier.producer_initial_phase
            for i in range(n):
                self.mbarrier.wait(empty[i % 2], phase=phase)
                with self.single_thread():
                    self.mbarrier.arrive(full[i % 2])
                if i % 2 == 1:
                    phase ^= 1
        if self.between == "alloc":
            self.mbarrier.alloc(counts=[1])
        elif self.between == "sync":
            self.sync()
        with self.warp_group(4, 4):
            phase: uint32 = self.mbarrier.consumer_initial_phase
            for i in range(n):
                self.mbarrier.wait(full[i % 2], phase=phase)
                self.mbarrier.arrive(empty[i % 2])
                if i % 2 == 1:
                    phase ^= 1
            t = self.load_global(g, offsets=[0], shape=[128])
            self.store_global(g, t + 1.0, offsets=[0])


@pytest.mark.parametrize("between", ["alloc", "sync"])
def test_a_group_waiting_on_groups_after_a_block_wide_statement_is_refused(between):
    with pytest.raises(ValueError, match=r"mbarrier\.wait: this thread group waits, in a loop, on the mbarrier "
                                         r"allocated at line \d+, which only statements from line \d+ on arrive at"):
        ProducerWaitsOnLaterConsumer(between)(torch.zeros(128), 5)


def test_the_same_groups_side_by_side_run():
    x = torch.randn(128)
    expect = x + 1
    ProducerWaitsOnLaterConsumer("")(x, 5)
    torch.testing.assert_close(x, expect)


class AllocBetweenGroups(tilus.Script):
    """The producer waits on a barrier the consumer arrives at, but an mbarrier allocated
    between the two groups (a statement every thread runs: it hangs on the GPU as well)
    keeps the consumer from starting while the producer waits."""

    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        bar = self.mbarrier.alloc(counts=[1])
        with self.warp_group(0, 4):
            self.mbarrier.wait(bar, phase=0)
        self.mbarrier.alloc(counts=[1])  # the statement between the groups
        with self.warp_group(4, 4):
            with self.single_thread():
                self.mbarrier.arrive(bar)


class ArriveAfterTheRun(tilus.Script):
    """Two warpgroups taking turns through a group each, the turn handed over by code the
    whole block runs after the groups: fine on the GPU (a finished group's threads go on),
    a deadlock in the interpreter, which starts that code once both groups finished."""

    def __call__(self, x_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 8
        turn = self.mbarrier.alloc(counts=[256])
        with self.thread_group(0, num_threads=128):
            self.mbarrier.wait(turn, phase=0)
        with self.thread_group(128, num_threads=128):
            self.mbarrier.wait(turn, phase=1)  # a fresh barrier's phase 1 counts as complete
        self.mbarrier.arrive(turn)


@pytest.mark.parametrize("script, after, who", [
    (AllocBetweenGroups, "# the statement between the groups", "this thread group"),
    (ArriveAfterTheRun, "self.mbarrier.arrive(turn)", "these thread groups")])
def test_a_deadlock_waiting_on_statements_after_the_groups_says_so(script, after, who):
    with pytest.raises(RuntimeError, match=r"deadlock: .*waits on mbarrier 0") as info:
        script()(torch.zeros(4))
    assert f"; the statements after {who} (from line {script_line(script, after)}) start only once" in str(info.value)


class WsCopyMatmul(tilus.Script):
    """C = A @ B and rowsum(C) on 8 warps without TMA (so CUDA can run it today): the
    producer warpgroup loads k-tiles into registers spread over its 128 threads and stores
    them into a ring of shared stages; the consumer warpgroup multiplies them (mma on 4
    warps) and reduces across its warps (a named barrier). They meet only at mbarriers;
    setmaxnreg moves registers from the producer to the consumer."""

    def __init__(self, block_m=64, block_n=64, block_k=32, stages=3):
        super().__init__()
        self.block_m, self.block_n, self.block_k, self.stages = block_m, block_n, block_k, stages

    def __call__(self, m_size: int32, n_size: int32, k_size: int32, a_ptr: ~float16,
                 b_ptr: ~float16, c_ptr: ~float16, s_ptr: ~float32):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = 8
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        m0: int32 = self.blockIdx.x * bm
        n0: int32 = self.blockIdx.y * bn
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[self.stages, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[self.stages, bk, bn])
        pipe = tilus.Pipeline(self.stages, producer_arrive_count=128, consumer_arrive_count=128)
        num_k: int32 = cdiv(k_size, bk)
        with self.warp_group(0, 4):
            self.setmaxnreg(40, "dec")
            for ki in range(num_k):
                a = self.load_global(ga, offsets=[m0, ki * bk], shape=[bm, bk])
                b = self.load_global(gb, offsets=[ki * bk, n0], shape=[bk, bn])
                pipe.producer_acquire()
                self.store_shared(sa[pipe.producer_stage], a)
                self.store_shared(sb[pipe.producer_stage], b)
                self.mbarrier.arrive(pipe.producer_release_barrier())
                pipe.producer_advance()
        with self.warp_group(4, 4):
            self.setmaxnreg(232, "inc")
            acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
            for ki in range(num_k):
                pipe.consumer_acquire()
                a = self.load_shared(sa[pipe.consumer_stage])
                b = self.load_shared(sb[pipe.consumer_stage])
                self.dot(a, b, acc, out=acc)
                self.mbarrier.arrive(pipe.consumer_release_barrier())
                pipe.consumer_advance()
            gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
            self.store_global(gc, acc.to(float16), offsets=[m0, n0])
            rows = self.sum(acc, dim=1, keepdim=True)
            gs = self.global_view(s_ptr, dtype=float32, shape=[m_size, self.gridDim.y])
            self.store_global(gs, rows, offsets=[m0, self.blockIdx.y])


def ws_copy_matmul_reference(a, b, block_n=64):
    c = a.float() @ b.float()
    n = b.shape[1]
    parts = [c[:, j:j + block_n].sum(dim=1) for j in range(0, n, block_n)]
    return c, torch.stack(parts, dim=1)


@pytest.mark.parametrize("m, n, k", [(70, 90, 100), (64, 64, 32)])
def test_ws_copy_matmul_matches_torch(m, n, k):
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    s = torch.full((m, cdiv(n, 64)), float("nan"), dtype=torch.float32)
    WsCopyMatmul()(m, n, k, a, b, c, s)
    ref_c, ref_s = ws_copy_matmul_reference(a, b)
    torch.testing.assert_close(c.float(), ref_c, atol=3e-2, rtol=3e-2)
    torch.testing.assert_close(s, ref_s, atol=5e-2, rtol=1e-2)


class TileMadeBeforeItsGroup(tilus.Script):
    """Tilus 0.2's warp-specialised matmul makes the accumulator in the whole block, then
    uses it only in the consumer group: the tile belongs to that group."""

    def __call__(self, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 3
        acc = self.register_tensor(dtype=float32, shape=[32, 8], init=1.5)
        with self.thread_group(32, 64):
            acc = acc + 2.0
            g = self.global_view(out, dtype=float32, shape=[32, 8])
            self.store_global(g, acc, offsets=[0, 0])


class TileUsedInTwoGroups(tilus.Script):
    def __call__(self, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 2
        acc = self.register_tensor(dtype=float32, shape=[32, 8], init=1.5)
        g = self.global_view(out, dtype=float32, shape=[32, 8])
        with self.thread_group(0, 32):
            self.store_global(g, acc, offsets=[0, 0])
        with self.thread_group(32, 32):
            self.store_global(g, acc + 1.0, offsets=[0, 0])


def test_a_tile_made_before_the_one_group_using_it_belongs_to_that_group():
    out = torch.full((32, 8), float("nan"))
    TileMadeBeforeItsGroup()(out)
    torch.testing.assert_close(out, torch.full((32, 8), 3.5))
    with pytest.raises(ScriptError, match="made in another thread group"):
        TileUsedInTwoGroups()(out)


class SuffixSumsInAGroup(tilus.Script):
    """out[b] = x[b] + out[b + 1], row by row, computed by the consumer warpgroup of block b
    after block b + 1's (a semaphore handed from the last block down to block 0); the
    producer warpgroup tags its row meanwhile. Block 0 runs first in the interpreter and
    must wait inside its thread group for every other block."""

    def __call__(self, n: int32, x_ptr: ~float32, out_ptr: ~float32, tag_ptr: ~int32, sem_ptr: ~int32):
        self.attrs.blocks = [n]
        self.attrs.warps = 8
        b: int32 = self.blockIdx.x
        gx = self.global_view(x_ptr, dtype=float32, shape=[n, 32])
        gout = self.global_view(out_ptr, dtype=float32, shape=[n, 32])
        gtag = self.global_view(tag_ptr, dtype=int32, shape=[n, 1])
        gsem = self.global_view(sem_ptr, dtype=int32, shape=[1])
        with self.warp_group(0, 4):
            self.store_global(gtag, self.register_tensor(dtype=int32, shape=[1, 1], init=b), offsets=[b, 0])
        with self.warp_group(4, 4):
            self.lock_semaphore(~gsem[0], n - 1 - b)
            row = self.load_global(gx, offsets=[b, 0], shape=[1, 32])
            row = row + self.load_global(gout, offsets=[b + 1, 0], shape=[1, 32])  # zeros past the last row
            self.store_global(gout, row, offsets=[b, 0])
            self.release_semaphore(~gsem[0], n - b)


def suffix_sums_args(n, device="cpu"):
    x = torch.randn(n, 32, device=device)
    out = torch.full((n, 32), float("nan"), device=device)
    tag = torch.full((n, 1), -1, dtype=torch.int32, device=device)
    sem = torch.zeros(1, dtype=torch.int32, device=device)
    return x, out, tag, sem


@pytest.mark.parametrize("n", [1, 5, 40])
def test_a_thread_group_waits_on_a_semaphore_of_later_blocks(n):
    x, out, tag, sem = suffix_sums_args(n)
    SuffixSumsInAGroup()(n, x, out, tag, sem)
    torch.testing.assert_close(out, x.flip(0).cumsum(0).flip(0))
    assert tag.flatten().tolist() == list(range(n))
    assert sem.item() == n


class GroupWaitsForever(tilus.Script):
    def __call__(self, sem_ptr: ~int32):
        self.attrs.blocks = [2]
        self.attrs.warps = 8
        gsem = self.global_view(sem_ptr, dtype=int32, shape=[1])
        with self.warp_group(0, 4):
            self.release_semaphore(~gsem[0], 1)
        with self.warp_group(4, 4):
            self.lock_semaphore(~gsem[0], 7)


def test_a_semaphore_no_block_releases_is_a_deadlock_naming_the_line():
    line = script_line(GroupWaitsForever, "lock_semaphore(~gsem[0], 7)")
    with pytest.raises(RuntimeError, match=r"deadlock: block \(\d, 0, 0\) waits in lock_semaphore for value 7") as e:
        GroupWaitsForever()(torch.zeros(1, dtype=torch.int32))
    assert f"line {line}," in str(e.value), str(e.value)


class SiblingGroupColumnSums(tilus.Script):
    """out[g, :] = x[64 g : 64 g + 64, :].sum(0) for the two groups of 2 warps g = 0, 1,
    which run side by side: each reduction crosses its group's warps through shared memory."""

    def __call__(self, x_ptr: ~float32, out_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float32, shape=[128, 32])
        go = self.global_view(out_ptr, dtype=float32, shape=[2, 32])
        for g in (0, 1):
            with self.warp_group(warp_begin=2 * g, num_warps=2):
                t = self.load_global(gx, offsets=[64 * g, 0], shape=[64, 32])
                self.store_global(go, self.sum(t, dim=0, keepdim=True), offsets=[g, 0])



def test_sibling_groups_reduce_their_own_rows():
    x = torch.randn(128, 32)
    out = torch.full((2, 32), float("nan"))
    SiblingGroupColumnSums()(x, out)
    torch.testing.assert_close(out, x.view(2, 64, 32).sum(1))


class GroupDotOfTransposedTile(tilus.Script):
    """c = a @ b^T in each of two groups of 2 warps (rows 16 g.. of a): b [32, 16] is read
    from shared memory and transposed in registers for the dot."""

    def __call__(self, a_ptr: ~tilus.float16, b_ptr: ~tilus.float16, c_ptr: ~float32):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=tilus.float16, shape=[32, 16])
        gb = self.global_view(b_ptr, dtype=tilus.float16, shape=[128, 16])
        gc = self.global_view(c_ptr, dtype=float32, shape=[32, 128])
        sb = self.shared_tensor(dtype=tilus.float16, shape=[128, 16])
        self.copy_async(src=gb, dst=sb, offsets=[0, 0])
        self.copy_async_wait_all()
        self.sync()
        for g in (0, 1):
            with self.warp_group(warp_begin=2 * g, num_warps=2):
                a = self.load_global(ga, offsets=[16 * g, 0], shape=[16, 16])
                c = self.dot(a, self.transpose(self.load_shared(sb)))
                self.store_global(gc, c, offsets=[16 * g, 0])



def test_a_dot_of_a_transposed_shared_tile_in_each_group():
    a = torch.randn(32, 16, dtype=torch.float16)
    b = torch.randn(128, 16, dtype=torch.float16)
    c = torch.full((32, 128), float("nan"))
    GroupDotOfTransposedTile()(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, atol=1e-2, rtol=1e-2)
