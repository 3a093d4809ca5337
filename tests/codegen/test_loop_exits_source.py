"""The CUDA generated for break/continue of loops unrolled at compile time: no C++
`break`/`continue` that would leave the enclosing runtime loop, and it compiles."""

import os
import re

import pytest
import torch

from tests.lang.test_loop_exits import (BreakAndContinueWithoutRuntimeLoop, CompileTimeBreak,
                                        CompileTimeContinue, RuntimeBreak, RuntimeContinue,
                                        TileRows)
from tilus import _C
from tests.codegen.nvrtc_compile import require_nvrtc

rt = _C.runtime

require_nvrtc()

_OUT = torch.zeros(1, dtype=torch.int32)


@pytest.mark.parametrize("kernel,args", [
    (CompileTimeBreak(), (3, 0, _OUT)),
    (CompileTimeContinue(), (3, 0, _OUT)),
    (RuntimeBreak(), (3, 0, _OUT)),
    (RuntimeContinue(), (3, 2, _OUT)),
    (BreakAndContinueWithoutRuntimeLoop(), (3, 2, _OUT)),
    (TileRows(), (3, torch.zeros(4, 8), torch.zeros(1, 8))),
])
def test_unrolled_loop_exits_compile_without_cpp_break(kernel, args):
    program = kernel.compile(*args).program
    generated = _C.generate_cuda(program, True, "sm_80")
    source = generated["source"]
    assert not re.search(r"\b(break|continue);", source)
    report = rt.compile_report(source, generated["name"], "sm_80", [], None)
    assert report["cubin"][:4] == b"\x7fELF"
