"""Atomics on shared and global memory, scatter stores and random numbers.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).

The atomics are Tilus's ``self.atomic`` group: ``self.atomic.shared_add(dst, values)``
(element-wise: tile element k updates dst element k), ``self.atomic.global_add(...)``,
``self.atomic.shared_scatter_add(dst, dim=, indices=, values=)`` (element k updates dst at
k's coordinates with dimension ``dim`` replaced by ``indices[k]``, as
``torch.Tensor.scatter_add_``) and ``self.atomic.global_scatter_add(...)``; each returns
the register tile of the values the elements held before. The IR instructions are
``atomic_shared``, ``atomic_global``, ``atomic_shared_scatter`` and
``atomic_global_scatter`` (csrc/ops/atomics.cc).
"""

from __future__ import annotations

from tilus.lang.context import current_builder
from tilus.lang.operands import _const_ints, _exprs, _tensor
from tilus.lang.values import Tensor, as_expr

_SEMS = ("relaxed", "acquire", "release", "acq_rel")
_SCOPES = ("cta", "cluster", "gpu", "sys")


def _attr(sem, scope) -> int:
    if sem not in _SEMS:
        raise ValueError(f"sem must be one of {', '.join(map(repr, _SEMS))}, got {sem!r}")
    if scope not in _SCOPES:
        raise ValueError(f"scope must be one of {', '.join(map(repr, _SCOPES))}, got {scope!r}")
    return _SCOPES.index(scope) + 4 * _SEMS.index(sem)


def _finish(result, output):
    """Tilus's ``output=``: the old values are also written into that register tile."""
    if output is None:
        return result
    current_builder().assign_tensor(_tensor(output, "output"), result)
    return output


def _elementwise(space: str, op: str):
    default_scope = "cta" if space == "shared" else "gpu"

    if op == "cas":
        def method(self, dst, compare, values, *, sem: str = "relaxed", scope: str = default_scope,
                   output=None, offsets=None):
            return _atomic(space, op, dst, values, compare, sem, scope, output, offsets)
    else:
        def method(self, dst, values, *, sem: str = "relaxed", scope: str = default_scope,
                   output=None, offsets=None):
            return _atomic(space, op, dst, values, None, sem, scope, output, offsets)

    method.__name__ = f"{space}_{op}"
    method.__qualname__ = f"AtomicGroup.{space}_{op}"
    method.__doc__ = _elementwise_doc(space, op, default_scope)
    return method


def _atomic(space, op, dst, values, compare, sem, scope, output, offsets):
    dst = _tensor(dst, "dst")
    values = _tensor(values, "values")
    inputs = [dst, values] + ([_tensor(compare, "compare")] if compare is not None else [])
    args = []
    if space == "global":
        rank = len(dst.shape)
        args = _exprs([0] * rank if offsets is None else offsets, "an offset")
        if len(args) != rank:
            raise ValueError(f"offsets: {len(args)} given for a rank-{rank} dst")
    elif offsets is not None:
        raise ValueError("offsets: only the global form takes offsets; slice a shared tensor "
                         "with s[i] instead")
    result = current_builder().tile_op(f"atomic_{space}", inputs, int_attr=_attr(sem, scope),
                                       args=args, text=op)
    return _finish(result, output)


def _scatter(space: str, op: str):
    default_scope = "cta" if space == "shared" else "gpu"

    def method(self, dst, *, dim: int, indices, values, sem: str = "relaxed",
               scope: str = default_scope, output=None):
        inputs = [_tensor(dst, "dst"), _tensor(indices, "indices"), _tensor(values, "values")]
        result = current_builder().tile_op(f"atomic_{space}_scatter", inputs,
                                           dims=_const_ints(dim, "dim"),
                                           int_attr=_attr(sem, scope), text=op)
        return _finish(result, output)

    method.__name__ = f"{space}_scatter_{op}"
    method.__qualname__ = f"AtomicGroup.{space}_scatter_{op}"
    method.__doc__ = _scatter_doc(space, op, default_scope)
    return method


_WHAT = {"add": "``dst[i] + values[k]``", "sub": "``dst[i] - values[k]``",
         "min": "``min(dst[i], values[k])``", "max": "``max(dst[i], values[k])``",
         "exch": "``values[k]`` (exchange)",
         "cas": "``values[k]`` if ``dst[i] == compare[k]`` (compare-and-swap; the bit patterns "
                "are compared), else unchanged"}
