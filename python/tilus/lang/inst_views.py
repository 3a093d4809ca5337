"""Shape changes of register and shared tiles: view, reshape, squeeze, unsqueeze,
flatten, transpose, permute, reshape_shared, repeat, repeat_interleave.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).

Register shape changes move no data when layout inference can derive the result's
layout from the operand's (csrc/layout/register_views.h); shared ones are views of the
same allocation (csrc/ops/views.cc).
"""

from __future__ import annotations

from typing import Sequence

from tilus.lang.context import current_builder
from tilus.lang.operands import _const_ints, _dtype, _tensor
from tilus.lang.values import Expr, Tensor


def _register(x, what: str):
    x = _tensor(x, what)
    if x.scope != "register":
        raise TypeError(f"{what} must be a register tensor, got a {x.type_str()} tensor")
    return x


def _with_out(result, out, op: str):
    """Write ``result`` into ``out`` (Tilus 0.2's ``out=``) and return ``out``."""
    if out is None:
        return result
    out = _register(out, f"{op}: out")
    current_builder().assign_tensor(out, result)
    return out


def _ints(values, what: str) -> list:
    if not isinstance(values, (int, Expr)) and not hasattr(values, "__iter__"):
        raise TypeError(f"{what} must be integers, got {values!r}")
    return _const_ints(values, what)


def _normalize(dims, rank: int, what: str) -> list:
    dims = _ints(dims, what)
    out = []
    for d in dims:
        if not -rank <= d < rank:
            raise ValueError(f"{what}: dimension {d} is out of range for rank {rank}")
        d = d + rank if d < 0 else d
        if d in out:
            raise ValueError(f"{what}: dimension {d} is given twice")
        out.append(d)
    return out


def reshape_register(x, shape):
    return current_builder().tile_op("reshape", [x], shape=list(shape))


def squeeze_shape(x, dim, what: str = "squeeze: dim") -> list:
    shape = list(x.shape)
    dims = _normalize(dim, len(shape), what)
    for d in dims:
        if shape[d] != 1:
            raise ValueError(f"{what}: dimension {d} of {x.type_str()} has size {shape[d]}, not 1")
    return [s for k, s in enumerate(shape) if k not in dims]


def unsqueeze_shape(x, dim, what: str = "unsqueeze: dim") -> list:
    shape = list(x.shape)
    n = len(shape) + len(_ints(dim, what))
    dims = _normalize(dim, n, what)
    rest = iter(shape)
    return [1 if k in dims else next(rest) for k in range(n)]


def permute_any(x, dims, what: str = "permute"):
    x = _tensor(x, "x")
    if x.scope == "global":
        raise TypeError(f"{what}: x must be a register or shared tensor, got {x.type_str()}")
    dims = _ints(dims, f"{what}: dims")
    if sorted(d + x.rank if d < 0 else d for d in dims) != list(range(x.rank)):
        raise ValueError(f"{what}: dims {dims} is not a permutation of the {x.rank} dimensions "
                         f"of {x.type_str()}")
    op = "permute" if x.scope == "register" else "permute_shared"
    return current_builder().tile_op(op, [x], dims)


def transpose_any(x):
    x = _tensor(x, "x")
    if x.scope != "global" and x.rank != 2:
        raise ValueError(f"transpose: x must be 2-D, got {x.type_str()}; use permute")
    return permute_any(x, [1, 0], "transpose")


