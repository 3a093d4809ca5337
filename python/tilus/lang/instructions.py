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
from tilus.lang.inst_atomics import AtomicInstructions
from tilus.lang.inst_cluster import ClusterInstructions
from tilus.lang.inst_groups import ThreadGroupInstructions
from tilus.lang.inst_hopper import HopperInstructions
from tilus.lang.inst_math import MathInstructions
from tilus.lang.inst_reductions import ReductionInstructions
from tilus.lang.inst_utilities import UtilityInstructions
from tilus.lang.inst_views import ViewInstructions
from tilus.lang.inst_wgmma import WgmmaInstructions
from tilus.lang.operands import _const_ints, _dims, _dtype, _exprs, _tensor
from tilus.lang.values import Expr, Tensor, as_expr, tensor_binary


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

    def __iter__(self):  # bx, by, bz = self.blockIdx (Tilus 0.2's Dim3)
        return iter((self.x, self.y, self.z))

    def __len__(self):
        return 3


class _Range:
    """What ``self.range(...)`` returns; only a ``for`` statement may consume it."""

    def __init__(self, start, end, step, unroll):
        self.start, self.end, self.step, self.unroll = start, end, step, unroll

    def __iter__(self):
        raise TypeError("self.range(...) can only be used as the iterable of a for statement")


_EVICT_HINTS = (None, "evict_normal", "evict_first", "evict_last")


def _into(tile, out):
    """Tilus 0.2's ``out=``: write ``tile`` into the existing register tensor ``out``."""
    if out is None:
        return tile
    out = _tensor(out, "out")
    current_builder().assign_tensor(out, tile)
    return out


def _where_operand(value, other, condition, what: str):
    """A scalar branch of ``where`` becomes a tile of the condition's shape with the other
    branch's dtype (when both are scalars: float32 if either is a float, else int32)."""
    if isinstance(value, Tensor):
        return value
    scalar = as_expr(value, f"where: {what}")
    if isinstance(other, Tensor):
        dtype = other.dtype
    elif scalar.dtype.is_float or isinstance(other, float) or (isinstance(other, Expr) and other.dtype.is_float):
        dtype = float32
    else:
        dtype = int32
    return current_builder().register_tensor(dtype, list(condition.shape), scalar, None, "w")


def _init_by_index(dtype, shape, init, layout):
    """register_tensor(init=f): f is called with one int32 index tile per dimension (the
    element (i, j, ...) of the k-th holds its k-th index), so f's operators build the
    values of every element at once; a scalar result fills the tile."""
    builder = current_builder()
    indices = [builder.tile_op("index_tile", [], dims=[d], shape=shape) for d in range(len(shape))]
    if layout is not None:
        for t in indices:
            t.annotate_layout(layout)
    value = init(*indices)
    if isinstance(value, Tensor):
        if list(value.shape) != list(shape):
            raise ValueError(f"register_tensor: init returned a tile of shape {list(value.shape)}, "
                             f"expected {list(shape)}")
        return value if value.dtype == dtype else builder.cast(value, dtype)
    return builder.register_tensor(dtype, shape, as_expr(value, "the value init returned"),
                                   layout, "r")


_DEFAULT_ACCUMULATOR = {float16: float32, bfloat16: float32, int8: int32, float32: float32,
                        float64: float64}


