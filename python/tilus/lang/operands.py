"""Python-level checks of instruction arguments, shared by the instruction families
(instructions.py and inst_*.py): each names the argument it rejects."""

from __future__ import annotations

from tilus.lang.types import DataType
from tilus.lang.values import Expr, Tensor, as_expr


def _dtype(value, what: str) -> DataType:
    if isinstance(value, DataType):
        return value
    raise TypeError(f"{what} must be a tilus data type such as tilus.float16, got {value!r}")


def _const_ints(values, what: str) -> list:
    if isinstance(values, int):
        values = [values]
    out = []
    for v in values:
        if isinstance(v, Expr):
            if v.is_const and isinstance(v.value, int):
                v = v.value
            else:
                raise TypeError(f"{what} must be compile-time integers; '{v}' is a runtime value")
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} must be integers, got {v!r}")
        out.append(int(v))
    return out


def _exprs(values, what: str) -> list:
    if isinstance(values, (int, Expr)):
        values = [values]
    return [as_expr(v, what) for v in values]


def _tensor(value, what: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{what} must be a tensor, got {type(value).__name__}")
    return value


def _dims(dims) -> list:
    return [] if dims is None else _const_ints(dims, "dims")
