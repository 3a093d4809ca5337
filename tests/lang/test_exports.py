"""Tilus 0.2 import lines work unchanged (issue 12): dtype names, Class, Dim3, tilus.utils,
the tilus.ir / tilus.ir.layout.ops / tilus.hidet.ir module paths, and the layout
constructors give the layouts they name."""

import pytest

import tilus

# The header block of Tilus 0.2 programs (NVIDIA/tilus examples), spelled as there.
HEADER = """
import tilus
from tilus import boolean, f16, f32, int32, uint32, float16, float32, bfloat16
from tilus import RegisterTensor, SharedTensor, Script, Class, Dim3, DataType
from tilus.utils import benchmark_func, cdiv, dtype_to_torch, gcd
from tilus.ir import RegisterTensor, SharedTensor
from tilus.ir.tensor import GlobalTensor
from tilus.ir.layout import RegisterLayout, SharedLayout, register_layout
from tilus.ir.layout.ops import concat, local, reduce, shared_row_major_swizzle, spatial
from tilus.ir.layout.ops import column_local, column_spatial, shared_row_major, shared_column_major
from tilus.hidet.ir import DataType
from tilus.hidet.ir.type import DataType
from tilus.hidet.ir.dtypes import bfloat16, f16
"""


def test_the_tilus02_header_block_imports():
    namespace = {}
    exec(HEADER, namespace)
    assert namespace["f16"] is tilus.float16 or namespace["f16"] == tilus.float16
    assert namespace["Class"] is tilus.Class and namespace["Dim3"] is tilus.Dim3
    assert namespace["cdiv"](7, 2) == 4 and namespace["gcd"](12, 18) == 6


@pytest.mark.parametrize("name", ["boolean", "f16", "bf16", "f32", "f64", "i8", "i32", "u32",
                                  "DataType", "Class", "Dim3", "Script", "RegisterLayout"])
def test_names_are_exported(name):
    assert name in tilus.__all__ and getattr(tilus, name) is not None


def test_dtype_to_torch():
    import torch

    from tilus.utils import dtype_to_torch
    assert dtype_to_torch(tilus.f16) is torch.float16
    assert dtype_to_torch(tilus.boolean) is torch.bool


def test_dim3_unpacks():
    d = tilus.Dim3(1, 2, 3)
    assert tuple(d) == (1, 2, 3) and len(d) == 3 and d.to_tuple() == (1, 2, 3) and d[1] == 2


def test_layout_ops_match_tilus_layout():
    from tilus import layout as L
    from tilus.ir.layout import ops

    assert ops.spatial(2, 3) == L.spatial(2, 3)
    assert ops.spatial(2, 3, ranks=[1, 0]) == L.column_spatial(2, 3)
    assert ops.local(2, 3, ranks=[1, 0]) == L.column_local(2, 3)
    assert ops.shared_row_major(4, 8).offset([1, 2]) == 10
    assert ops.shared_column_major(4, 8).offset([1, 2]) == 9


def _owners(layout):
    """{coordinate: sorted threads holding it}"""
    out = {}
    for t in range(layout.num_threads):
        for i in range(layout.local_size):
            out.setdefault(tuple(layout.coords(t, i)), set()).add(t)
    return out


def test_reduce_replicates_the_reduced_threads():
    from tilus.ir.layout.ops import reduce, spatial

    layout = spatial(4, 2).local(2, 2)           # 8 x 4 over 8 threads
    rows = reduce(layout, [1])                   # the row sums: shape [8]
    assert list(rows.shape) == [8] and rows.num_threads == 8
    owners = _owners(layout)
    for (r,), threads in _owners(rows).items():
        # every thread holding an element of row r holds row r's reduction
        assert threads == set().union(*(owners[(r, c)] for c in range(4)))
    kept = reduce(layout, [0], keepdims=True)
    assert list(kept.shape) == [1, 4]


def test_concat_puts_lhs_outside():
    from tilus.ir.layout.ops import concat, local, spatial

    layout = concat(spatial(2), local(3))
    assert list(layout.shape) == [2, 3] and layout.num_threads == 2 and layout.local_size == 3
    assert tuple(layout.coords(1, 2)) == (1, 2)


def test_permute_transposes_coordinates():
    from tilus.ir.layout.ops import local, permute, spatial

    layout = spatial(4, 2).local(2, 3)
    moved = permute(layout, [1, 0])
    for t in range(layout.num_threads):
        for i in range(layout.local_size):
            r, c = layout.coords(t, i)
            assert tuple(moved.coords(t, i)) == (c, r)
    assert local(2, 3) != spatial(2, 3)


def test_layout_op_errors_name_the_argument():
    from tilus.ir.layout.ops import reduce, shared_row_major_swizzle, spatial

    with pytest.raises(ValueError, match="reduce: dims"):
        reduce(spatial(2, 2), [2])
    with pytest.raises(ValueError, match="ranks"):
        spatial(2, 2, ranks=[0, 0])
    with pytest.raises(ValueError):
        shared_row_major_swizzle([4, 4], 2)   # rows of 8 bytes cannot be swizzled