_DTYPES = {"add": "int32, uint32, int64, uint64, float16, bfloat16 (a compare-and-swap loop "
                  "before sm_90), float32 (subnormals flush to zero, as ``atom.add.f32``) and "
                  "float64",
           "min": "int32, uint32, int64 and uint64", "exch": "32- and 64-bit ints and floats"}
_DTYPES.update(sub=_DTYPES["add"], max=_DTYPES["min"], cas=_DTYPES["exch"])


def _elementwise_doc(space, op, default_scope):
    where = "a shared tensor" if space == "shared" else "a global tensor"
    cas_arg = ("    compare: a register tile like ``values``: the value each element must hold "
               "for the swap.\n" if op == "cas" else "")
    offsets = ("    offsets: (tilus extension) where tile element 0 lands in ``dst``, one per "
               "dimension; default all 0. Elements outside ``dst`` are dropped and read 0.\n"
               if space == "global" else
               "    offsets: global form only (slice a shared tensor with ``s[i]``).\n")
    call = ("self.atomic.shared_cas(lock, compare=zero, values=one)" if op == "cas" else
            f"self.atomic.{space}_{op}(dst, values)")
    return f"""Atomic element-wise ``{op}`` on {where}: ``dst[i] = {_WHAT[op].strip('`')}``.

Tile element ``k`` of ``values`` updates element ``i = offsets + k`` of ``dst`` as one
indivisible read-modify-write: ``dst[i]`` becomes {_WHAT[op]}. Each element is applied
once even where the register layout replicates it over threads. CUDA lowers it to
``atomicAdd``/``atomicMin``/``atomicMax``/``atomicExch``/``atomicCAS`` at the scope
(``_block`` for ``'cta'``, ``_system`` for ``'sys'``); when the old values are never read
the compiler issues ``red`` instead. The interpreter applies the elements one at a time.

Args:
    dst: {where}; the shared form needs ``dst.shape == values.shape``.
{cas_arg}    values: a register tile of ``dst``'s dtype and rank.
    sem: ``'relaxed'`` (default), ``'acquire'``, ``'release'`` or ``'acq_rel'``: the
        ordering, given by a ``fence.acq_rel`` at the scope after (acquire) and/or before
        (release); not sequentially consistent.
    scope: ``'cta'``, ``'cluster'``, ``'gpu'`` or ``'sys'`` (default ``'{default_scope}'``).
    output: also write the old values into this register tile (Tilus's ``output=``).
{offsets}
Returns:
    A register tile (``values``' shape and dtype) of the values the elements held before
    the operation (``output`` when given).

Dtypes and layouts:
    {_DTYPES[op]}; ``values`` has ``dst``'s dtype. Other dtypes are refused when the
    script is built. ``values`` and the result share one layout.

Raises:
    TypeError: ``dst`` is not {where}; ``values`` is not a register tile of ``dst``'s dtype;
        the dtype has no such atomic.
    ValueError: shapes or ranks differ; ``sem``/``scope`` is unknown; ``offsets`` is given
        to the shared form or has the wrong length.
    RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

Example:
    .. code-block:: python

        old = {call}
"""


def _scatter_doc(space, op, default_scope):
    where = "a shared tensor" if space == "shared" else "a global tensor"
    return f"""Atomic scatter-``{op}`` into {where} along ``dim``.

For each tile element ``k`` (coordinates ``c``), ``dst[c with c[dim] = indices[k]]`` becomes
{_WHAT[op].replace('dst[i]', 'that element')} as one indivisible read-modify-write, like
``torch.Tensor.scatter_{'add' if op == 'add' else 'reduce'}_``: the non-``dim`` coordinates come
from the tile position. Conflicting indices all apply (a histogram). An index outside
``dst`` (or a coordinate outside a runtime-sized global ``dst``) is dropped and its old
value reads 0.

Args:
    dst: {where}; its non-``dim`` extents equal the tile's (a runtime global extent is
        checked per element instead).
    dim: the scatter dimension of ``dst`` (negative counts from the end).
    indices: an integer register tile, the position along ``dim`` per element.
    values: a register tile of ``dst``'s dtype and ``indices``' shape.
    sem: ``'relaxed'`` (default), ``'acquire'``, ``'release'`` or ``'acq_rel'``.
    scope: ``'cta'``, ``'cluster'``, ``'gpu'`` or ``'sys'`` (default ``'{default_scope}'``).
    output: also write the old values into this register tile.

Returns:
    A register tile of the values each target held before its update.

Dtypes and layouts:
    {_DTYPES[op]}. The scatter form has add, sub, min and max (Tilus drops exch and cas,
    ambiguous under duplicate indices). ``indices``, ``values`` and the result share one
    layout.

Raises:
    TypeError: operand scopes or dtypes are wrong; the dtype has no such atomic.
    ValueError: shapes or ranks differ; ``dim`` is out of range; ``sem``/``scope`` unknown.
    RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

Example:
    .. code-block:: python

        self.atomic.{space}_scatter_{op}(hist, dim=0, indices=bins, values=ones)
"""


