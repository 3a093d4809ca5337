"""The CUDA for register tensors indexed at runtime positions (`phases[stage] ^= 1`,
`r[i, :]`) reads and writes the thread's own array at the runtime position, with no
shared memory or shuffles, and compiles (NVRTC, no GPU needed)."""

import re

import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_register_slices import InAThreadGroup, PhasePerStage, RowsAtRuntimePositions

require_nvrtc()


def test_phases_index_the_threads_own_registers():
    source = kernel_source(PhasePerStage(), (5, torch.zeros(5, dtype=torch.int32)))
    assert re.search(r"phases\w*\[\(*.*stage.*\] = ", source), "the element is written at the runtime stage"
    assert "__shfl" not in source and "tl_smem +" not in source  # no data moves between threads


def test_rows_and_thread_groups_compile():
    x = torch.zeros(3, 5)
    kernel_source(RowsAtRuntimePositions(), (0, 1, 2, x, x, torch.zeros(5)))
    kernel_source(InAThreadGroup(), (3, torch.zeros(1, dtype=torch.int32)), arch="sm_90a")
