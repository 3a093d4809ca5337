"""``tilus.ir.layout`` of Tilus 0.2: the layout classes and constructors."""

from tilus.ir.layout.ops import register_layout
from tilus.layout import RegisterLayout, SharedLayout

__all__ = ["RegisterLayout", "SharedLayout", "register_layout"]
