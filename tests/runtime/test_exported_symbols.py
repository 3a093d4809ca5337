"""The built extension exports Python's entry point and nothing else, and the compile
worker exports nothing: no symbol of ours, and no copy of a statically linked C++
runtime, can bind to (or be bound by) the libstdc++ that torch loads into the process."""

import os
import sys
import shutil
import subprocess

import pytest

from tilus import _C


def _defined_dynamic_symbols(path):
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("`nm` (binutils) is needed to read the dynamic symbol table")
    out = subprocess.run([nm, "-D", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    # lines look like "000000000009bd90 T PyInit__C"
    return sorted(line.split()[-1] for line in out.splitlines() if line.strip())


def test_extension_exports_only_its_entry_point():
    assert _defined_dynamic_symbols(os.path.realpath(_C.__file__)) == ["PyInit__C"]


def test_compile_worker_exports_nothing():
    worker = os.path.join(os.path.dirname(os.path.realpath(_C.__file__)), "tilus-compile-worker")
    assert os.path.exists(worker), worker
    assert _defined_dynamic_symbols(worker) == []


def test_extension_shares_the_process_with_torch(tmp_path):
    # torch first, then tilus, then our C++ streams (the printer, the CUDA generator, the
    # interpreter): with a copy of the C++ runtime exported from _C, streams were where the
    # process crashed next to torch's libstdc++.
    code = """if True:
        import torch, tilus
        from tilus import float32, int32
        class AddOne(tilus.Script):
            def __call__(self, n: int32, a: ~float32, b: ~float32):
                self.attrs.blocks = (n + 63) // 64
                self.attrs.warps = 2
                ga = self.global_view(a, shape=[n], dtype=float32)
                gb = self.global_view(b, shape=[n], dtype=float32)
                x = self.load_global(ga, offsets=[self.blockIdx.x * 64], shape=[64])
                self.store_global(gb, x + 1.0, offsets=[self.blockIdx.x * 64])
        k = AddOne()
        a, b = torch.arange(100, dtype=torch.float32), torch.zeros(100)
        k(100, a, b)
        assert torch.equal(b, a + 1)
        print("global_view" in k.ir(100, a, b), "__global__" in k.source(100, a, b))
    """
    script = tmp_path / "torch_then_tilus.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
