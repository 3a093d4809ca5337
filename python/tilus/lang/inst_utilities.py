"""Kernel utilities: printf, assume, static_assert, fast_divmod, thread ranges,
random numbers, layout annotations.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
"""

from __future__ import annotations


class UtilityInstructions:
    pass
