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
