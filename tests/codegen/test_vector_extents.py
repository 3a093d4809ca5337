"""Runtime extents and vector accesses (csrc/transforms/vector_extents.h): the aligned
build assumes the integer parameters a global view uses as its last extent or stride
are multiples of 16, so tile rows move as 16-byte vectors; a call whose arguments are
not takes the unaligned build (runtime/launcher.py takes_aligned_build, and the native
launcher the same way)."""

import pytest
import torch

import tilus
from tilus import _C, float16, float32, int32, void_p
from tilus.runtime.launcher import takes_aligned_build, unaligned_reasons
from tilus.utils import cdiv


class RowScale(tilus.Script):
    def __call__(self, m: int32, n: int32, x: ~float16, y: ~float16):
        self.attrs.blocks = [m]
        self.attrs.warps = 4
        gx = self.global_view(x, dtype=float16, shape=[m, n])
        gy = self.global_view(y, dtype=float16, shape=[m, n])
        t = self.load_global(gx, offsets=[self.blockIdx.x, 0], shape=[1, 1024])
        self.store_global(gy, self.cast(self.cast(t, float32) * 2.0, float16), offsets=[self.blockIdx.x, 0])


class RowScaleByLength(tilus.Script):
    """Row b scaled by lengths[b]: a [batch] view read element by element beside rows that
    move as vectors."""

    def __call__(self, batch: int32, n: int32, lengths: ~int32, x: ~float16, y: ~float16):
        self.attrs.blocks = [batch]
        self.attrs.warps = 4
        glen = self.global_view(lengths, dtype=int32, shape=[batch])
        length = glen[self.blockIdx.x].item()
        gx = self.global_view(x, dtype=float16, shape=[batch, n])
        gy = self.global_view(y, dtype=float16, shape=[batch, n])
        t = self.load_global(gx, offsets=[self.blockIdx.x, 0], shape=[1, 1024])
        self.store_global(gy, self.cast(self.cast(t, float32) * length, float16), offsets=[self.blockIdx.x, 0])


def _program():
    return RowScale().compile(8, 1024, torch.zeros(8, 1024).half(), torch.zeros(8, 1024).half()).program


def test_only_the_last_extent_is_a_vector_extent():
    program = _program()
    assert list(program.vector_extent_params) == [1]  # n, not the row count m


def test_the_aligned_build_moves_rows_as_16_byte_vectors():
    program = _program()
    aligned = _C.generate_cuda(program, True, "sm_80")["source"]
    unaligned = _C.generate_cuda(program, False, "sm_80")["source"]
    assert "load_global_vec<16>" in aligned and "store_global_vec<16>" in aligned
    assert "load_global_vec<16>" not in unaligned and "store_global_vec<16>" not in unaligned


def test_the_unaligned_build_gives_consecutive_elements_to_consecutive_lanes():
    """Every global access of the unaligned build is one element: thread t takes elements
    t, t + 128, ... of the row (a warp's access is one 64-byte run), not elements 8t..8t+7
    (lanes 16 bytes apart, four times the L1 wavefronts for the same bytes)."""
    program = _program()
    unaligned = _C.generate_cuda(program, False, "sm_80")["source"]
    aligned = _C.generate_cuda(program, True, "sm_80")["source"]
    assert "*(gx + (((int)blockIdx.x * n_) + (tl_tid + (i * 128))))" in unaligned, unaligned
    assert "*(gy + (((int)blockIdx.x * n_) + (tl_tid + (i_1 * 128))))" in unaligned, unaligned
    assert "tl_tid * 8" not in unaligned
    assert "tl_tid * 8" in aligned  # a 16-byte run per thread where the rows are vectors


