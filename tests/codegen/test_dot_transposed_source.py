"""A dot fed by a transpose / permute / reshape chain of a register tile compiles (NVRTC,
sm_80 and sm_90a) and moves no data: layout inference runs the view's layout rule
backwards, so the untransposed tile is loaded straight into the layout the dot wants of
its transpose (no layout conversion through shared memory, no barrier)."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_dot_transposed import DotTransposed
from tilus import _C, float16, float32

require_nvrtc()

ARGS = (torch.zeros(100, 70), torch.zeros(75, 70), torch.zeros(100, 75), 100, 75, 70)


_VIAS = ["transpose", "method", "permute", "chain"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("via", _VIAS)
@pytest.mark.parametrize("operand", ["a", "b"])
@pytest.mark.parametrize("dtype", [float16, float32])
def test_a_transposed_dot_operand_stays_in_registers(arch, via, operand, dtype):
    # the source of every case is checked; NVRTC compiles half of them, the views taking
    # the two architectures in turn (each view still compiles for both)
    kernel = DotTransposed(via, operand, dtype)
    if (_VIAS.index(via) + (operand == "b") + (arch == "sm_90a")) % 2:
        src = kernel_source(kernel, ARGS, arch)
    else:
        src = _C.generate_cuda(kernel.compile(*ARGS).program, True, arch)["source"]
    assert "through shared memory" not in src
    assert "__syncthreads" not in src
    if dtype == float16:
        assert "mma" in src



QK_ARGS = (torch.zeros(100, 70).half(), torch.zeros(75, 70).half(), torch.zeros(100, 75), 100, 75, 70)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("tiles,pairs,single", [(dict(), True, False), (dict(bm=64, bn=24, bk=32, warps=4), True, True)])
def test_k_transposed_in_registers_is_loaded_with_plain_ldmatrix(arch, tiles, pairs, single):
    """Q @ K^T with K [n, k] from shared memory, transposed in registers: K comes in with
    ldmatrix (no .trans: its rows are B's columns), four 8x8 matrices a time and two for an
    odd last atom column, not element by element; and the kernel compiles."""
    from tests.interp.test_dot_transposed_shared import QKTranspose

    src = kernel_source(QKTranspose("method", **tiles), QK_ARGS, arch)
    assert "load_shared_vec" not in src  # neither operand element-wise
    assert src.count("tilus::ldmatrix_x4(") == 1 + pairs  # Q's, and K's pairs of atom columns
    assert ("tilus::ldmatrix_x2(" in src) == single
    assert "ldmatrix_x4_trans" not in src and "ldmatrix_x2_trans" not in src
