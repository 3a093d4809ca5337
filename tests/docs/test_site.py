"""The documentation site, checked as a reader sees it.

Builds the site (scripts/build_docs.sh's Sphinx command: warnings are errors, every
cross-reference must resolve) into a temporary folder, opens pages in headless Chromium
and asserts on the rendered DOM: titles, code blocks from examples/, the generated
instruction reference, and a performance plot whose <img> points to a PNG. Screenshots
go to $TILUS_DOCS_ARTIFACTS (default: the temporary folder) for a person to look at.

Without Sphinx or Chromium the tests skip, unless TILUS_REQUIRE_DOCS is set (CI), where
a missing tool fails.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = bool(os.environ.get("TILUS_REQUIRE_DOCS"))


def _need(ok: bool, what: str):
    if ok:
        return
    if REQUIRED:
        pytest.fail(f"{what} is missing and TILUS_REQUIRE_DOCS is set")
    pytest.skip(f"{what} is missing (pip install '.[docs]'; apt-get install chromium)")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    _need(False, "Chromium")


def _chromium_run(args, timeout=60) -> str:
    # --no-sandbox: CI and the dev machines run as root, where the sandbox refuses to start.
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    _need(importlib.util.find_spec("sphinx") is not None, "Sphinx")
    _need(importlib.util.find_spec("docutils") is not None, "docutils")
    _need(importlib.util.find_spec("myst_parser") is not None, "myst-parser")
    _chromium()
    out = tmp_path_factory.mktemp("site") / "html"
    # docs/conf.py picks the tilus to document: the checkout's when its extension is
    # built (scripts/dev_build.sh), else the installed one.
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q",
                             "-b", "html", "docs", str(out)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"docs build failed:\n{result.stdout}\n{result.stderr}"
    return out


@pytest.fixture(scope="module")
def artifacts(site):
    folder = Path(os.environ.get("TILUS_DOCS_ARTIFACTS") or site.parent / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def dom(page: Path) -> str:
    assert page.exists(), page
    return _chromium_run(["--dump-dom", page.as_uri()])


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def title(document: str) -> str:
    return text_of(re.search(r"<title>(.*?)</title>", document, re.S).group(1))


def h1(document: str) -> str:
    return text_of(re.search(r"<h1>(.*?)</h1>", document, re.S).group(1)).strip("¶# \n")


def code_blocks(document: str):
    return [text_of(b) for b in re.findall(r"<pre>(.*?)</pre>", document, re.S)]


def test_home_page(site, artifacts):
    document = dom(site / "index.html")
    assert title(document).startswith("tilus")
    assert h1(document) == "tilus"
    assert any("class AddOneKernel(tilus.Script):" in b for b in code_blocks(document))
    for link in ("getting_started.html", "tutorials/index.html",
                 "reference/instructions.html", "reference/api.html", "performance.html"):
        assert f'href="{link}"' in document, link
    _chromium_run(["--window-size=1280,1000", f"--screenshot={artifacts / 'home.png'}",
                   (site / "index.html").as_uri()])
    assert (artifacts / "home.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_getting_started_shows_the_real_output(site):
    document = dom(site / "getting_started.html")
    outputs = [b for b in code_blocks(document) if b.startswith("$ python examples/add_one.py")]
    assert outputs, "the output of examples/add_one.py is missing"
    # The seed's documented output: b = a + 1.
    assert "tensor([ 1.,  2.,  3.," in outputs[0]


def test_tutorial_includes_the_example_code(site, artifacts):
    document = dom(site / "tutorials" / "pipeline.html")
    assert h1(document) == "5. A cp.async pipeline"
    source = (ROOT / "examples" / "matmul_v3_pipeline.py").read_text()
    blocks = [b for b in code_blocks(document) if "class MatmulV3(tilus.Script):" in b]
    assert blocks, "the MatmulV3 class is not shown"
    # Included from the file, so it is the code that runs: every line is in the example.
    for line in blocks[0].splitlines():
        assert line in source, line
    _chromium_run(["--window-size=1280,1400", f"--screenshot={artifacts / 'tutorial.png'}",
                   (site / "tutorials" / "pipeline.html").as_uri()])
    index = dom(site / "tutorials" / "index.html")
    assert "8. Row softmax" in text_of(index) and "Pages still to write" in text_of(index)


def test_softmax_tutorial_shows_each_path_from_the_example(site):
    document = dom(site / "tutorials" / "softmax.html")
    assert h1(document).startswith("8. Row softmax")
    source = (ROOT / "examples" / "softmax.py").read_text()
    for method in ("softmax_tile", "online_step", "reduce_copied", "streamed_row"):
        blocks = [b for b in code_blocks(document) if f"def {method}(" in b]
        assert blocks, f"Softmax.{method} is not shown"
        for line in blocks[0].splitlines():
            assert line in source, line


def test_instruction_reference_lists_the_whole_table(site, artifacts):
    import tilus

    document = dom(site / "reference" / "instructions.html")
    assert h1(document) == "Instruction reference"
    text = text_of(document)
    for name, _ in tilus._C.instruction_table():
        assert f'id="{name.replace("_", "-")}"' in document, f"no section for {name}"
    # A method entry: its signature, its sections and its example.
    entry = re.search(r'id="tilus.Script.load_global">(.*?)id="tilus.Script.', document, re.S)
    assert entry, "tilus.Script.load_global has no entry"
    body = text_of(entry.group(1))
    for part in ("load_global", "offsets", "Dtypes and layouts", "Raises", "Example",
                 "self.load_global(ga, offsets="):
        assert part in body, part
    assert "s[i, ...]" in text and "x = value" in text  # instructions reached by syntax
    _chromium_run(["--window-size=1280,1400", f"--screenshot={artifacts / 'instructions.png'}",
                   (site / "reference" / "instructions.html").as_uri()])


def test_performance_page_has_plots_and_tables(site, artifacts):
    page = site / "performance.html"
    document = dom(page)
    assert h1(document) == "Performance"
    images = re.findall(r'<img[^>]*src="([^"]+\.png)"', document)
    assert any("bench_matmul" in src for src in images), images
    for src in images:
        png = (page.parent / src).resolve()
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    text = text_of(document)
    assert "4096×4096×4096" in text and "tilus/cuBLAS" in text
    for result in (ROOT / "benchmarks" / "results").glob("*.json"):
        assert result.name in text, f"{result.name} is not on the page"
    _chromium_run(["--window-size=1280,1400", f"--screenshot={artifacts / 'performance.png'}",
                   page.as_uri()])
