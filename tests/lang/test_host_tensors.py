"""Tilus 0.2's host-side surface: tilus.tensor's tensors of any type (tilus.randint, from_torch,
.to, .torch, view, ...), tilus.kernels.cast, and the DataType attributes its programs read
(t.is_float(), nbits, short_name, min_value, max_value, exponent_nbits, signedness(), the
FloatSubbyteType / IntegerSubbyteType classes). On CPU tensors (the interpreter runs
the conversions); the packed bytes and the values are checked against the independent numpy
model of tests/lang/lowp_model.py."""

import numpy as np
import pytest
import torch

import tilus
from tests.lang.lowp_model import FLOATS, INT_SHORT, INTS, SHORT, decode_all, encode, int_range
from tests.lang.packed_kernels import pack
from tilus.hidet.ir.dtypes.floats_subbyte import FloatSubbyteType
from tilus.hidet.ir.dtypes.integer_subbyte import IntegerSubbyteType
from tilus.utils import dtype_to_torch

CPU = "cpu"


@pytest.mark.parametrize("src", ["int32", "int16", "int8", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("dst", ["int32", "int16", "int8", "float32", "float16", "bfloat16"])
def test_tilus_02_cast_test_runs_unchanged(src, dst):
    """Tilus 0.2's own test_cast, its calls spelled as it spells them."""
    src_dtype, dst_dtype = getattr(tilus, src), getattr(tilus, dst)
    if src_dtype.is_integer():
        a = tilus.randint(low=-128, high=127, shape=[1024], dtype=src_dtype, device=CPU)
    elif src_dtype.is_float():
        a = tilus.rand(shape=[1024], dtype=src_dtype, device=CPU)
    else:
        assert False
    b = tilus.kernels.cast(a, dst_dtype)
    torch.testing.assert_close(b.torch(), a.torch().to(dtype_to_torch(dst_dtype)))


@pytest.mark.parametrize("name", sorted(INTS))
def test_sub_byte_integers_are_packed_as_global_memory_holds_them(name):
    bits = INTS[name][0]
    lo, hi = int_range(name)
    values = torch.arange(lo, hi + 1, dtype=torch.int32).repeat(7)[:(hi - lo + 1) * 7 - 3]  # a ragged tail
    t = tilus.from_torch(values).to(getattr(tilus, name))
    assert t.dtype == getattr(tilus, name) and t.shape == [values.numel()]
    assert t.storage.numel() == (values.numel() * bits + 7) // 8
    assert np.array_equal(t.storage.numpy(), pack(values.numpy(), bits))
    assert torch.equal(t.to(tilus.int32).torch(), values)


@pytest.mark.parametrize("name", sorted(n for n in FLOATS if FLOATS[n][0] < 8))
def test_small_floats_round_to_the_model_and_read_back_exactly(name):
    bits = FLOATS[name][0]
    x = torch.randn(999, generator=torch.Generator().manual_seed(bits)) * 4
    t = tilus.from_torch(x).to(getattr(tilus, name))
    codes = encode(name, x.numpy())
    assert np.array_equal(t.storage.numpy(), pack(codes, bits))
    assert np.array_equal(t.to(tilus.float32).torch().numpy(), decode_all(name)[codes].astype(np.float32))


@pytest.mark.parametrize("name", sorted(INTS))
def test_randint_stays_in_range_and_covers_it(name):
    lo, hi = int_range(name)
    t = tilus.randint(lo, hi + 1, shape=[64, 50], dtype=getattr(tilus, name), device=CPU)
    v = t.to(tilus.int32).torch()
    assert v.shape == (64, 50) and int(v.min()) == lo and int(v.max()) == hi


def test_constructors_and_views():
    z = tilus.zeros([3, 5], tilus.float4_e2m1, device=CPU)
    assert torch.equal(z.to(tilus.float32).torch(), torch.zeros(3, 5))
    o = tilus.ones([2, 8], tilus.uint2b, device=CPU)
    assert torch.equal(o.to(tilus.int32).torch(), torch.ones(2, 8, dtype=torch.int32))
    f = tilus.full([4], 2.5, tilus.float6_e3m2, device=CPU)
    assert torch.equal(f.to(tilus.float32).torch(), torch.full((4,), 2.5))
    e = tilus.empty([7, 3], tilus.int3b, device=CPU)
    assert e.storage.numel() == 8 and e.storage.dtype == torch.uint8
    r = tilus.randn([1000], tilus.float16, device=CPU).torch()
    assert r.dtype == torch.float16 and 0.5 < float(r.float().std()) < 1.5

    b = tilus.from_torch(torch.arange(32, dtype=torch.uint8).reshape(4, 8))
    nib = b.view(dtype=tilus.uint4b)  # the last dimension scales with the bit widths
    assert nib.shape == [4, 16]
    assert torch.equal(nib.to(tilus.int32).torch()[0, :4], torch.tensor([0, 0, 1, 0], dtype=torch.int32))
    flat = tilus.tensor.view(nib, shape=[64])
    assert flat.shape == [64] and flat.storage is b.storage
    with pytest.raises(ValueError, match="whole"):
        tilus.from_torch(torch.zeros(3, 2, dtype=torch.uint8)).view(dtype=tilus.uint3b)
    with pytest.raises(ValueError, match="bits"):
        b.view(dtype=tilus.uint4b, shape=[4, 15])
    raw = tilus.view_torch(torch.zeros(3, dtype=torch.uint8), dtype=tilus.uint3b, shape=[8])
    assert raw.shape == [8]
    with pytest.raises(ValueError, match="bytes"):
        tilus.view_torch(torch.zeros(4, dtype=torch.uint8), dtype=tilus.uint3b, shape=[8])
    with pytest.raises(ValueError, match="torch has no type"):
        raw.torch()


def test_setitem_and_clone():
    t = tilus.from_torch(torch.arange(12, dtype=torch.float32).reshape(3, 4)).to(tilus.float6_e3m2)
    c = t.clone()
    t[1, 1:3] = 100.0  # saturates at the format's largest value, 28
    t[2] = tilus.full([4], -0.5, tilus.float16, device=CPU)
    v = t.to(tilus.float32).torch()
    assert v[1].tolist() == [4.0, 28.0, 28.0, 7.0] and v[2].tolist() == [-0.5] * 4
    assert c.to(tilus.float32).torch()[1].tolist() == [4.0, 5.0, 6.0, 7.0]


def test_cast_into_out_checks_it():
    a = tilus.from_torch(torch.arange(10, dtype=torch.int32))
    out = tilus.empty([10], tilus.int4b, device=CPU)
    assert tilus.kernels.cast(a, tilus.int4b, out=out) is out
    assert out.to(tilus.int32).torch().tolist() == [0, 1, 2, 3, 4, 5, 6, 7, -8, -7]  # int -> int keeps the low bits
    with pytest.raises(ValueError, match="out is"):
        tilus.kernels.cast(a, tilus.int8, out=out)


def test_a_host_tensor_storage_feeds_a_kernel():
    class Negate(tilus.Script):
        def __call__(self, n: tilus.int32, src: tilus.void_p, dst: tilus.void_p):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            g = self.global_view(src, dtype=tilus.int3b, shape=[n])
            o = self.global_view(dst, dtype=tilus.int3b, shape=[n])
            self.store_global(o, -self.load_global(g, offsets=[0], shape=[64]), offsets=[0])

    w = tilus.randint(-3, 4, shape=[50], dtype=tilus.int3b, device=CPU)
    out = tilus.zeros([50], tilus.int3b, device=CPU)
    Negate()(50, w.storage, out.storage)
    assert torch.equal(out.to(tilus.int32).torch(), -w.to(tilus.int32).torch())
    again = tilus.zeros([50], tilus.int3b, device=CPU)
    Negate()(50, w, again)  # the host tensors themselves
    assert torch.equal(again.storage, out.storage)


def test_an_integer_address_of_a_live_cpu_tensor_runs_in_the_interpreter():
    """Tilus 0.2 programs pass tensor.data_ptr() for pointer parameters. On the CPU the
    interpreter needs the memory's extent: the live torch tensor owning the address gives
    it (the end of its storage), so a view past it is refused before anything runs; an
    address no live tensor owns is refused, naming the parameter."""
    class Copy(tilus.Script):
        def __call__(self, n: tilus.int32, src: tilus.void_p, dst: tilus.void_p):
            self.attrs.blocks = 1
            self.attrs.warps = 1
            g = self.global_view(src, dtype=tilus.float32, shape=[n])
            self.store_global(self.global_view(dst, dtype=tilus.float32, shape=[n]),
                              self.load_global(g, offsets=[0], shape=[32]), offsets=[0])

    x, y = torch.arange(40, dtype=torch.float32), torch.zeros(32)
    kernel = Copy()
    kernel(32, x.data_ptr(), y.data_ptr())
    assert torch.equal(y, x[:32])
    # an address inside a tensor: bounded by the end of its storage (8 floats past it)
    y.zero_()
    kernel(32, x[8:].data_ptr(), y)
    assert torch.equal(y, x[8:40])
    with pytest.raises(ValueError, match="argument 'src' is too small"):
        kernel(40, x[8:].data_ptr(), torch.zeros(40))
    address = torch.ones(32).data_ptr()  # the tensor is gone
    with pytest.raises(TypeError, match="argument 'src' is the integer .* not the address of CUDA memory "
                                        "nor of a live CPU torch tensor"):
        kernel(32, address, y)


@pytest.mark.parametrize("name", sorted(FLOATS) + sorted(INTS) + ["float16", "bfloat16", "float32", "int8",
                                                                  "uint8", "int32", "boolean"])
def test_dtype_surface_of_tilus_02(name):
    t = getattr(tilus, name)
    assert t.nbits == t.bits
    assert t.is_float() == bool(t.is_float) and t.is_integer() == bool(t.is_integer)
    assert t.is_boolean() == (name == "boolean")
    assert t.is_subbyte() == (t.bits < 8)
    assert t.is_integer_subbyte() == (name in INTS) and t.is_float_subbyte() == (name in FLOATS and t.bits < 8)
    # hidet's names for the signedness and the float fields, and Tilus 0.2's sub-byte classes
    signed = name in ("int8", "int32", "float16", "bfloat16", "float32") or (name in INTS and INTS[name][1]) \
        or name in FLOATS
    assert t.signedness() == signed
    assert isinstance(t, FloatSubbyteType) == (name in FLOATS and t.bits < 8)
    assert isinstance(t, IntegerSubbyteType) == (name in INTS)
    if name in FLOATS:
        finite = decode_all(name)[np.isfinite(decode_all(name))]
        assert (t.min_value, t.max_value) == (finite.min(), finite.max())
        assert t.short_name == SHORT[name]
        assert (t.exponent_nbits, t.mantissa_nbits) == FLOATS[name][1:3]
    if name in INTS:
        assert (t.min_value, t.max_value) == int_range(name)
        assert t.short_name == INT_SHORT[name]
    if name in ("float16", "bfloat16", "float32"):
        assert (t.exponent_nbits, t.mantissa_nbits) == {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23)}[name]
    if not t.is_float():
        assert not hasattr(t, "exponent_nbits") and not hasattr(t, "mantissa_nbits")
    if name in ("float16", "bfloat16", "float32"):
        info = torch.finfo(getattr(torch, name))
        assert (t.min_value, t.max_value) == (info.min, info.max)
        assert t.is_any_float16() == (name != "float32")
    if name in ("int8", "uint8", "int32"):
        info = torch.iinfo(getattr(torch, name))
        assert (t.min_value, t.max_value) == (info.min, info.max)


def test_sub_byte_classes_make_no_types():
    with pytest.raises(TypeError, match="makes no new types in tilus"):
        FloatSubbyteType("float6_e3m2", "f6e3m2", 3, 2)
    assert not isinstance(~tilus.float16, FloatSubbyteType) and not isinstance(3, IntegerSubbyteType)
