"""Runtime extents and vector accesses (csrc/transforms/vector_extents.h): the aligned
build assumes the integer parameters a global view uses as its last extent or stride
are multiples of 16, so tile rows move as 16-byte vectors; a call whose arguments are
not takes the unaligned build (runtime/launcher.py takes_aligned_build, and the native
launcher the same way)."""

import pytest
import torch

import tilus
from tilus import _C, float16, float32, int32
from tilus.runtime.launcher import takes_aligned_build
from tilus.utils import cdiv


class RowScale(tilus.Script):
    def __call__(self, m: int32, n: int32, x: ~float16, y: ~float16):
        self.attrs.blocks = [m]
        self.attrs.warps = 4
        gx = self.global_view(x, dtype=float16, shape=[m, n])
        gy = self.global_view(y, dtype=float16, shape=[m, n])
        t = self.load_global(gx, offsets=[self.blockIdx.x, 0], shape=[1, 1024])
        self.store_global(gy, self.cast(self.cast(t, float32) * 2.0, float16), offsets=[self.blockIdx.x, 0])


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


@pytest.mark.parametrize("n,pointer,expected", [(1024, 4096, True), (1040, 4096, True),
                                                (1000, 4096, False), (1024, 4104, False)])
def test_which_build_a_call_takes(n, pointer, expected):
    program = _program()
    assert takes_aligned_build(program, [8, n, pointer, 8192]) is expected
