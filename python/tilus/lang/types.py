"""Data types exported as ``tilus.float16`` etc. ``~float16`` is a pointer type.

The types are the rows of the native table csrc/ir/dtypes.def (``_C.dtype_table()``):
the module-level names, the torch/numpy names and the other maps tilus keeps
(dlpack.py, arguments.py, runtime/launcher.py) are derived from it, so a new type is one
line in that table.
"""

import numbers
from typing import Dict, NamedTuple, Optional, Tuple

from tilus import _C

DataType = _C.DataType


class DTypeRow(NamedTuple):
    """One row of csrc/ir/dtypes.def (its header describes the columns)."""

    name: str            # script name: tilus.<name>
    bits: int            # size of one element in bits
    family: str          # "bool", "int" or "float"
    signed: bool
    c_type: str          # C++ type in generated CUDA
    torch: str           # torch.<torch>, "" where torch has none
    numpy: str           # numpy.<numpy>, "" where numpy has none
    dlpack_code: int     # DLDataTypeCode, -1 where DLPack has none
    exponent_bits: int   # floats only
    mantissa_bits: int   # floats only
    aliases: Tuple[str, ...]
    short: str           # Tilus 0.2's short name (tilus.f16), "" where none

    @property
    def dtype(self) -> DataType:
        return _C.dtype(self.name)


TABLE: Tuple[DTypeRow, ...] = tuple(DTypeRow(**{**row, "aliases": tuple(row["aliases"])})
                                    for row in _C.dtype_table())
NAMES = [row.name for row in TABLE]
ALL = [row.dtype for row in TABLE]
_ROWS: Dict[str, DTypeRow] = {row.name: row for row in TABLE}

# tilus.boolean, tilus.int8, ..., tilus.float64: one module attribute per row, and the
# short names Tilus 0.2 also exports (tilus.f16, tilus.i8, ...).
globals().update({row.name: row.dtype for row in TABLE})
SHORT_NAMES = [row.short for row in TABLE if row.short]
globals().update({row.short: row.dtype for row in TABLE if row.short})

# Tilus 0.2's untyped pointer: a parameter annotated void_p takes a tensor of any dtype
# and global_view(ptr, dtype=...) decides what its memory holds.
void_p = _C.dtype("void_p")

__all__ = ["DataType", "DTypeRow", "TABLE", "NAMES", "SHORT_NAMES", "ALL", "row_of",
           "from_foreign", "void_p", *NAMES, *SHORT_NAMES]


def row_of(t: DataType) -> DTypeRow:
    """The table row of a type (of the pointee for a pointer type; uint8, the byte, for
    void_p)."""
    return _ROWS[t.pointee.name if t.is_pointer else t.name]


# Names torch and numpy give the types (str(torch.float16) is "torch.float16"), plus the
# aliases other libraries print ("half", "float", "double").
_FOREIGN_NAMES: Dict[str, DataType] = {
    name: row.dtype for row in TABLE for name in (row.torch, row.numpy, *row.aliases) if name}


def from_foreign(dtype) -> "Optional[DataType]":
    """The tilus type of a torch or numpy dtype, or None."""
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    return _FOREIGN_NAMES.get(name)


def _dtype_call(self, value):
    """``float16(1.0)``, ``int32(x)``: Tilus 0.2 makes a typed value by calling the type.
    A Python number becomes a constant of this type, a runtime scalar is converted to it,
    a register tile is cast (``x.to(dtype)``)."""
    if self.is_pointer:
        raise TypeError(f"{self.name}(...): a pointer type makes no values; use a void_p parameter")
    if isinstance(value, _C.Tensor):
        return value.to(self)
    if isinstance(value, _C.Expr):
        return _C.cast(value, self)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, numbers.Integral) and not self.is_float:
        return _C.const_int(int(value), self)
    if isinstance(value, numbers.Real):
        if self.is_integer or self.is_bool:
            raise TypeError(f"{self.name}({value!r}): an integer type takes an integer")
        return _C.const_float(float(value), self)
    raise TypeError(f"{self.name}(...) takes a number, a runtime scalar or a register tile, "
                    f"got {type(value).__name__}")


DataType.__call__ = _dtype_call


# ---- Tilus 0.2's DataType surface -------------------------------------------------------
# Tilus 0.2 (hidet) types answer predicates as methods (``t.is_float()``) and carry
# nbits / short_name / min_value / max_value; tilus reads the predicates as properties
# (``t.is_float``). A Predicate serves both spellings.


