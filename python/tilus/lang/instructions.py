"""The tile instructions a script calls as ``self.<name>(...)``.

Each method checks its Python-level arguments and emits IR through the current
builder; operand checks (dtype, rank, shape) are in the C++ builder, which reports
them with the script line.
"""

from __future__ import annotations

from typing import Optional, Sequence

from tilus import _C
from tilus.lang.context import current_builder
from tilus.lang.types import DataType, bfloat16, float16, float32, float64, int8, int32
from tilus.lang.values import Expr, Tensor, as_expr, tensor_binary


def _dtype(value, what: str) -> DataType:
    if isinstance(value, DataType):
        return value
    raise TypeError(f"{what} must be a tilus data type such as tilus.float16, got {value!r}")


def _const_ints(values, what: str) -> list:
    if isinstance(values, int):
        values = [values]
    out = []
    for v in values:
        if isinstance(v, Expr):
            if v.is_const and isinstance(v.value, int):
                v = v.value
            else:
                raise TypeError(f"{what} must be compile-time integers; '{v}' is a runtime value")
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} must be integers, got {v!r}")
        out.append(int(v))
    return out


def _exprs(values, what: str) -> list:
    if isinstance(values, (int, Expr)):
        values = [values]
    return [as_expr(v, what) for v in values]


