"""The CUDA generated for thread groups, setmaxnreg and clusters compiles with NVRTC for
sm_90a and has the expected shape: group-relative thread indices, named barriers for a
group's sync, setmaxnreg in warpgroups, __cluster_dims__, barrier.cluster, mapa and the
cluster special registers; sm_80 refuses the sm_90a-only parts at their script line."""

import re

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import require_nvrtc
from tests.interp.test_clusters import ClusterExchange, MulticastRows, MulticastSignal, MulticastWithoutCluster
from tests.interp.test_thread_groups import (GroupDotOfTransposedTile, GroupRanges, SetMaxNRegOk,
                                            SiblingGroupColumnSums, SuffixSumsInAGroup, WsCopyMatmul,
                                            suffix_sums_args)
from tilus import _C, float32, int32

rt = _C.runtime

require_nvrtc()


def _generate(kernel, args, arch):
    return _C.generate_cuda(kernel.compile(*args).program, True, arch)


def _compile(kernel, args, arch="sm_90a"):
    generated = _generate(kernel, args, arch)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == b"\x7fELF"
    return generated["source"]


def _ws_args(m=70, n=90, k=100):
    return (m, n, k, torch.zeros(m, k, dtype=torch.float16), torch.zeros(k, n, dtype=torch.float16),
            torch.zeros(m, n, dtype=torch.float16), torch.zeros(m, 2, dtype=torch.float32))


def test_warp_specialized_matmul_compiles_with_groups_and_setmaxnreg():
    src = _compile(WsCopyMatmul(), _ws_args())
    assert "// thread_group(0, 128)" in src and "if ((int)threadIdx.x >= 0 && (int)threadIdx.x < 128) {" in src
    assert "// thread_group(128, 128)" in src
    assert "if ((int)threadIdx.x >= 128 && (int)threadIdx.x < 256) {" in src
    assert "const int tl_tid = (int)threadIdx.x - 128;" in src
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in src
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in src
    # nothing inside the consumer group waits for the whole block
    body = src[src.index("thread_group(128, 128)"):]
    assert "__syncthreads()" not in body


def test_warp_specialized_matmul_also_builds_for_sm80_without_setmaxnreg():
    class NoRegs(tilus.Script):
        def __call__(self, x_ptr: ~float32):
            self.attrs.blocks = [1]
            self.attrs.warps = 8
            g = self.global_view(x_ptr, dtype=float32, shape=[64])
            with self.warp_group(4, 4):
                t = self.load_global(g, offsets=[0], shape=[64])
                s = self.sum(t, dim=0)
                self.sync()
                self.store_global(g, t + s, offsets=[0])
    src = _compile(NoRegs(), (torch.zeros(64),), "sm_80")
    assert re.search(r'bar\.sync %0, %1;" :: "r"\(\d+\), "r"\(128\)', src)
    assert "__syncthreads" not in src[src.index("thread_group(128, 128)"):]


def test_setmaxnreg_is_refused_for_sm80_at_its_line():
    with pytest.raises(Exception, match="setmaxnreg needs sm_90a") as info:
        _generate(SetMaxNRegOk(), (torch.zeros(8),), "sm_80")
    assert info.value.kind == "NotImplementedError" and info.value.line > 0
    assert 'self.setmaxnreg(40, "dec")' in info.value.text


def test_single_thread_and_group_ranges_compile():
    src = _compile(GroupRanges(), (torch.zeros(4, 3, dtype=torch.int32),), "sm_80")
    assert "// thread_group(5, 1)" in src and "if ((int)threadIdx.x == 133) {" in src
    assert "if (threadIdx.x == 133) printf(" in src


def test_cluster_kernel_compiles_with_cluster_dims_and_ptx():
    args = (4, torch.zeros(4, 5, dtype=torch.int32), torch.zeros(4, dtype=torch.int32))
    src = _compile(ClusterExchange(2), args)
    assert "__cluster_dims__(2, 1, 1)" in src
    assert "barrier.cluster.arrive;" in src and "barrier.cluster.wait;" in src
    assert "%%cluster_ctarank" in src and "%%cluster_nctaid.x" in src and "%%cluster_ctaid.x" in src
    assert "mapa.shared::cluster.u32" in src
    assert "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64" in src
    assert "mbarrier.try_wait.parity.acquire.cluster.shared.b64" in src


def test_multicast_arrival_compiles():
    src = _compile(MulticastSignal(), (torch.zeros(4, dtype=torch.int32),))
    assert "__cluster_dims__(4, 1, 1)" in src
    assert "if (tl_tid < 16 && ((unsigned)(" in src


