"""A partly aligned build (CodegenOptions::unaligned_params; runtime/launcher.py
alignment_of): a call whose arguments miss the aligned build's assumption for some
parameters takes a build in which only the views using those parameters move element by
element. An lm-head-like product, activations [m, k] with k a multiple of 16 and a weight
[k, n] with n = 50257, keeps 16-byte rows for the activations."""

import pytest
import torch

import tilus
from tilus import _C, float16, float32, int32
from tilus.runtime.launcher import alignment_of, build_args, takes_aligned_build


class RowsAndColumns(tilus.Script):
    """z[r, 0:256] = 2 x[r, 0:256] (x, z [m, k]) and y[r, 0:256] = w[0, 0:256] + b[0:256]
    (w [k, n], y [m, n], b [n]): two tiles whose layouts are chosen apart (a tile loaded
    from one view and stored to another shares its layout group with both)."""

    def __call__(self, m: int32, k: int32, n: int32, x: ~float16, w: ~float16, b: ~float16, y: ~float16,
                 z: ~float16):
        self.attrs.blocks = [m]
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float16, shape=[m, k])
        gz = self.global_view(z, dtype=float16, shape=[m, k])
        gw = self.global_view(w, dtype=float16, shape=[k, n])
        gb = self.global_view(b, dtype=float16, shape=[n])
        gy = self.global_view(y, dtype=float16, shape=[m, n])
        row = self.load_global(gx, offsets=[self.blockIdx.x, 0], shape=[1, 256])
        self.store_global(gz, row * 2, offsets=[self.blockIdx.x, 0])
        col = self.load_global(gw, offsets=[0, 0], shape=[1, 256])
        bias = self.load_global(gb, offsets=[0], shape=[256])
        out = self.cast(col, float32) + self.cast(bias.unsqueeze(0), float32)
        self.store_global(gy, self.cast(out, float16), offsets=[self.blockIdx.x, 0])


def _program():
    x = torch.zeros(4, 256).half()
    return RowsAndColumns().compile(4, 256, 256, x, x, x[0], x, x).program


def _lines(source, view):
    return [line for line in source.splitlines() if f"{view} +" in line or f"*({view} " in line or f"{view}[" in line]


def test_the_call_names_the_parameters_it_misses():
    program = _program()
    assert program.param_names == ["m", "k", "n", "x", "w", "b", "y", "z"]
    assert list(program.vector_extent_params) == [1, 2]  # k, n
    assert alignment_of(program, [4, 256, 256, 4096, 8192, 16384, 32768, 65536]) == 0
    assert alignment_of(program, [4, 256, 257, 4096, 8192, 16384, 32768, 65536]) == 1 << 2
    assert alignment_of(program, [4, 256, 256, 4096, 8192, 16386, 32768, 65536]) == 1 << 5  # b
    assert alignment_of(program, [4, 250, 257, 4098, 8192, 16384, 32768, 65536]) == 1 << 1 | 1 << 2 | 1 << 3
    assert takes_aligned_build(program, [4, 256, 257, 4096, 8192, 16384, 32768, 65536]) is False
    assert build_args(1 << 2) == (True, {"unaligned_params": [2]})
    assert build_args(0) == (True, {}) and build_args(True) == (True, {}) and build_args(False) == (False, {})


def test_only_the_views_using_an_unaligned_parameter_lose_their_vectors():
    program = _program()
    aligned = _C.generate_cuda(program, True, "sm_80")["source"]
    partly = _C.generate_cuda(program, True, "sm_80", unaligned_params=[2])["source"]  # n
    unaligned = _C.generate_cuda(program, False, "sm_80")["source"]
    for view in ("gx", "gz", "gw", "gb", "gy"):
        assert any("_vec<16>" in line for line in _lines(aligned, view)), (view, aligned)
        assert not any("_vec<" in line for line in _lines(unaligned, view)), (view, unaligned)
    # x's and z's rows use k only: still 16 bytes a thread; w, b and y use n
    assert any("load_global_vec<16>" in line for line in _lines(partly, "gx")), partly
    assert any("store_global_vec<16>" in line for line in _lines(partly, "gz")), partly
    for view in ("gw", "gb", "gy"):
        assert _lines(partly, view) and not any("_vec<" in line for line in _lines(partly, view)), (view, partly)


