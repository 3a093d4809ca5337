"""Python operator sugar for runtime scalars (``_C.Expr``) and tiles (``_C.Tensor``).

Inside ``__call__``, ``offset = self.blockIdx.x * self.block_n`` multiplies an Expr by a
Python int and ``b = a + 1.0`` adds a scalar to a register tensor; these methods turn
such operators into IR through the current builder. Integer ``//`` and ``%`` follow C
semantics (they agree with Python's for the non-negative values kernels index with).
"""

from __future__ import annotations

import numbers

from tilus import _C
from tilus.lang.context import current_builder
from tilus.lang.types import float32, int32, int64

Expr = _C.Expr
Tensor = _C.Tensor


def as_expr(value, what: str = "value") -> Expr:
    """Turn a Python scalar or Expr into an Expr."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return _C.const_bool(value)
    if isinstance(value, numbers.Integral):
        v = int(value)
        return _C.const_int(v, int32 if -(2**31) <= v < 2**31 else int64)
    if isinstance(value, numbers.Real):
        return _C.const_float(float(value), float32)
    if isinstance(value, Tensor):
        if value.scope == "register" and all(e == 1 for e in value.shape):
            return _tensor_item(value)  # one element: phases[stage], Tilus 0.2's scalar tiles
        raise TypeError(f"{what} must be a scalar, got a {value.type_str()} tensor")
    raise TypeError(f"{what} must be a scalar (int, float, bool or a runtime value), "
                    f"got {type(value).__name__}")


def is_scalar(value) -> bool:
    return isinstance(value, (Expr, numbers.Number))


# ------------------------------------------------------------------ Expr operators

def _expr_binop(op, reflected=False):
    def method(self, other):
        if not is_scalar(other):
            return NotImplemented
        a, b = self, as_expr(other)
        if reflected:
            a, b = b, a
        return _C.binary(op, a, b)

    return method


def _expr_truediv(self, other, reflected=False):
    if not is_scalar(other):
        return NotImplemented
    a, b = self, as_expr(other)
    if reflected:
        a, b = b, a
    if not a.dtype.is_float and not b.dtype.is_float:
        a, b = _C.cast(a, float32), _C.cast(b, float32)
    return _C.binary("/", a, b)


def _expr_floordiv(self, other, reflected=False):
    if not is_scalar(other):
        return NotImplemented
    a, b = self, as_expr(other)
    if reflected:
        a, b = b, a
    if a.dtype.is_float or b.dtype.is_float:
        raise TypeError("// on floating-point runtime values is not supported; use / and a cast")
    return _C.binary("/", a, b)


def _expr_bool(self):
    raise TypeError(
        f"the runtime value '{self}' has no Python truth value: tilus decides this at run time "
        "only in `if`/`while` statements and in `x if cond else y`; `and`/`or`/`not` "
        "work inside those conditions"
    )


def _expr_index(self):
    raise TypeError(f"the runtime value '{self}' cannot be used where Python needs a "
                    "compile-time integer (a shape, a range of Python values, ...)")


for _name, _op in [("add", "+"), ("sub", "-"), ("mul", "*"), ("mod", "%"),
                   ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="),
                   ("eq", "=="), ("ne", "!=")]:
    setattr(Expr, f"__{_name}__", _expr_binop(_op))
for _name, _op in [("add", "+"), ("sub", "-"), ("mul", "*"), ("mod", "%")]:
    setattr(Expr, f"__r{_name}__", _expr_binop(_op, reflected=True))
Expr.__truediv__ = _expr_truediv
Expr.__rtruediv__ = lambda self, other: _expr_truediv(self, other, True)
Expr.__floordiv__ = _expr_floordiv
Expr.__rfloordiv__ = lambda self, other: _expr_floordiv(self, other, True)
Expr.__neg__ = lambda self: _C.neg(self)
Expr.__pos__ = lambda self: self
Expr.__bool__ = _expr_bool
Expr.__index__ = _expr_index
Expr.__hash__ = object.__hash__
Expr.__repr__ = lambda self: f"Expr({self}: {self.dtype.name})"


# ------------------------------------------------------------------ Tensor operators

def tensor_binary(op: str, a, b, out=None):
    """Elementwise ``a op b`` where at least one side is a register tensor.

    Python operators on tiles land here: ``+ - * / %`` (``//`` divides like ``/``),
    comparisons ``< <= > >= == !=``, and their reflected forms (``1.0 - x``). A scalar
    side (a Python number or a runtime value) applies to every element.

    Args:
        op: the operator: ``"+"``, ``"-"``, ``"*"``, ``"/"``, ``"%"``, ``"<"``,
            ``"<="``, ``">"``, ``">="``, ``"=="``, ``"!="``, ``"min"`` or ``"max"``.
        a: the left operand, a register tensor or a scalar.
        b: the right operand, a register tensor or a scalar.
        out: write the result into this register tensor instead of a new one.

    Returns:
        A register tensor: boolean for comparisons, else the promoted dtype.

    Dtypes and layouts:
        Two tiles promote as in C. A Python constant takes the tile's dtype (a float32
        tile + 1.0 stays float32; an int tile with a float constant becomes float32); a
        runtime scalar promotes with the tile. Shapes broadcast numpy-style, on CUDA
        too: a broadcast tile takes the result's layout with its size-1 dimensions reduced
        (what a keepdim reduction gives it). Tiles of the result's shape share its layout.

    Raises:
        TypeError: neither side is a tensor; a side is a pointer, or a global or shared
            tensor.
        ValueError: the shapes cannot be broadcast together, or ``out`` has another shape.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            b = a * scale + 1.0
            mask = a > 0.0
    """
    builder = current_builder()
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return builder.binary(op, a, b, out)
    if isinstance(a, Tensor):
        return builder.binary_scalar(op, a, as_expr(b, "the scalar operand"), False, out)
    if isinstance(b, Tensor):
        return builder.binary_scalar(op, b, as_expr(a, "the scalar operand"), True, out)
    raise TypeError("tensor_binary needs a tensor operand")


def _tensor_binop(op, reflected=False):
    def method(self, other):
        if not isinstance(other, Tensor) and not is_scalar(other):
            return NotImplemented
        return tensor_binary(op, other, self) if reflected else tensor_binary(op, self, other)

    return method


for _name, _op in [("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("mod", "%"),
                   ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="),
                   ("eq", "=="), ("ne", "!=")]:
    setattr(Tensor, f"__{_name}__", _tensor_binop(_op))
for _name, _op in [("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("mod", "%")]:
    setattr(Tensor, f"__r{_name}__", _tensor_binop(_op, reflected=True))
Tensor.__floordiv__ = _tensor_binop("/")


def _tensor_neg(x):
    """Elementwise negation of a register tile: ``-x``.

    Args:
        x: a register tensor.

    Returns:
        A register tensor of ``x``'s dtype, shape and layout.

    Dtypes and layouts:
        Any numeric dtype; the result keeps ``x``'s dtype and layout.

    Raises:
        TypeError: ``x`` is a global or shared tensor.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            y = -x
    """
    return current_builder().neg(x)


def _tensor_invert(x):
    """Elementwise logical not of a register tile: ``~x`` (on a tensor; ``~g[i, j]`` on a
    global tensor element is its address, see indexing).

    Args:
        x: a register tensor, usually boolean (from a comparison).

    Returns:
        A boolean register tensor of ``x``'s shape.

    Dtypes and layouts:
        Non-boolean tiles count non-zero as true; the result is boolean, with ``x``'s
        layout.

    Raises:
        TypeError: ``x`` is a global or shared tensor.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            outside = ~(x < limit)
    """
    return current_builder().logical_not(x)


Tensor.__neg__ = _tensor_neg
Tensor.__invert__ = _tensor_invert
Tensor.__hash__ = object.__hash__


def _tensor_bool(self):
    raise TypeError(f"a {self.type_str()} tensor has no truth value")


Tensor.__bool__ = _tensor_bool


def _tensor_getitem(self, index):
    """Index a tensor: ``s[i, ...]`` slices a shared tensor, ``g[i, j]`` reads a global
    element, ``~g[i, j]`` is its address.

    A shared tensor indexed with fewer indices than its rank gives the sub-tensor with
    the leading dimensions fixed (one stage of a pipeline buffer, ``sa[stage]``); it
    shares the allocation and can be used wherever a shared tensor can (but not freed).
    One index per dimension gives the rank-0 view of that element (``s[i, j].item()``,
    ``s[i, j].item_ptr()``, or storing a full reduction into it).
    A global tensor indexed with one index per dimension gives the element as a runtime
    scalar; ``~`` of it is the element's address (for semaphores).
    A register tensor indexed (``phases[stage]``, ``r[i, :]``; Tilus 0.2's slice_register)
    gives a register tensor of the kept dimensions (shape [1] for an element, usable as a
    scalar); ``r[i] = v`` and ``r[i] ^= 1`` write elements. Indexed register tensors are
    held whole by every thread, so keep them small (a phase per pipeline stage).

    Args:
        index: runtime or constant integers, one per leading dimension.

    Returns:
        A shared tensor (shared), a runtime scalar (global), or a register tensor
        (register).

    Dtypes and layouts:
        The slice keeps the shared tensor's dtype and its layout restricted to the
        remaining dimensions; a global element has the tensor's dtype. An indexed register
        tensor (8-bit elements or wider) is held whole by every thread, so the slice moves
        no data between threads.

    Raises:
        TypeError: an index is not an integer.
        ValueError: a shared tensor gets more indices than its rank, or none.
        IndexError: a constant index is out of range, or a register tensor gets more indices
            than its rank or a slice other than ``:``.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            a = self.load_shared(sa[current_stage])
            self.lock_semaphore(~semaphores[bi, bj], value=0)
            self.mbarrier.wait(full[stage], phase=phases[stage])  # phases: uint32 [stages]
    """
    if not isinstance(index, tuple):
        index = (index,)
    if self.scope == "shared":
        return current_builder().slice_shared(self, [as_expr(i, "an index") for i in index])
    if self.scope == "global":
        return _C.element_load(self, [as_expr(i, "an index") for i in index])
    offsets, kept = register_index(self, index)
    return current_builder().tile_op("slice_register", [self], dims=kept, args=offsets)


def register_index(tensor, index):
    """The offsets (one per dimension) and kept dimensions of a register tensor's index
    ``r[i]``, ``r[i, :]``: integers or runtime values, ``:`` keeps a whole dimension, and
    the dimensions after the last index are kept."""
    if len(index) > tensor.rank:
        raise IndexError(f"{tensor.name} has {tensor.rank} dimension(s), got {len(index)} indices")
    offsets, kept = [], []
    for d in range(tensor.rank):
        i = index[d] if d < len(index) else slice(None)
        if isinstance(i, slice):
            if (i.start, i.stop, i.step) != (None, None, None):
                raise IndexError(f"indexing {tensor.name}: a slice keeps a whole dimension (':'); "
                                 "narrower slices are not supported")
            offsets.append(as_expr(0))
            kept.append(d)
        else:
            offsets.append(as_expr(i, "an index"))
    return offsets, kept


Tensor.__getitem__ = _tensor_getitem


# ------------------------------------------------------------------ Tilus 0.2 tensor methods

def _is_integral(dtype) -> bool:
    return dtype.is_integer or dtype.is_bool


def _tensor_xor(a, b):
    """Elementwise exclusive or of integer or boolean tiles: ``x ^ y``.

    Args:
        a: a register tensor (or an integer scalar when ``b`` is a tensor).
        b: a register tensor or an integer/boolean scalar.

    Returns:
        A register tensor of the promoted dtype (boolean for two boolean operands).

    Dtypes and layouts:
        Integer and boolean dtypes only; a Python constant takes the tile's dtype. Tied
        tiles share one layout; shapes broadcast in the interpreter, the CUDA backend
        needs equal shapes.

    Raises:
        TypeError: an operand is a float tile or a float scalar, or a global or shared
            tensor.
        ValueError: the shapes cannot be broadcast.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            flipped = bits ^ 1
            differ = (a > 0) ^ (b > 0)
    """
    for side in (a, b):
        dtype = side.dtype if isinstance(side, (Tensor, Expr)) else as_expr(side).dtype
        if not _is_integral(dtype):
            raise TypeError(f"^ needs integer or boolean operands, got {dtype.name}")
    return tensor_binary("^", a, b)


def _tensor_xor_method(reflected):
    def method(self, other):
        if not isinstance(other, Tensor) and not is_scalar(other):
            return NotImplemented
        return _tensor_xor(other, self) if reflected else _tensor_xor(self, other)

    return method


Tensor.__xor__ = _tensor_xor_method(False)
Tensor.__rxor__ = _tensor_xor_method(True)


def _expr_bitwise(op: str, reflected: bool):
    """Runtime scalars' ``&``, ``|``, ``^`` (integers, or a boolean with an integer: the
    promoted type must be an integer, which make_binary checks; ``phase ^ True``) and
    ``<<``, ``>>`` (integers; a shift by a negative amount or the width or more gives 0, or
    -1 for ``>>`` of a negative signed value, where C leaves it undefined)."""
    shift = op in ("<<", ">>")

    def method(self, other):
        if not is_scalar(other):
            return NotImplemented
        a, b = self, as_expr(other)
        if reflected:
            a, b = b, a
        for side in (a, b):
            if not (side.dtype.is_integer if shift else _is_integral(side.dtype)):
                raise TypeError(f"{op} needs integer{'' if shift else ' or boolean'} operands, "
                                f"got {side.dtype.name}")
        return _C.binary(op, a, b)

    return method


for _op, _name in (("&", "and"), ("|", "or"), ("^", "xor"), ("<<", "lshift"), (">>", "rshift")):
    setattr(Expr, f"__{_name}__", _expr_bitwise(_op, False))
    setattr(Expr, f"__r{_name}__", _expr_bitwise(_op, True))


def _tensor_abs(self):
    return current_builder().tile_op("abs", [self])


def _expr_abs(self):
    return _C.select(_C.binary("<", self, as_expr(0)), _C.neg(self), self)


Tensor.__abs__ = _tensor_abs
Expr.__abs__ = _expr_abs


def _tensor_to(self, dtype):
    """Cast a register tile to ``dtype`` (Tilus 0.2's ``x.to(dtype)``; the same as
    ``self.cast(x, dtype=dtype)``).

    Args:
        dtype: the target element type.

    Returns:
        A register tensor of ``dtype`` with the tile's shape and layout.

    Dtypes and layouts:
        Any scalar dtype to any scalar dtype, as ``self.cast``.

    Raises:
        TypeError: the tensor is not a register tensor; ``dtype`` is not a tilus dtype.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            c16 = acc.to(float16)
    """
    if not isinstance(dtype, _C.DataType):
        raise TypeError(f"to: dtype must be a tilus data type such as tilus.float16, got {dtype!r}")
    return current_builder().cast(self, dtype)


def _one_element(self, what: str):
    shape = list(self.shape)
    if not all(isinstance(s, int) and s == 1 for s in shape):
        raise ValueError(f"{what} needs a tensor with exactly one element, got a "
                         f"{self.type_str()} tensor")


def _tensor_item(self):
    """The single element of a one-element tensor as a scalar value (Tilus 0.2's
    ``x.item()``), usable in expressions, conditions and as an instruction argument.

    On a register tile it reads the element every thread holds; on a global tensor
    (or a global element ``g[i, j]``) it loads the element; on a shared tensor (or the
    rank-0 view ``s[i, j]`` of one element) every thread reads the element from shared
    memory, as ``self.load_shared`` would.

    Returns:
        A runtime scalar of the tensor's dtype.

    Dtypes and layouts:
        Any scalar dtype. A one-element register tile's layout puts the element in every
        thread, so no data moves.

    Raises:
        ValueError: the tensor has more than one element, or is a freed shared tensor.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            total = self.sum(self.sum(tile, dim=1, keepdim=True), dim=0, keepdim=True)
            if total.item() > 0.0:
                ...
            limit = counts[2].item()  # a shared tensor's element
    """
    _one_element(self, "item()")
    if self.scope == "global":
        return _C.element_load(self, [as_expr(0)] * self.rank)
    builder = current_builder()
    tile = builder.load_shared(self) if self.scope == "shared" else self
    var = builder.declare(f"{self.name}_item", self.dtype, None)
    builder.tile_op("tensor_item", [tile], args=[var])
    return var


def _tensor_tolist(self):
    """The elements of a register tile as runtime scalars (Tilus 0.2's ``x.tolist()``): a
    flat list in row-major order, whatever the tile's rank; a rank-0 tile gives its one
    element itself (as ``x.item()``).

    Returns:
        A list of ``x.numel`` runtime scalars of the tile's dtype (a scalar for rank 0).

    Dtypes and layouts:
        Any scalar dtype. A tile every thread holds entirely (one element, or a layout
        replicated over all threads) is read in place; otherwise the elements go through
        shared memory once and every thread reads them all (two block barriers), so call
        it where every thread of the block reaches it.

    Raises:
        TypeError: the tensor is a global tensor (read ``g[i, j]`` instead).
        ValueError: the tile has more than 1024 elements (each becomes a scalar variable).
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            lo, hi = bounds.tolist()          # a [2] tile
            (value,) = total.tolist()         # a [1, 1] tile
    """
    if self.scope == "global":
        raise TypeError("tolist() needs a register or shared tensor, got a global tensor; read "
                        "its elements as g[i, j]")
    shape = list(self.shape)
    numel = 1
    for extent in shape:
        numel *= extent
    if numel == 1:
        return _tensor_item(self) if not shape else [_tensor_item(self)]
    if numel > 1024:
        raise ValueError(f"tolist() of a {self.type_str()} tensor would make {numel} scalars; "
                         "it is meant for small tiles (at most 1024 elements)")
    builder = current_builder()
    tile = builder.load_shared(self) if self.scope == "shared" else self
    values = [builder.declare(f"{self.name}_item", self.dtype, None) for _ in range(numel)]
    builder.tile_op("tensor_item", [tile], args=values)
    return values


def _tensor_item_ptr(self):
    """The address of the single element of a one-element global or shared tensor (Tilus
    0.2's ``g.item_ptr()`` / ``s.item_ptr()``); ``g[i, j].item_ptr()`` is the address of
    element (i, j), the same as ``~g[i, j]``, and ``s[i, j].item_ptr()`` that of a shared
    element (a generic pointer into shared memory, as Tilus 0.2 gives).

    Returns:
        A runtime pointer (``~dtype``).

    Dtypes and layouts:
        Any scalar dtype; the pointer's pointee is the tensor's dtype. A shared element's
        address follows the shared layout (swizzles included). In the CPU interpreter a
        shared address is the host address of the block's shared buffer.

    Raises:
        ValueError: the tensor has more than one element.
        TypeError: the tensor is a register tile.
        RuntimeError: used outside a script's ``__call__`` while tilus compiles it.

    Example:
        .. code-block:: python

            self.lock_semaphore(semaphores[bi, bj].item_ptr(), value=0)
            flag_ptr = flags[0].item_ptr()  # ~int32 into shared memory
    """
    if self.scope not in ("global", "shared"):
        raise TypeError(f"item_ptr() needs a global or shared tensor, got a {self.scope} tensor")
    _one_element(self, "item_ptr()")
    if self.scope == "shared":
        builder = current_builder()
        var = builder.declare(f"{self.name}_ptr", ~self.dtype, None)
        builder.tile_op("shared_item_ptr", [self], args=[var])
        return var
    return _C.element_addr(self, [as_expr(0)] * self.rank)


def _tensor_size(self):
    """The number of elements (Tilus 0.2's ``x.size``): an int for shared and register
    tensors, a runtime value for a global tensor whose extents are."""
    size = 1
    for extent in self.shape:
        size = size * extent
    return size


def _tensor_nbytes(self):
    """The bytes the elements take, sub-byte types packed (Tilus 0.2's ``x.nbytes``):
    what a TMA copy of the whole shared tensor brings, as ``arrive_and_expect_tx``
    expects it. A runtime value for a global tensor of runtime extents."""
    size = _tensor_size(self)
    return (size * self.dtype.bits + 7) // 8


Tensor.size = property(_tensor_size)
Tensor.nbytes = property(_tensor_nbytes)
# Our shared layouts (swizzles included) are compact: the storage is the elements.
Tensor.storage_nbytes = property(_tensor_nbytes)
Tensor.to = _tensor_to
Tensor.item = _tensor_item
Tensor.tolist = _tensor_tolist
Tensor.item_ptr = _tensor_item_ptr


def _expr_item_ptr(self):
    if self.kind != "element_load":
        raise TypeError(f"item_ptr() applies to a tensor element such as g[i, j]; '{self}' is "
                        "a runtime value")
    return _C.element_addr(self.element_tensor, self.element_indices)


def _expr_item(self):
    if self.kind != "element_load":
        raise TypeError(f"item() applies to a tensor element such as g[i, j]; '{self}' is "
                        "already a runtime value")
    return self


Expr.item_ptr = _expr_item_ptr
Expr.item = _expr_item
