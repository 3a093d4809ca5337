"""The data type table (csrc/ir/dtypes.def) against torch, numpy and DLPack: every fact a
row states is recomputed here from those libraries, never read back from the table; the
Python name maps derived from it keep the values they had when they were written out."""

import ctypes
import math

import numpy as np
import pytest
import torch

import tilus
from tilus import _C, dlpack
from tilus.arguments import _typestr_name, int_range
from tilus.lang.errors import NativeError
from tilus.lang.types import TABLE, from_foreign, row_of
from tilus.runtime import launcher

ROWS = {row.name: row for row in TABLE}
TORCH_ROWS = [row for row in TABLE if row.torch]
NUMPY_ROWS = [row for row in TABLE if row.numpy]


def test_the_table_has_todays_types():
    assert [row.name for row in TABLE] == [
        "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "bfloat16", "float32", "tfloat32", "float64",
        # the low-precision block (docs/low_precision.md)
        *[f"int{b}b" for b in range(1, 8)], *[f"uint{b}b" for b in range(1, 8)],
        "float3_e1m1", "float4_e1m2", "float4_e2m1", "float5_e1m3", "float5_e2m2", "float5_e3m1",
        "float6_e2m3", "float6_e3m2", "float6_e4m1", "float7_e2m4", "float7_e3m3", "float7_e4m2",
        "float7_e5m1", "float8_e4m3", "float8_e5m2"]
    # every type of torch and numpy that tilus had before the table is still mapped
    assert {row.torch for row in TORCH_ROWS} >= {"bool", "int8", "int16", "int32", "int64", "uint8",
                                                 "float16", "bfloat16", "float32", "float64"}
    assert "bfloat16" not in {row.numpy for row in NUMPY_ROWS}  # numpy has none


@pytest.mark.parametrize("row", TORCH_ROWS, ids=lambda r: r.name)
def test_row_matches_torch(row):
    t = getattr(torch, row.torch)
    assert row.bits == t.itemsize * 8
    assert (row.family == "float") == t.is_floating_point
    assert (row.family == "bool") == (t == torch.bool)
    assert row.signed == t.is_signed
    if row.family == "float":
        info = torch.finfo(t)
        assert info.bits == row.bits
        assert info.eps == 2.0 ** -row.mantissa_bits
        # the largest exponent is 2**(e-1) - 1 for e exponent bits (max = m * 2**k, m in [0.5, 1)),
        # one more for OCP E4M3 ("fn"), whose top binade holds numbers (and one NaN)
        top = 2 ** (row.exponent_bits - 1) - 1 + (row.name == "float8_e4m3")
        assert math.frexp(info.max)[1] - 1 == top
    elif row.family == "int":
        info = torch.iinfo(t)
        assert info.bits == row.bits
        assert (info.min, info.max) == int_range(row.dtype)
    assert from_foreign(t) == row.dtype
    assert _C.dtype(row.torch) == row.dtype


@pytest.mark.parametrize("row", NUMPY_ROWS, ids=lambda r: r.name)
def test_row_matches_numpy(row):
    d = np.dtype(row.numpy)
    assert row.bits == d.itemsize * 8
    assert {"b": "bool", "i": "int", "u": "int", "f": "float"}[d.kind] == row.family
    assert row.signed == (d.kind in "if")
    if row.family == "float":
        info = np.finfo(d)
        assert (info.nexp, info.nmant) == (row.exponent_bits, row.mantissa_bits)
    if row.family == "int":
        info = np.iinfo(d)
        assert (int(info.min), int(info.max)) == int_range(row.dtype)
    assert from_foreign(d) == row.dtype
    assert _typestr_name(np.zeros(1, d).__array_interface__["typestr"]) == row.numpy


def _dlpack_type(obj):
    t = dlpack._DLTensor.from_address(dlpack._get_pointer(obj.__dlpack__(), b"dltensor"))
    return t.dtype.code, t.dtype.bits, t.dtype.lanes


