"""Tilus 0.2's ``tilus.ir`` import paths (``from tilus.ir import RegisterTensor``), as thin
names over tilus's own classes."""

from tilus.layout import RegisterLayout, SharedLayout
from tilus.tensor_types import GlobalTensor, RegisterTensor, SharedTensor

__all__ = ["RegisterLayout", "SharedLayout", "GlobalTensor", "RegisterTensor", "SharedTensor"]
