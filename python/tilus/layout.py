"""Layouts of register and shared tiles.

A **register layout** of a tile of shape ``S`` spreads its elements over the ``T``
threads of a block, each holding ``L`` of them in registers: it maps (thread ``t``, local
index ``l``) to a coordinate of ``S``. Layouts are built from four primitives and
composed with ``*`` (the Kronecker product: the left layout is a tile of right layouts)::

    from tilus.layout import spatial, local

    # 8 warps (4 x 2), each repeating 2 x 2 times a 2 x 16 grid of lanes that
    # hold 4 x 4 elements each: a 64 x 256 tile over 256 threads, 64 per thread
    layout = spatial(4, 2) * local(2, 2) * spatial(2, 16) * local(4, 4)
    # the same, chained
    layout = spatial(4, 2).local(2, 2).spatial(2, 16).local(4, 4)
    layout.coords(thread, local_index)  # -> (row, col)

* ``spatial(*shape)``: one element per thread, threads row-major over ``shape``.
* ``column_spatial(*shape)``: the same, column-major (dim 0 fastest).
* ``local(*shape)``: one thread holds the whole ``shape``, row-major.
* ``column_local(*shape)``: the same, column-major.
* ``replicate(k, rank)``: ``k`` thread groups holding the same data.

Composition: ``coord = outer_coord * inner.shape + inner_coord``, ``thread =
outer_thread * inner.num_threads + inner_thread``, ``local = outer_local *
inner.local_size + inner_local``; ``divide(layout, inner)`` undoes it.

**Shared layouts** place a shared tile in its buffer: :func:`shared_row_major`,
:func:`shared_column_major` and :func:`shared_swizzled` (16-byte chunks XOR-swizzled per
row so that ``ldmatrix`` and 16-byte ``cp.async`` are free of bank conflicts).
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence, Union

from tilus._C import layout as _native
from tilus.lang.errors import NativeError

RegisterLayout = _native.RegisterLayout
SharedLayout = _native.SharedLayout

_BUILTIN = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "RuntimeError": RuntimeError,
    "IndexError": IndexError,
    "ZeroDivisionError": ZeroDivisionError,
}


def _pythonic(fn):
    """Raise the builtin exception a C++ ScriptError names (outside scripts there is no
    source line for the transpiler to attach)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NativeError as e:
            raise _BUILTIN.get(e.kind, ValueError)(e.message) from None

    return wrapper


for _name in ("__init__", "__mul__", "coords", "local_coords", "owner", "spatial",
              "column_spatial", "local", "column_local", "replicate"):
    setattr(RegisterLayout, _name, _pythonic(getattr(RegisterLayout, _name)))
SharedLayout.offset = _pythonic(SharedLayout.offset)
del _name


# Tilus 0.2's names for the sizes of a register layout (its RegisterLayout's properties).
def _spatial_shape(self) -> list:
    """The extent of each thread mode, outermost first (a replication counts its groups)."""
    return [self.mode_shape[m] if m >= 0 else -m for m in self.spatial_modes]


def _local_shape(self) -> list:
    """The extent of each local mode, outermost first."""
    return [self.mode_shape[m] for m in self.local_modes]


def _truediv(self, other):
    """``layout / inner``: the ``outer`` with ``outer * inner == layout`` (ValueError when
    ``layout`` is no tile of ``inner``)."""
    if not isinstance(other, RegisterLayout):
        return NotImplemented
    out = _native.divide(self, other)
    if out is None:
        raise ValueError(f"{self} is not a tile of {other}")
    return out


def _get_local(self, global_indices) -> int:
    """The local index at which the owning threads hold the element ``global_indices``."""
    return self.owner([int(i) for i in global_indices])[0]


def _get_global(self, *, spatial_index: int, local_index: int) -> list:
    """The coordinates of local element ``local_index`` of thread ``spatial_index``."""
    return list(self.coords(int(spatial_index), int(local_index)))


RegisterLayout.size = property(lambda self: self.numel, doc="The elements of the tile (prod(shape)).")
RegisterLayout.spatial_shape = property(_spatial_shape)
RegisterLayout.local_shape = property(_local_shape)
RegisterLayout.spatial_size = property(lambda self: self.num_threads, doc="The threads the layout spans.")
RegisterLayout.__truediv__ = _truediv
RegisterLayout.get_local = _get_local
RegisterLayout.get_global = _get_global


def _dtype_bits(dtype) -> int:
    # an int is an element size in bytes (the documented form); dtypes carry their bits
    if isinstance(dtype, int):
        return dtype * 8
    if hasattr(dtype, "bits"):
        return int(dtype.bits)
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    import tilus._C as _C

    return int(_C.dtype(name).bits)


# ---- register layouts: primitives --------------------------------------------------------


@_pythonic
def spatial(*shape: int) -> RegisterLayout:
    """Threads row-major over ``shape``, one element each: ``spatial(2, 3)`` puts thread
    ``t`` at ``(t // 3, t % 3)``."""
    return _native.spatial(*shape)


@_pythonic
def column_spatial(*shape: int) -> RegisterLayout:
    """Threads column-major over ``shape``: ``column_spatial(2, 3)`` puts thread ``t`` at
    ``(t % 2, t // 2)``."""
    return _native.column_spatial(*shape)


@_pythonic
def local(*shape: int) -> RegisterLayout:
    """One thread holds all of ``shape``, local index row-major: ``local(2, 3)`` puts
    local index ``l`` at ``(l // 3, l % 3)``."""
    return _native.local(*shape)


@_pythonic
def column_local(*shape: int) -> RegisterLayout:
    """One thread holds all of ``shape``, local index column-major: ``column_local(2, 3)``
    puts ``l`` at ``(l % 2, l // 2)``."""
    return _native.column_local(*shape)


