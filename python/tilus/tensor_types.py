"""The names Tilus 0.2 scripts use for tiles: ``RegisterTensor``, ``SharedTensor`` and
``GlobalTensor``.

tilus has one tensor class (``tilus._C.Tensor``) whose ``scope`` says where the tile
lives; these three names are thin views of it, so that a Tilus 0.2 helper annotated
``x: RegisterTensor`` and a check ``isinstance(x, SharedTensor)`` work unchanged.
"""

from tilus import _C


class _ScopedTensorMeta(type):
    def __instancecheck__(cls, value) -> bool:
        return isinstance(value, _C.Tensor) and value.scope == cls.scope


class RegisterTensor(metaclass=_ScopedTensorMeta):
    """A tile held in the registers of the thread block (``self.load_global``,
    ``self.register_tensor``, arithmetic on tiles); ``isinstance(t, RegisterTensor)`` is
    true for such tiles."""

    scope = "register"


class SharedTensor(metaclass=_ScopedTensorMeta):
    """A tile in the thread block's shared memory (``self.shared_tensor``);
    ``isinstance(t, SharedTensor)`` is true for such tiles."""

    scope = "shared"


class GlobalTensor(metaclass=_ScopedTensorMeta):
    """A view of global memory (``self.global_view``, ``self.global_tensor``);
    ``isinstance(t, GlobalTensor)`` is true for such views."""

    scope = "global"


__all__ = ["RegisterTensor", "SharedTensor", "GlobalTensor"]
