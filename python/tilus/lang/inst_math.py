"""Elementwise math and comparisons beyond the arithmetic operators: abs, exp2, log,
sin, cos, round, square, sqrt, rsqrt, clip, xor, comparisons.

A mixin of tilus.Script (lang/instructions.py InstructionMixin); the methods follow the
docstring rules of instructions.py (Args, Returns, Dtypes and layouts, Raises, Example).
"""

from __future__ import annotations


class MathInstructions:
    pass
