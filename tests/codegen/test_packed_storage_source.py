"""The CUDA generated for packed sub-byte tensors compiles through NVRTC for sm_80 and
sm_90a: whole-byte vector loads and stores unpacked with shifts (tilus::unpack_bits),
element-by-element access at ragged row ends, packed shared tiles filled by cp.async in
16-byte chunks, and register views between packed tiles and bytes. A layout that splits
a byte between threads loads element by element and is refused for stores, naming the
script line."""

import pytest
import torch

import tilus
from tilus.layout import local, spatial
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.lang.packed_kernels import PackedEncode, PackedRoundTrip, PackedThroughShared, PackedView

require_nvrtc()

NAMES = ["uint4b", "int4b", "int3b", "float4_e2m1", "float6_e3m2", "uint1b", "float7_e5m1", "uint2b"]
_U8 = torch.zeros(1 << 16, dtype=torch.uint8)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", NAMES)
def test_global_round_trip_compiles(name, arch):
    dt = getattr(tilus, name)
    src = kernel_source(PackedRoundTrip(dt), (_U8, _U8, torch.zeros(64, 128), 64, 128), arch)
    assert "tilus::unpack_bits<" in src and "tilus::pack_bits<" in src
    assert "load_global_vec<" in src and "store_global_vec<" in src
    # odd extents: the ragged ends go element by element
    src = kernel_source(PackedRoundTrip(dt), (_U8, _U8, torch.zeros(37, 70), 37, 70), arch)
    assert "tilus::packed_get(" in src and "tilus::packed_set_atomic(" in src
    kernel_source(PackedEncode(dt), (torch.zeros(37, 70), _U8, 37, 70), arch)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", NAMES)
def test_shared_and_copy_async_compile(name, arch):
    dt = getattr(tilus, name)
    src = kernel_source(PackedThroughShared(dt), (_U8, _U8, 64, 256), arch)
    # runs of 16 aligned elements: whole 4-byte chunks for 2, 4 and 6 bits (2 bytes for 1, 3, 5, 7)
    if name in ("uint4b", "int4b", "float4_e2m1", "float6_e3m2", "uint2b"):
        assert "cp_async_16(" in src or "cp_async_8(" in src or "cp_async_4(" in src
    assert "load_shared_vec<" in src and "store_shared_vec<" in src
    kernel_source(PackedThroughShared(dt), (_U8, _U8, 37, 70), arch)


def test_uint4_copy_async_moves_whole_chunks():
    src = kernel_source(PackedThroughShared(tilus.uint4b), (_U8, _U8, 64, 256), "sm_80")
    # cols is a runtime int known to be a multiple of 16: 16 elements, 8 bytes a chunk
    assert "copy_async of packed uint4b with cp.async of 8 bytes" in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,layout", [
    ("uint4b", local(2, 1) * spatial(4, 8) * local(1, 8)),
    ("int3b", spatial(4, 8) * local(2, 8)),
])
def test_register_view_compiles(name, layout, arch):
    per_thread = layout.local_size * {"uint4b": 4, "int3b": 3}[name] // 8
    src = kernel_source(PackedView(getattr(tilus, name), layout, spatial(32) * local(per_thread)),
                        (_U8, _U8, torch.zeros(32 * per_thread, dtype=torch.uint8), *layout.shape), arch)
    assert "view: the same bits, packed" in src


_SPLIT = spatial(8, 4) * local(1, 1) * spatial(1, 4) * local(1, 1)  # one 4-bit code a thread per byte pair


class SplitLoad(tilus.Script):
    """A uint4b tile whose threads hold single codes (as an mma fragment of 4-bit codes
    does: Tilus 0.2's A16Wx example loads its weights so)."""

    def __call__(self, src: tilus.void_p, out: ~tilus.float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        g = self.global_view(src, dtype=tilus.uint4b, shape=[8, 16])
        o = self.global_view(out, dtype=tilus.float32, shape=[8, 16])
        t = self.load_global(g, offsets=[0, 0], layout=_SPLIT)
        self.store_global(o, self.cast(t, dtype=tilus.float32), offsets=[0, 0])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_layout_splitting_a_byte_loads_element_by_element(arch):
    src = kernel_source(SplitLoad(), (_U8, torch.zeros(8, 16)), arch)
    assert "load_global of packed uint4b: element by element" in src and "tilus::packed_get(" in src


def test_a_layout_splitting_a_byte_is_refused_for_stores_at_the_line():
    class Split(tilus.Script):
        def __call__(self, src: tilus.void_p, dst: tilus.void_p):
            self.attrs.blocks = 1
            self.attrs.warps = 4
            g = self.global_view(src, dtype=tilus.uint4b, shape=[8, 16])
            d = self.global_view(dst, dtype=tilus.uint4b, shape=[8, 16])
            t = self.load_global(g, offsets=[0, 0], layout=_SPLIT)
            self.store_global(d, t, offsets=[0, 0])  # MARK-split

    with pytest.raises(Exception) as e:
        kernel_source(Split(), (_U8, _U8), "sm_80")
    assert "split between threads" in str(e.value) and "store_global" in str(e.value)
    assert e.value.file.endswith("test_packed_storage_source.py") and "MARK-split" in e.value.text
