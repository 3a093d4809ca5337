"""``tilus.hidet.ir.dtypes``: the dtypes by their long and short names (Tilus 0.2 import
path); one per row of the type table."""

from tilus.lang import types as _types

globals().update({_n: getattr(_types, _n) for _n in _types.NAMES + _types.SHORT_NAMES})

__all__ = [*_types.NAMES, *_types.SHORT_NAMES]