def test_an_unaligned_pointer_costs_only_its_own_view():
    program = _program()
    partly = _C.generate_cuda(program, True, "sm_80", unaligned_params=[5])["source"]  # b
    assert not any("_vec<" in line for line in _lines(partly, "gb")), partly
    # b's tile is only loaded: it keeps the 16-byte runs y's stores want, read realigned
    assert any("load_realigned_16<false>(gb +" in line for line in _lines(partly, "gb")), partly
    assert any("store_global_vec<16>" in line for line in _lines(partly, "gy")), partly
    for view in ("gx", "gz"):
        assert any("_vec<16>" in line for line in _lines(partly, view)), (view, partly)


def test_a_bad_parameter_index_is_refused():
    with pytest.raises(Exception, match="unaligned_params: 9 is not a parameter index"):
        _C.generate_cuda(_program(), True, "sm_80", unaligned_params=[9])


def test_the_interpreter_runs_any_alignment():
    m, k, n = 3, 256, 257
    x, w, b = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    y, z = torch.full((m, n), float("nan")).half(), torch.full((m, k), float("nan")).half()
    RowsAndColumns()(m, k, n, x, w, b, y, z)
    torch.testing.assert_close(z, x * 2)
    torch.testing.assert_close(y[:, :256], (w[0, :256].float() + b[:256].float()).half().expand(m, 256))


def test_partly_aligned_builds_are_capped_per_device(monkeypatch):
    """Past MAX_PARTLY_ALIGNED partly aligned builds on a device, a call missing another
    combination takes the build that assumes nothing (built once) instead of compiling one
    more; the aligned build and the builds already made stay. The build and the module load
    are stand-ins here (no GPU needed): what is checked is which builds are asked for."""
    from tilus.runtime import launcher as L

    built = []

    def fake_build(program, alignment, arch, checked):
        built.append(alignment)
        return {"cubin": b"", "name": "k", "threads": 32, "dynamic_smem": 0, "source": ""}

    class FakeKernel:
        def __init__(self, cubin, name):
            self.name = name

    monkeypatch.setattr(L, "build_variant", fake_build)
    monkeypatch.setattr(L._rt, "LoadedKernel", FakeKernel)
    monkeypatch.setattr(L._rt, "DeviceScope", lambda device: __import__("contextlib").nullcontext())
    monkeypatch.setattr(L._rt, "arch_string", lambda: "sm_80")

    x = torch.zeros(4, 256).half()
    kernel = L.GpuKernel(RowsAndColumns().compile(4, 256, 256, x, x, x[0], x, x))
    masks = [1 << 3 | 1 << i for i in range(8)] + [1 << 4 | 1 << i for i in (0, 1, 2, 5)]
    variants = [kernel.variant(mask, device=0, checked=False) for mask in masks]
    cap = L.MAX_PARTLY_ALIGNED
    assert cap == 8 and built == masks[:cap] + [L.UNALIGNED]
    unaligned = kernel.variant(False, device=0, checked=False)
    assert all(v is unaligned for v in variants[cap:])
    assert len({id(v) for v in variants[:cap]}) == cap and unaligned not in variants[:cap]
    assert kernel.partly_aligned_builds(0, False) == cap
    assert kernel.variant(masks[2], device=0, checked=False) is variants[2]  # kept
    kernel.variant(True, device=0, checked=False)
    kernel.variant(masks[-1], device=1, checked=False)  # another device counts its own
    assert built == masks[:cap] + [L.UNALIGNED, 0, masks[-1]]
