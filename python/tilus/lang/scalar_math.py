"""Python's ``math`` functions on runtime scalars inside a script (as Tilus 0.2 maps them).

``alpha: float32 = math.exp(g[0, i].item())`` calls ``math.exp`` on a runtime value; the
transpiler's ``call`` hands such a call here, and it becomes a scalar math expression
(``_C.math``, ``ExprKind::Math`` in csrc/ir/expr.h): ``expf`` ... in the generated CUDA,
the same function in the CPU interpreter. On Python values the ``math`` functions still
run as Python, at compile time.

Types: float16, bfloat16, float32 and float64 operands keep their type (the half types
are computed through float32); integer operands are converted to float32 first;
``isnan`` and ``isinf`` give a boolean. A pointer or boolean operand is a TypeError
naming the function. A constant operand folds.
"""

from __future__ import annotations

import math

from tilus import _C
from tilus.lang.values import Expr, Tensor

# The Python function -> the IR's name for it (csrc/ir/expr.cc, math_fn_name).
FUNCTIONS = {
    math.exp: "exp", math.log: "log", math.sqrt: "sqrt",
    math.sin: "sin", math.cos: "cos", math.tan: "tan",
    math.asin: "asin", math.acos: "acos", math.atan: "atan",
    math.sinh: "sinh", math.cosh: "cosh", math.tanh: "tanh",
    math.asinh: "asinh", math.acosh: "acosh", math.atanh: "atanh",
    math.ceil: "ceil", math.floor: "floor", math.trunc: "trunc",
    math.isnan: "isnan", math.isinf: "isinf",
}


def handles(func) -> bool:
    """Whether `func` is one of the mapped ``math`` functions."""
    try:
        return func in FUNCTIONS
    except TypeError:  # an unhashable callable
        return False


def call(func, args, kwargs) -> Expr:
    """``func(*args, **kwargs)`` where an argument is a runtime value: the expression."""
    name = FUNCTIONS[func]
    if kwargs or len(args) != 1:
        raise TypeError(f"math.{name}() on a runtime value takes exactly one argument, got "
                        f"{len(args) + len(kwargs)}")
    (x,) = args
    if isinstance(x, Tensor):
        raise TypeError(f"math.{name}() takes a scalar, got a {x.type_str()} tensor; tiles "
                        "have their own functions (self.exp(x), ...)")
    if not isinstance(x, Expr):
        raise TypeError(f"math.{name}() takes a number, got {type(x).__name__}")
    return _C.math(name, x)
