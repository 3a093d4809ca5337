"""``tilus.hidet.ir.type``: ``DataType`` and ``void_p`` (Tilus 0.2 import paths)."""

from tilus.lang.types import DataType, void_p

__all__ = ["DataType", "void_p"]
