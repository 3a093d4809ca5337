"""``tilus.Class``: helper objects a kernel creates and calls (Tilus 0.2).

A subclass's ``__init__`` and methods are transpiled into the kernel that uses them, like
a Script's helper methods: ``self.<attr>: int32 = 0`` in ``__init__`` declares a runtime
variable that later methods update in place, register tiles stored on ``self`` are
written in place when reassigned, and every tile instruction (``self.sync()``,
``self.load_global(...)``) is available on ``self``.
"""

from __future__ import annotations

from tilus.lang.instructions import InstructionMixin


class Class(InstructionMixin):
    """Base class of kernel helper objects (see the module docstring)::

        class Counter(tilus.Class):
            def __init__(self, n: int):
                self.n = n
                self.i: int32 = 0

            def advance(self):
                self.i = (self.i + 1) % self.n

        # in a Script's __call__
        counter = Counter(4)
        counter.advance()
    """
