"""``.. tilus-program-output:: examples/add_one.py`` runs a script of the checkout at
build time and shows what it prints, so a tutorial's output is the real one.

The script runs with the Python running Sphinx and the tilus it imported (its folder is
put first on PYTHONPATH). A script that fails fails the build, with its stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective


class ProgramOutputDirective(SphinxDirective):
    required_arguments = 1
    optional_arguments = 10
    final_argument_whitespace = True

    def run(self):
        import tilus

        root = Path(self.env.srcdir).parent
        argv = self.arguments[0].split()
        script = root / argv[0]
        self.env.note_dependency(str(script))
        env = dict(os.environ)
        package_parent = str(Path(tilus.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent,
                                                          env.get("PYTHONPATH")]))
        result = subprocess.run([sys.executable, str(script), *argv[1:]], cwd=root, env=env,
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise ExtensionError(f"{' '.join(argv)} exited with {result.returncode}:\n"
                                 f"{result.stderr[-4000:]}")
        text = f"$ python {' '.join(argv)}\n{result.stdout.rstrip()}"
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        block["classes"].append("program-output")
        return [block]


def setup(app):
    app.add_directive("tilus-program-output", ProgramOutputDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
