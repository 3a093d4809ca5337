"""The performance page, generated at build time from benchmarks/results/*.json.

``.. tilus-benchmarks::`` renders one section per benchmark (the part of a file name
after the GPU prefix: ``h200_bench_matmul.json`` is benchmark ``bench_matmul`` on
``h200``) and one subsection per GPU: a table of what the file holds and, for the
benchmarks that compare tilus with other libraries, a matplotlib plot written to
docs/_generated/perf/. A results file of a kind not known here (a new benchmark) still
appears, as a table of its ``results`` rows or its top-level values, so the page always
shows what the JSON files contain.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

TITLES = {
    "bench_matmul": "fp16 matmul: tilus, cuBLAS (torch) and Triton",
    "bench_launch": "Host time per launch",
    "bench_autotune_build": "Building 192 autotuning configurations",
    "read_ceiling": "Read bandwidth ceiling of the decode shapes",
    "mma_ceiling": "mma.sync ceiling",
}
ORDER = list(TITLES)


def results_dir(srcdir: Path) -> Path:
    return srcdir.parent / "benchmarks" / "results"


def load(srcdir: Path):
    """{benchmark: [(gpu, data, file name)]}, known benchmarks first."""
    folder = results_dir(srcdir)
    files = sorted(folder.glob("*.json"))
    if not files:
        raise ExtensionError(f"no benchmark results in {folder}")
    out = {}
    for path in files:
        gpu, _, bench = path.stem.partition("_")
        try:
            data = json.loads(path.read_text())
        except ValueError as e:
            raise ExtensionError(f"{path}: not valid JSON ({e})") from None
        out.setdefault(bench, []).append((gpu, data, path.name))
    return dict(sorted(out.items(), key=lambda kv: (ORDER.index(kv[0]) if kv[0] in ORDER
                                                     else len(ORDER), kv[0])))


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_text(v)}" for k, v in value.items())
    return str(value)


def _cell(value) -> str:
    text = _text(value).replace("\n", " ")
    for special in "\\*`_|":  # literal text, not reST markup (torch.Tensor.add_)
        text = text.replace(special, "\\" + special)
    return text or "-"


def list_table(header, rows, title=""):
    lines = [f".. list-table:: {title}".rstrip(), "   :header-rows: 1", ""]
    for row in [header] + rows:
        lines.append("   * - " + _cell(row[0]))
        lines += ["     - " + _cell(c) for c in row[1:]]
    return lines + [""]


def generic_rows(data):
    """(header, rows) of a results file: its ``results`` rows, else its scalars."""
    rows = data.get("results") if isinstance(data, dict) else data
    if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
        header = []
        for r in rows:
            header += [k for k in r if k not in header]
        return header, [[r.get(k, "") for k in header] for r in rows]
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, (list, dict))]
    nested = [(k, v) for k, v in data.items() if isinstance(v, dict)]
    return ["quantity", "value"], [list(kv) for kv in scalars + nested]


def matmul_table(data):
    header = ["m × n × k", "cuBLAS ms", "tilus ms", "Triton ms", "tilus TFLOP/s",
              "tilus/cuBLAS", "Triton/cuBLAS", "tilus script and config"]
    rows = []
    for r in data["results"]:
        rows.append([f"{r['m']}×{r['n']}×{r['k']}", r.get("torch_ms"), r.get("tilus_ms"),
                     r.get("triton_ms", "-"), r.get("tilus_tflops"), r.get("tilus_vs_cublas"),
                     r.get("triton_vs_cublas", "-"),
                     f"{r.get('tilus_script', '')} {_text(r.get('tilus_config', {}))}"])
    return header, rows


def launch_table(data):
    header = ["what", "µs per call", "vs torch add_"]
    rows = [[r["name"], r["us_per_call"], r.get("vs_add_", "-")] for r in data["results"]
            if "us_per_call" in r]
    return header, rows


def plot_matmul(data, gpu, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["results"]
    labels = [f"{r['m']}×{r['n']}×{r['k']}" for r in rows]
    series = [("tilus", [r.get("tilus_vs_cublas", 0) for r in rows])]
    if any("triton_vs_cublas" in r for r in rows):
        series.append(("Triton", [r.get("triton_vs_cublas", 0) for r in rows]))
    fig, ax = plt.subplots(figsize=(10, 4), dpi=100)
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series):
        ax.bar([x + i * width for x in range(len(rows))], values, width, label=name)
    ax.axhline(1.0, color="black", linewidth=1, label="cuBLAS")
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(rows))])
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("cuBLAS time / time (higher is faster)")
    ax.set_title(f"fp16 matmul on {data.get('device', gpu)}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_launch(data, gpu, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in data["results"] if "us_per_call" in r]
    fig, ax = plt.subplots(figsize=(8, 3), dpi=100)
    ax.barh([r["name"] for r in rows], [r["us_per_call"] for r in rows], color="tab:blue")
    ax.invert_yaxis()
    ax.set_xlabel("µs per launch (host)")
    ax.set_title(f"launch overhead on {data.get('device', gpu)}")
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


TABLES = {"bench_matmul": matmul_table, "bench_launch": launch_table}
PLOTS = {"bench_matmul": plot_matmul, "bench_launch": plot_launch}


class BenchmarksDirective(SphinxDirective):
    has_content = False

    def run(self):
        srcdir = Path(self.env.srcdir)
        out = srcdir / "_generated" / "perf"
        out.mkdir(parents=True, exist_ok=True)
        lines = []
        for bench, runs in load(srcdir).items():
            self.env.note_dependency(str(results_dir(srcdir)))
            title = TITLES.get(bench, bench)
            lines += [title, "-" * len(title), ""]
            for gpu, data, name in runs:
                device = data.get("device", gpu) if isinstance(data, dict) else gpu
                sub = f"{device} ({name})"
                lines += [sub, "~" * len(sub), ""]
                if isinstance(data, dict) and data.get("command"):
                    lines += ["Command: ``" + data["command"].replace("`", "'") + "``", ""]
                if bench in PLOTS:
                    png = out / f"{gpu}_{bench}.png"
                    PLOTS[bench](data, gpu, png)
                    lines += [f".. image:: /_generated/perf/{png.name}",
                              f"   :alt: {title}, {device}", ""]
                header, rows = TABLES.get(bench, generic_rows)(data)
                lines += list_table(header, rows)
        container = []
        from docutils import nodes

        section = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source="tilus-benchmarks"),
                                 section)
        container.extend(section.children)
        return container


def setup(app):
    app.add_directive("tilus-benchmarks", BenchmarksDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
