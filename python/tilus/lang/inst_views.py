"""Shape changes of register and shared tiles: view, reshape, squeeze, unsqueeze,
flatten, transpose, permute, repeat, repeat_interleave.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
"""

from __future__ import annotations


class ViewInstructions:
    pass
