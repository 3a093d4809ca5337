"""Reductions and scans over dimensions of a register tile: sum, max, min, any, all,
scan, cumsum, cumprod.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
Signatures are Tilus 0.2's: ``dim`` is one dimension, several, or None (all of them),
``keepdim`` keeps reduced dimensions with size 1, ``out`` receives the result.
"""

from __future__ import annotations

from tilus.lang.context import current_builder
from tilus.lang.operands import _const_ints, _tensor
from tilus.lang.values import Tensor


def _reduce(name: str, x, dim, keepdim, out):
    x = _tensor(x, "x")
    if not isinstance(keepdim, bool):
        raise TypeError(f"{name}: keepdim must be True or False, got {keepdim!r}")
    rank = len(x.shape)
    if dim is None:
        dims = list(range(rank))
    else:
        dims = _const_ints(dim, f"{name}: dim")
    normal = []
    for d in dims:
        if not -rank <= d < rank:
            raise ValueError(f"{name}: dim={d} is not a dimension of {x.type_str()} (rank {rank})")
        d %= rank
        if d in normal:
            raise ValueError(f"{name}: dimension {d} is listed twice in dim={dim!r}")
        normal.append(d)
    if not normal:
        raise ValueError(f"{name}: no dimension to reduce (dim={dim!r})")
    builder = current_builder()
    result = x
    # Highest dimension first, so the lower indices stay valid when keepdim=False.
    for d in sorted(normal, reverse=True):
        result = builder.tile_op(name, [result], [d], int(keepdim))
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}: out must be a register tensor, got {type(out).__name__}")
        builder.assign_tensor(out, result)
        return out
    return result