class RowStage(tilus.Script):
    """A row staged in shared memory by copy_async, then doubled."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def __call__(self, m: int32, n: int32, x: void_p, y: void_p):
        self.attrs.blocks = [m]
        self.attrs.warps = 4
        gx = self.global_view(x, dtype=self.dtype, shape=[m, n])
        gy = self.global_view(y, dtype=self.dtype, shape=[m, n])
        staged = self.shared_tensor(dtype=self.dtype, shape=[1, 1024])
        self.copy_async(src=gx, dst=staged, offsets=[self.blockIdx.x, 0])
        self.copy_async_wait_all()
        self.sync()
        self.store_global(gy, self.load_shared(staged) * 2, offsets=[self.blockIdx.x, 0])
        self.free_shared(staged)


@pytest.mark.parametrize("dtype", [float16, float32])
def test_an_unaligned_copy_async_spreads_its_tile_for_the_access_it_makes(dtype):
    """copy_async spreads its tile for the access width it can use: 16-byte runs a thread
    where rows are vectors; otherwise float32 rows take cp.async of 4 bytes, one element a
    lane, and float16 rows (no 2-byte cp.async) realigned 16-byte runs: each thread reads
    the two aligned 16-byte chunks holding its run and stores the run to shared memory with
    one 16-byte store (benchmarks/README.md has the timings of the element copies it
    replaced)."""
    t = tilus.utils.dtype_to_torch(dtype)
    program = RowStage(dtype).compile(8, 1024, torch.zeros(8, 1024, dtype=t), torch.zeros(8, 1024, dtype=t)).program
    aligned = _C.generate_cuda(program, True, "sm_80")["source"]
    unaligned = _C.generate_cuda(program, False, "sm_80")["source"]
    per_thread = 128 // dtype.bits
    assert "tilus::cp_async_16(" in aligned and f"tl_tid * {per_thread}" in aligned
    if dtype == float32:
        assert f"tl_tid * {per_thread}" not in unaligned, unaligned
        assert "tilus::cp_async_4(tilus::smem_u32(staged + (tl_tid + (i * 128)))" in unaligned, unaligned
    else:
        assert "tilus::cp_async" + "_" not in unaligned.replace("tilus::cp_async_wait", ""), unaligned
        assert "copy_async as realigned 16-byte loads" in unaligned
        assert ("*reinterpret_cast<uint4*>(staged + (tl_tid * 8)) = tilus::load_realigned_16<false>("
                "gx + (((int)blockIdx.x * n_) + (tl_tid * 8)), tl_lo, tl_hi);") in unaligned, unaligned


@pytest.mark.parametrize("n,pointer,expected", [(1024, 4096, True), (1040, 4096, True),
                                                (1000, 4096, False), (1024, 4104, False)])
def test_which_build_a_call_takes(n, pointer, expected):
    program = _program()
    assert takes_aligned_build(program, [8, n, pointer, 8192]) is expected


def test_a_view_read_element_by_element_has_no_vector_extent():
    """lengths[batch] is only read by glen[b].item(): its extent, batch, is no vector
    extent, so a batch of 3 keeps the aligned (16-byte vector) build."""
    program = RowScaleByLength().compile(3, 1024, torch.zeros(3, dtype=torch.int32), torch.zeros(3, 1024).half(),
                                         torch.zeros(3, 1024).half()).program
    assert list(program.vector_extent_params) == [1]  # n only
    assert takes_aligned_build(program, [3, 1024, 4096, 8192, 16384]) is True
    assert takes_aligned_build(program, [3, 1000, 4096, 8192, 16384]) is False


def test_decode_attention_takes_the_aligned_build_at_any_batch(example):
    """The split-KV decode kernel reads its [batch] sequence lengths element by element:
    a batch of 1 or 5 runs the vectorised build (it once took the unaligned one below a
    multiple of 16 sequences, 4-6x slower on an H200)."""
    da = example("decode_attention")
    kernel = da.DecodeAttentionSplit(float16, 32, 8, 128, 5, block_kv=32, stages=4)
    for batch in (1, 5):
        q = torch.zeros(batch, 32, 128).half()
        k = torch.zeros(batch, 64, 8, 128).half()
        po, pm = torch.zeros(batch, 8, 5, 16, 128), torch.zeros(batch, 8, 5, 16)
        program = kernel.compile(batch, 64, q, k, k, torch.full((batch,), 64, dtype=torch.int32), po, pm, pm).program
        assert list(program.vector_extent_params) == []
        assert takes_aligned_build(program, [batch, 64] + [4096 * (i + 1) for i in range(7)]) is True


def test_why_a_call_takes_the_unaligned_build():
    """What the launcher logs (INFO, logger tilus.launch) when it first builds the
    unaligned variant: each misaligned pointer and each vector extent off a multiple of
    16, by the script's parameter names."""
    program = _program()
    assert program.param_names == ["m", "n", "x", "y"]
    assert unaligned_reasons(program, [8, 1024, 4096, 8192]) == []
    assert unaligned_reasons(program, [8, 1000, 4104, 8192]) == [
        "pointer argument 'x' at 0x1008 is not 16-byte aligned",
        "'n' = 1000 is the last extent or a stride of a global view and not a multiple of 16"]
