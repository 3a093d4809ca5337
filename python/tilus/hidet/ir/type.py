"""``tilus.hidet.ir.type``: ``DataType`` (Tilus 0.2 import path)."""

from tilus.lang.types import DataType

__all__ = ["DataType"]
