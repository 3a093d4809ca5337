"""Elementwise math of Tilus 0.2 beyond the arithmetic operators: abs, exp, exp2, log,
sin, cos, round, square, sqrt, rsqrt and clip (csrc/ops/math.cc; exp is in
csrc/ops/elementwise.cc).

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
Every function computes float16, bfloat16 and float32 in float32 and rounds once to the
dtype; float64 computes in double. Each docstring states the CUDA lowering and how far
it may be from the interpreter's float32 result.
"""

from __future__ import annotations

from tilus import _C
from tilus.lang.context import current_builder
from tilus.lang.operands import _tensor
from tilus.lang.values import as_expr


def _approx_flag(approx, name: str) -> int:
    if not isinstance(approx, bool):
        raise TypeError(f"{name}: approx must be True or False, got {approx!r}")
    return int(approx)


def _into(result, out, name: str):
    """The result, or ``out`` after the result was assigned to it (Tilus 0.2's out=)."""
    if out is None:
        return result
    out = _tensor(out, f"{name}: out")
    if out.scope != "register":
        raise TypeError(f"{name}: out must be a register tensor, got a {out.type_str()} tensor")
    if list(out.shape) != list(result.shape) or out.dtype != result.dtype:
        raise ValueError(f"{name}: out is a {out.type_str()} tensor but the result is "
                         f"{result.type_str()}")
    current_builder().assign_tensor(out, result)
    return out


def math_unary(name: str, x, out=None, approx: bool = False):
    """Build the math instruction ``name`` on the register tile ``x``."""
    result = current_builder().tile_op(name, [_tensor(x, f"{name}: x")],
                                       int_attr=_approx_flag(approx, name))
    return _into(result, out, name)


