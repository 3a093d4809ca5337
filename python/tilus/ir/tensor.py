"""``tilus.ir.tensor`` of Tilus 0.2: the tile classes scripts test with isinstance."""

from tilus.tensor_types import GlobalTensor, RegisterTensor, SharedTensor

__all__ = ["GlobalTensor", "RegisterTensor", "SharedTensor"]
