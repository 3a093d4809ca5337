"""``tilus.hidet.ir``: ``DataType`` and the dtypes (Tilus 0.2 import paths)."""

from tilus.lang.types import DataType

__all__ = ["DataType"]