class Predicate:
    """A yes/no property of a type: true or false as a value, and the same when called."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = bool(value)

    def __bool__(self):
        return self._value

    def __call__(self) -> bool:
        return self._value

    def __eq__(self, other):
        if isinstance(other, (bool, Predicate)):
            return self._value == bool(other)
        return NotImplemented

    def __hash__(self):
        return hash(self._value)

    def __repr__(self):
        return repr(self._value)


def _predicate(test, doc):
    return property(lambda self: Predicate(test(self)), doc=doc + " Also callable, as Tilus 0.2 spells it (``t.is_float()``).")


for _name in ("is_float", "is_integer", "is_bool", "is_signed", "is_pointer", "is_void"):
    _native = DataType.__dict__[_name]
    setattr(DataType, _name, _predicate(_native.fget, _native.__doc__ or _name))
DataType.is_boolean = _predicate(lambda t: t.is_bool, "Whether the type is ``boolean`` (Tilus 0.2's name).")
DataType.is_subbyte = _predicate(lambda t: not t.is_pointer and t.bits < 8, "Whether an element is narrower than a byte.")
DataType.is_integer_subbyte = _predicate(lambda t: t.is_integer and not t.is_pointer and t.bits < 8,
                                         "Whether the type is an integer narrower than a byte (``int3b``...).")
DataType.is_float_subbyte = _predicate(lambda t: t.is_float and t.bits < 8,
                                       "Whether the type is a float narrower than a byte (``float6_e3m2``...).")
DataType.is_any_float16 = _predicate(lambda t: t.name in ("float16", "bfloat16"),
                                     "Whether the type is float16 or bfloat16.")
DataType.signedness = _predicate(lambda t: t.is_signed, "Whether the type is signed (hidet's name).")
DataType.is_complex = _predicate(lambda t: False, "Always false (tilus has no complex types).")
DataType.is_vector = _predicate(lambda t: False, "Always false (tilus has no vector types).")
DataType.nbits = property(lambda t: t.bits, doc="Tilus 0.2's name for bits.")
DataType.short_name = property(lambda t: row_of(t).short or t.name,
                               doc="Tilus 0.2's short name (f16, i4, f6e3m2, ...).")


def _float_field(field: str):
    def get(t: DataType) -> int:
        row = row_of(t)
        if row.family != "float":
            raise AttributeError(f"{t.name} is not a float type: it has no {field.replace('_bits', '_nbits')}")
        return getattr(row, field)
    return get


DataType.exponent_nbits = property(_float_field("exponent_bits"), doc="Exponent bits of a float type (Tilus 0.2).")
DataType.mantissa_nbits = property(_float_field("mantissa_bits"),
                                   doc="Mantissa bits of a float type, the implicit one not counted (Tilus 0.2).")

# largest finite values of the IEEE-style formats; the narrower floats have no infinities
# or NaNs, so their all-ones exponent is finite too (docs/low_precision.md), and FP8 is OCP's
_LARGEST = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38,
            "tfloat32": 3.4011621342146535e38, "bfloat16": 3.3895313892515355e38, "float16": 65504.0,
            "float8_e4m3": 448.0, "float8_e5m2": 57344.0}


def _largest(t: DataType):
    row = row_of(t)
    if row.family == "bool":
        return True
    if row.family == "int":
        return (1 << (row.bits - 1)) - 1 if row.signed else (1 << row.bits) - 1
    if row.name in _LARGEST:
        return _LARGEST[row.name]
    e, m = row.exponent_bits, row.mantissa_bits
    bias = (1 << (e - 1)) - 1
    return (2.0 - 2.0 ** -m) * 2.0 ** ((1 << e) - 1 - bias)


def _smallest(t: DataType):
    row = row_of(t)
    if row.family == "bool":
        return False
    if row.family == "int":
        return -(1 << (row.bits - 1)) if row.signed else 0
    return -_largest(t)


DataType.zero = property(lambda t: t(0), doc="A constant 0 of this type (Tilus 0.2's ``float32.zero``).")
DataType.one = property(lambda t: t(1), doc="A constant 1 of this type (Tilus 0.2's ``float32.one``).")
DataType.max_value = property(_largest, doc="The largest finite value (Tilus 0.2).")
DataType.min_value = property(_smallest, doc="The most negative finite value (Tilus 0.2).")