class ViewInstructions:
    def view(self, x, *, layout=None, dtype=None):
        """Reinterpret the bits each thread holds of a register tile: another dtype,
        another layout, or both (Tilus 0.2's ``view``).

        Args:
            x: a register tensor.
            layout: the result's register layout (:mod:`tilus.layout`); None keeps
                ``x``'s layout and shape.
            dtype: the result's dtype; None keeps ``x``'s.

        Returns:
            A register tensor of ``dtype`` whose shape is ``layout``'s (or ``x``'s).

        Dtypes and layouts:
            Nothing is converted: thread ``t``'s registers of ``x``, in ``x``'s layout
            order, are read as its registers of the result in the new layout's order.
            Without ``layout`` this is an elementwise bit cast, so ``dtype`` must have
            ``x``'s element size (float16 <-> int16/uint16/bfloat16) and any layout works.
            With ``layout`` each thread's bits must fill it exactly: ``x``'s local size x
            its dtype bits == the layout's local size x ``dtype``'s bits. ``x``'s layout is
            then the one layout inference gives it (the same on CUDA and in the
            interpreter unless a dot on sm_90a chose it); give ``x`` a layout
            (``register_tensor(layout=...)``, or let it come from a ``view``) to fix it.

        Raises:
            TypeError: ``x`` is not a register tensor; ``dtype`` is not a tilus dtype;
                ``layout`` is not a register layout.
            ValueError: without ``layout``, ``dtype`` has another element size; with it,
                the bits per thread differ (reported when the kernel is compiled or
                interpreted, naming the line).
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                bits = self.view(tile, dtype=int16)               # float16 -> its bits
                packed = self.view(w, layout=byte_layout, dtype=uint8)
        """
        x = _register(x, "view: x")
        to = x.dtype if dtype is None else _dtype(dtype, "view: dtype")
        if layout is None:
            return current_builder().tile_op("view", [x], dtype=to, shape=list(x.shape))
        from tilus.layout import RegisterLayout

        if not isinstance(layout, RegisterLayout):
            raise TypeError(f"view: layout must be a tilus.layout register layout, got {layout!r}")
        y = current_builder().tile_op("view", [x], int_attr=1, dtype=to, shape=list(layout.shape))
        y.layout = layout
        return y

    def reshape(self, x, shape: Sequence[int]):
        """Reshape a register tile (row-major order kept, as ``torch.reshape``).

        Args:
            x: a register tensor.
            shape: the new shape, compile-time positive ints with ``x``'s number of
                elements; one entry may be -1 (inferred).

        Returns:
            A register tensor of ``x``'s dtype and the new shape.

        Dtypes and layouts:
            Any dtype. The result's layout is derived from ``x``'s (the thread and local
            modes regrouped into the new dimensions), so no data moves. When a new
            dimension would cut a mode of ``x``'s layout it does not divide (or the result's
            layout is fixed by a dot or a user layout), the data is exchanged through shared
            memory instead, with the same result.

        Raises:
            TypeError: ``x`` is not a register tensor; a size is not a compile-time int.
            ValueError: the shape holds another number of elements, has a size below 1 or
                more than one -1.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                grouped = self.reshape(values, shape=[block_m, groups, group_size])
        """
        x = _register(x, "reshape: x")
        shape = _ints(shape, "reshape: shape")
        if shape.count(-1) > 1:
            raise ValueError(f"reshape: shape {shape} has more than one -1")
        if -1 in shape:
            known = 1
            for s in shape:
                known *= s if s != -1 else 1
            numel = 1
            for s in x.shape:
                numel *= s
            if known <= 0 or numel % known:
                raise ValueError(f"reshape: {x.type_str()} cannot be reshaped to {shape}")
            shape[shape.index(-1)] = numel // known
        return reshape_register(x, shape)

    def squeeze(self, x, *, dim, out=None):
        """Remove dimensions of size 1 from a register tile.

        Args:
            x: a register tensor.
            dim: the dimension, or a sequence of dimensions, to remove; each must have
                size 1. Negative values count from the last.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype without those dimensions (``out`` if given).

        Dtypes and layouts:
            Any dtype. A reshape: the result's layout is ``x``'s without the dimensions, so
            no data moves.

        Raises:
            TypeError: ``x`` is not a register tensor; ``dim`` is not an int.
            ValueError: a dimension is out of range, given twice, or not of size 1;
                ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                row = self.squeeze(self.sum(tile, dim=0, keepdim=True), dim=0)
        """
        x = _register(x, "squeeze: x")
        return _with_out(reshape_register(x, squeeze_shape(x, dim)), out, "squeeze")

    def unsqueeze(self, x, *, dim, out=None):
        """Insert dimensions of size 1 into a register tile.

        Args:
            x: a register tensor.
            dim: the position, or a sequence of positions, of the new dimensions in the
                result. Negative values count from the result's last dimension.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype with the new dimensions (``out`` if given).

        Dtypes and layouts:
            Any dtype. A reshape: the result's layout is ``x``'s with the size-1
            dimensions added, so no data moves.

        Raises:
            TypeError: ``x`` is not a register tensor; ``dim`` is not an int.
            ValueError: a position is out of range or given twice; ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                outer = self.unsqueeze(k, dim=1) * self.unsqueeze(v, dim=0)   # [n, m]
        """
        x = _register(x, "unsqueeze: x")
        return _with_out(reshape_register(x, unsqueeze_shape(x, dim)), out, "unsqueeze")

    def flatten(self, x):
        """Flatten a register tile into one dimension (row-major order).

        Args:
            x: a register tensor.

        Returns:
            A 1-D register tensor of ``x``'s dtype with all its elements.

        Dtypes and layouts:
            Any dtype. A reshape: the result's layout keeps every thread's registers, so no
            data moves.

        Raises:
            TypeError: ``x`` is not a register tensor.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                flat = self.flatten(tile)   # [16, 8] -> [128]
        """
        x = _register(x, "flatten: x")
        numel = 1
        for s in x.shape:
            numel *= s
        return reshape_register(x, [numel])

    def transpose(self, x):
        """Swap the two dimensions of a 2-D register tile or shared tensor.

        Args:
            x: a 2-D register tensor, or a 2-D shared tensor (or slice).

        Returns:
            A tensor of the same scope and dtype with shape ``[x.shape[1], x.shape[0]]``:
            for a shared tensor a view of the same memory.

        Dtypes and layouts:
            Any dtype. Registers: the result's layout is ``x``'s with its dimensions
            swapped, so no data moves (a layout fixed elsewhere, e.g. a dot operand, is
            converted through shared memory). Shared: the view addresses the same
            allocation (its swizzle included); loads and stores through it move single
            elements instead of vectors.

        Raises:
            TypeError: ``x`` is a global tensor.
            ValueError: ``x`` is not 2-D.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                acc = self.dot(a, b.transpose(), acc)
                bt = self.load_shared(sb.transpose())
        """
        return transpose_any(x)

    def permute(self, x, dims: Sequence[int]):
        """Reorder the dimensions of a register tile or a shared tensor (``torch.permute``).

        Args:
            x: a register tensor, or a shared tensor (or slice).
            dims: a permutation of ``range(x.rank)``: dimension ``i`` of the result is
                dimension ``dims[i]`` of ``x``. Negative values count from the last.

        Returns:
            A tensor of the same scope and dtype, shape ``[x.shape[d] for d in dims]``:
            for a shared tensor a view of the same memory.

        Dtypes and layouts:
            As :py:meth:`transpose`: registers keep their place (the layout's modes are
            reassigned to the new dimensions); a shared view addresses the same allocation.

        Raises:
            TypeError: ``x`` is a global tensor; ``dims`` are not compile-time ints.
            ValueError: ``dims`` is not a permutation of ``x``'s dimensions.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                kt = self.permute(k, [1, 0])
                stages_last = self.permute(sa, [1, 2, 0])
        """
        return permute_any(x, dims)

    def repeat(self, x, repeats: Sequence[int], *, out=None):
        """Tile a register tensor: ``torch.Tensor.repeat`` (``[1, 2, 3]`` x 2 ->
        ``[1, 2, 3, 1, 2, 3]``).

        Args:
            x: a register tensor.
            repeats: compile-time counts >= 1 per dimension. Fewer than ``x``'s rank are
                padded with leading 1s; more prepend size-1 dimensions to ``x``.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype, shape ``x.shape[d] * repeats[d]``.

        Dtypes and layouts:
            Any dtype. The result's layout is derived from ``x``'s: each thread holds every
            copy of its elements (the copies in its registers, no data exchanged).

        Raises:
            TypeError: ``x`` is not a register tensor; a count is not an int.
            ValueError: a count is below 1; ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                tiled = self.repeat(row, [4, 1])   # [1, n] -> [4, n]
        """
        return self._repeat("repeat", x, repeats, out)

    def repeat_interleave(self, x, repeats: Sequence[int], *, out=None):
        """Repeat each element of a register tensor in place along every dimension
        (``[1, 2, 3]`` x 2 -> ``[1, 1, 2, 2, 3, 3]``; ``torch.repeat_interleave`` applied
        per dimension).

        Args:
            x: a register tensor.
            repeats: compile-time counts >= 1 per dimension. Fewer than ``x``'s rank are
                padded with leading 1s; more prepend size-1 dimensions to ``x``.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype, shape ``x.shape[d] * repeats[d]``.

        Dtypes and layouts:
            Any dtype. The result's layout is ``x``'s with a local block of ``repeats`` per
            element: each thread holds the copies of its own elements.

        Raises:
            TypeError: ``x`` is not a register tensor; a count is not an int.
            ValueError: a count is below 1; ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                scales = self.repeat_interleave(group_scales, [1, group_size])
        """
        return self._repeat("repeat_interleave", x, repeats, out)

    def _repeat(self, op: str, x, repeats, out):
        x = _register(x, f"{op}: x")
        repeats = _ints(repeats, f"{op}: repeats")
        for r in repeats:
            if r < 1:
                raise ValueError(f"{op}: repeats {repeats} has a count below 1")
        rank = len(x.shape)
        if len(repeats) > rank:
            x = reshape_register(x, [1] * (len(repeats) - rank) + list(x.shape))
        repeats = [1] * (len(x.shape) - len(repeats)) + repeats
        return _with_out(current_builder().tile_op(op, [x], shape=repeats), out, op)

    def reshape_shared(self, tensor, shape: Sequence[int]):
        """A view of a shared tensor with another shape (row-major order kept).

        Args:
            tensor: a shared tensor (or slice).
            shape: the new shape, compile-time positive ints with the same number of
                elements.

        Returns:
            A shared tensor of ``tensor``'s dtype and the new shape, viewing the same
            memory: writes through one are seen through the other.

        Dtypes and layouts:
            Any dtype. Element ``i`` (row-major) of the view is element ``i`` of
            ``tensor``, wherever ``tensor``'s layout (swizzled or not) puts it; loads and
            stores through a reshaped view move single elements unless the reshape only
            splits or merges leading dimensions. Only allocations can be freed, not views.

        Raises:
            TypeError: ``tensor`` is not a shared tensor; a size is not a compile-time int.
            ValueError: the shape holds another number of elements or has a size below 1.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                flat = self.reshape_shared(sa, [stages * block_m, block_k])
        """
        tensor = _tensor(tensor, "reshape_shared: tensor")
        if tensor.scope != "shared":
            raise TypeError(f"reshape_shared: tensor must be a shared tensor, got {tensor.type_str()}")
        return current_builder().tile_op("reshape_shared", [tensor],
                                         shape=_ints(shape, "reshape_shared: shape"))


