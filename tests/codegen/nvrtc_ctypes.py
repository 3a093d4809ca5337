"""Loads NVRTC with ctypes and compiles against the device headers, without tilus._C.

The device-header tests use this instead of tilus._C.runtime so that they run before
the extension is built. Headers are handed to NVRTC under the names the binary embeds
them with (cmake/embed_headers.cmake): "tilus/<file>.cuh".
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEVICE_DIR = ROOT / "csrc" / "codegen" / "device"
ELF_MAGIC = b"\x7fELF"
# The options csrc/runtime/nvrtc.cc passes to every compilation.
OPTIONS = ["-default-device", "--std=c++17"]


def device_headers() -> dict[str, str]:
    return {f"tilus/{p.name}": p.read_text() for p in sorted(DEVICE_DIR.glob("*.cuh"))}


def nvrtc_candidates() -> list[str]:
    """TILUS_NVRTC_PATH (a file or a directory), the CUDA toolkit, the pip wheels."""
    found = []
    env = os.environ.get("TILUS_NVRTC_PATH")
    if env:
        if os.path.isfile(env):
            found.append(env)
        else:
            found += sorted(glob.glob(os.path.join(env, "libnvrtc.so*")))
    found += sorted(glob.glob("/usr/local/cuda/lib64/libnvrtc.so*"))
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13/lib", "cuda_nvrtc/lib"):
            found += sorted(glob.glob(os.path.join(root, sub, "libnvrtc.so*")))
    return [p for p in found if "builtins" not in os.path.basename(p)]


class Nvrtc:
    def __init__(self, path: str):
        self.path = path
        self.lib = ctypes.CDLL(path)
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def _check(self, result: int, what: str):
        if result != 0:
            raise RuntimeError(f"{what}: {self.lib.nvrtcGetErrorString(result).decode()}")

    def _get(self, program, size_fn, get_fn) -> bytes:
        size = ctypes.c_size_t()
        self._check(getattr(self.lib, size_fn)(program, ctypes.byref(size)), size_fn)
        buffer = ctypes.create_string_buffer(size.value)
        self._check(getattr(self.lib, get_fn)(program, buffer), get_fn)
        return buffer.raw[: size.value]

    def compile(self, source: str, arch: str, headers: dict[str, str],
                options: list[str] | None = None):
        """Returns (ok, log, cubin, ptx); options default to the runtime's."""
        program = ctypes.c_void_p()
        names = list(headers)
        c_names = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
        c_texts = (ctypes.c_char_p * len(names))(*[headers[n].encode() for n in names])
        self._check(
            self.lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"test.cu",
                                        len(names), c_texts, c_names),
            "nvrtcCreateProgram")
        try:
            options = [f"-arch={arch}", *(OPTIONS if options is None else options)]
            c_options = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            result = self.lib.nvrtcCompileProgram(program, len(options), c_options)
            log = self._get(program, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog")
            log = log.rstrip(b"\0").decode(errors="replace")
            if result != 0:
                return False, log, b"", ""
            cubin = self._get(program, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
            ptx = self._get(program, "nvrtcGetPTXSize", "nvrtcGetPTX").rstrip(b"\0").decode()
            return True, log, cubin, ptx
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(program))


def load_nvrtc() -> tuple[Nvrtc | None, str]:
    """The first NVRTC that loads, or None and why none did."""
    errors = []
    for path in nvrtc_candidates():
        try:
            return Nvrtc(path), ""
        except OSError as error:
            errors.append(f"{path}: {error}")
    return None, ("NVRTC not found (set TILUS_NVRTC_PATH, install the CUDA toolkit or the "
                  "nvidia-cuda-nvrtc wheel)" + "".join("\n  " + e for e in errors))