def test_cluster_kernel_is_refused_for_sm80():
    args = (4, torch.zeros(4, 5, dtype=torch.int32), torch.zeros(4, dtype=torch.int32))
    with pytest.raises(Exception, match="needs sm_90a"):
        _generate(ClusterExchange(2), args, "sm_80")


def test_group_ir_prints():
    text = str(WsCopyMatmul().compile(*_ws_args()).program)
    assert "thread_group(0, 128) {" in text and "thread_group(128, 128) {" in text
    assert "setmaxnreg(232, inc)" in text
    text = str(ClusterExchange(2).compile(4, torch.zeros(4, 5, dtype=torch.int32),
                                          torch.zeros(4, dtype=torch.int32)).program)
    assert "cluster_blocks = [2, 1, 1]" in text and "cluster_query(blockRank)" in text


def test_tma_multicast_compiles_to_the_multicast_copy():
    src = _compile(MulticastRows(2), (20, torch.zeros(32, 20), torch.zeros(4, 16, 16)))
    assert re.search(r"tilus::tma_load_multicast_2d\(&tl_tma0, [^;]*\(unsigned short\)\(3\), ", src)
    assert "if (tl_tid == 0)" in src  # one thread of the single_thread group issues it


def test_remote_arrival_of_cta_scope_is_the_plain_arrival():
    class Release(tilus.Script):
        def __call__(self, out_ptr: ~int32):
            self.attrs.blocks = [2]
            self.attrs.cluster_blocks = [2]
            self.attrs.warps = 1
            bar = self.mbarrier.alloc(counts=[64])
            self.cluster.sync()
            self.mbarrier.arrive_and_expect_tx_remote(bar, 0, target_rank=0, scope="cta")
            self.mbarrier.arrive_and_expect_tx_remote(bar, 0, target_rank=1)
            self.cluster.sync()
    src = _compile(Release(), (torch.zeros(2, dtype=torch.int32),))
    # scope='cta' does not make the arrival wait for this thread's writes to reach the cluster
    assert src.count("mbarrier.arrive.expect_tx.shared::cluster.b64") == 1
    assert src.count("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64") == 1


def test_tma_multicast_without_a_cluster_is_refused_at_its_line():
    with pytest.raises(Exception, match="multicast_mask needs a cluster of blocks") as info:
        _generate(MulticastWithoutCluster(), (torch.zeros(8, 16),), "sm_90a")
    assert "multicast_mask=1" in info.value.text


def test_semaphores_in_a_thread_group_use_its_leader_and_its_barrier():
    """lock/release_semaphore inside warpgroup [128, 256): thread 128 spins or publishes and
    the group's named barrier orders its threads; a block-wide __syncthreads there would
    wait for the other warpgroup forever."""
    for arch in ("sm_80", "sm_90a"):
        src = _compile(SuffixSumsInAGroup(), (5, *suffix_sums_args(5)), arch)
        assert "__syncthreads" not in src
        wait = re.search(r"if \(threadIdx.x == 128\) tilus::semaphore_wait\(.*\);\n\s*(.*)\n", src)
        assert wait and re.match(r'asm volatile\("bar.sync %0, %1;" :: "r"\(\d+\), "r"\(128\)', wait.group(1)), src
        publish = re.search(r"\n\s*(.*)\n\s*if \(threadIdx.x == 128\) tilus::semaphore_publish\(", src)
        assert publish and re.match(r'asm volatile\("bar.sync %0, %1;" :: "r"\(\d+\), "r"\(128\)', publish.group(1)), src


def test_sibling_groups_never_share_scratch_memory():
    # The groups run concurrently: memory one releases must not serve the other (the
    # shared-memory conversion scratch of two sibling groups once overlapped, and a
    # decode kernel's groups overwrote each other's transposed tiles).
    src = _compile(SiblingGroupColumnSums(), (torch.zeros(128, 32), torch.zeros(2, 32)))
    offsets = re.findall(r"tl_red\w* = reinterpret_cast<float\*>\(tl_smem \+ (\d+)\)", src)
    assert len(offsets) == 2 and offsets[0] != offsets[1], offsets


def test_a_transposed_operand_in_a_group_is_read_with_ldmatrix():
    # Layout inference hands the dot's operand layout back through the transpose for a
    # tile held by a thread group too (it once compared the layout's threads with the
    # block's, and the tile went through a shared-memory conversion instead).
    args = (torch.zeros(32, 16, dtype=torch.float16), torch.zeros(128, 16, dtype=torch.float16),
            torch.zeros(32, 128))
    src = _compile(GroupDotOfTransposedTile(), args)
    assert src.count("tilus::ldmatrix") == 2, src
    assert "layout conversion through shared memory" not in src
