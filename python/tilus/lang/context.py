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


class building:
    """Context manager that makes `builder` the current one."""

    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.prev = getattr(_state, "builder", None)
        _state.builder = self.builder
        return self.builder

    def __exit__(self, *exc):
        _state.builder = self.prev
        return False