@_pythonic
def replicate(k: int, rank: int) -> RegisterLayout:
    """``k`` threads holding the same (single) element of a rank-``rank`` tile of ones.
    ``spatial(2, 1) * replicate(4, 2)``: threads ``4i .. 4i+3`` all hold row ``i``."""
    return _native.replicate(k, rank)


@_pythonic
def register_layout(shape: Sequence[int], mode_shape: Sequence[int],
                    spatial_modes: Sequence[int], local_modes: Sequence[int]) -> RegisterLayout:
    """A layout from its modes (see ``csrc/layout/register_layout.h``); a spatial entry
    ``-k`` is a replication over ``k`` thread groups. Returns the canonical form."""
    return RegisterLayout(list(shape), list(mode_shape), list(spatial_modes), list(local_modes))


# ---- register layouts: derived operations --------------------------------------------------


@_pythonic
def compose(outer: RegisterLayout, inner: RegisterLayout) -> RegisterLayout:
    """``outer * inner``: a tile of ``outer.shape`` inner tiles (ranks must match)."""
    return _native.compose(outer, inner)


@_pythonic
def divide(layout: RegisterLayout, inner: RegisterLayout) -> Optional[RegisterLayout]:
    """The ``outer`` with ``outer * inner == layout``, or ``None`` if there is none."""
    return _native.divide(layout, inner)


@_pythonic
def auto_global_layout(shape: Sequence[int], num_threads: int,
                       vector_elems: int) -> RegisterLayout:
    """A coalesced layout for loading/storing a global tile: each thread holds ``v``
    contiguous elements of the last dim (``v`` the largest power of two ``<=
    vector_elems`` dividing it), consecutive threads take consecutive chunks, what the
    threads do not cover repeats in local modes, and extra threads replicate."""
    return _native.auto_global_layout(list(shape), num_threads, vector_elems)


@_pythonic
def mma_atom(kind: str) -> dict:
    """One warp's mma.sync fragments: ``kind`` is ``"m16n8k16"`` (fp16/bf16) or
    ``"m16n8k32"`` (int8). Returns ``{"kind", "m", "n", "k", "a", "b", "c"}``."""
    return _native.mma_atom(kind)


def mma_kind_for(dtype) -> Optional[str]:
    """The mma atom for an operand dtype (name or tilus dtype), or ``None``."""
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    return _pythonic(_native.mma_kind_for)(name)


@_pythonic
def mma_block_layouts(kind: str, m: int, n: int, k: int, num_warps: int,
                      warps_m: Optional[int] = None) -> dict:
    """Block layouts of an mma dot ``C[m, n] += A[m, k] @ B[k, n]`` over ``num_warps``
    warps: ``{"a", "b", "c", "warps_m", "warps_n", "rep_m", "rep_n", "rep_k"}``; the warp
    grid is tilus's choice, or ``warps_m x (num_warps / warps_m)`` when given.
    Raises ``ValueError`` (with the reason) when no warp grid tiles the shape."""
    return _native.mma_block_layouts(kind, m, n, k, num_warps, warps_m)


@_pythonic
def simt_block_layouts(m: int, n: int, k: int, num_warps: int) -> dict:
    """Block layouts of a float32 FMA dot, same keys as :func:`mma_block_layouts`; every
    thread holds the A rows and B columns of its C elements."""
    return _native.simt_block_layouts(m, n, k, num_warps)


# ---- shared layouts ----------------------------------------------------------------------


@_pythonic
def shared_row_major(*shape: int) -> SharedLayout:
    """Row-major shared layout: ``offset = sum(c[d] * prod(shape[d+1:]))``."""
    return _native.shared_row_major(*shape)


@_pythonic
def shared_column_major(*shape: int) -> SharedLayout:
    """Column-major shared layout: ``offset = sum(c[d] * prod(shape[:d]))``."""
    return _native.shared_column_major(*shape)


@_pythonic
def shared_swizzled(shape: Sequence[int], dtype: Union[int, str, object]) -> SharedLayout:
    """Row-major with the 16-byte chunks of each row XOR-swizzled by the row index, for
    ``ldmatrix`` / ``cp.async`` without bank conflicts. ``dtype`` is an element size in
    bytes or a dtype. Needs rank >= 2 and rows of a multiple of 64 bytes."""
    return _native.shared_swizzled(list(shape), _dtype_bits(dtype))


@_pythonic
def auto_shared_layout(shape: Sequence[int], dtype: Union[int, str, object]) -> SharedLayout:
    """:func:`shared_swizzled` where it applies, else :func:`shared_row_major`."""
    return _native.auto_shared_layout(list(shape), _dtype_bits(dtype))


@_pythonic
def shared_wgmma_operand(shape: Sequence[int], dtype: Union[int, str, object]) -> Optional[SharedLayout]:
    """The layout a ``wgmma`` operand tile is read from (the code generator picks it for
    the shared tiles a Hopper dot reads): 64-byte rows with the 64-byte swizzle, or
    column blocks of 128 bytes with the 128-byte swizzle. None for other row sizes."""
    return _native.shared_wgmma_operand(list(shape), _dtype_bits(dtype))


# Short names for the shared layouts.
row_major = shared_row_major
column_major = shared_column_major
swizzled = shared_swizzled

__all__ = [
    "RegisterLayout", "SharedLayout",
    "spatial", "column_spatial", "local", "column_local", "replicate", "register_layout",
    "compose", "divide", "auto_global_layout",
    "mma_atom", "mma_kind_for", "mma_block_layouts", "simt_block_layouts",
    "shared_row_major", "shared_column_major", "shared_swizzled", "auto_shared_layout",
    "shared_wgmma_operand",
    "row_major", "column_major", "swizzled",
]
