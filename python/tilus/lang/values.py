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
    """a op b where at least one side is a register tensor; the other may be a scalar."""
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
Tensor.__neg__ = lambda self: current_builder().neg(self)
Tensor.__invert__ = lambda self: current_builder().logical_not(self)
Tensor.__hash__ = object.__hash__


def _tensor_bool(self):
    raise TypeError(f"a {self.type_str()} tensor has no truth value")


Tensor.__bool__ = _tensor_bool


def _tensor_getitem(self, index):
    if not isinstance(index, tuple):
        index = (index,)
    if self.scope == "shared":
        return current_builder().slice_shared(self, [as_expr(i, "an index") for i in index])
    if self.scope == "global":
        return _C.element_load(self, [as_expr(i, "an index") for i in index])
    raise TypeError("register tensors cannot be indexed; use tile instructions on them")


Tensor.__getitem__ = _tensor_getitem
