"""``tilus.hidet.ir.dtypes.floats_subbyte`` (Tilus 0.2 import path): FloatSubbyteType."""

from tilus.hidet.ir.dtypes._kinds import FloatSubbyteType

__all__ = ["FloatSubbyteType"]