class MathInstructions:
    def abs(self, x, /, *, out=None):
        """Elementwise absolute value ``|x|`` (Python's ``abs(x)`` on a tile is the same).

        Args:
            x: a register tensor.
            out: write the result into this register tensor (of ``x``'s dtype and shape)
                instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout (``out`` when given).

        Dtypes and layouts:
            Float and integer dtypes. Exact on both backends: floats clear the sign bit,
            signed integers wrap (the most negative value stays itself, as in torch).

        Raises:
            TypeError: ``x`` is not a register tensor, or is boolean.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                err = self.abs(a - b)
        """
        return math_unary("abs", x, out)

    def exp(self, x, /, *, out=None):
        """Elementwise exponential ``e ** x``.

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of the same dtype, shape and layout as ``x``.

        Dtypes and layouts:
            float16, bfloat16, float32 and float64. Types narrower than float64 compute in
            float32: the interpreter with ``std::exp``, CUDA with the fast ``__expf``
            (``ex2.approx`` of ``x * log2(e)``: 2 ulp plus about ``1.2 * |x|`` ulp);
            float64 uses ``exp`` on both. The result has ``x``'s layout.

        Raises:
            TypeError: ``x`` is not a register tensor, or not of a float dtype.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                p = self.exp(scores - row_max)
        """
        return math_unary("exp", x, out)

    def exp2(self, x, /, *, out=None, approx: bool = False):
        """Elementwise base-2 exponential ``2 ** x``.

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.
            approx: flush results below ``2 ** -126`` (subnormal in float32) to zero:
                ``ex2.approx.ftz.f32``, one instruction per element instead of four.
                What a softmax wants; the interpreter flushes the same results.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            float16, bfloat16, float32 (computed in float32) and float64. CUDA lowers
            float32 to ``ex2.approx.f32`` (within 2 ulp of the interpreter's
            ``std::exp2``, the accuracy of CUDA's ``exp2f``); float64 uses ``exp2``
            (``approx`` changes nothing there).

        Raises:
            TypeError: ``x`` is not a register tensor, or not of a float dtype; ``approx``
                is not a bool.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                p = self.exp2(scores * 1.4426950408889634 - row_max)
        """
        return math_unary("exp2", x, out, approx)

    def log(self, x, /, *, out=None, approx: bool = False):
        """Elementwise natural logarithm ``ln x``.

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.
            approx: use the hardware approximation (``lg2.approx.f32`` times ln 2, as
                ``__logf``) instead of ``logf``.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            float16, bfloat16, float32 (computed in float32) and float64. float32 on CUDA:
            ``logf`` (1 ulp from the interpreter's ``std::log``); with ``approx=True``
            absolute error 2^-21.4 for x in [0.5, 2], else 3 ulp. ``log(0)`` is -inf,
            negative x gives NaN.

        Raises:
            TypeError: ``x`` is not a register tensor or not of a float dtype; ``approx``
                is not a bool.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                lse = row_max + self.log(row_sum)
        """
        return math_unary("log", x, out, approx)

    def sin(self, x, /, *, out=None, approx: bool = False):
        """Elementwise sine (radians).

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.
            approx: use ``sin.approx.f32`` (as ``__sinf``) instead of ``sinf``.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            float16, bfloat16, float32 (computed in float32) and float64. float32 on CUDA:
            ``sinf`` (2 ulp from the interpreter's ``std::sin``); with ``approx=True``
            absolute error 2^-21.4 for ``|x| <= pi``, growing outside (no range
            reduction).

        Raises:
            TypeError: ``x`` is not a register tensor or not of a float dtype; ``approx``
                is not a bool.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                rotated = x * self.cos(theta) - y * self.sin(theta)
        """
        return math_unary("sin", x, out, approx)

    def cos(self, x, /, *, out=None, approx: bool = False):
        """Elementwise cosine (radians).

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.
            approx: use ``cos.approx.f32`` (as ``__cosf``) instead of ``cosf``.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            float16, bfloat16, float32 (computed in float32) and float64. float32 on CUDA:
            ``cosf`` (2 ulp from the interpreter's ``std::cos``); with ``approx=True``
            absolute error 2^-21.4 for ``|x| <= pi``, growing outside.

        Raises:
            TypeError: ``x`` is not a register tensor or not of a float dtype; ``approx``
                is not a bool.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                c = self.cos(angles, approx=True)
        """
        return math_unary("cos", x, out, approx)

    def round(self, x, /, *, out=None):
        """Round every element to the nearest integer, ties to even (as ``torch.round``).

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout (still floating-point;
            cast it for integers).

        Dtypes and layouts:
            float16, bfloat16, float32 and float64. Exact on both backends (``rintf`` /
            ``rint`` on CUDA, ``nearbyint`` in the interpreter).

        Raises:
            TypeError: ``x`` is not a register tensor, or not of a float dtype.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                q = self.round(x / scale).to(int8)
        """
        return math_unary("round", x, out)

    def square(self, x, /, *, out=None):
        """Elementwise square ``x * x``.

        Args:
            x: a register tensor.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            Float and integer dtypes, with the semantics of ``x * x``: floats are
            correctly rounded on both backends, integers wrap.

        Raises:
            TypeError: ``x`` is not a register tensor, or is boolean.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                var = self.sum(self.square(x - mean), dim=1)
        """
        return math_unary("square", x, out)

    def sqrt(self, x, /, *, out=None, approx: bool = False):
        """Elementwise square root.

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.
            approx: use ``sqrt.approx.f32`` instead of the IEEE ``sqrtf``.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            float16, bfloat16, float32 (computed in float32) and float64. float32 on CUDA
            is correctly rounded (``sqrtf``, bit-identical to the interpreter); with
            ``approx=True`` within 3 ulp. Negative x gives NaN.

        Raises:
            TypeError: ``x`` is not a register tensor or not of a float dtype; ``approx``
                is not a bool.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                norm = self.sqrt(self.sum(self.square(x), dim=1))
        """
        return math_unary("sqrt", x, out, approx)

    def rsqrt(self, x, /, *, out=None):
        """Elementwise reciprocal square root ``1 / sqrt(x)``.

        Args:
            x: a float register tensor.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            float16, bfloat16, float32 (computed in float32) and float64. CUDA lowers
            float32 to ``rsqrt.approx.f32`` (2 ulp from the interpreter's
            ``1 / std::sqrt``, the accuracy of ``rsqrtf``); float64 uses ``rsqrt``.
            ``rsqrt(0)`` is inf.

        Raises:
            TypeError: ``x`` is not a register tensor, or not of a float dtype.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                y = x * self.rsqrt(mean_square + eps)
        """
        return math_unary("rsqrt", x, out)

    def clip(self, x, min, max, /, *, out=None):
        """Clamp every element to ``[min, max]``: ``maximum(minimum(x, max), min)``.

        Args:
            x: a register tensor.
            min: the lower bound, a Python number or a runtime scalar; cast to ``x``'s
                dtype.
            max: the upper bound, likewise.
            out: write the result into this register tensor instead of a new one.

        Returns:
            A register tensor of ``x``'s dtype, shape and layout.

        Dtypes and layouts:
            Float and integer dtypes; exact. As in Tilus 0.2 the upper bound applies
            first, so ``min > max`` gives ``min`` everywhere, and a NaN element becomes
            ``max`` (float min/max ignore NaN, as ``fminf``/``fmaxf``).

        Raises:
            TypeError: ``x`` is not a register tensor or is boolean; a bound is not a
                scalar.
            ValueError: ``out`` has another dtype or shape.
            RuntimeError: called outside a script's ``__call__`` while tilus compiles it.

        Example:
            .. code-block:: python

                y = self.clip(x, -1.0, 1.0)
        """
        x = _tensor(x, "clip: x")
        bounds = [_C.cast(as_expr(b, f"clip: {what}"), x.dtype)
                  for b, what in ((min, "min"), (max, "max"))]
        result = current_builder().tile_op("clip", [x], args=bounds)
        return _into(result, out, "clip")
