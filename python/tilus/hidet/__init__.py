"""Tilus 0.2 ships its IR base as ``tilus.hidet``; scripts import dtypes and ``DataType``
from there. These modules are those names over tilus's own types."""
