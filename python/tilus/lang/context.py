"""The transpilation in progress on this thread (instruction methods emit into it)."""

import threading

_state = threading.local()


def current_builder():
    builder = getattr(_state, "builder", None)
    if builder is None:
        raise RuntimeError(
            "tile instructions can only be used inside a tilus Script's __call__, "
            "while tilus compiles it"
        )
    return builder


class LaunchAttrs:
    """What ``self.attrs.blocks`` / ``self.attrs.warps`` set so far in the kernel being
    built: the grid expressions (``self.gridDim``) and the warp count (the thread range
    of ``self.current_thread_begin`` and friends)."""

    def __init__(self):
        self.blocks = None  # list of 1..3 Exprs once set
        self.warps = None   # int once set
        self.cluster_blocks = None  # list of 1..3 ints once set


def current_launch_attrs() -> LaunchAttrs:
    current_builder()  # the same error outside a script
    return _state.launch_attrs


class building:
    """Context manager that makes `builder` the current one."""

    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.prev = getattr(_state, "builder", None)
        self.prev_attrs = getattr(_state, "launch_attrs", None)
        _state.builder = self.builder
        _state.launch_attrs = LaunchAttrs()
        return self.builder

    def __exit__(self, *exc):
        _state.builder = self.prev
        _state.launch_attrs = self.prev_attrs
        return False