class InstructionMixin(ViewInstructions, MathInstructions, ReductionInstructions,
                       AtomicInstructions, UtilityInstructions, HopperInstructions,
                       WgmmaInstructions, ThreadGroupInstructions, ClusterInstructions):
    blockIdx = _BlockIdx()

    # ------------------------------------------------------------ loops
    def range(self, start, end=None, step=None, /, *, unroll: Optional[int] = None):
        """A runtime loop: ``for i in self.range(start, end, step, unroll=n)``.

        Like Python's ``range``, the bounds are evaluated once before the loop; ``i`` is a
        runtime ``int32`` value. ``range(...)`` inside a script gives the same loop without the
        hint. With one argument the loop runs from 0 to ``start``.

        Args:
            start: the first value (or the end, when it is the only argument); an int or a
                runtime integer.
            end: one past the last value.
            step: the increment, a positive integer (default 1).
            unroll: a hint to unroll ``n`` iterations (``#pragma unroll n``), kept within the
                unroll budget (docs/codegen.md); ``0`` or None leaves the loop rolled;
                ``"all"`` (compile-time bounds only) asks for every iteration.

        Returns:
            An object only a ``for`` statement may iterate.

        Dtypes and layouts:
            Bounds are integer scalars (Python ints or runtime ``int32``/``int64`` values).

        Raises:
            ValueError: ``unroll`` is negative or not an int; a constant step is not positive.
            TypeError: the result is iterated outside a ``for`` statement.

        Example:
            .. code-block:: python

                for k in self.range(cdiv(k_size, self.block_k), unroll=2):
                    ...
        """
        if end is None:
            start, end = 0, start
        if step is None:
            step = 1
        if unroll == "all":  # Tilus 0.2: unroll every iteration, so the trip count is known
            bounds = [b.value if isinstance(b, Expr) and b.is_const else b for b in (start, end, step)]
            if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) or bounds[2] <= 0:
                raise ValueError("unroll='all' needs compile-time integer bounds and a positive step, "
                                 f"got range({start}, {end}, {step})")
            unroll = max(1, len(range(*bounds)))
        if unroll is not None and (isinstance(unroll, bool) or not isinstance(unroll, int) or unroll < 0):
            raise ValueError(f"unroll must be a non-negative int or 'all', got {unroll!r}")
        return _Range(start, end, step, unroll)

    # ------------------------------------------------------------ tensors
    def global_view(self, ptr, *, dtype, shape: Sequence, strides: Optional[Sequence] = None):
        """View the memory at a pointer as a global tensor.

        The view is row-major over ``shape`` unless ``strides`` (in elements) are given. It
        moves no data: loads and stores through it address ``ptr``. Shape entries may be
        runtime values (parameters), so one kernel serves every size.

        Args:
            ptr: a pointer parameter (annotated ``~dtype``, or ``void_p`` for memory of
                any dtype) or a pointer expression.
            dtype: the element type; the pointer's pointee type, or any type over a
                ``void_p`` (its bytes are then read as ``dtype``).
            shape: one entry per dimension (ints or runtime integers).
            strides: optional strides in elements, one per dimension.

        Returns:
            A global tensor of ``dtype`` and ``shape``.

        Dtypes and layouts:
            Any scalar dtype equal to the pointee of ``ptr``, or any scalar dtype over a
            ``void_p`` (the view's size is checked in bytes). Global tensors have no register
            layout; tiles loaded from them get one by layout inference.

        Raises:
            TypeError: ``ptr`` is not a pointer, ``dtype`` is not a tilus dtype or differs
                from the pointee type.
            ValueError: ``shape`` is empty, or ``strides`` has another length than ``shape``.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                ga = self.global_view(a_ptr, dtype=float16, shape=[m, k])
                gb = self.global_view(b_ptr, dtype=uint8, shape=[k, n // 2])  # b_ptr: void_p
        """
        return current_builder().global_view(
            as_expr(ptr, "the pointer"), _dtype(dtype, "dtype"), _exprs(shape, "a shape entry"),
            [] if strides is None else _exprs(strides, "a stride"), "g")

    def global_tensor(self, dtype, shape: Sequence, *, layout=None, requires_clean: bool = False):
        """A global workspace that the runtime provides for each launch.

        The runtime allocates the buffer before the launch (its shape may only use parameters
        and constants). With ``requires_clean=True`` it is all zeros when the launch starts,
        and the kernel must leave it zeroed again (split-K semaphores rely on this).

        Args:
            dtype: the element type.
            shape: one entry per dimension (ints or expressions of the parameters).
            layout: Tilus 0.2's global layout; only None (row-major) is supported, anything
                else raises NotImplementedError.
            requires_clean: hand the buffer out zeroed at every launch.

        Returns:
            A global tensor of ``dtype`` and ``shape``.

        Dtypes and layouts:
            Any scalar dtype; row-major.

        Raises:
            TypeError: ``dtype`` is not a tilus dtype or is a pointer type.
            ValueError: ``shape`` is empty.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                semaphores = self.global_tensor(int32, shape=[grid_m, grid_n], requires_clean=True)
        """
        if layout is not None:
            raise NotImplementedError("global_tensor: layout= is not supported yet; workspaces "
                                      "are row-major")
        return current_builder().global_tensor(_dtype(dtype, "dtype"),
                                               _exprs(shape, "a shape entry"),
                                               bool(requires_clean), "workspace")

    def shared_tensor(self, *, dtype, shape: Sequence):
        """Allocate a tensor in the thread block's shared memory.

        The shape is known at compile time. The allocation lives until :meth:`free_shared`
        (or the end of the kernel); its contents start undefined.

        Args:
            dtype: the element type.
            shape: compile-time positive ints.

        Returns:
            A shared tensor of ``dtype`` and ``shape``.

        Dtypes and layouts:
            Any scalar dtype. The shared layout is chosen by the code generator: swizzled when
            rows span at least 64 bytes (conflict-free ``ldmatrix`` and ``cp.async``),
            row-major otherwise and for tiles of one row per leading index (``[stages, 1,
            n]``); wgmma operands get the layout wgmma reads.

        Raises:
            TypeError: ``dtype`` is not a tilus dtype, or a shape entry is a runtime value.
            ValueError: ``shape`` is empty or has a non-positive entry.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                sa = self.shared_tensor(dtype=float16, shape=[num_stages, block_m, block_k])
        """
        return current_builder().shared_tensor(_dtype(dtype, "dtype"),
                                               _const_ints(shape, "shared_tensor shape"), "s")

    def register_tensor(self, *, dtype, shape: Optional[Sequence] = None, init=None, layout=None):
        """Allocate a tile in the threads' registers, optionally filled with a value.

        Args:
            dtype: the element type.
            shape: compile-time positive ints; defaults to the layout's shape.
            init: a scalar every element starts with (cast to ``dtype``); or a function of
                the element's indices, ``lambda i, j: ...``, called once with index tiles
                (int32 tiles whose element ``(i, j)`` holds ``i``, resp. ``j``) so its
                operators compute every element (a comparison gives a bool mask); None
                leaves the tile uninitialised (the interpreter poisons it so a read shows).
            layout: an explicit register layout (:mod:`tilus.layout`); None lets layout
                inference choose.

        Returns:
            A register tensor of ``dtype`` and ``shape``.

        Dtypes and layouts:
            Any scalar dtype. A given layout must cover exactly ``shape``; it is kept, and
            tiles tied to this one (by elementwise ops, casts, dots) follow it.

        Raises:
            TypeError: neither ``shape`` nor ``layout`` is given; ``init`` is a pointer.
            ValueError: the layout's shape differs from ``shape``; ``shape`` is empty or has a
                non-positive entry.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                acc = self.register_tensor(dtype=float32, shape=[block_m, block_n], init=0.0)
        """
        if shape is None:
            if layout is None:
                raise TypeError("register_tensor needs a shape or a layout")
            shape = list(layout.shape)
        shape = _const_ints(shape, "register_tensor shape")
        if layout is not None and list(layout.shape) != shape:
            raise ValueError(f"register_tensor: the layout covers {list(layout.shape)} "
                             f"but shape is {shape}")
        dtype = _dtype(dtype, "dtype")
        if callable(init) and not isinstance(init, (Expr, Tensor)):
            return _init_by_index(dtype, shape, init, layout)
        return current_builder().register_tensor(
            dtype, shape, None if init is None else as_expr(init, "init"), layout, "r")

    # ------------------------------------------------------------ memory
    def load_global(self, src, /, *, offsets: Sequence, shape: Sequence = None, layout=None, dims=None,
                    out=None):
        """Load a tile of a global tensor into registers.

        Reads the ``shape`` tile whose first element is at ``offsets`` of ``src``. Elements
        outside ``src`` read as zero, so edge tiles need no masking.

        Args:
            src: a global tensor (:meth:`global_view` or :meth:`global_tensor`).
            offsets: one start coordinate per dimension of ``src`` (runtime values allowed).
            shape: the tile's shape, compile-time ints; its rank may be lower than ``src``'s.
                May be left out when ``layout`` is given (its shape).
            layout: the tile's register layout (Tilus 0.2's ``layout=``), as
                :meth:`annotate_layout` gives it.
            out: write the tile into this register tensor (same dtype and shape) and return
                it, instead of a new tile (Tilus 0.2's ``out=``).
            dims: the dimensions of ``src`` the tile spans, strictly increasing (default: the
                last ``len(shape)`` dimensions); the others are fixed at their offset.

        Returns:
            A register tensor of ``src``'s dtype and shape ``shape``.

        Dtypes and layouts:
            The tile keeps ``src``'s dtype. Its layout is ``layout`` or comes from layout
            inference (16-byte vectors when offsets and strides are provably aligned). A
            packed sub-byte ``src`` (``uint4b`` ...) needs a layout whose per-thread runs
            along the last dimension are whole bytes.

        Raises:
            TypeError: ``src`` is not a global tensor; a shape entry is a runtime value; a
                packed ``src``'s layout splits a byte between threads (at code generation).
            ValueError: the number of offsets differs from ``src``'s rank; the tile's rank is
                larger than ``src``'s; ``dims`` is malformed; neither ``shape`` nor ``layout``
                is given, or they disagree.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                a = self.load_global(ga, offsets=[offset_m, k * self.block_k],
                                     shape=[self.block_m, self.block_k])
        """
        if shape is None:
            if layout is None:
                raise ValueError("load_global: give shape= (or layout=, whose shape the tile takes)")
            shape = list(layout.shape)
        tile = current_builder().load_global(_tensor(src, "src"), _exprs(offsets, "an offset"),
                                             _const_ints(shape, "the tile shape"), _dims(dims))
        if layout is not None:
            if list(layout.shape) != list(tile.shape):
                raise ValueError(f"load_global: layout= covers {list(layout.shape)} but the tile is "
                                 f"{list(tile.shape)}")
            self.annotate_layout(tile, layout)
        return _into(tile, out)

    def store_global(self, dst, src, *, offsets: Sequence, dims=None):
        """Store a register tile into a global tensor.

        Writes ``src`` so that its first element lands at ``offsets`` of ``dst``; elements
        that fall outside ``dst`` are dropped.

        Args:
            dst: a global tensor.
            src: a register tensor.
            offsets: one start coordinate per dimension of ``dst``.
            dims: the dimensions of ``dst`` the tile spans (default: the last ``src.rank``).

        Dtypes and layouts:
            ``src``'s dtype must equal ``dst``'s (cast first with :meth:`cast`). Any register
            layout.

        Raises:
            TypeError: ``dst`` is not a global tensor, ``src`` is not a register tensor, or the
                dtypes differ.
            ValueError: the offsets do not match ``dst``'s rank; ``dims`` is malformed.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])
        """
        current_builder().store_global(_tensor(dst, "dst"), _tensor(src, "src"),
                                       _exprs(offsets, "an offset"), _dims(dims))

    def load_shared(self, src, /, *, layout=None, out=None):
        """Load a whole shared tensor (or a slice ``s[i]``) into registers.

        Args:
            src: a shared tensor that has not been freed.
            layout: the tile's register layout (Tilus 0.2's ``layout=``), as
                :meth:`annotate_layout` gives it.
            out: write the tile into this register tensor (same dtype and shape) and return
                it, instead of a new tile.

        Returns:
            A register tensor with ``src``'s dtype and shape.

        Dtypes and layouts:
            Any dtype. fp16/bf16/int8 tiles feeding a dot are read with ``ldmatrix``; on sm_90a
            a load right before a wgmma dot is folded into it.

        Raises:
            TypeError: ``src`` is not a shared tensor.
            ValueError: ``src`` was freed; ``layout`` does not cover the tile's shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                a = self.load_shared(sa[current_stage])
        """
        tile = current_builder().load_shared(_tensor(src, "src"))
        if layout is not None:
            self.annotate_layout(tile, layout)
        return _into(tile, out)

    def store_shared(self, dst, src, *, offsets=None, dims=None):
        """Store a register tile into a whole shared tensor.

        Args:
            dst: a shared tensor (or a slice) that has not been freed.
            src: a register tensor of the same shape and dtype.
            offsets: Tilus 0.2's store into part of ``dst``: supported for a rank-0 ``src``
                (a full reduction), which is stored into element ``dst[offsets]``; for
                larger tiles store into a view ``s[i]`` instead (NotImplementedError).
            dims: ``[]`` (or None) with a rank-0 ``src`` and ``offsets``; otherwise only None.

        Dtypes and layouts:
            ``src`` must have ``dst``'s dtype and shape; any register layout.

        Raises:
            TypeError: ``dst`` is not shared, ``src`` is not a register tensor, or the dtypes
                differ.
            ValueError: the shapes differ, or ``dst`` was freed.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.store_shared(sa, a)
                self.sync()
        """
        src_rank = len(src.shape) if isinstance(src, _C.Tensor) else None
        if src_rank == 0 and offsets is not None and (dims is None or list(dims) == []):
            if len(offsets) != len(dst.shape):
                raise ValueError(f"store_shared: {len(offsets)} offsets for a rank-{len(dst.shape)} "
                                 "shared tensor; give one per dimension")
            dst = current_builder().slice_shared(_tensor(dst, "dst"), _exprs(offsets, "an offset"))
            offsets = dims = None
        if offsets is not None or dims is not None:
            raise NotImplementedError(
                "store_shared: offsets= and dims= (a store into part of a shared tensor) are not "
                "supported yet; store into a view s[i] of the leading dimensions instead")
        current_builder().store_shared(_tensor(dst, "dst"), _tensor(src, "src"))

    def free_shared(self, tensor):
        """Release a shared tensor; its memory may be reused by later allocations.

        Args:
            tensor: a shared tensor from :meth:`shared_tensor` (not a slice of one).

        Dtypes and layouts:
            Any shared tensor.

        Raises:
            TypeError: ``tensor`` is not a shared tensor.
            ValueError: ``tensor`` is a slice ``s[i]``, or was already freed.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.free_shared(sa)
        """
        current_builder().free_shared(_tensor(tensor, "tensor"))

    def sync(self):
        """A barrier across the thread block (``__syncthreads``).

        Every thread waits until all threads of the block reach it, and shared-memory writes
        before it are visible after it.

        Dtypes and layouts:
            Not applicable (no operands).

        Raises:
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.store_shared(sa, a)
                self.sync()
                b = self.load_shared(sa)
        """
        current_builder().sync()

    def copy_async(self, src, dst, offsets: Sequence, dims=None, evict=None, check_bounds=True):
        """Start copying a tile of a global tensor into a shared tensor (``cp.async``).

        The tile has ``dst``'s shape and starts at ``offsets`` of ``src``; out-of-range
        elements are filled with zero. The copy joins the open group; close the group with
        :meth:`copy_async_commit_group` and wait for it with :meth:`copy_async_wait_group`.

        Args:
            src: a global tensor.
            dst: a shared tensor (often one stage ``s[i]`` of a pipeline buffer).
            offsets: one start coordinate per dimension of ``src``.
            dims: the dimensions of ``src`` the tile spans (default: the last ``dst.rank``).
            evict: an L2 eviction hint (``"evict_normal"``, ``"evict_first"``,
                ``"evict_last"``) accepted for Tilus 0.2 programs; tilus does not act on it.
            check_bounds: Tilus 0.2 lets False skip the bounds test; tilus always checks
                (out-of-range elements are zero-filled), so False is accepted and changes
                nothing.

        Dtypes and layouts:
            ``src`` and ``dst`` have the same dtype; ``dst``'s innermost dimension spans at
            least 4 bytes. Copies are 4 to 16 bytes wide as alignment allows.

        Raises:
            TypeError: ``src`` is not global or ``dst`` not shared; the dtypes differ.
            ValueError: the innermost dimension of ``dst`` is narrower than 4 bytes; the offsets
                do not match ``src``'s rank; ``dst`` was freed.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.copy_async(src=ga, dst=sa[stage], offsets=[offset_m, k * self.block_k])
                self.copy_async_commit_group()
        """
        if evict not in _EVICT_HINTS:
            raise ValueError(f"copy_async: evict must be one of {sorted(h for h in _EVICT_HINTS if h)} "
                             f"or None, got {evict!r}")
        if not isinstance(check_bounds, bool):
            raise TypeError(f"copy_async: check_bounds must be True or False, got {check_bounds!r}")
        current_builder().copy_async(_tensor(src, "src"), _tensor(dst, "dst"),
                                     _exprs(offsets, "an offset"), _dims(dims))

    def copy_async_commit_group(self):
        """Close the open group of :meth:`copy_async` copies (``cp.async.commit_group``).

        Dtypes and layouts:
            Not applicable (no operands).

        Raises:
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.copy_async(src=ga, dst=sa[stage], offsets=[offset_m, 0])
                self.copy_async_commit_group()
        """
        current_builder().copy_async_commit_group()

    def copy_async_wait_group(self, n):
        """Wait until at most ``n`` committed copy groups are still in flight.

        Together with a following :meth:`sync` this makes the older groups' data visible in
        shared memory; ``n = num_stages - 2`` keeps a pipeline's newer stages loading.

        Args:
            n: a compile-time int >= 0.

        Dtypes and layouts:
            Not applicable.

        Raises:
            TypeError: ``n`` is a runtime value.
            ValueError: ``n`` is negative.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.copy_async_wait_group(0)
                self.sync()
        """
        current_builder().copy_async_wait_group(_const_ints([n], "n")[0])

    def copy_async_wait_all(self):
        """Wait until every :meth:`copy_async` of this thread has landed, committed to a
        group or not (Tilus 0.2's ``copy_async_wait_all``).

        Together with a following :meth:`sync` the data is visible to the whole block.

        Args:
            None.

        Dtypes and layouts:
            Not applicable.

        Raises:
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.copy_async(src=g, dst=s, offsets=[0, 0])
                self.copy_async_wait_all()
                self.sync()
        """
        current_builder().copy_async_wait_all()

    # ------------------------------------------------------------ compute
    def dot(self, a, b, c=None, /, *, acc_dtype=None, out=None):
        """Matrix multiply-accumulate of register tiles: ``a @ b + c``.

        Args:
            a: a register tile of shape ``[m, k]``.
            b: a register tile of shape ``[k, n]``.
            c: the accumulator ``[m, n]``; None starts from zeros of the default accumulator
                type (float32 for fp16/bf16, int32 for int8, the input type for fp32/fp64).
            acc_dtype: the accumulator dtype when ``c`` is None (overrides the default); when
                ``c`` is given it must equal ``c``'s dtype.
            out: write the result into this register tensor instead of a new one.

        Returns:
            The ``[m, n]`` result (``out`` when given) in the accumulator's dtype.

        Dtypes and layouts:
            ``a`` and ``b`` share a dtype. Supported: float16 -> float16 or float32,
            bfloat16 -> float32, int8 -> int32 (tensor cores, ``mma.sync``; ``wgmma`` on sm_90a
            when both operands come straight from :meth:`load_shared`), float32 -> float32 and
            float64 -> float64 (CUDA cores). Layout inference gives the operands the fragment
            layouts the instruction needs.

        Raises:
            TypeError: an operand is not a register tensor; ``a`` and ``b`` differ in dtype;
                the dtype pair is not supported.
            ValueError: operands are not 2-D; the inner dimensions differ; ``c`` or ``out`` has
                another shape than ``[m, n]``.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                acc = self.dot(a, b, acc)       # acc is updated (rebinding writes into it)
        """
        builder = current_builder()
        a, b = _tensor(a, "a"), _tensor(b, "b")
        if c is None:
            if len(a.shape) != 2 or len(b.shape) != 2:  # the builder checks when c is given
                raise ValueError(f"dot: operands must be 2-D tiles, got a {a.type_str()} and b "
                                 f"{b.type_str()}")
            acc = _DEFAULT_ACCUMULATOR.get(a.dtype) if acc_dtype is None else _dtype(acc_dtype, "acc_dtype")
            if acc is None:
                raise TypeError(f"dot: no default accumulator for {a.dtype}; pass c or acc_dtype")
            c = builder.register_tensor(acc, [a.shape[0], b.shape[1]], as_expr(0), None, "acc")
        elif acc_dtype is not None and _dtype(acc_dtype, "acc_dtype") != _tensor(c, "c").dtype:
            raise TypeError(f"dot: acc_dtype={acc_dtype} but c is {c.dtype}")
        return builder.dot(a, b, _tensor(c, "c"), out if out is None else _tensor(out, "out"))

    def cast(self, x, dtype):
        """Convert a register tile to another element type.

        Args:
            x: a register tensor.
            dtype: the target element type.

        Returns:
            A register tensor of ``dtype`` with ``x``'s shape and layout.

        Dtypes and layouts:
            Any scalar dtype to any scalar dtype. Float-to-int conversions saturate and map NaN
            to 0 (as the GPU does). The layout is ``x``'s.

        Raises:
            TypeError: ``x`` is not a register tensor; ``dtype`` is not a tilus dtype or is a
                pointer type.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                c16 = self.cast(acc, dtype=float16)
        """
        return current_builder().cast(_tensor(x, "x"), _dtype(dtype, "dtype"))

    def add(self, lhs, rhs, out=None):
        """Elementwise ``x + y`` of two tiles, or of a tile and a scalar.

        Args:
            lhs: a register tensor or a scalar.
            rhs: a register tensor or a scalar (at least one side is a tensor).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor (``out`` when given).

        Dtypes and layouts:
            Tile dtypes promote as in C; a Python constant takes the tile's dtype (an int tile
            with a float constant becomes float32). Shapes broadcast numpy-style (on CUDA too:
            a broadcast tile takes the result's layout with its size-1 dims reduced, as a
            keepdim reduction gives it). Tiles of the result's shape share its layout.

        Raises:
            TypeError: neither operand is a tensor; an operand is a pointer or a non-register
                tensor.
            ValueError: the shapes cannot be broadcast, or ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                z = self.add(x, y)            # the same as x + y
        """
        return tensor_binary("+", lhs, rhs, out)

    def sub(self, lhs, rhs, out=None):
        """Elementwise ``x - y`` of two tiles, or of a tile and a scalar.

        Args:
            lhs: a register tensor or a scalar.
            rhs: a register tensor or a scalar (at least one side is a tensor).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor (``out`` when given).

        Dtypes and layouts:
            Tile dtypes promote as in C; a Python constant takes the tile's dtype (an int tile
            with a float constant becomes float32). Shapes broadcast numpy-style (on CUDA too:
            a broadcast tile takes the result's layout with its size-1 dims reduced, as a
            keepdim reduction gives it). Tiles of the result's shape share its layout.

        Raises:
            TypeError: neither operand is a tensor; an operand is a pointer or a non-register
                tensor.
            ValueError: the shapes cannot be broadcast, or ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                z = self.sub(x, y)            # the same as x - y
        """
        return tensor_binary("-", lhs, rhs, out)

    def mul(self, lhs, rhs, out=None):
        """Elementwise ``x * y`` of two tiles, or of a tile and a scalar.

        Args:
            lhs: a register tensor or a scalar.
            rhs: a register tensor or a scalar (at least one side is a tensor).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor (``out`` when given).

        Dtypes and layouts:
            Tile dtypes promote as in C; a Python constant takes the tile's dtype (an int tile
            with a float constant becomes float32). Shapes broadcast numpy-style (on CUDA too:
            a broadcast tile takes the result's layout with its size-1 dims reduced, as a
            keepdim reduction gives it). Tiles of the result's shape share its layout.

        Raises:
            TypeError: neither operand is a tensor; an operand is a pointer or a non-register
                tensor.
            ValueError: the shapes cannot be broadcast, or ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                z = self.mul(x, y)            # the same as x * y
        """
        return tensor_binary("*", lhs, rhs, out)

    def div(self, lhs, rhs, out=None):
        """Elementwise ``x / y`` of two tiles, or of a tile and a scalar.

        Args:
            lhs: a register tensor or a scalar.
            rhs: a register tensor or a scalar (at least one side is a tensor).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor (``out`` when given).

        Dtypes and layouts:
            Tile dtypes promote as in C; a Python constant takes the tile's dtype (an int tile
            with a float constant becomes float32). Shapes broadcast numpy-style (on CUDA too:
            a broadcast tile takes the result's layout with its size-1 dims reduced, as a
            keepdim reduction gives it). Tiles of the result's shape share its layout.

        Raises:
            TypeError: neither operand is a tensor; an operand is a pointer or a non-register
                tensor.
            ValueError: the shapes cannot be broadcast, or ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                z = self.div(x, y)            # the same as x / y
        """
        return tensor_binary("/", lhs, rhs, out)

    def maximum(self, lhs, rhs, out=None):
        """Elementwise ``max(x, y)`` of two tiles, or of a tile and a scalar.

        Args:
            lhs: a register tensor or a scalar.
            rhs: a register tensor or a scalar (at least one side is a tensor).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor (``out`` when given).

        Dtypes and layouts:
            Tile dtypes promote as in C; a Python constant takes the tile's dtype (an int tile
            with a float constant becomes float32). Shapes broadcast numpy-style (on CUDA too:
            a broadcast tile takes the result's layout with its size-1 dims reduced, as a
            keepdim reduction gives it). Tiles of the result's shape share its layout.

        Raises:
            TypeError: neither operand is a tensor; an operand is a pointer or a non-register
                tensor.
            ValueError: the shapes cannot be broadcast, or ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                z = self.maximum(x, y)            # the same as an elementwise max
        """
        return tensor_binary("max", lhs, rhs, out)

    def minimum(self, lhs, rhs, out=None):
        """Elementwise ``min(x, y)`` of two tiles, or of a tile and a scalar.

        Args:
            lhs: a register tensor or a scalar.
            rhs: a register tensor or a scalar (at least one side is a tensor).
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor (``out`` when given).

        Dtypes and layouts:
            Tile dtypes promote as in C; a Python constant takes the tile's dtype (an int tile
            with a float constant becomes float32). Shapes broadcast numpy-style (on CUDA too:
            a broadcast tile takes the result's layout with its size-1 dims reduced, as a
            keepdim reduction gives it). Tiles of the result's shape share its layout.

        Raises:
            TypeError: neither operand is a tensor; an operand is a pointer or a non-register
                tensor.
            ValueError: the shapes cannot be broadcast, or ``out`` has another shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                z = self.minimum(x, y)            # the same as an elementwise min
        """
        return tensor_binary("min", lhs, rhs, out)

    def where(self, condition, x, y, *, out=None):
        """Elementwise selection: ``x`` where ``cond`` is true, else ``y``.

        Args:
            condition: a boolean register tensor (e.g. from a comparison ``x > 0``).
            x: a register tensor, or a scalar (filled to the condition's shape with ``y``'s
                dtype).
            y: a register tensor or a scalar.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of the promoted dtype of ``x`` and ``y``.

        Dtypes and layouts:
            ``cond`` is boolean; ``x`` and ``y`` promote. Shapes broadcast numpy-style, on CUDA
            too (a broadcast tile takes the result's layout with its size-1 dims reduced).

        Raises:
            TypeError: an operand is not a register tensor, or ``cond`` is not boolean.
            ValueError: the shapes cannot be broadcast.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                relu = self.where(acc > 0.0, acc, zeros)
        """
        condition = _tensor(condition, "condition")
        x, y = _where_operand(x, y, condition, "x"), _where_operand(y, x, condition, "y")
        return _into(current_builder().where(condition, x, y), out)

    def assign(self, dst, src):
        """Write a register tile into an existing register tile: ``dst = src`` elementwise.

        A script usually writes ``x = value`` instead, which the transpiler turns into this
        instruction when ``x`` already names a register tile of the same dtype and shape
        (that is how loop-carried tiles are updated). ``self.assign`` is Tilus 0.2's
        explicit spelling.

        Args:
            dst: the register tensor written.
            src: a register tensor of the same dtype and shape.

        Dtypes and layouts:
            Any dtype; ``src`` must have ``dst``'s dtype (cast first). Afterwards the two
            tiles share a layout.

        Raises:
            TypeError: either is not a register tensor, or the dtypes differ.
            ValueError: the shapes differ.

        Example:
            .. code-block:: python

                self.assign(acc, self.dot(a, b, acc))
        """
        current_builder().assign_tensor(_tensor(dst, "dst"), _tensor(src, "src"))

    # ------------------------------------------------------------ synchronisation
    def lock_semaphore(self, semaphore, value):
        """Wait until the int32 at ``semaphore`` equals ``value`` (acquire ordering).

        Blocks spin on the value; writes released by the block that set it are visible after
        the wait. On the CPU interpreter a wait no block can satisfy raises a deadlock error.

        Args:
            semaphore: a ``~int32`` address, e.g. ``~workspace[i, j]``.
            value: the integer to wait for.

        Dtypes and layouts:
            ``semaphore`` is a pointer to int32; ``value`` an integer scalar.

        Raises:
            TypeError: ``semaphore`` is not a ``~int32`` pointer; ``value`` is not an integer.
            RuntimeError: (interpreter) deadlock: no block can ever release the value.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.lock_semaphore(~semaphores[bi, bj], value=self.blockIdx.z)
        """
        current_builder().lock_semaphore(as_expr(semaphore, "semaphore"), as_expr(value, "value"))

    def release_semaphore(self, semaphore, value):
        """Set the int32 at ``semaphore`` to ``value`` after this block's prior writes (release).

        Args:
            semaphore: a ``~int32`` address.
            value: the integer to store.

        Dtypes and layouts:
            ``semaphore`` is a pointer to int32; ``value`` an integer scalar.

        Raises:
            TypeError: ``semaphore`` is not a ``~int32`` pointer; ``value`` is not an integer.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.release_semaphore(~semaphores[bi, bj], value=self.blockIdx.z + 1)
        """
        current_builder().release_semaphore(as_expr(semaphore, "semaphore"),
                                            as_expr(value, "value"))

    # ------------------------------------------------------------ debugging
    def print_tensor(self, msg: str, tensor, fmt: Optional[str] = None):
        """Print a register or shared tile with a message (debugging).

        The interpreter prints every block's tile; on the GPU only block (0, 0, 0) prints.

        Args:
            msg: a label printed before the tile.
            tensor: a register or shared tensor.
            fmt: Tilus 0.2's element format; only None is supported (elements print with
                ``%g``), anything else raises NotImplementedError.

        Dtypes and layouts:
            Any dtype and layout.

        Raises:
            TypeError: ``tensor`` is a global tensor or not a tensor.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                self.print_tensor("acc", acc)
        """
        if fmt is not None:
            raise NotImplementedError("print_tensor: fmt= is not supported yet; elements print with %g")
        current_builder().print_tensor(_tensor(tensor, "tensor"), str(msg))
