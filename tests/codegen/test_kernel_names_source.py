"""A script class whose kernel name is a C/CUDA keyword or library function (Printf ->
`printf`, Main, Float, Exp, TlFoo) gets a kernel symbol with a `_kernel` suffix, which
NVRTC compiles; every other name is kept as it was."""

import pytest
import torch

import tilus
from tests.codegen.nvrtc_compile import require_nvrtc
from tilus import _C, float32

require_nvrtc()


def _script(class_name):
    def __call__(self, x: ~float32, y: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float32, shape=[32])
        gy = self.global_view(y, dtype=float32, shape=[32])
        self.store_global(gy, self.load_global(gx, offsets=[0], shape=[32]) * 2.0, offsets=[0])

    # The transpiler reads __call__'s source, so the class is built from this one body.
    return type(class_name, (tilus.Script,), {"__call__": __call__})


@pytest.mark.parametrize("class_name,symbol", [
    ("Printf", "printf_kernel"), ("Main", "main_kernel"), ("Float", "float_kernel"),
    ("Exp", "exp_kernel"), ("Malloc", "malloc_kernel"), ("Tilus", "tilus_kernel"),
    ("TlHelper", "tl_helper_kernel"), ("AddOne", "add_one"), ("MatmulV5", "matmul_v5"),
    ("PrintfKernel", "printf_kernel"),
])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_kernel_symbols_do_not_collide(class_name, symbol, arch):
    kernel = _script(class_name)()
    generated = _C.generate_cuda(kernel.compile(torch.zeros(32), torch.zeros(32)).program, True, arch)
    assert generated["name"] == symbol
    assert f") {symbol}(" in generated["source"]
    report = _C.runtime.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == b"\x7fELF"


def test_a_printf_script_runs_in_the_interpreter():
    x = torch.randn(32)
    y = torch.full((32,), float("nan"))
    _script("Printf")()(x, y)
    torch.testing.assert_close(y, x * 2)
