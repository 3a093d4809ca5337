#!/usr/bin/env bash
# Build the documentation site into docs/_build/html (or the folder given as $1).
# Warnings are errors and every cross-reference must resolve (nitpicky mode); the
# instruction reference fails the build when an instruction lacks documentation.
# Needs the docs extras (pip install ".[docs]") and tilus importable: installed, or the
# checkout's extension built by scripts/dev_build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/_build/html}"
python -m sphinx -W --keep-going -n -q -b html docs "$out"
echo "docs built: $out/index.html"