def _tensor(value, what: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{what} must be a tensor, got {type(value).__name__}")
    return value


def _dims(dims) -> list:
    return [] if dims is None else _const_ints(dims, "dims")


class _BlockIdx:
    """``self.blockIdx.x/y/z`` inside a script."""

    @property
    def x(self):
        return _C.block_idx(0)

    @property
    def y(self):
        return _C.block_idx(1)

    @property
    def z(self):
        return _C.block_idx(2)


class _Range:
    """What ``self.range(...)`` returns; only a ``for`` statement may consume it."""

    def __init__(self, start, end, step, unroll):
        self.start, self.end, self.step, self.unroll = start, end, step, unroll

    def __iter__(self):
        raise TypeError("self.range(...) can only be used as the iterable of a for statement")


_DEFAULT_ACCUMULATOR = {float16: float32, bfloat16: float32, int8: int32, float32: float32,
                        float64: float64}


class InstructionMixin:
    blockIdx = _BlockIdx()

    # ------------------------------------------------------------ loops
    def range(self, start, end=None, step=None, /, *, unroll: Optional[int] = None):
        """A runtime loop ``for i in self.range(start, end, step, unroll=n)``."""
        if end is None:
            start, end = 0, start
        if step is None:
            step = 1
        if unroll is not None and (not isinstance(unroll, int) or unroll < 0):
            raise ValueError(f"unroll must be a non-negative int, got {unroll!r}")
        return _Range(start, end, step, unroll)

    # ------------------------------------------------------------ tensors
    def global_view(self, ptr, *, dtype, shape: Sequence, strides: Optional[Sequence] = None):
        """View the memory at `ptr` as a global tensor of `dtype` and `shape` (row-major
        unless `strides` is given, in elements)."""
        return current_builder().global_view(
            as_expr(ptr, "the pointer"), _dtype(dtype, "dtype"), _exprs(shape, "a shape entry"),
            [] if strides is None else _exprs(strides, "a stride"), "g")

    def global_tensor(self, dtype, shape: Sequence, *, requires_clean: bool = False):
        """A global workspace the runtime provides for each launch. With
        ``requires_clean=True`` it is all zeros at the start of every launch, and the kernel
        must leave it zeroed."""
        return current_builder().global_tensor(_dtype(dtype, "dtype"),
                                               _exprs(shape, "a shape entry"),
                                               bool(requires_clean), "workspace")

    def shared_tensor(self, *, dtype, shape: Sequence):
        """Allocate a shared-memory tensor (shape known at compile time)."""
        return current_builder().shared_tensor(_dtype(dtype, "dtype"),
                                               _const_ints(shape, "shared_tensor shape"), "s")

    def register_tensor(self, *, dtype, shape: Optional[Sequence] = None, init=None, layout=None):
        """Allocate a register tensor, optionally filled with `init` and with an explicit
        `layout` (tilus.layout); the shape defaults to the layout's."""
        if shape is None:
            if layout is None:
                raise TypeError("register_tensor needs a shape or a layout")
            shape = list(layout.shape)
        shape = _const_ints(shape, "register_tensor shape")
        if layout is not None and list(layout.shape) != shape:
            raise ValueError(f"register_tensor: the layout covers {list(layout.shape)} "
                             f"but shape is {shape}")
        return current_builder().register_tensor(
            _dtype(dtype, "dtype"), shape, None if init is None else as_expr(init, "init"),
            layout, "r")

    # ------------------------------------------------------------ memory
    def load_global(self, src, /, *, offsets: Sequence, shape: Sequence, dims=None):
        """Load a `shape` tile of global tensor `src` starting at `offsets`; elements
        outside `src` read as zero."""
        return current_builder().load_global(_tensor(src, "src"), _exprs(offsets, "an offset"),
                                             _const_ints(shape, "the tile shape"), _dims(dims))

    def store_global(self, dst, src, /, *, offsets: Sequence, dims=None):
        """Store register tile `src` into global tensor `dst` at `offsets`; elements
        outside `dst` are dropped."""
        current_builder().store_global(_tensor(dst, "dst"), _tensor(src, "src"),
                                       _exprs(offsets, "an offset"), _dims(dims))

    def load_shared(self, src, /):
        return current_builder().load_shared(_tensor(src, "src"))

    def store_shared(self, dst, src, /):
        current_builder().store_shared(_tensor(dst, "dst"), _tensor(src, "src"))

    def free_shared(self, tensor, /):
        current_builder().free_shared(_tensor(tensor, "tensor"))

    def sync(self):
        """Barrier across the thread block (__syncthreads)."""
        current_builder().sync()

    def copy_async(self, src, dst, offsets: Sequence, dims=None):
        """Start copying the tile of global `src` at `offsets` into shared `dst`
        (cp.async); out-of-range elements are filled with zero."""
        current_builder().copy_async(_tensor(src, "src"), _tensor(dst, "dst"),
                                     _exprs(offsets, "an offset"), _dims(dims))

    def copy_async_commit_group(self):
        current_builder().copy_async_commit_group()

    def copy_async_wait_group(self, n):
        """Wait until at most `n` committed copy groups are still in flight."""
        current_builder().copy_async_wait_group(_const_ints([n], "n")[0])

    # ------------------------------------------------------------ compute
    def dot(self, a, b, c=None, /, *, out=None):
        """``a @ b + c`` on register tiles; with ``out=`` the result is written there."""
        builder = current_builder()
        a, b = _tensor(a, "a"), _tensor(b, "b")
        if c is None:
            if len(a.shape) != 2 or len(b.shape) != 2:  # the builder checks when c is given
                raise ValueError(f"dot: operands must be 2-D tiles, got a {a.type_str()} and b "
                                 f"{b.type_str()}")
            acc = _DEFAULT_ACCUMULATOR.get(a.dtype)
            if acc is None:
                raise TypeError(f"dot: no default accumulator for {a.dtype}; pass c")
            c = builder.register_tensor(acc, [a.shape[0], b.shape[1]], as_expr(0), None, "acc")
        return builder.dot(a, b, _tensor(c, "c"), out if out is None else _tensor(out, "out"))

    def cast(self, x, /, *, dtype):
        return current_builder().cast(_tensor(x, "x"), _dtype(dtype, "dtype"))

    def add(self, x, y, /, *, out=None):
        return tensor_binary("+", x, y, out)

    def sub(self, x, y, /, *, out=None):
        return tensor_binary("-", x, y, out)

    def mul(self, x, y, /, *, out=None):
        return tensor_binary("*", x, y, out)

    def div(self, x, y, /, *, out=None):
        return tensor_binary("/", x, y, out)

    def maximum(self, x, y, /, *, out=None):
        return tensor_binary("max", x, y, out)

    def minimum(self, x, y, /, *, out=None):
        return tensor_binary("min", x, y, out)

    def where(self, cond, x, y, /):
        return current_builder().where(_tensor(cond, "cond"), _tensor(x, "x"), _tensor(y, "y"))

    # ------------------------------------------------------------ synchronisation
    def lock_semaphore(self, semaphore, /, *, value):
        """Wait until the int32 at `semaphore` equals `value` (acquire)."""
        current_builder().lock_semaphore(as_expr(semaphore, "semaphore"), as_expr(value, "value"))

    def release_semaphore(self, semaphore, /, *, value):
        """Set the int32 at `semaphore` to `value` after this block's prior writes (release)."""
        current_builder().release_semaphore(as_expr(semaphore, "semaphore"),
                                            as_expr(value, "value"))

    # ------------------------------------------------------------ debugging
    def print_tensor(self, msg: str, tensor, /):
        current_builder().print_tensor(_tensor(tensor, "tensor"), str(msg))
