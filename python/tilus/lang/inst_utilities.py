"""Kernel utilities: printf, assume, static_assert, fast_divmod, thread ranges, the grid's
size, layout annotations.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
"""

from __future__ import annotations

import re

from tilus import _C
from tilus.lang.context import current_builder, current_launch_attrs
from tilus.layout import RegisterLayout, SharedLayout
from tilus.lang.structs import Dim3
from tilus.lang.types import float64, int64
from tilus.lang.values import Expr, Tensor, as_expr

# One C conversion: %[flags][width][.precision][length]conversion
_CONVERSION = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d*)(?P<precision>(?:\.\d*)?)"
                         r"(?P<length>hh|h|ll|l|j|z|t|L)?(?P<conv>[diouxXcfFeEgGaAsp%])")


def _normalise_printf(fstring: str, args) -> tuple:
    """The format and values printf hands to the IR: integer conversions take int64
    (``ll``), float conversions float64, ``%s`` is substituted now (its value must be a
    compile-time Python value)."""
    out, values, k, pos = [], [], 0, 0
    for m in _CONVERSION.finditer(fstring):
        out.append(fstring[pos:m.start()])
        pos = m.end()
        conv = m.group("conv")
        if conv == "%":
            out.append("%%")
            continue
        if k >= len(args):
            raise ValueError(f"printf: the format {fstring!r} has more conversions than the "
                             f"{len(args)} values given")
        value = args[k]
        k += 1
        spec = m.group("flags") + m.group("width") + m.group("precision")
        if conv == "s":
            if isinstance(value, (Expr, Tensor)):
                raise TypeError(f"printf: %s takes a compile-time value; value {k - 1} is a "
                                "runtime value")
            out.append(("%" + spec + "s") % (value,) if spec else str(value))
            out[-1] = out[-1].replace("%", "%%")
            continue
        if conv in "pc":
            raise ValueError(f"printf: %{conv} is not supported (print numbers with %d, %x, %f)")
        if isinstance(value, Tensor):
            raise TypeError(f"printf: value {k - 1} is a {value.type_str()} tensor; printf "
                            "prints scalars (use self.print_tensor for tiles)")
        if isinstance(value, str):
            raise TypeError(f"printf: value {k - 1} is a string but its conversion is %{conv}")
        expr = as_expr(value, f"printf value {k - 1}")
        if expr.dtype.is_pointer:
            raise TypeError(f"printf: value {k - 1} is a pointer")
        if conv in "diouxX":
            if expr.dtype.is_float:
                raise TypeError(f"printf: %{conv} takes an integer, value {k - 1} is "
                                f"{expr.dtype.name}; use %f or cast it")
            out.append("%" + spec + "ll" + conv)
            values.append(_C.cast(expr, int64))
        else:
            out.append("%" + spec + conv)
            values.append(_C.cast(expr, float64))
    out.append(fstring[pos:])
    if k != len(args):
        raise ValueError(f"printf: the format {fstring!r} has {k} conversions but {len(args)} "
                         "values were given")
    return "".join(out), values


