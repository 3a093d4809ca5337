"""``tilus.hidet.ir.dtypes.integer_subbyte`` (Tilus 0.2 import path): IntegerSubbyteType."""

from tilus.hidet.ir.dtypes._kinds import IntegerSubbyteType

__all__ = ["IntegerSubbyteType"]
