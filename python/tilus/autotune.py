"""``@tilus.autotune``: hyper-parameter search spaces of a Script.

Stacked decorators form the Cartesian product of their value lists, in reading order
(the top decorator varies slowest). Instantiating the class without the tuned arguments
returns a :class:`TunedScript`, which picks a configuration per tuning key on its first
call. Passing a tuned argument explicitly fixes it.

On the CPU interpreter no timing happens: the first configuration, in product order,
that compiles for the arguments is used (documented in docs/autotune.md).
"""

from __future__ import annotations

import inspect
import itertools
import threading
from typing import Dict, List, Sequence, Tuple

from tilus.lang import errors


class SearchSpace:
    def __init__(self):
        self.axes: List[Tuple[Tuple[str, ...], List[tuple]]] = []

    def names(self) -> List[str]:
        return [n for names, _ in self.axes for n in names]

    def configs(self, fixed: Dict[str, object]) -> List[Dict[str, object]]:
        """Every configuration, in product order, restricted to those that agree with
        the explicitly given values."""
        out = []
        for combo in itertools.product(*[values for _, values in self.axes]):
            config = {}
            for (names, _), values in zip(self.axes, combo):
                config.update(zip(names, values))
            if all(config.get(k, v) == v for k, v in fixed.items()):
                for k in fixed:
                    config.pop(k, None)
                if config not in out:
                    out.append(config)
        return out


def autotune(arg_names: str, arg_values: Sequence):
    """Declare a search space: ``@tilus.autotune("block_k", [16, 32])`` or
    ``@tilus.autotune("block_m, block_n", [(128, 128), (64, 128)])``."""
    if not isinstance(arg_names, str):
        raise TypeError("autotune: the first argument is a comma-separated string of names")
    names = tuple(n.strip() for n in arg_names.split(","))
    if not all(n.isidentifier() for n in names):
        raise ValueError(f"autotune: bad parameter names {arg_names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"autotune: {arg_names!r} names a parameter twice")
    values = list(arg_values)
    if not values:
        raise ValueError(f"autotune({arg_names!r}): the list of values is empty")
    rows = []
    for v in values:
        row = tuple(v) if len(names) > 1 else (v,)
        if len(names) > 1 and (not isinstance(v, (tuple, list)) or len(v) != len(names)):
            raise ValueError(f"autotune({arg_names!r}): each value must be a tuple of "
                             f"{len(names)} items, got {v!r}")
        rows.append(row)

    def decorate(cls):
        from tilus.script import Script

        if not (isinstance(cls, type) and issubclass(cls, Script)):
            raise TypeError("@tilus.autotune decorates a tilus.Script subclass")
        init_params = list(inspect.signature(cls.__init__).parameters)[1:]
        for n in names:
            if n not in init_params:
                raise ValueError(f"autotune: {cls.__name__}.__init__ has no parameter '{n}' "
                                 f"(it takes {', '.join(init_params) or 'nothing'})")
        space = SearchSpace()
        inherited = cls.__dict__.get("_tilus_tune_space")
        if inherited is not None:
            space.axes = list(inherited.axes)
        for n in names:
            if n in space.names():
                raise ValueError(f"autotune: parameter '{n}' of {cls.__name__} is tuned twice")
        # Decorators apply bottom-up; inserting in front keeps reading order.
        space.axes.insert(0, (names, rows))
        cls._tilus_tune_space = space
        return cls

    return decorate


def tuned_instance_or_none(cls, args: tuple, kwargs: dict):
    """A TunedScript when some tuned parameter is missing from the arguments, else None
    (the caller builds an ordinary instance)."""
    space: SearchSpace = cls._tilus_tune_space
    sig = inspect.signature(cls.__init__)
    try:
        bound = sig.bind_partial(None, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}(): {e}") from None
    given = dict(bound.arguments)
    given.pop(next(iter(sig.parameters)))
    tuned = space.names()
    if all(n in given for n in tuned):
        return None
    fixed = {n: given.pop(n) for n in tuned if n in given}
    configs = space.configs(fixed)
    if not configs:
        raise ValueError(f"{cls.__name__}(): no configuration of the search space matches "
                         f"{fixed}")
    return TunedScript(cls, given, fixed, configs)


class TunedScript:
    """An auto-tuned kernel: a script class, its non-tuned arguments and the configs."""

    def __init__(self, cls, given: dict, fixed: dict, configs: List[dict]):
        self.cls = cls
        self.given = given
        self.fixed = fixed
        self.configs = configs
        self._instances: Dict[int, object] = {}
        self._chosen: Dict[tuple, int] = {}
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<tuned {self.cls.__name__}: {len(self.configs)} configs>"

    def instance(self, index: int):
        inst = self._instances.get(index)
        if inst is None:
            inst = self.cls(**self.given, **self.fixed, **self.configs[index])
            self._instances[index] = inst
        return inst

    def __call__(self, *args, **kwargs):
        sig = self.cls._signature()
        values = sig.bind(args, kwargs)
        key = sig.jit_key(values)
        index = self._chosen.get(key)
        if index is None:
            index = self._choose(key, args, kwargs)
        return self.instance(index)(*args, **kwargs)

    def _choose(self, key: tuple, args, kwargs) -> int:
        """First config that compiles (no timing: the CPU interpreter's documented rule)."""
        reasons = []
        with self._lock:
            for i in range(len(self.configs)):
                try:
                    self.instance(i).compile(*args, **kwargs)
                except errors.ScriptError as e:
                    reasons.append(f"  {self.configs[i]}: {e.message}")
                    continue
                self._chosen[key] = i
                return i
        raise ValueError(f"no configuration of {self.cls.__name__} compiles for these "
                         "arguments:\n" + "\n".join(reasons))

    def chosen_config(self, *args, **kwargs) -> dict:
        """The configuration used for these arguments (choosing it if needed)."""
        sig = self.cls._signature()
        key = sig.jit_key(sig.bind(args, kwargs))
        index = self._chosen.get(key)
        if index is None:
            index = self._choose(key, args, kwargs)
        return dict(self.configs[index])
