"""Reductions and scans over one dimension of a register tile: max, min, any, all,
scan, cumsum, cumprod (sum lives in instructions.py).

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
"""

from __future__ import annotations


class ReductionInstructions:
    pass
