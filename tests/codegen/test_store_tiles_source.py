"""store_global's interior-tile path (csrc/codegen/emit_memory.cc): a tile wholly inside its
tensor is stored without per-element bounds tests, one at an edge keeps them; a
bounds-checked build keeps every check. The GPU twin runs both paths
(tests/gpu/test_store_tiles_gpu.py)."""

import re

import torch

from tests.codegen.nvrtc_compile import ELF_MAGIC, require_nvrtc
from tests.store_tile_kernels import AddOneTiles, RowOfTiles
from tilus import _C

require_nvrtc()


def _generated(kernel, args, **options):
    return _C.generate_cuda(kernel.compile(*args).program, True, "sm_90a", **options)


def _store_lines(source):
    return [ln.strip() for ln in source.splitlines() if "store_global_vec<" in ln and "(gy" in ln]


def test_a_tile_store_splits_into_an_untested_interior_path_and_a_tested_edge_path():
    x = torch.zeros(37, 70)
    source = _generated(AddOneTiles(), (37, 70, x, x))["source"]
    interior = re.search(r"// the whole tile inside its tensor: no per-element test\n\s*if \((.*)\) \{", source)
    assert interior, source
    # the test names the tile's first and last rows and columns
    test = interior.group(1)
    assert "rows" in test and "cols" in test and "+ 15" in test and "+ 31" in test
    stores = _store_lines(source)
    untested = [s for s in stores if not s.startswith("if (")]
    tested = [s for s in stores if s.startswith("if (")]
    assert untested and len(untested) == len(tested)
    report = _C.runtime.compile_report(source, "add_one_tiles", "sm_90a", [], None)
    assert report["cubin"][:4] == ELF_MAGIC


def test_a_row_tile_tests_its_row_index_too():
    x = torch.zeros(5, 150, dtype=torch.float16)
    source = _generated(RowOfTiles(), (5, 150, x, x))["source"]
    test = re.search(r"no per-element test\n\s*if \((.*)\) \{", source).group(1)
    assert "< (unsigned)(rows)" in test and "+ 63)) < (unsigned)(cols)" in test


def test_a_bounds_checked_build_tests_every_store():
    x = torch.zeros(37, 70)
    source = _generated(AddOneTiles(), (37, 70, x, x), bounds_check=True)["source"]
    assert "whole tile inside" not in source
    assert all(s.startswith("if (") for s in _store_lines(source)), _store_lines(source)
