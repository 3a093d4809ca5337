"""Tilus 0.2's classes of the sub-byte types, as names to test dtypes against:
``isinstance(tilus.f6e3m2, FloatSubbyteType)``. tilus has one DataType class (a row of its
type table per type), so these answer from the type's family and width; they make no new
types (tilus's types are the table's rows)."""

from tilus.lang.types import DataType


class _KindMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, DataType) and bool(getattr(obj, cls._predicate))

    def __call__(cls, *args, **kwargs):
        raise TypeError(f"{cls.__name__}(...) makes no new types in tilus: its types are the rows of one "
                        "table (tilus.float6_e3m2, tilus.uint3b, ...); test a dtype with isinstance instead")


class FloatSubbyteType(metaclass=_KindMeta):
    """A float type narrower than a byte (float3_e1m1 ... float7_e5m1)."""

    _predicate = "is_float_subbyte"  # DataType's own test (lang/types.py)


class IntegerSubbyteType(metaclass=_KindMeta):
    """An integer type narrower than a byte (int1b ... int7b, uint1b ... uint7b)."""

    _predicate = "is_integer_subbyte"
