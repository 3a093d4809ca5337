"""Atomics on shared and global memory and scatter stores.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
"""

from __future__ import annotations


class AtomicInstructions:
    pass
