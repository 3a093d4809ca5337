"""Every script class is called through _C.ScriptBase's C __call__ (the user's __call__
is the kernel source, kept aside), and a call with nothing registered takes the Python
path (here: the interpreter)."""

import torch

from tilus import _C


def test_scripts_are_called_through_the_native_base(example):
    kernel = example("add_one").AddOneKernel(block_n=128, warps=4)
    assert type(kernel).__call__ is _C.ScriptBase.__call__
    assert kernel._tilus_fast == {} and kernel._tilus_jit is None  # nothing registered on the CPU
    a, b = torch.randn(37), torch.zeros(37)
    kernel(37, a, b)
    torch.testing.assert_close(b, a + 1)
    assert kernel._tilus_fast == {}  # the interpreter registers no launcher
