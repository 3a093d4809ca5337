"""``tilus.ir.layout.ops`` of Tilus 0.2: its layout constructors, spelled as there, over
tilus's layouts (python/tilus/layout.py, csrc/layout).

A register layout here is the same object as there: ``shape``, ``mode_shape`` (each
dimension split into modes, outer to inner), ``spatial_modes`` (the modes spread over
threads, outermost first; ``-k`` replicates over ``k`` thread groups) and ``local_modes``
(the modes a thread holds, outermost first). The operations below rearrange those lists
and build the result with :func:`register_layout`, which canonicalises it.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from tilus import layout as _layout
from tilus.layout import (RegisterLayout, SharedLayout, column_local, column_spatial, compose,
                          register_layout, shared_column_major, shared_row_major)

__all__ = [
    "RegisterLayout", "SharedLayout", "register_layout", "spatial", "local", "column_spatial",
    "column_local", "replicated", "compose", "divide", "concat", "reduce", "squeeze",
    "unsqueeze", "permute", "shared_row_major", "shared_column_major",
    "shared_row_major_swizzle",
]


def _ranked(shape: Sequence[int], ranks: Optional[Sequence[int]], what: str) -> List[int]:
    """The modes of ``shape`` in the order the ranks give (rank 0 outermost)."""
    if ranks is None:
        return list(range(len(shape)))
    ranks = list(ranks)
    if len(ranks) != len(shape):
        raise ValueError(f"{what}: shape and ranks differ in length ({len(shape)} vs {len(ranks)})")
    if sorted(ranks) != list(range(len(shape))):
        raise ValueError(f"{what}: ranks must be a permutation of 0..{len(shape) - 1}, got {ranks}")
    return [ranks.index(r) for r in range(len(shape))]


def spatial(*shape: int, ranks: Optional[Sequence[int]] = None) -> RegisterLayout:
    """One element per thread over ``shape``; threads go row-major, or in the order of
    ``ranks`` (``ranks[d]`` is dimension d's place, 0 the outermost)."""
    if ranks is None:
        return _layout.spatial(*shape)
    return register_layout(shape, shape, _ranked(shape, ranks, "spatial"), [])


def local(*shape: int, ranks: Optional[Sequence[int]] = None) -> RegisterLayout:
    """One thread holds all of ``shape``; local indices row-major, or in ``ranks`` order."""
    if ranks is None:
        return _layout.local(*shape)
    return register_layout(shape, shape, [], _ranked(shape, ranks, "local"))


def replicated(*shape: int, num_workers: int) -> RegisterLayout:
    """Every one of ``num_workers`` threads holds the whole ``shape``."""
    return _layout.replicate(num_workers, len(shape)) * _layout.local(*shape)


def divide(lhs: RegisterLayout, rhs: RegisterLayout) -> RegisterLayout:
    """The ``outer`` with ``outer * rhs == lhs``; ValueError when there is none."""
    out = _layout.divide(lhs, rhs)
    if out is None:
        raise ValueError(f"divide: {lhs} is not a tile of {rhs}")
    return out


def _grouped(layout: RegisterLayout) -> List[List[int]]:
    """The modes of each dimension."""
    dims = layout.mode_dims()
    return [[m for m, d in enumerate(dims) if d == k] for k in range(len(layout.shape))]


def concat(lhs: RegisterLayout, rhs: RegisterLayout) -> RegisterLayout:
    """The layout of rank ``lhs.rank + rhs.rank`` whose first dimensions are ``lhs``'s and
    last ``rhs``'s; ``lhs``'s threads and local indices are the outer ones."""
    n = len(lhs.mode_shape)
    return register_layout(
        list(lhs.shape) + list(rhs.shape), list(lhs.mode_shape) + list(rhs.mode_shape),
        list(lhs.spatial_modes) + [m + n if m >= 0 else m for m in rhs.spatial_modes],
        list(lhs.local_modes) + [m + n for m in rhs.local_modes])


def reduce(layout: RegisterLayout, dims: Sequence[int], *, keepdims: bool = False) -> RegisterLayout:
    """The layout of the reduction of ``layout`` over ``dims``: the reduced dimensions'
    thread modes become replications (those threads hold the same result), their local
    modes disappear; the dimensions are dropped, or kept with extent 1."""
    dims = [int(d) for d in dims]
    if not dims:
        return layout
    rank = len(layout.shape)
    if any(d < 0 or d >= rank for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"reduce: dims must be distinct dimensions of a rank-{rank} layout, "
                         f"got {dims}")
    dim_of = layout.mode_dims()
    renumber, kept = {}, []
    for m, d in enumerate(dim_of):
        if d not in dims:
            renumber[m] = len(kept)
            kept.append(layout.mode_shape[m])
    spatial_modes = [m if m < 0 else renumber.get(m, -layout.mode_shape[m])
                     for m in layout.spatial_modes]
    local_modes = [renumber[m] for m in layout.local_modes if m in renumber]
    shape = [1 if d in dims else s for d, s in enumerate(layout.shape)] if keepdims else \
        [s for d, s in enumerate(layout.shape) if d not in dims]
    return register_layout(shape, kept, spatial_modes, local_modes)


def squeeze(layout: RegisterLayout, dims: Sequence[int]) -> RegisterLayout:
    """Drop the extent-1 dimensions ``dims``."""
    dims = [int(d) for d in dims]
    if any(not 0 <= d < len(layout.shape) or layout.shape[d] != 1 for d in dims):
        raise ValueError(f"squeeze: dims {dims} must be extent-1 dimensions of {list(layout.shape)}")
    return reduce(layout, dims)


def unsqueeze(layout: RegisterLayout, dims: Sequence[int]) -> RegisterLayout:
    """Insert extent-1 dimensions at ``dims`` (positions in the result)."""
    dims = sorted(int(d) for d in dims)
    rank = len(layout.shape) + len(dims)
    if any(not 0 <= d < rank for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"unsqueeze: dims must be distinct positions in a rank-{rank} layout, "
                         f"got {dims}")
    old = iter(range(len(layout.shape)))
    where = [None if d in dims else next(old) for d in range(rank)]
    # modes keep their order: the new dimensions have none
    shape = [1 if w is None else layout.shape[w] for w in where]
    return register_layout(shape, list(layout.mode_shape), list(layout.spatial_modes),
                           list(layout.local_modes))


def permute(layout: RegisterLayout, dims: Sequence[int]) -> RegisterLayout:
    """The layout of the transposed tile: result dimension k is ``layout``'s ``dims[k]``."""
    dims = [int(d) for d in dims]
    if sorted(dims) != list(range(len(layout.shape))):
        raise ValueError(f"permute: dims must be a permutation of 0..{len(layout.shape) - 1}, "
                         f"got {dims}")
    groups = _grouped(layout)
    order = [m for d in dims for m in groups[d]]
    renumber = {m: k for k, m in enumerate(order)}
    return register_layout([layout.shape[d] for d in dims],
                           [layout.mode_shape[m] for m in order],
                           [m if m < 0 else renumber[m] for m in layout.spatial_modes],
                           [renumber[m] for m in layout.local_modes])


def shared_row_major_swizzle(shape: Sequence[int], dtype_nbytes: int) -> SharedLayout:
    """Row-major with each row's 16-byte chunks XOR-swizzled (conflict-free ``ldmatrix``).

    As in Tilus 0.2 the tile needs rank >= 2, a multiple of 8 rows and rows of a multiple
    of 16 bytes (ValueError otherwise). tilus's swizzle covers rows of a multiple of 64
    bytes; rows of 16 or 32 bytes (which Tilus 0.2 swizzles across several rows) get the
    row-major layout. Either way the code generator picks the layout a shared tile really
    has (``annotate_layout`` of a shared tensor only checks the shape), so the choice
    changes no result."""
    shape = [int(s) for s in shape]
    nbytes = int(dtype_nbytes)
    if len(shape) < 2:
        raise ValueError(f"shared_row_major_swizzle: the shape needs at least two dimensions, got {shape}")
    if nbytes <= 0 or 16 % nbytes:
        raise ValueError(f"shared_row_major_swizzle: dtype_nbytes must divide 16, got {nbytes}")
    if shape[-2] % 8 or shape[-1] * nbytes % 16:
        raise ValueError(f"shared_row_major_swizzle: needs a multiple of 8 rows and rows of a multiple of 16 "
                         f"bytes, got {shape[-2]} rows of {shape[-1] * nbytes} bytes")
    from tilus._C import layout as native

    if native.can_swizzle(shape, 8 * nbytes):
        return _layout.shared_swizzled(shape, nbytes)
    return shared_row_major(*shape)
