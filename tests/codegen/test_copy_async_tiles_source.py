"""cp.async copies of a tile (csrc/codegen/emit_memory.cc emit_copy_async, emit_packed.cc
emit_copy_async_packed): a tile wholly inside its tensor copies whole chunks with no size
test, one at an edge keeps a source size per chunk, and both read from a thread's base
address plus constant distances; a bounds-checked build keeps every check. The GPU twin
runs both paths (tests/gpu/test_copy_async_tiles_gpu.py)."""

import re

import torch

from tests.codegen.nvrtc_compile import ELF_MAGIC, require_nvrtc
from tests.store_tile_kernels import CopyAsyncTiles
from tilus import _C, uint4b

require_nvrtc()


def _source(dtype, x, **options):
    program = (CopyAsyncTiles(dtype) if dtype else CopyAsyncTiles()).compile(37, 72, x, x).program
    return _C.generate_cuda(program, True, "sm_80", **options)["source"]


def _copy_lines(source):
    return [ln.strip() for ln in source.splitlines() if re.search(r"tilus::cp_async_\d+\(", ln)]


def test_a_whole_tile_copies_whole_chunks_and_an_edge_tile_sizes_each():
    source = _source(None, torch.zeros(37, 72).half())
    test = re.search(r"// the whole tile inside its tensor: whole chunks, no per-chunk test\n\s*if \((.*)\) \{",
                     source)
    assert test, source
    # the tile's first and last rows and columns
    assert "+ 15" in test.group(1) and "+ 63" in test.group(1) and "rows" in test.group(1)
    copies = _copy_lines(source)
    whole = [c for c in copies if c.endswith(", 16);")]
    sized = [c for c in copies if re.search(r", tl_bytes\w*\);$", c)]
    assert whole and len(whole) == len(sized) == len(copies) // 2, copies
    # one base address a thread, each chunk a distance from it
    bases = re.findall(r"const auto (tl_src\w*) = gx \+", source)
    assert len(bases) == 1, source
    assert all(f"), {bases[0]} + " in c or f"), {bases[0]}, " in c for c in copies), copies
    report = _C.runtime.compile_report(source, "copy_async_tiles", "sm_80", [], None)
    assert report["cubin"][:4] == ELF_MAGIC


def test_packed_codes_copy_whole_chunks_from_a_byte_base():
    source = _source(uint4b, torch.zeros(37 * 36, dtype=torch.uint8))
    assert "whole chunks, no per-chunk test" in source, source
    base = re.search(r"const auto (tl_src\w*) = reinterpret_cast<const tilus::uint8_t\*>\(gx\) \+ \(", source)
    assert base, source
    copies = _copy_lines(source)
    assert copies and all(base.group(1) + " + " in c for c in copies), copies
    assert any(re.search(r", \d+\);$", c) for c in copies) and any("tl_bytes" in c for c in copies), copies


def test_a_bounds_checked_build_sizes_every_chunk():
    source = _source(None, torch.zeros(37, 72).half(), bounds_check=True)
    assert "whole chunks" not in source
    assert all("tl_bytes" in c for c in _copy_lines(source)), _copy_lines(source)
