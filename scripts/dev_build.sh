#!/usr/bin/env bash
# Developer build: compiles the extension and the compile worker into build/dev (ccache
# when present) and links them into python/tilus, so `PYTHONPATH=python python -m pytest`
# runs the tree as it is, without reinstalling. Users install with pip (README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILUS_VERIFY=ON "${launcher[@]}" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" ${TILUS_DEV_CMAKE_ARGS:-} > /dev/null
cmake --build build/dev -j"${JOBS:-2}"
for f in build/dev/_C*.so build/dev/tilus-compile-worker; do
  ln -sf "$PWD/$f" python/tilus/
done
