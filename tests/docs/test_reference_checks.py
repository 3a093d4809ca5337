"""The checks that keep the generated references complete: an instruction of the table
without a documented Python surface, a docstring missing a required section, and a
public name without a docstring each fail the docs build."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

import tilus

ROOT = Path(__file__).resolve().parents[2]

# a host may carry a partial Sphinx install (sphinx without docutils): need every piece
_MISSING = [m for m in ("sphinx", "docutils", "myst_parser") if importlib.util.find_spec(m) is None]
if _MISSING:
    if os.environ.get("TILUS_REQUIRE_DOCS"):
        raise RuntimeError(f"{', '.join(_MISSING)} missing and TILUS_REQUIRE_DOCS is set")
    pytest.skip(f"{', '.join(_MISSING)} missing (pip install '.[docs]')", allow_module_level=True)

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import api_reference  # noqa: E402
import instruction_reference  # noqa: E402
from sphinx.errors import ExtensionError  # noqa: E402


def test_instruction_table_is_ops_def():
    text = (ROOT / "csrc" / "ir" / "ops.def").read_text()
    rows = re.findall(r'^TILUS_OP\(\w+, "(\w+)", (true|false),', text, re.M)
    assert tilus._C.instruction_table() == [(n, d == "true") for n, d in rows]


def test_every_instruction_and_public_name_is_documented():
    groups = instruction_reference.collect()
    assert [name for name, _ in groups[:-1]] == [n for n, _ in tilus._C.instruction_table()]
    assert api_reference.undocumented() == []


def test_a_new_instruction_without_a_surface_fails(monkeypatch):
    table = tilus._C.instruction_table() + [("fancy_reduce", True)]
    monkeypatch.setattr(tilus._C, "instruction_table", lambda: table)
    with pytest.raises(ExtensionError, match="'fancy_reduce' of csrc/ir/ops.def has no "
                                             "Python surface"):
        instruction_reference.collect()


def test_a_docstring_without_its_sections_fails(monkeypatch):
    from tilus.lang.instructions import InstructionMixin

    def dot(self, a, b, c=None, /, *, out=None):
        """a @ b + c.

        Args:
            a: a tile.
        """

    monkeypatch.setattr(InstructionMixin, "dot", dot)
    with pytest.raises(ExtensionError) as info:
        instruction_reference.collect()
    message = str(info.value)
    assert "tilus.Script.dot: the docstring lacks Returns, Dtypes and layouts, Raises, " \
           "Example" in message


def test_an_undocumented_public_function_fails(monkeypatch):
    import tilus.utils

    def helper(x):
        return x

    helper.__module__ = "tilus.utils"
    monkeypatch.setattr(tilus.utils, "helper", helper, raising=False)
    assert api_reference.undocumented() == ["tilus.utils.helper"]
