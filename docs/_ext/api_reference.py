"""Checks behind the API reference, and the cache CLI's help as a page.

``.. tilus-cli-help:: cache info`` includes ``python -m tilus cache info --help`` as
argparse prints it, so the page follows the parser. At build start every public name of
the modules the API reference documents must have a docstring; a missing one fails the
build (ExtensionError) with its name.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import shlex

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

# The modules of the API reference (docs/reference/api.rst).
MODULES = ["tilus", "tilus.autotune", "tilus.option", "tilus.utils", "tilus.layout",
           "tilus.cache", "tilus.__main__", "tilus.compiled"]


def _public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and (inspect.isfunction(v) or inspect.isclass(v))
                 and getattr(v, "__module__", None) == module.__name__]
    return [(n, getattr(module, n)) for n in names]


def undocumented():
    """Dotted names of public functions, classes and their public methods without a
    docstring, in the modules of the API reference."""
    out = []
    for modname in MODULES:
        module = importlib.import_module(modname)
        if not inspect.getdoc(module):
            out.append(modname)
        for name, obj in _public(module):
            if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
                continue  # data (dtypes) and submodules are documented where they live
            if not (obj.__doc__ or "").strip():
                out.append(f"{modname}.{name}")
            if inspect.isclass(obj) and getattr(obj, "__module__", "").startswith("tilus"):
                for member, value in vars(obj).items():
                    if member.startswith("_") or not (inspect.isfunction(value)
                                                      or isinstance(value, property)):
                        continue
                    if not (value.__doc__ or "").strip():
                        out.append(f"{modname}.{name}.{member}")
    return sorted(set(out))


def _check(app):
    missing = undocumented()
    if missing:
        raise ExtensionError("public names without a docstring:\n  " + "\n  ".join(missing))


class CliHelpDirective(SphinxDirective):
    required_arguments = 0
    optional_arguments = 10
    final_argument_whitespace = True

    def run(self):
        from tilus.__main__ import main

        argv = shlex.split(" ".join(self.arguments)) + ["--help"]
        text = io.StringIO()
        with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
            main(argv)
        block = nodes.literal_block(text.getvalue(), text.getvalue())
        block["language"] = "text"
        return [block]


def setup(app):
    app.connect("builder-inited", _check)
    app.add_directive("tilus-cli-help", CliHelpDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
