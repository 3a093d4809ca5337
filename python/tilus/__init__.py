"""tilus: a tile-level GPU kernel language embedded in Python."""

from tilus import _C
from tilus.lang import values as _values  # noqa: F401  (installs operator sugar)
from tilus.lang.errors import ScriptError
from tilus.lang import types as _types
from tilus.lang.types import DataType, void_p
from tilus.script import InstantiatedScript, Script
from tilus.lang.classes import Class
from tilus.lang.pipeline import Pipeline
from tilus.lang.structs import Dim3
from tilus.autotune import NoValidConfigError, autotune, autotune_key
from tilus import layout, option, runtime, utils
from tilus.layout import RegisterLayout, SharedLayout
from tilus.tensor_types import GlobalTensor, RegisterTensor, SharedTensor
# Tilus 0.2's host tensors of any type (tilus.tensor) and its ready-made kernels
from tilus.tensor import empty, from_torch, full, ones, rand, randint, randn, view_torch, zeros
from tilus import kernels, logging, testing
from tilus.target import get_current_target

__version__ = _C.__version__

# tilus.float16, tilus.int32, ...: one name per row of the type table (lang/types.py),
# and Tilus 0.2's short names (tilus.f16, tilus.i32, ...).
globals().update({_name: getattr(_types, _name) for _name in _types.NAMES + _types.SHORT_NAMES})

__all__ = [
    "Script", "InstantiatedScript", "get_current_target", "testing", "Class", "Pipeline", "Dim3", "autotune", "autotune_key", "NoValidConfigError", "utils", "layout", "option",
    "ScriptError", "DataType", "RegisterLayout", "SharedLayout", "RegisterTensor",
    "SharedTensor", "GlobalTensor", "void_p", "kernels", "logging", "empty", "from_torch", "full", "ones", "rand",
    "randint", "randn", "view_torch", "zeros", *_types.NAMES, *_types.SHORT_NAMES,
]
