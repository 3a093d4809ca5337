"""What a stored tuning result depends on, as names for the disk store.

A tuned script is identified by a hash of everything that can change which
configuration wins or what a configuration means: the tilus build (version, and the
size and time of the native module, so a rebuild counts as a change), the text of the
file that defines the script class (its ``__call__``, ``__init__`` and helper methods,
and module-level helpers in the same file), the values captured by closures of
``__call__`` and ``__init__`` (``make_matmul(float16)`` style factories), the parameter
types of ``__call__``, the non-tuned constructor arguments, the configuration list
itself, and the code generator's and transpiler's options (``tilus.option.codegen``,
``static_rings``). Helpers imported from other files are not hashed: after changing one, run
``python -m tilus cache clear --tuning``. The GPU (name and compute capability) and the
tuning key name the entry inside that directory.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import os
import re

from tilus import _C, option
from tilus.candidate import kernel_name

_SIMPLE = (int, float, str, bool, type(None))


def stable_repr(value) -> str:
    """repr() for values whose repr is the same in every process; a type name otherwise
    (an object's default repr holds its address, which would defeat the disk store)."""
    if isinstance(value, _SIMPLE):
        return repr(value)
    if isinstance(value, (tuple, list)):
        inner = ", ".join(stable_repr(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict):
        items = (f"{stable_repr(k)}: {stable_repr(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, _C.DataType):
        return value.name
    if isinstance(value, type):
        return f"<class {value.__module__}.{value.__qualname__}>"
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _source_text(cls) -> str:
    try:
        with open(inspect.getsourcefile(cls), encoding="utf-8") as f:
            return f.read()
    except (OSError, TypeError):
        pass
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):
        kernel = cls._tilus_kernel_fn
        return kernel.__code__.co_code.hex() if kernel is not None else cls.__qualname__


def _closure_values(fn) -> list:
    fn = inspect.unwrap(fn)
    cells = getattr(fn, "__closure__", None) or ()
    names = getattr(getattr(fn, "__code__", None), "co_freevars", ())
    out = []
    for name, cell in zip(names, cells):
        try:
            out.append(f"{name}={stable_repr(cell.cell_contents)}")
        except ValueError:  # an empty cell
            out.append(f"{name}=<empty>")
    return out


@functools.lru_cache(maxsize=None)
def tilus_build() -> str:
    """The tilus version plus the size and time of the native module: development builds
    keep their version number, but every rebuild must invalidate stored results."""
    try:
        stat = os.stat(_C.__file__)
        return f"{_C.__version__}:{stat.st_size}:{stat.st_mtime_ns}"
    except (OSError, AttributeError):
        return _C.__version__


def script_identity(cls, sig, given: dict, fixed: dict, configs: list) -> str:
    """``<kernel name>-<16 hex digits>``: the directory of this script's tuning results."""
    parts = {
        "tilus": tilus_build(),
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "source": _source_text(cls),
        "closures": _closure_values(cls._tilus_kernel_fn) + _closure_values(cls.__init__),
        "params": [(p.name, "jit" if p.jit else "runtime", stable_repr(p.type))
                   for p in sig.params],
        "given": stable_repr(dict(sorted(given.items()))),
        "fixed": stable_repr(dict(sorted(fixed.items()))),
        "configs": [stable_repr(c) for c in configs],
        # what the code generator and the transpiler are told: another choice builds other
        # kernels, so their timings and winner are another entry
        "options": {**dataclasses.asdict(option.get_codegen()), "static_rings": option.get_static_rings()},
    }
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return f"{kernel_name(cls)}-{digest[:16]}"


def slug(text: str, limit: int = 80) -> str:
    """A file-name-safe version of `text`."""
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text).strip("_")[:limit] or "_"


def gpu_dir_name(gpu: dict) -> str:
    """``NVIDIA_H100_80GB_HBM3-sm_90a``: the GPU's name and its arch (compute capability)."""
    return slug(f"{gpu['name']}-{gpu['arch']}")


def entry_name(label: str, key: dict) -> str:
    """``<label>-<runtime part>-<hash of the whole key>.json``: readable, and unique even
    when the readable part is cut short."""
    runtime = "-".join(f"{k}{v}" for k, v in key["runtime"].items())
    text = json.dumps(key, sort_keys=True, default=stable_repr)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{slug('-'.join(p for p in (label, runtime) if p))}-{digest}.json"
