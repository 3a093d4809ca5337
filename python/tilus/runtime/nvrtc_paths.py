"""Where to look for NVRTC, in the order DESIGN.md gives (TILUS_NVRTC_PATH is read by
the native side first)."""

from __future__ import annotations

import importlib.util
import os
from typing import List


def search_dirs() -> List[str]:
    dirs: List[str] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            dirs += [os.path.join(root, "lib64"), os.path.join(root, "lib")]
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]
    spec = importlib.util.find_spec("nvidia")
    if spec is not None and spec.submodule_search_locations:
        for base in spec.submodule_search_locations:
            for sub in ("cu13/lib", "cu12/lib", "cuda_nvrtc/lib"):
                dirs.append(os.path.join(base, sub))
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        dirs.append(os.path.join(os.path.dirname(spec.origin), "lib"))
    return [d for d in dirs if os.path.isdir(d)]
