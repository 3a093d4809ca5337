"""The language reference, generated from the instruction table and the docstrings.

``.. tilus-instructions::`` renders one section per entry of
``tilus._C.instruction_table()`` (the X-macro table csrc/ir/ops.def as Python sees it),
in table order. An instruction's Python surface is the Script method of the same name,
or, for the instructions a script reaches through syntax (indexing, operators,
assignment), the functions listed in ``SYNTAX`` below. Every other public Script method
follows in a section of its own, so nothing a script can call goes undocumented.

The build fails (ExtensionError) when an instruction has no Python surface or when a
surface's docstring lacks a required section: ``Args`` (when it takes arguments),
``Returns`` (when the instruction defines a tensor), ``Dtypes and layouts``, ``Raises``
and ``Example``. Docstrings are Google style, rendered by napoleon.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from typing import List

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.ext.napoleon import GoogleDocstring
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

REQUIRED = ("Dtypes and layouts", "Raises", "Example")

# Instructions of the table that scripts reach through Python syntax rather than a Script
# method of the same name: (what a script writes, the function that documents it).
SYNTAX = {
    "slice_shared": [("s[i, ...]", "tilus.lang.values._tensor_getitem")],
    "slice_register": [("r[i], r[i, :]", "tilus.lang.values._tensor_getitem")],
    "slice_assign_register": [("r[i] = v, r[i, :] = row, r[i] ^= 1",
                               "tilus.lang.transpiler.Transpiler.assign_element")],
    "elementwise": [("x + y, x - y, x * y, x / y, x % y, x < y, ...",
                     "tilus.lang.values.tensor_binary"),
                    ("x ^ y", "tilus.lang.values._tensor_xor")],
    "cast": [("x.to(dtype)", "tilus.lang.values._tensor_to")],
    "unary": [("-x", "tilus.lang.values._tensor_neg"),
              ("~x", "tilus.lang.values._tensor_invert")],
    # kernel utilities: the index tiles register_tensor(init=lambda i, j: ...) is called with
    "index_tile": [("self.register_tensor(dtype=..., shape=..., init=lambda i, j: ...)",
                    "tilus.lang.instructions.InstructionMixin.register_tensor")],
    "tensor_item": [("x.item()", "tilus.lang.values._tensor_item"),
                    ("x.tolist()", "tilus.lang.values._tensor_tolist")],
    "shared_item_ptr": [("s.item_ptr()", "tilus.lang.values._tensor_item_ptr")],
    # atomics (python/tilus/lang/inst_atomics.py): Tilus's self.atomic group
    **{f"atomic_{space}{form}": [
        (f"self.atomic.{space}_{form[1:] + '_' if form else ''}{op}(...)",
         f"tilus.lang.inst_atomics.AtomicGroup.{space}_{form[1:] + '_' if form else ''}{op}")
        for op in (("add", "sub", "min", "max") if form else ("add", "sub", "min", "max", "exch", "cas"))]
       for space in ("shared", "global") for form in ("", "_scatter")},
    "permute_shared": [("s.permute(dims), s.transpose()", "tilus.lang.inst_views._tensor_permute")],
    # hopper (python/tilus/lang/inst_hopper.py): Tilus's self.mbarrier, self.tma, self.fence
    **{f"mbarrier_{op}": [(f"self.mbarrier.{m}(...)", f"tilus.lang.inst_hopper.MbarrierGroup.{m}")]
       for op, m in (("alloc", "alloc"), ("arrive", "arrive"),
                     ("arrive_expect_tx", "arrive_and_expect_tx"), ("wait", "wait"))},
    **{f"tma_{m}": [(f"self.tma.{m}(...)", f"tilus.lang.inst_hopper.TmaGroup.{m}")]
       for m in ("global_to_shared", "shared_to_global", "commit_group", "wait_group")},
    **{f"fence_{m}": [(f"self.fence.{m}(...)", f"tilus.lang.inst_hopper.FenceGroup.{m}")]
       for m in ("proxy_async", "proxy_async_release")},
    # wgmma (python/tilus/lang/inst_wgmma.py): Tilus's explicit self.wgmma
    **{f"wgmma_{op}": [(f"self.wgmma.{m}(...)", f"tilus.lang.inst_wgmma.WgmmaGroup.{m}")]
       for op, m in (("fence", "fence"), ("mma", "mma"), ("commit", "commit_group"), ("wait", "wait_group"))},
    # thread groups and clusters (python/tilus/lang/inst_cluster.py, inst_hopper.py)
    "cluster_sync": [("self.cluster.sync()", "tilus.lang.inst_cluster.ClusterGroup.sync")],
    "cluster_query": [("self.cluster.blockIdx, self.cluster.clusterDim, self.cluster.blockRank",
                       "tilus.lang.inst_cluster._query")],
    "cluster_map_shared_addr": [("self.cluster.map_shared_addr(addr, target_rank)",
                                 "tilus.lang.inst_cluster.ClusterGroup.map_shared_addr")],
    "cluster_store_shared": [("self.cluster.store_shared(dst, src, target_rank=)",
                              "tilus.lang.inst_cluster.ClusterGroup.store_shared")],
    "cluster_load_shared": [("self.cluster.load_shared(src, target_rank=)",
                             "tilus.lang.inst_cluster.ClusterGroup.load_shared")],
    "mbarrier_arrive_cluster": [
        (f"self.mbarrier.{m}(...)", f"tilus.lang.inst_hopper.MbarrierGroup.{m}")
        for m in ("arrive_and_expect_tx_remote", "arrive_and_expect_tx_multicast")],
}

# Instructions of the table that scripts never write: compiler passes insert them. Each
# gets a section saying so instead of a Python surface.
INTERNAL = {
    "wgmma_commit_group": "Inserted by the async pass (csrc/transforms/async_waits.cc) after a "
                          "dot lowered to asynchronous wgmma on sm_90a: the wgmma dots issued "
                          "since the last commit form one group. Scripts do not write it.",
    "wgmma_wait_group": "Inserted by the async pass (csrc/transforms/async_waits.cc) where a "
                        "running wgmma dot's tiles or accumulator are touched next: waits until "
                        "at most ``n`` committed groups run. Scripts do not write it.",
}

# Script methods documented under an instruction of the table other than their own name.
METHOD_OF = {"add": "elementwise", "sub": "elementwise", "mul": "elementwise",
             "div": "elementwise", "maximum": "elementwise", "minimum": "elementwise",
             "squeeze": "reshape", "unsqueeze": "reshape", "flatten": "reshape",
             "transpose": "permute"}


@dataclass
class Entry:
    shown: str          # the signature or syntax a script writes
    qualname: str       # where the docstring lives
    doc: str
    returns: bool       # the instruction defines a tensor: a Returns section is required
    takes_args: bool
    signature: str = ""  # the parameters of a Script method, "(x, y, /, *, out=None)"


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ExtensionError(f"instruction reference: cannot import {dotted}")


def _script_methods():
    from tilus.lang.instructions import InstructionMixin

    # The family mixins (lang/inst_*.py) contribute methods too: walk the whole MRO.
    names = dict.fromkeys(name for klass in InstructionMixin.__mro__ if klass is not object
                          for name in vars(klass))
    return {name: getattr(InstructionMixin, name) for name in names
            if not name.startswith("_") and callable(getattr(InstructionMixin, name))}


def _method_entry(name, fn, returns: bool) -> Entry:
    sig = inspect.signature(fn, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    text = str(sig.replace(parameters=params, return_annotation=sig.empty))
    text = re.sub(r"typing\.|collections\.abc\.", "", text)
    return Entry(f"self.{name}{text}", f"tilus.Script.{name}", inspect.getdoc(fn) or "",
                 returns, takes_args=bool(params), signature=text)


def sections_of(doc: str) -> List[str]:
    """The Google-style section headers of a docstring (``Raises:`` -> ``Raises``)."""
    return re.findall(r"^([A-Z][A-Za-z ]*):\s*$", doc, flags=re.M)


def missing_sections(entry: Entry) -> List[str]:
    have = set(sections_of(entry.doc))
    need = list(REQUIRED)
    if entry.takes_args:
        need.insert(0, "Args")
    if entry.returns:
        need.insert(1 if entry.takes_args else 0, "Returns")
    missing = [s for s in need if s not in have]
    if not entry.doc.strip():
        missing.insert(0, "a docstring")
    return missing


def collect():
    """[(instruction name, [Entry])] in table order, then ("more", [Entry]) for the
    remaining public Script methods. Raises ExtensionError naming every gap."""
    import tilus

    methods = _script_methods()
    groups, used, problems = [], set(), []
    for name, defines in tilus._C.instruction_table():
        if name in INTERNAL:
            groups.append((name, []))
            continue
        entries = []
        if name in methods:
            entries.append(_method_entry(name, methods[name], defines))
            used.add(name)
        for shown, dotted in SYNTAX.get(name, []):
            obj = _resolve(dotted)
            params = [p for p in inspect.signature(obj).parameters.values()
                      if p.name != "self"]
            entries.append(Entry(shown, dotted, inspect.getdoc(obj) or "", defines,
                                 takes_args=bool(params)))
        for method, op in METHOD_OF.items():
            if op == name:
                entries.append(_method_entry(method, methods[method], True))
                used.add(method)
        if not entries:
            problems.append(f"instruction '{name}' of csrc/ir/ops.def has no Python surface: "
                            f"add a Script method named {name} (python/tilus/lang/"
                            "instructions.py) or list its syntax in SYNTAX of "
                            "docs/_ext/instruction_reference.py")
        groups.append((name, entries))
    more = [_method_entry(n, fn, False) for n, fn in methods.items() if n not in used]
    groups.append(("more", more))
    for _, entries in groups:
        for entry in entries:
            missing = missing_sections(entry)
            if missing:
                problems.append(f"{entry.qualname}: the docstring lacks {', '.join(missing)}")
    if problems:
        raise ExtensionError("the language reference is incomplete:\n  " + "\n  ".join(problems))
    return groups


class InstructionsDirective(SphinxDirective):
    has_content = False

    def run(self):
        config = self.env.app.config
        lines = []
        for name, entries in collect():
            title = "More script methods" if name == "more" else name
            lines += [title, "-" * len(title), ""]
            if name != "more":
                lines += [f"Instruction ``{name}`` of the table.", ""]
            if name in INTERNAL:
                lines += [INTERNAL[name], ""]
            for entry in entries:
                body = str(GoogleDocstring(entry.doc, config, self.env.app, what="method"))
                if entry.qualname.startswith("tilus.Script."):
                    # A py:method entry: a link target, and :meth:`sync` in its text
                    # resolves against tilus.Script.
                    lines += [f".. py:method:: {entry.qualname}{entry.signature}", ""]
                    lines += ["   " + line if line else "" for line in body.splitlines()]
                    lines.append("")
                else:
                    lines += [f".. rubric:: ``{entry.shown}``", ""]
                    lines += body.splitlines()
                    lines += ["", f"*Documented in* ``{entry.qualname}``.", ""]
        container = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source="tilus-instructions"),
                                 container)
        return container.children


def setup(app):
    app.add_directive("tilus-instructions", InstructionsDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