# ------------------------------------------------------------------ shape methods
# Tilus 0.2's RegisterTensor.squeeze/unsqueeze/transpose and SharedTensor.permute/
# transpose. They live here, not in values.py, because they use the helpers above
# (values.py sits below operands.py in the import graph).

def _tensor_squeeze(self, dim):
    """``x.squeeze(dim)``: the register tile without the size-1 dimension(s) ``dim``.

    Args:
        dim: an int or a sequence of ints; each dimension must have size 1.

    Returns:
        A register tensor (see ``Script.squeeze``).

    Dtypes and layouts:
        Any dtype; no data moves (the layout loses the dimensions).

    Raises:
        TypeError: the tensor is not a register tensor.
        ValueError: a dimension is out of range or not of size 1.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            self.store_shared(sm, m.squeeze(dim=1))
    """
    x = _register(self, "squeeze: the tensor")
    return reshape_register(x, squeeze_shape(x, dim))


def _tensor_unsqueeze(self, dim):
    """``x.unsqueeze(dim)``: the register tile with size-1 dimension(s) inserted at ``dim``.

    Args:
        dim: an int or a sequence of ints, positions in the result.

    Returns:
        A register tensor (see ``Script.unsqueeze``).

    Dtypes and layouts:
        Any dtype; no data moves.

    Raises:
        TypeError: the tensor is not a register tensor.
        ValueError: a position is out of range.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            lhs_m = self.load_shared(sm).unsqueeze(1)
    """
    x = _register(self, "unsqueeze: the tensor")
    return reshape_register(x, unsqueeze_shape(x, dim))


