"""Sphinx configuration of the tilus documentation (built by scripts/build_docs.sh).

autodoc imports tilus: either an installed tilus, or the checkout's python/ folder once
the extension is built (scripts/dev_build.sh); the checkout is used when it has a
built extension, so the docs describe the code beside them.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
if any((ROOT / "python" / "tilus").glob("_C*.so")):
    sys.path.insert(0, str(ROOT / "python"))

import tilus  # noqa: E402  (fails the build early, with the reason, when tilus is missing)

project = "tilus"
author = "the tilus authors"
copyright = "the tilus authors"
release = version = tilus.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "instruction_reference",
    "api_reference",
    "benchmark_pages",
    "program_output",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# docs/README.md is the folder's landing page on the code host; the site's is index.md.
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store"]

# Every cross-reference must resolve: with -W a dangling one fails the build.
nitpicky = True
nitpick_ignore_regex = [
    # Types from the standard library and typing that autodoc prints in signatures.
    ("py:class", r"(typing\.)?(Optional|Sequence|Callable|Union|List|Dict|Iterator|Tuple)"),
    ("py:class", r"(re\.)?(Pattern|Match)"),
    ("py:class", r"collections\.abc\..*"),
    # What Script.compile returns: internal, reached through Script.ir/source/compiled.
    ("py:class", r"tilus\.script\.CompiledScript"),
    ("py:class", r"optional"),
    # Native classes re-exported under several names; documented in the API reference.
    ("py:class", r"tilus\._C\..*"),
    ("py:class", r"(RegisterLayout|SharedLayout|DataType|Signature)"),
    ("py:class", r"tilus\.(layout\.(RegisterLayout|SharedLayout)|lang\.types\.DataType)"),
]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_custom_sections = ["Dtypes and layouts"]

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"tilus {release}"
html_static_path = []
