"""Packed sub-byte tensors in memory (Tilus 0.2's format: element i at bits
[i*b, (i+1)*b) of a little-endian byte stream), in the CPU interpreter, bit for bit
against the numpy packing model of tests/lang/packed_kernels.py: global views over
uint8 buffers, loads and stores of odd tiles, shared tiles and copy_async, and register
views between packed tiles and bytes."""

import numpy as np
import pytest
import torch

import tilus
from tilus.layout import local, spatial
from tests.lang.lowp_model import FLOATS, INTS, decode, encode, int_from_float
from tests.lang.packed_kernels import PackedEncode, PackedRoundTrip, PackedThroughShared, PackedView, pack, unpack

PACKED = {n: FLOATS[n][0] for n in FLOATS if FLOATS[n][0] < 8}
PACKED.update({n: INTS[n][0] for n in INTS})


def _value(name, codes):
    if name in FLOATS:
        return np.array([decode(name, int(c)) for c in codes.ravel()]).reshape(codes.shape)
    bits, signed = INTS[name]
    return np.where(signed & (codes >= (1 << (bits - 1))), codes - (1 << bits), codes)


@pytest.mark.parametrize("name", sorted(PACKED))
def test_load_and_store_keep_every_bit(name):
    bits = PACKED[name]
    rng = np.random.default_rng(bits)
    rows, cols = 37, 70  # odd tiles; rows of 70 * bits bits start mid-byte for odd bits
    codes = rng.integers(0, 1 << bits, size=(rows, cols))
    src = torch.from_numpy(pack(codes, bits))
    dst = torch.full_like(src, 0xA5)
    values = torch.full((rows, cols), 777.0)
    PackedRoundTrip(getattr(tilus, name))(src, dst, values, rows, cols)
    assert np.array_equal(dst.numpy()[: (rows * cols * bits) // 8], src.numpy()[: (rows * cols * bits) // 8])
    assert np.array_equal(unpack(dst.numpy(), bits, rows * cols), codes.ravel())
    np.testing.assert_array_equal(values.numpy(), _value(name, codes).astype(np.float32))


@pytest.mark.parametrize("name", ["uint4b", "int4b", "int3b", "float4_e2m1", "float6_e3m2", "uint1b", "int7b"])
def test_store_packs_neighbours_without_clobbering(name):
    """Stores of casts: each element's bits land in the stream, the bits of the partial
    last byte beyond the tensor keep their old value."""
    bits = PACKED[name]
    rows, cols = 19, 45
    x = np.random.default_rng(1).uniform(-9, 9, size=(rows, cols)).astype(np.float32)
    n = rows * cols
    dst = torch.full(((n * bits + 7) // 8,), 0xFF, dtype=torch.uint8)
    PackedEncode(getattr(tilus, name))(torch.from_numpy(x), dst, rows, cols)
    want = encode(name, x.ravel()) if name in FLOATS else int_from_float(name, x.ravel())
    assert np.array_equal(unpack(dst.numpy(), bits, n), want & ((1 << bits) - 1))
    tail = n * bits % 8
    if tail:  # the bits after the last element: untouched
        assert dst.numpy()[-1] >> tail == 0xFF >> tail


@pytest.mark.parametrize("name", ["uint4b", "int3b", "float6_e3m2", "uint2b", "float5_e2m2"])
@pytest.mark.parametrize("shape", [(37, 70), (32, 256)])
def test_shared_tiles_and_copy_async(name, shape):
    bits = PACKED[name]
    rows, cols = shape
    codes = np.random.default_rng(2).integers(0, 1 << bits, size=shape)
    src = torch.from_numpy(pack(codes, bits))
    dst = torch.zeros_like(src)
    PackedThroughShared(getattr(tilus, name))(src, dst, rows, cols)
    assert np.array_equal(unpack(dst.numpy(), bits, rows * cols), codes.ravel())


@pytest.mark.parametrize("name,layout", [
    ("uint4b", local(2, 1) * spatial(4, 8) * local(1, 8)),
    ("int4b", spatial(8, 4) * local(1, 16)),
    ("int3b", spatial(4, 8) * local(2, 8)),
    ("float6_e3m2", local(2, 1) * spatial(4, 8) * local(1, 4)),
])
def test_register_view_packs_each_threads_elements(name, layout):
    bits = PACKED[name]
    rows, cols = layout.shape
    per_thread = layout.local_size * bits // 8
    codes = np.random.default_rng(3).integers(0, 1 << bits, size=(rows, cols))
    src = torch.from_numpy(pack(codes, bits))
    dst = torch.zeros_like(src)
    raw = torch.zeros(32 * per_thread, dtype=torch.uint8)
    PackedView(getattr(tilus, name), layout, spatial(32) * local(per_thread))(src, dst, raw, rows, cols)
    assert np.array_equal(dst.numpy(), src.numpy())
    for t in range(32):
        mine = [codes[tuple(layout.coords(t, lo))] for lo in range(layout.local_size)]
        assert np.array_equal(raw.numpy()[t * per_thread:(t + 1) * per_thread], pack(mine, bits)), t


def test_model_packs_little_endian():
    # element 0 in the low nibble of byte 0, as Tilus 0.2 (and the lead's spec) says
    assert pack([0x1, 0x2, 0x3], 4).tolist() == [0x21, 0x03]
    assert pack([1, 2, 3, 4], 3).tolist() == [0b11010001, 0b00001000]


def test_element_access_of_packed_tensor_is_refused_at_the_line():
    class ReadOne(tilus.Script):
        def __call__(self, x: tilus.void_p, out: ~tilus.int32):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            g = self.global_view(x, dtype=tilus.uint4b, shape=[8])
            o = self.global_view(out, dtype=tilus.int32, shape=[1])
            o[0] = g[3]

    with pytest.raises(Exception) as e:
        ReadOne()(torch.zeros(4, dtype=torch.uint8), torch.zeros(1, dtype=torch.int32))
    msg = str(e.value)
    assert "packed" in msg and "test_packed_storage.py" in msg
