"""What the codegen tests share: skipping without NVRTC (failing instead when
TILUS_REQUIRE_NVRTC is set, as CI sets it), and compiling a script's generated CUDA."""

import os

import pytest

from tilus import _C

rt = _C.runtime
ELF_MAGIC = b"\x7fELF"


def require_nvrtc():
    """Skip the calling test module when NVRTC cannot be loaded."""
    if rt.nvrtc_available():
        return
    if os.environ.get("TILUS_REQUIRE_NVRTC"):
        raise RuntimeError("TILUS_REQUIRE_NVRTC is set but NVRTC cannot be loaded")
    pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc)", allow_module_level=True)


def kernel_source(kernel, args, arch="sm_80", aligned=True, **options) -> str:
    """The CUDA generated for `kernel` called with `args`, after checking NVRTC compiles it
    to a cubin for `arch`; `options`: _C.generate_cuda's (copy_tma=False, ...)."""
    generated = _C.generate_cuda(kernel.compile(*args).program, aligned, arch, **options)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["cubin"][:4] == ELF_MAGIC
    return generated["source"]
