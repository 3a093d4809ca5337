"""tilus: a tile-level GPU kernel language embedded in Python."""

from tilus import _C
from tilus.lang import values as _values  # noqa: F401  (installs operator sugar)
from tilus.lang.errors import ScriptError
from tilus.lang.types import (
    DataType,
    bfloat16,
    boolean,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from tilus.script import Script
from tilus.autotune import NoValidConfigError, autotune, autotune_key
from tilus import layout, option, runtime, utils

__version__ = _C.__version__

__all__ = [
    "Script", "autotune", "autotune_key", "NoValidConfigError", "utils", "layout", "option",
    "ScriptError", "DataType",
    "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
]
