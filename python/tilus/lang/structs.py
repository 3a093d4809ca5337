"""Small value types scripts see: ``Dim3`` (``self.blockIdx``, ``self.gridDim``)."""

from __future__ import annotations


class Dim3:
    """Three values ``x``, ``y``, ``z`` (runtime values or ints); unpacks as
    ``bx, by, bz = self.blockIdx``, as in Tilus 0.2 (``tilus.Dim3``)."""

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def __iter__(self):
        return iter((self.x, self.y, self.z))

    def __len__(self):
        return 3

    def __getitem__(self, axis: int):
        return (self.x, self.y, self.z)[axis]

    def to_tuple(self) -> tuple:
        """``(x, y, z)``."""
        return (self.x, self.y, self.z)

    def __repr__(self):
        return f"Dim3({self.x}, {self.y}, {self.z})"