class AtomicGroup:
    """``self.atomic``: atomic read-modify-write instructions (Tilus's AtomicInstructionGroup).

    Element-wise forms ``shared_<op>`` / ``global_<op>`` for ``add sub min max exch cas``;
    scatter forms ``shared_scatter_<op>`` / ``global_scatter_<op>`` for ``add sub min max``.
    """

    __slots__ = ()


for _space in ("shared", "global"):
    for _op in ("add", "sub", "min", "max", "exch", "cas"):
        setattr(AtomicGroup, f"{_space}_{_op}", _elementwise(_space, _op))
    for _op in ("add", "sub", "min", "max"):
        setattr(AtomicGroup, f"{_space}_scatter_{_op}", _scatter(_space, _op))

_GROUP = AtomicGroup()


def _random(name, seed, offset, n_rounds, word=0):
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, int):
        raise TypeError(f"n_rounds must be a Python int, got {n_rounds!r}")
    return current_builder().tile_op(name, [_tensor(offset, "offset")], dims=[word],
                                     int_attr=n_rounds, args=[as_expr(seed, "seed")])


class AtomicInstructions:
    @property
    def atomic(self) -> AtomicGroup:
        """The atomic instruction group: ``self.atomic.global_add(...)`` and friends."""
        return _GROUP

    def store_global_scatter(self, dst, *, dim: int, indices, values):
        """Non-atomic scatter store into a global tensor along ``dim``.

        Tile element ``k`` (coordinates ``c``) is written to ``dst[c with c[dim] =
        indices[k]]``. Elements whose target lies outside ``dst`` are dropped, as
        :meth:`store_global` drops them. Under duplicate indices one of the writers wins
        (unspecified which on the GPU; the last in row-major order in the interpreter):
        use ``self.atomic.global_scatter_add`` and friends when duplicates matter.

        Args:
            dst: a global tensor; its non-``dim`` extents equal the tile's (a runtime extent
                is checked per element instead).
            dim: the scatter dimension (negative counts from the end).
            indices: an integer register tile of ``values``' shape.
            values: a register tile of ``dst``'s dtype.

        Dtypes and layouts:
            Any whole-byte dtype; ``values`` has ``dst``'s dtype. ``indices`` is converted to
            ``values``' layout if the two differ.

        Raises:
            TypeError: ``dst`` is not a global tensor; dtypes differ; ``indices`` is not an
                integer register tile.
            ValueError: shapes or ranks differ; ``dim`` is out of range.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.store_global_scatter(out, dim=0, indices=perm, values=x)
        """
        current_builder().tile_op("store_global_scatter",
                                  [_tensor(dst, "dst"), _tensor(indices, "indices"),
                                   _tensor(values, "values")], dims=_const_ints(dim, "dim"))

    def store_shared_scatter(self, dst, *, dim: int, indices, values):
        """Non-atomic scatter store into a shared tensor along ``dim``.

        As :meth:`store_global_scatter`, into shared memory: tile element ``k`` is written
        to ``dst[c with c[dim] = indices[k]]``; an index outside ``dst.shape[dim]`` is
        dropped.

        Args:
            dst: a shared tensor whose non-``dim`` extents equal the tile's.
            dim: the scatter dimension (negative counts from the end).
            indices: an integer register tile of ``values``' shape.
            values: a register tile of ``dst``'s dtype.

        Dtypes and layouts:
            Any whole-byte dtype; ``values`` has ``dst``'s dtype.

        Raises:
            TypeError: ``dst`` is not a shared tensor; dtypes differ; ``indices`` is not an
                integer register tile.
            ValueError: shapes or ranks differ; ``dim`` is out of range.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.store_shared_scatter(s, dim=0, indices=perm, values=x)
        """
        current_builder().tile_op("store_shared_scatter",
                                  [_tensor(dst, "dst"), _tensor(indices, "indices"),
                                   _tensor(values, "values")], dims=_const_ints(dim, "dim"))

    # ------------------------------------------------------------ random numbers
    def randint4x(self, seed, offset, n_rounds: int = 10):
        """Four tiles of random uint32 from Philox-4x32 (Tilus's ``randint4x``).

        Element ``k`` is the Philox-4x32-``n_rounds`` block of counter ``(offset[k], 0, 0,
        0)`` (a 64-bit offset fills the second word with its high half) and key ``(low,
        high 32 bits of seed)``, as Triton's ``tl.randint4x``. The same seed and offsets give
        the same numbers on the GPU and in the interpreter, bit for bit.

        Args:
            seed: an integer scalar (Python int or runtime value), taken as uint64.
            offset: an integer register tile; one counter per element.
            n_rounds: the number of Philox rounds, a Python int (default 10).

        Returns:
            A tuple of four uint32 register tiles of ``offset``'s shape (the four words).

        Dtypes and layouts:
            ``offset`` of any integer dtype; results are uint32 with ``offset``'s layout.

        Raises:
            TypeError: ``offset`` is not an integer register tile; ``seed`` is not an
                integer; ``n_rounds`` is not an int.
            ValueError: ``n_rounds`` is outside 1..64.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                r0, r1, r2, r3 = self.randint4x(seed, offsets)
        """
        return tuple(_random("randint", seed, offset, n_rounds, w) for w in range(4))

    def randint(self, seed, offset, n_rounds: int = 10):
        """A tile of random uint32 from Philox-4x32: the first word of :meth:`randint4x`.

        Args:
            seed: an integer scalar, taken as uint64.
            offset: an integer register tile; one counter per element.
            n_rounds: the number of Philox rounds (default 10).

        Returns:
            A uint32 register tile of ``offset``'s shape.

        Dtypes and layouts:
            ``offset`` of any integer dtype; the result has its layout.

        Raises:
            TypeError: ``offset`` is not an integer register tile; ``seed`` is not an integer.
            ValueError: ``n_rounds`` is outside 1..64.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                bits = self.randint(seed, offsets)
        """
        return _random("randint", seed, offset, n_rounds, 0)

    def rand(self, seed, offset, n_rounds: int = 10):
        """A tile of float32 uniform in [0, 1) from Philox-4x32.

        The value is ``(randint(seed, offset) >> 8) * 2**-24``: exact, so it is the same
        bit for bit on the GPU and in the interpreter, and never 1.0.

        Args:
            seed: an integer scalar, taken as uint64.
            offset: an integer register tile; one counter per element.
            n_rounds: the number of Philox rounds (default 10).

        Returns:
            A float32 register tile of ``offset``'s shape.

        Dtypes and layouts:
            ``offset`` of any integer dtype; the result has its layout.

        Raises:
            TypeError: ``offset`` is not an integer register tile; ``seed`` is not an integer.
            ValueError: ``n_rounds`` is outside 1..64.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                keep = self.rand(seed, offsets) > p
        """
        return _random("rand", seed, offset, n_rounds)

    def randn(self, seed, offset, n_rounds: int = 10):
        """A tile of float32 from the standard normal distribution (Philox-4x32, Box-Muller).

        With the first two words ``x0, x1`` of :meth:`randint4x`: ``u1 = ((x0 >> 8) + 1) *
        2**-24`` in (0, 1], ``u2 = (x1 >> 8) * 2**-24``, and the value ``sqrt(-2 log u1) *
        cos(2 pi u2)`` in float32. The GPU and the interpreter agree to a few ulp (their
        ``log``/``cos`` differ in the last bits).

        Args:
            seed: an integer scalar, taken as uint64.
            offset: an integer register tile; one counter per element.
            n_rounds: the number of Philox rounds (default 10).

        Returns:
            A float32 register tile of ``offset``'s shape.

        Dtypes and layouts:
            ``offset`` of any integer dtype; the result has its layout.

        Raises:
            TypeError: ``offset`` is not an integer register tile; ``seed`` is not an integer.
            ValueError: ``n_rounds`` is outside 1..64.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                noise = self.randn(seed, offsets)
        """
        return _random("randn", seed, offset, n_rounds)

