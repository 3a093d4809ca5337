"""The CUDA for `return` under a runtime condition (Tilus 0.2: it ends the kernel): a flag
set where the return is, the loops it is in left by `break`, the code after it guarded;
it compiles (NVRTC, no GPU needed)."""

import re

import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.lang.test_kernel_exit import HelperEndsTheKernel, SumUntilNegative, UnrolledStages

require_nvrtc()


def test_exits_compile_to_a_flag_breaks_and_guards():
    source = kernel_source(SumUntilNegative(), (2, 8, torch.zeros(2, 8), torch.zeros(2)))
    assert source.count("kernel_exited = true;") == 1
    assert source.count("break;") == 2  # out of the inner loop, then the outer one
    assert re.search(r"if \(+!kernel_exited\)+ \{", source), "the code after the loops is guarded"
    kernel_source(HelperEndsTheKernel(), (40, torch.zeros(40), torch.zeros(40)))
    kernel_source(UnrolledStages(), (torch.zeros(4, dtype=torch.int32), torch.zeros(4)))


def test_a_workspace_sized_after_an_exit_compiles():
    from tests.lang.test_kernel_exit import WorkspaceAfterAnExit

    source = kernel_source(WorkspaceAfterAnExit(), (40, 2, torch.zeros(40), torch.zeros(40)))
    assert "kernel_exited = true;" in source
