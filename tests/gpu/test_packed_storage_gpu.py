"""Packed sub-byte tensors on the GPU against the numpy packing model and the CPU
interpreter: global loads and stores (whole-byte vectors, ragged row ends element by
element), packed shared tiles filled by cp.async, and register views to bytes. Fresh
random data, odd shapes, outputs poisoned before each run."""

import numpy as np
import pytest
import torch

import tilus
from tilus.layout import column_spatial, local, spatial
from tests.lang.lowp_model import FLOATS, INTS, encode, int_from_float
from tests.lang.packed_kernels import PackedEncode, PackedRoundTrip, PackedThroughShared, PackedView, pack, unpack

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

PACKED = {n: FLOATS[n][0] for n in FLOATS if FLOATS[n][0] < 8}
PACKED.update({n: INTS[n][0] for n in INTS})
SHAPES = [(37, 70), (64, 256), (5, 1000)]


def _codes(bits, shape, seed):
    return np.random.default_rng(seed).integers(0, 1 << bits, size=shape)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", sorted(PACKED))
def test_round_trip_matches_model_and_interpreter(name, shape):
    bits, (rows, cols) = PACKED[name], shape
    codes = _codes(bits, shape, seed=rows * cols + bits)
    src = torch.from_numpy(pack(codes, bits))
    n_bytes = rows * cols * bits // 8
    kernel = PackedRoundTrip(getattr(tilus, name))
    cpu_vals = torch.full((rows, cols), float("nan"))
    cpu_dst = torch.full_like(src, 0x5A)
    kernel(src, cpu_dst, cpu_vals, rows, cols)
    dst = torch.full_like(src, 0x5A).cuda()
    vals = torch.full((rows, cols), float("nan"), device="cuda")
    kernel(src.cuda(), dst, vals, rows, cols)
    torch.cuda.synchronize()
    assert np.array_equal(unpack(dst.cpu().numpy(), bits, rows * cols), codes.ravel())
    assert np.array_equal(dst.cpu().numpy()[:n_bytes], src.numpy()[:n_bytes])
    assert np.array_equal(vals.cpu().numpy().view(np.int32), cpu_vals.numpy().view(np.int32))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ["uint4b", "int4b", "int3b", "float4_e2m1", "float6_e3m2", "uint1b",
                                  "int7b", "float5_e2m2", "uint2b"])
def test_encode_store_matches_model(name, shape):
    bits, (rows, cols) = PACKED[name], shape
    x = np.random.default_rng(7).uniform(-9, 9, size=shape).astype(np.float32)
    n = rows * cols
    dst = torch.full(((n * bits + 7) // 8,), 0xFF, dtype=torch.uint8, device="cuda")
    PackedEncode(getattr(tilus, name))(torch.from_numpy(x).cuda(), dst, rows, cols)
    torch.cuda.synchronize()
    want = encode(name, x.ravel()) if name in FLOATS else int_from_float(name, x.ravel())
    got = dst.cpu().numpy()
    assert np.array_equal(unpack(got, bits, n), want & ((1 << bits) - 1))
    if n * bits % 8:
        assert got[-1] >> (n * bits % 8) == 0xFF >> (n * bits % 8)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ["uint4b", "int4b", "int3b", "float6_e3m2", "uint2b", "uint1b", "float5_e2m2"])
def test_shared_tiles_and_copy_async(name, shape):
    bits, (rows, cols) = PACKED[name], shape
    codes = _codes(bits, shape, seed=11)
    src = torch.from_numpy(pack(codes, bits)).cuda()
    dst = torch.full_like(src, 0x33)
    PackedThroughShared(getattr(tilus, name))(src, dst, rows, cols)
    torch.cuda.synchronize()
    assert np.array_equal(unpack(dst.cpu().numpy(), bits, rows * cols), codes.ravel())


@pytest.mark.parametrize("name,layout", [
    ("uint4b", local(2, 1) * spatial(4, 8) * local(1, 8)),
    ("int4b", spatial(8, 4) * local(1, 16)),
    ("int3b", spatial(4, 8) * local(2, 8)),
    ("float6_e3m2", local(2, 1) * spatial(4, 8) * local(1, 4)),
])
def test_register_view_matches_interpreter(name, layout):
    bits = PACKED[name]
    rows, cols = layout.shape
    per_thread = layout.local_size * bits // 8
    codes = _codes(bits, (rows, cols), seed=5)
    src = torch.from_numpy(pack(codes, bits))
    kernel = PackedView(getattr(tilus, name), layout, spatial(32) * local(per_thread))
    raw_cpu = torch.zeros(32 * per_thread, dtype=torch.uint8)
    kernel(src, torch.zeros_like(src), raw_cpu, rows, cols)
    dst = torch.full_like(src, 0x77).cuda()
    raw = torch.full((32 * per_thread,), 0x77, dtype=torch.uint8, device="cuda")
    kernel(src.cuda(), dst, raw, rows, cols)
    torch.cuda.synchronize()
    assert torch.equal(dst.cpu(), src)
    assert torch.equal(raw.cpu(), raw_cpu)


class FragmentBytes(tilus.Script):
    """Loads a [16, 16] packed tile laid out as 2 x 2 m16n8k16 B fragments (a thread holds
    codes of four rows in one column: the bytes of a row split between threads, as in
    Tilus 0.2's A16Wx weight re-layout) and stores each thread's codes, packed in local
    order, as bytes."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype
        self.layout = local(1, 2) * local(2, 1) * column_spatial(4, 8) * local(2, 1)
        self.per_thread = self.layout.local_size * dtype.bits // 8
        self.bytes_layout = spatial(32) * local(self.per_thread)

    def __call__(self, src: tilus.void_p, raw: ~tilus.uint8):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gs = self.global_view(src, dtype=self.dtype, shape=[16, 16])
        gr = self.global_view(raw, dtype=tilus.uint8, shape=[32 * self.per_thread])
        t = self.load_global(gs, offsets=[0, 0], layout=self.layout)
        self.store_global(gr, self.view(t, layout=self.bytes_layout, dtype=tilus.uint8), offsets=[0])


def fragment_bytes_model(kernel, codes, bits):
    """Each thread's codes in local order, packed: the bytes FragmentBytes stores."""
    per = [[codes[kernel.layout.coords(t, e)] for e in range(kernel.layout.local_size)] for t in range(32)]
    return np.concatenate([pack(np.array(p), bits) for p in per])


@pytest.mark.parametrize("name", ["int4b", "uint2b", "float3_e1m1", "float6_e3m2"])
def test_a_layout_splitting_bytes_loads_element_by_element(name):
    bits = PACKED[name]
    codes = _codes(bits, (16, 16), seed=bits)
    src = torch.from_numpy(pack(codes, bits))
    kernel = FragmentBytes(getattr(tilus, name))
    raw_cpu = torch.zeros(32 * kernel.per_thread, dtype=torch.uint8)
    kernel(src, raw_cpu)
    assert np.array_equal(raw_cpu.numpy(), fragment_bytes_model(kernel, codes, bits))
    raw = torch.full_like(raw_cpu, 0x77).cuda()
    kernel(src.cuda(), raw)
    torch.cuda.synchronize()
    assert torch.equal(raw.cpu(), raw_cpu)