def _tensor_transpose(self):
    """``x.transpose()``: a 2-D register tile or shared tensor with its dimensions swapped.

    Returns:
        A tensor of the same scope (see ``Script.transpose``); shared: a view.

    Dtypes and layouts:
        Any dtype; registers keep their place, a shared view addresses the same memory.

    Raises:
        TypeError: the tensor is a global tensor.
        ValueError: the tensor is not 2-D.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            acc = self.dot(a, b.transpose(), acc)
    """
    return transpose_any(self)


def _tensor_permute(self, *args, dims=None):
    """``x.permute(dims)``, ``x.permute(dims=dims)`` (Tilus 0.2) or ``x.permute(*dims)``: the
    dimensions of a register tile or a shared tensor reordered (dimension ``i`` of the result
    is ``dims[i]``).

    Args:
        dims: a permutation of the tensor's dimensions, as one sequence or as ints.

    Returns:
        A tensor of the same scope (see ``Script.permute``); shared: a view.

    Dtypes and layouts:
        Any dtype; registers keep their place, a shared view addresses the same memory.

    Raises:
        TypeError: the tensor is a global tensor.
        ValueError: ``dims`` is not a permutation.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            st = sa.permute((1, 0))
    """
    if dims is not None:
        if args:
            raise TypeError("permute: give the dimensions once, positionally or as dims=")
        args = (dims,)
    if len(args) == 1 and not isinstance(args[0], (int, Expr)):
        args = tuple(args[0])
    return permute_any(self, list(args))


Tensor.squeeze = _tensor_squeeze
Tensor.unsqueeze = _tensor_unsqueeze
Tensor.transpose = _tensor_transpose
Tensor.permute = _tensor_permute