class ReductionInstructions:
    def sum(self, x, /, *, dim=None, keepdim: bool = False, out=None):
        """Sum of a register tensor over one or more dimensions.

        Args:
            x: a float or integer register tensor.
            dim: the dimension to reduce, a sequence of them, or None for all;
                negative counts from the last.
            keepdim: keep the reduced dimensions with size 1 (else they are removed).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype whose shape is ``x``'s with the reduced
            dimensions of size 1 (``keepdim=True``) or removed (``out`` when given).

        Dtypes and layouts:
            Float and integer dtypes. Floats narrower than float64 accumulate in float32 on
            CUDA (float64 in the interpreter); integers wrap to the dtype. The result's
            layout is derived from ``x``'s: the reduced dimension's thread modes become
            replication, so every thread that held part of a row holds its sum. Lanes of a
            warp combine with shuffles; shared memory is used only across warps.

        Raises:
            TypeError: ``x`` is not a register tensor or has a boolean dtype, or a bitwise
                ``op`` is given a float tensor; ``dim`` is
                not an integer, a sequence of integers or None; ``keepdim`` is not a bool;
                ``out`` has another dtype or shape than the result.
            ValueError: ``dim`` is out of range, or names a dimension twice.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                row_sums = self.sum(tile, dim=1)               # [m, n] -> [m]
                col_sums = self.sum(tile, dim=0, keepdim=True)  # [m, n] -> [1, n]
        """
        return _reduce("sum", x, dim, keepdim, out)

    def max(self, x, /, *, dim=None, keepdim: bool = False, out=None):
        """Maximum of a register tensor over one or more dimensions.

        Args:
            x: a float or integer register tensor.
            dim: the dimension to reduce, a sequence of them, or None for all;
                negative counts from the last.
            keepdim: keep the reduced dimensions with size 1 (else they are removed).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype whose shape is ``x``'s with the reduced
            dimensions of size 1 (``keepdim=True``) or removed (``out`` when given).

        Dtypes and layouts:
            Float and integer dtypes. A NaN in a row makes its maximum NaN, as in torch.
            The result's layout is derived from ``x``'s as for :meth:`sum`, so
            ``x - self.max(x, dim=1, keepdim=True)`` broadcasts without moving data.

        Raises:
            TypeError: ``x`` is not a register tensor or has a boolean dtype, or a bitwise
                ``op`` is given a float tensor; ``dim`` is
                not an integer, a sequence of integers or None; ``keepdim`` is not a bool;
                ``out`` has another dtype or shape than the result.
            ValueError: ``dim`` is out of range, or names a dimension twice.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                row_max = self.max(scores, dim=1, keepdim=True)  # [m, n] -> [m, 1]
                p = self.exp(scores - row_max)
        """
        return _reduce("max", x, dim, keepdim, out)

    def min(self, x, /, *, dim=None, keepdim: bool = False, out=None):
        """Minimum of a register tensor over one or more dimensions.

        Args:
            x: a float or integer register tensor.
            dim: the dimension to reduce, a sequence of them, or None for all;
                negative counts from the last.
            keepdim: keep the reduced dimensions with size 1 (else they are removed).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype whose shape is ``x``'s with the reduced
            dimensions of size 1 (``keepdim=True``) or removed (``out`` when given).

        Dtypes and layouts:
            Float and integer dtypes. A NaN in a row makes its minimum NaN, as in torch.
            The result's layout is derived from ``x``'s as for :meth:`sum`.

        Raises:
            TypeError: ``x`` is not a register tensor or has a boolean dtype, or a bitwise
                ``op`` is given a float tensor; ``dim`` is
                not an integer, a sequence of integers or None; ``keepdim`` is not a bool;
                ``out`` has another dtype or shape than the result.
            ValueError: ``dim`` is out of range, or names a dimension twice.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                col_min = self.min(tile, dim=0)  # [m, n] -> [n]
        """
        return _reduce("min", x, dim, keepdim, out)

    def any(self, x, /, *, dim=None, keepdim: bool = False, out=None):
        """Whether any element is true, over one or more dimensions of a boolean tile.

        Args:
            x: a boolean register tensor (e.g. from a comparison ``x > 0``).
            dim: the dimension to reduce, a sequence of them, or None for all;
                negative counts from the last.
            keepdim: keep the reduced dimensions with size 1 (else they are removed).
            out: write the result into this boolean register tensor instead of a new one.

        Returns:
            A boolean register tensor whose shape is ``x``'s with the reduced dimensions
            of size 1 (``keepdim=True``) or removed (``out`` when given).

        Dtypes and layouts:
            ``x`` must be boolean, as in Tilus 0.2. The result's layout is derived from
            ``x``'s as for :meth:`sum`.

        Raises:
            TypeError: ``x`` is not a boolean register tensor; ``dim`` is not an integer,
                a sequence of integers or None; ``keepdim`` is not a bool; ``out`` has
                another dtype or shape than the result.
            ValueError: ``dim`` is out of range, or names a dimension twice.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                has_nan = self.any(tile != tile, dim=1)  # [m, n] -> [m]
        """
        return _reduce("any", x, dim, keepdim, out)

    def all(self, x, /, *, dim=None, keepdim: bool = False, out=None):
        """Whether every element is true, over one or more dimensions of a boolean tile.

        Args:
            x: a boolean register tensor (e.g. from a comparison ``x > 0``).
            dim: the dimension to reduce, a sequence of them, or None for all;
                negative counts from the last.
            keepdim: keep the reduced dimensions with size 1 (else they are removed).
            out: write the result into this boolean register tensor instead of a new one.

        Returns:
            A boolean register tensor whose shape is ``x``'s with the reduced dimensions
            of size 1 (``keepdim=True``) or removed (``out`` when given).

        Dtypes and layouts:
            ``x`` must be boolean, as in Tilus 0.2. The result's layout is derived from
            ``x``'s as for :meth:`sum`.

        Raises:
            TypeError: ``x`` is not a boolean register tensor; ``dim`` is not an integer,
                a sequence of integers or None; ``keepdim`` is not a bool; ``out`` has
                another dtype or shape than the result.
            ValueError: ``dim`` is out of range, or names a dimension twice.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                positive_rows = self.all(tile > 0.0, dim=1, keepdim=True)  # [m, 1]
        """
        return _reduce("all", x, dim, keepdim, out)

    def scan(self, x, /, *, dim: int, op: str, exclusive: bool = False, out=None):
        """Prefix scan of a register tensor along one dimension.

        Element ``i`` along ``dim`` of the result combines (with ``op``) the elements at
        positions ``[0, i]`` of ``x`` (inclusive) or ``[0, i)`` (``exclusive=True``: the
        op's identity at position 0), independently for every other coordinate.

        Args:
            x: a float or integer register tensor.
            dim: the dimension to scan along; negative counts from the last.
            op: ``"add"``, ``"mul"``, ``"max"``, ``"min"``, or the bitwise ``"and"``,
                ``"or"`` and ``"xor"`` (integer dtypes only).
            exclusive: scan the positions strictly before each element.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype and shape (``out`` when given).

        Dtypes and layouts:
            Float and integer dtypes. Floats narrower than float64 combine in float32 on
            CUDA (float64 in the interpreter); integers wrap to the dtype; max and min
            let a NaN win, as torch.cummax. The bitwise ops take integer dtypes only; the
            exclusive identity of ``"and"`` is all ones (-1 when signed), of ``"or"`` and
            ``"xor"`` zero. The result has ``x``'s layout. On CUDA the
            lanes of a warp combine with ``__shfl_up_sync``; warps through shared memory.

        Raises:
            TypeError: ``x`` is not a register tensor or has a boolean dtype, or a bitwise
                ``op`` is given a float tensor; ``dim`` is
                not an integer; ``exclusive`` is not a bool; ``out`` has another dtype or
                shape than ``x``.
            ValueError: ``dim`` is out of range, or ``op`` is not one of the seven.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                offsets = self.scan(counts, dim=0, op="add", exclusive=True)
        """
        x = _tensor(x, "x")
        (d,) = _const_ints([dim], "scan: dim")
        if not isinstance(exclusive, bool):
            raise TypeError(f"scan: exclusive must be True or False, got {exclusive!r}")
        if not isinstance(op, str):
            raise ValueError("scan: op must be 'add', 'mul', 'max', 'min', 'and', 'or' or 'xor', "
                             f"got {op!r}")
        builder = current_builder()
        result = builder.tile_op("scan", [x], [d], int(exclusive), text=op)
        if out is not None:
            if not isinstance(out, Tensor):
                raise TypeError(f"scan: out must be a register tensor, got {type(out).__name__}")
            builder.assign_tensor(out, result)
            return out
        return result

    def cumsum(self, x, /, *, dim: int, exclusive: bool = False, out=None):
        """Cumulative sum along one dimension: :meth:`scan` with ``op="add"``.

        Args:
            x: a float or integer register tensor.
            dim: the dimension to scan along; negative counts from the last.
            exclusive: sum the positions strictly before each element (0 at the first).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype and shape, as ``torch.cumsum`` (``out``
            when given).

        Dtypes and layouts:
            As :meth:`scan`.

        Raises:
            TypeError: ``x`` is not a register tensor or has a boolean dtype, or a bitwise
                ``op`` is given a float tensor; ``dim`` is
                not an integer; ``out`` has another dtype or shape than ``x``.
            ValueError: ``dim`` is out of range.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                running = self.cumsum(tile, dim=1)
        """
        return self.scan(x, dim=dim, op="add", exclusive=exclusive, out=out)

    def cumprod(self, x, /, *, dim: int, exclusive: bool = False, out=None):
        """Cumulative product along one dimension: :meth:`scan` with ``op="mul"``.

        Args:
            x: a float or integer register tensor.
            dim: the dimension to scan along; negative counts from the last.
            exclusive: multiply the positions strictly before each element (1 at the
                first).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype and shape, as ``torch.cumprod`` (``out``
            when given).

        Dtypes and layouts:
            As :meth:`scan`.

        Raises:
            TypeError: ``x`` is not a register tensor or has a boolean dtype, or a bitwise
                ``op`` is given a float tensor; ``dim`` is
                not an integer; ``out`` has another dtype or shape than ``x``.
            ValueError: ``dim`` is out of range.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                decay = self.cumprod(gates, dim=0)
        """
        return self.scan(x, dim=dim, op="mul", exclusive=exclusive, out=out)
