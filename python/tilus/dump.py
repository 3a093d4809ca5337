"""``tilus.option.dump(dir)`` / ``TILUS_DUMP_DIR``: keep the IR and the CUDA source of
what tilus builds, for reading and for bug reports.

Plain scripts: ``<dir>/<kernel>-<JIT values>-<hash of the IR>.ir`` and ``.cu``.
Autotuned builds: ``<dir>/<label>/<config index>.ir`` and ``.cu`` plus ``configs.txt``
(tilus/tuning/build.py).
"""

from __future__ import annotations

import hashlib
import os

from tilus.runtime import launcher
from tilus.tuning.identity import slug


def dump_compiled(compiled, root: str):
    """Write one CompiledScript's IR and its CUDA source (or why there is none)."""
    ir = str(compiled.program)
    digest = hashlib.sha256(ir.encode()).hexdigest()[:8]
    name = slug("-".join([compiled.program.name] + [str(v) for v in compiled.jit_key] + [digest]))
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, name + ".ir"), "w") as f:
        f.write(ir)
    try:
        source = launcher.generate_source(compiled)
    except Exception as e:  # noqa: BLE001 - the dump must not break the program
        source = f"// CUDA generation failed: {type(e).__name__}: {e}\n"
    with open(os.path.join(root, name + ".cu"), "w") as f:
        f.write(source)