class UtilityInstructions:
    # ------------------------------------------------------------ launch geometry
    @property
    def gridDim(self) -> Dim3:
        """The number of blocks along x, y, z: the expressions given to
        ``self.attrs.blocks`` (1 for axes not given), so it folds to a constant when the
        grid is one."""
        blocks = current_launch_attrs().blocks
        if blocks is None:
            raise ValueError("self.gridDim is the grid set by self.attrs.blocks; set "
                             "self.attrs.blocks before reading it")
        values = list(blocks) + [_C.const_int(1, _C.dtype("int32"))] * (3 - len(blocks))
        return Dim3(*values)

    def _threads(self) -> int:
        warps = current_launch_attrs().warps
        if warps is None:
            raise ValueError("the thread range of the block is known once self.attrs.warps "
                             "is set; set it first")
        return warps * 32

    @property
    def current_thread_begin(self) -> int:
        """The first thread of the current thread group (0 outside any ``thread_group``)."""
        self._threads()
        return current_builder().current_thread_group()[0]

    @property
    def current_thread_end(self) -> int:
        """One past the last thread of the current thread group (the block's thread count
        outside any ``thread_group``)."""
        self._threads()
        begin, n = current_builder().current_thread_group()
        return begin + n

    @property
    def current_num_threads(self) -> int:
        """The threads of the current thread group: ``32 * self.attrs.warps`` outside any
        ``thread_group``."""
        self._threads()
        return current_builder().current_thread_group()[1]

    # ------------------------------------------------------------ compile-time checks
    def static_assert(self, cond, msg: str = "static_assert failed"):
        """Check a compile-time condition while tilus compiles the script.

        Args:
            cond: a Python bool (or a constant runtime expression).
            msg: the message of the error when ``cond`` is false.

        Dtypes and layouts:
            Not applicable: nothing is emitted.

        Raises:
            AssertionError: ``cond`` is false (reported with the script line).
            TypeError: ``cond`` is known only at run time.

        Example:
            .. code-block:: python

                self.static_assert(self.block_k % 16 == 0, "block_k must be a multiple of 16")
        """
        if isinstance(cond, Expr):
            if not cond.is_const:
                raise TypeError("static_assert: the condition must be known at compile time; "
                                f"'{cond}' is a runtime value (use self.assume for a hint)")
            cond = cond.value
        if isinstance(cond, Tensor):
            raise TypeError("static_assert: the condition must be a compile-time bool, got a tensor")
        if not cond:
            raise AssertionError(f"static_assert: {msg}")

    def assume(self, cond):
        """Promise the compiler that a runtime condition holds.

        The CUDA backend passes it to ``__builtin_assume`` (e.g. ``n % 8 == 0`` lets the
        compiler simplify index arithmetic); the interpreter checks it and fails at this
        line when it is false, so a wrong promise is found on the CPU.

        Args:
            cond: a bool runtime expression, or a Python bool (True: nothing to do).

        Dtypes and layouts:
            ``cond`` is a scalar bool (comparisons of runtime values give one).

        Raises:
            ValueError: ``cond`` is the Python value False, or (in the interpreter) the
                condition is false at run time.
            TypeError: ``cond`` is not a bool.

        Example:
            .. code-block:: python

                self.assume(hidden % 128 == 0)
        """
        if isinstance(cond, bool):
            if not cond:
                raise ValueError("assume: the condition is False")
            return
        if isinstance(cond, Tensor) or not isinstance(cond, Expr):
            raise TypeError(f"assume: the condition must be a bool expression, got {cond!r}")
        current_builder().tile_op("assume", [], args=[cond])

    # ------------------------------------------------------------ arithmetic
    def fast_divmod(self, a, b) -> tuple:
        """Quotient and remainder of non-negative integers: ``(a // b, a % b)``.

        Args:
            a: the dividend, ``>= 0`` (an int or a runtime integer).
            b: the divisor, ``> 0``.

        Returns:
            ``(quotient, remainder)``, Python ints when both are ints, else runtime values.

        Dtypes and layouts:
            Integer scalars; the results have the promoted integer type.

        Raises:
            TypeError: an operand is a float, a pointer or a tensor.
            ZeroDivisionError: ``b`` is the constant 0.

        Example:
            .. code-block:: python

                group, in_group = self.fast_divmod(linear_idx, tiles_per_group)
        """
        for what, v in (("a", a), ("b", b)):
            if isinstance(v, Tensor) or isinstance(v, float) or (
                    isinstance(v, Expr) and (v.dtype.is_float or v.dtype.is_pointer)):
                raise TypeError(f"fast_divmod: {what} must be an integer scalar, got {v!r}")
        if isinstance(a, int) and isinstance(b, int):
            return divmod(a, b)
        if isinstance(b, int) and b == 0:
            raise ZeroDivisionError("fast_divmod: division by zero")
        q = as_expr(a) // as_expr(b)
        return q, a - q * b

    # ------------------------------------------------------------ debugging
    def printf(self, fstring: str, *args):
        """Print a C-format string with scalar values, once per thread block.

        Thread 0 of every block prints (CUDA ``printf``); the interpreter prints the same
        text for each block it runs.

        Args:
            fstring: a C format (``%d``, ``%5.2f``, ``%x``, ``%s``, ``%%`` ...; not ``%c``, ``%p``).
            *args: one value per conversion: runtime values or Python numbers; ``%s``
                takes a compile-time Python value.

        Dtypes and layouts:
            Integer conversions print any integer or bool value (widened to int64); float
            conversions any float value (widened to float64).

        Raises:
            ValueError: the number of conversions and values differ; an unsupported
                conversion.
            TypeError: a value does not fit its conversion, or is a tensor.

        Example:
            .. code-block:: python

                self.printf("block %d of %d: k=%d\\n", self.blockIdx.x, self.gridDim.x, k)
        """
        if not isinstance(fstring, str):
            raise TypeError(f"printf: the format must be a str, got {fstring!r}")
        text, values = _normalise_printf(fstring, args)
        current_builder().tile_op("printf", [], args=values, text=text)

    # ------------------------------------------------------------ layouts
    def annotate_layout(self, tensor, layout):
        """Fix the layout of a register tile, as if it had been created with it (a shared
        tensor's annotation is accepted and checked: see Raises).

        Layout inference plans every other tile around it (tiles tied by elementwise
        operations get it too; a dot's operands are converted if needed).

        Args:
            tensor: a register tensor.
            layout: a ``tilus.RegisterLayout`` covering exactly ``tensor.shape``.

        Dtypes and layouts:
            Any dtype. The layout must spread over the kernel's ``32 * warps`` threads
            (checked by layout inference).

        Raises:
            TypeError: ``tensor`` is not a tensor, or ``layout`` is not a layout of its
                scope. A shared tensor takes a ``SharedLayout`` of its shape (Tilus 0.2
                programs annotate them), which is checked and otherwise left to the code
                generator, which picks the shared layout (any holds the same values).
            ValueError: the layout's shape differs from the tensor's, or the tensor already
                has another layout.

        Example:
            .. code-block:: python

                self.annotate_layout(acc, spatial(4, 2).local(2, 2).spatial(8, 4))
        """
        if not isinstance(tensor, Tensor):
            raise TypeError(f"annotate_layout: tensor must be a tensor, got {tensor!r}")
        if tensor.scope == "shared":
            # Tilus 0.2 programs fix their shared layouts; in tilus the code generator picks
            # them (every shared layout holds the same values: only bank conflicts differ),
            # so the annotation is checked and otherwise left to it.
            if not isinstance(layout, SharedLayout):
                raise TypeError(f"annotate_layout: a shared tensor takes a SharedLayout, got {layout!r}")
            if [int(x) for x in layout.shape] != [int(x) for x in tensor.shape]:
                raise ValueError(f"annotate_layout: the layout's shape {list(layout.shape)} differs from "
                                 f"the shared tensor's {list(tensor.shape)}")
            return
        if isinstance(layout, SharedLayout):
            raise TypeError("annotate_layout: a register tensor takes a RegisterLayout, got a SharedLayout")
        if not isinstance(layout, RegisterLayout):
            raise TypeError(f"annotate_layout: layout must be a RegisterLayout, got {layout!r}")
        tensor.annotate_layout(layout)