@pytest.mark.parametrize("row", [r for r in TABLE if r.dlpack_code >= 0], ids=lambda r: r.name)
def test_row_matches_dlpack(row):
    # what torch (or numpy, for a type torch has not) exports for the type
    tensor = torch.zeros(3, dtype=getattr(torch, row.torch)) if row.torch else np.zeros(3, row.numpy)
    assert _dlpack_type(tensor) == (row.dlpack_code, row.bits, 1)
    address, nbytes, name, device, contiguous, read_only = dlpack.describe(tensor)
    assert from_foreign(name) == row.dtype and nbytes == 3 * row.bits // 8 and device == "cpu"
    assert not read_only


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.name)
def test_public_names_and_properties(row):
    t = getattr(tilus, row.name)
    assert t == row.dtype and t.name == row.name and row.name in tilus.__all__
    assert t.bits == row.bits
    if row.bits % 8 == 0:
        assert t.nbytes * 8 == row.bits
    else:  # sub-byte types have no byte size
        with pytest.raises(NativeError, match="not a whole number of bytes"):
            t.nbytes
    assert (~t).bits == 64 and (~t).nbytes == 8 and (~t).name == "~" + row.name
    assert row_of(~t) == row_of(t) == row
    assert t.is_float == (row.family == "float") and t.is_bool == (row.family == "bool")
    assert t.is_integer == (row.family == "int") and t.is_signed == row.signed
    assert t.c_name == row.c_type and (~t).c_name == row.c_type + "*"
    assert _C.dtype(row.name) == t and _C.dtype("~" + row.name) == ~t


def test_names_that_were_accepted_before():
    assert _C.dtype("bool") == tilus.boolean
    for name, t in {"half": tilus.float16, "float": tilus.float32, "double": tilus.float64,
                    "torch.bfloat16": tilus.bfloat16, "bool": tilus.boolean}.items():
        assert from_foreign(name) == t
    assert from_foreign("boolean") is None and from_foreign("torch.complex64") is None
    with pytest.raises(NativeError, match="unknown data type 'half'") as err:
        _C.dtype("half")  # aliases are foreign names only, not script names
    assert err.value.kind == "ValueError"
    assert _typestr_name("<c8") == "<c8"  # unknown typestrs pass through


def test_scalar_packing_is_unchanged():
    # how each scalar type is widened into a kernel parameter (one packer, runtime/kernel_args)
    lowp = [row for row in TABLE if row.c_type.startswith("tilus::lowp")]
    for row in lowp:  # no by-value kernel parameters of the low-precision types
        with pytest.raises(Exception, match="is not supported"):
            launcher._rt.param_kind(row.dtype)
    assert {row.name: launcher._rt.param_kind(row.dtype) for row in TABLE if row not in lowp} == {
        "boolean": "i32", "int8": "i32", "int16": "i32", "int32": "i32", "uint8": "u32",
        "uint16": "u32", "uint32": "u32", "int64": "i64", "uint64": "u64", "float32": "f32",
        "tfloat32": "f32",
        "float64": "f64", "float16": "f16", "bfloat16": "bf16"}
    assert dlpack._CODES == {
        (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8",
        (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64", (2, 16): "float16",
        (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16", (6, 8): "bool",
        (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2"}  # kDLFloat8_e4m3fn, kDLFloat8_e5m2


def test_c_types_are_what_generated_code_declares():
    # sizeof of the host twin of each C type equals the row's size (the device types
    # tilus::half / tilus::bfloat16 are 16-bit structs, checked by the codegen tests)
    host = {"bool": ctypes.c_bool, "signed char": ctypes.c_byte, "short": ctypes.c_short,
            "int": ctypes.c_int, "long long": ctypes.c_longlong, "unsigned char": ctypes.c_ubyte,
            "unsigned short": ctypes.c_ushort, "unsigned int": ctypes.c_uint,
            "unsigned long long": ctypes.c_ulonglong, "float": ctypes.c_float,
            "double": ctypes.c_double}
    for row in TABLE:
        if row.c_type in host:
            assert ctypes.sizeof(host[row.c_type]) * 8 == row.bits, row.name
