"""A global view whose element offsets are 32-bit (its sizes are int32) but that spans more
than 2^31 - 1 elements would wrap around on the GPU: the launch is refused, naming the view
and its line and the way out (sizes declared int64, whose views take 64-bit offsets).
Checked without allocating such a tensor: the view's pointer is a small tensor and only
the sizes are large (the check reads the sizes, not the memory)."""

import pytest
import torch

import tilus
from tilus import float16, int32, int64


class Rows(tilus.Script):
    """Copies the first row of an [m, n] view of x into y (int32 sizes; Rows64: int64)."""

    def __call__(self, m: int32, n: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, n])
        gy = self.global_view(y_ptr, dtype=float16, shape=[1, 32])
        self.store_global(gy, self.load_global(gx, offsets=[0, 0], shape=[1, 32]), offsets=[0, 0])


class Rows64(Rows):
    def __call__(self, m: int64, n: int64, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, n])
        gy = self.global_view(y_ptr, dtype=float16, shape=[1, 32])
        self.store_global(gy, self.load_global(gx, offsets=[0, 0], shape=[1, 32]), offsets=[0, 0])


def test_a_view_past_32_bit_offsets_is_refused_naming_it():
    x, y = torch.randn(1, 32).half(), torch.zeros(1, 32).half()
    with pytest.raises(ValueError) as info:
        Rows()(65536, 65536, x, y)
    message = str(info.value)
    assert "global_view gx (shape [65536, 65536] of float16, at " in message
    assert "spans 4294967296 elements, more than the 32-bit element offsets" in message
    assert "declare the sizes that shape it int64" in message
    assert torch.equal(y, torch.zeros(1, 32).half())  # nothing ran


def test_the_largest_32_bit_view_and_int64_sizes_are_accepted():
    x, y = torch.randn(1, 32).half(), torch.zeros(1, 32).half()
    pointers = [1 << 20, 2 << 20]
    program = Rows().compile(1, 32, x, y).program
    assert tilus._C.view_offset_overflow(program, [1, 2**31 - 1, *pointers]) == ""  # the last offset fits
    assert tilus._C.view_offset_overflow(program, [2, 2**30, *pointers]) == ""  # 2^31 elements: ditto
    assert "spans 3221225472 elements" in tilus._C.view_offset_overflow(program, [3, 2**30, *pointers])
    program = Rows64().compile(65536, 65536, x, y).program
    assert tilus._C.view_offset_overflow(program, [65536, 65536, *pointers]) == ""


def test_views_only_tma_copies_use_take_no_32_bit_offsets(example):
    # The warp-specialised matmul reads A and B by TMA; its C goes out by TMA stores
    # (epilogue "tma") or by register stores (epilogue "registers"), whose element
    # offsets are 32-bit: a 16384 x 152064 C (an lm-head over 16k tokens) is refused only then.
    ex = example("matmul_warp_specialized")
    a = torch.zeros(8, 8, dtype=torch.float16)
    pointers = [1 << 20, 2 << 20, 3 << 20]
    for epilogue, refused in (("tma", False), ("registers", True)):
        kernel = ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=1,
                                          epilogue=epilogue, num_blocks=4)
        program = kernel.compile(256, 256, 64, a, a, a, 1.0).program
        message = tilus._C.view_offset_overflow(program, [16384, 152064, 8192, *pointers, 1.0])
        assert ("global_view gc (shape [16384, 152064] of float16" in message) == refused, message
        # A [m, k] past 2^31 elements: read by TMA only, in both
        assert tilus._C.view_offset_overflow(program, [65536, 4096, 32768, *pointers, 1.0]) == ""
