"""Rows of any length move in 16-byte vectors (codegen/emit_memory.cc partial_count): a
view whose pointer and strides allow vectors but whose last extent is not known to be a
multiple of one loads and stores whole vectors; of the one vector a row's end cuts, a
load reads it whole and zeroes what lies past the end (device/memory.cuh
load_global_vec_part), a store writes the elements inside one by one. In a partly aligned build (transforms/vector_extents.h
scalar_globals) such a view keeps its vectors too -- only a pointer or a stride this
build knows less of than the aligned build costs a view them -- as does a view at an
element address rounded up to a vector (`~flat[(i + 7) // 8 * 8]`)."""

import re

import pytest
import torch

import tilus
from tilus import _C, float16, float32, int32


class TailCopy(tilus.Script):
    """y[j] = 2 x[j] for j < n - cut, in tiles of 256: the views' extent is a runtime
    expression, so nothing says it is a multiple of a vector."""

    def __call__(self, n: int32, cut: int32, x: ~float16, y: ~float16):
        self.attrs.blocks = [(n + 255) // 256]
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float16, shape=[n - cut])
        gy = self.global_view(y, dtype=float16, shape=[n - cut])
        t = self.load_global(gx, offsets=[self.blockIdx.x * 256], shape=[256])
        self.store_global(gy, self.cast(self.cast(t, float32) * 2.0, float16), offsets=[self.blockIdx.x * 256])


class RowsFromTheirBoundary(tilus.Script):
    """z[r, :] = x[r, :] + 1 for rows of n (n a vector extent: x is also read as a 2-D
    view), each row read and written from its first element on a 16-byte boundary
    (through views at `~flat[start]`), the elements before it (`head`) one by one."""

    def __call__(self, m: int32, n: int32, x: ~float16, z: ~float16):
        self.attrs.blocks = [m]
        self.attrs.warps = 1
        gx = self.global_view(x, dtype=float16, shape=[m, n])
        gz = self.global_view(z, dtype=float16, shape=[m, n])
        flat_x = self.global_view(~gx[0, 0], dtype=float16, shape=[m * n])
        flat_z = self.global_view(~gz[0, 0], dtype=float16, shape=[m * n])
        first = self.blockIdx.x * n
        start = (first + 7) // 8 * 8
        head = start - first
        row_x = self.global_view(~flat_x[start], dtype=float16, shape=[n - head])
        row_z = self.global_view(~flat_z[start], dtype=float16, shape=[n - head])
        head_x = self.global_view(~flat_x[first], dtype=float16, shape=[head])
        head_z = self.global_view(~flat_z[first], dtype=float16, shape=[head])
        t = self.load_global(row_x, offsets=[0], shape=[512])
        self.store_global(row_z, self.plus_one(t), offsets=[0])
        h = self.load_global(head_x, offsets=[0], shape=[8])
        self.store_global(head_z, self.plus_one(h), offsets=[0])
        # the rows as a 2-D tile too, so that n is a vector extent (a partly aligned
        # build when it is not a multiple of 16)
        whole = self.load_global(gx, offsets=[self.blockIdx.x, 0], shape=[1, 8])
        self.store_global(gz, self.plus_one(whole), offsets=[self.blockIdx.x, 0])


    def plus_one(self, t):
        return self.cast(self.cast(t, float32) + 1.0, float16)


class ColumnBias(tilus.Script):
    """c[0:256] = b[0:256] + 1: one-dimensional views of n elements."""

    def __call__(self, n: int32, b: ~float16, c: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 1
        gb = self.global_view(b, dtype=float16, shape=[n])
        gc = self.global_view(c, dtype=float16, shape=[n])
        t = self.load_global(gb, offsets=[0], shape=[256])
        self.store_global(gc, self.cast(self.cast(t, float32) + 1.0, float16), offsets=[0])


def _lines(source, view):
    return [line for line in source.splitlines() if f"{view} +" in line]


def test_a_row_of_unknown_length_moves_in_vectors_and_its_last_one_element_by_element():
    x = torch.zeros(1000).half()
    program = TailCopy().compile(1000, 3, x, x).program
    assert list(program.vector_extent_params) == []  # (the extent is an expression)
    source = _C.generate_cuda(program, True, "sm_80")["source"]
    assert any("load_global_vec_part<16, false>(" in line for line in _lines(source, "gx")), source
    assert any("store_global_vec<16>(" in line for line in _lines(source, "gy")), source
    # the count of a vector's elements inside the row picks the vector or the elements
    assert source.count("tilus::min_((int)8, (int)(gx_shape0)") == 1, source
    assert source.count("tilus::min_((int)8, (int)(gy_shape0)") == 1, source
    assert "tilus::load_global_vec_part<16, false>(" in source
    assert "if (z < tl_n" in source  # the store's elements inside the row


def test_bounds_checked_builds_keep_element_accesses():
    x = torch.zeros(1000).half()
    program = TailCopy().compile(1000, 3, x, x).program
    source = _C.generate_cuda(program, True, "sm_80", bounds_check=True)["source"]
    assert "tl_n" not in source and "store_global_vec<16>" not in source


@pytest.mark.parametrize("n, cut", [(1000, 3), (777, 0), (256, 1), (9, 2)])
def test_the_interpreter_agrees(n, cut):
    x = torch.randn(n).half()
    y = torch.full_like(x, float("nan"))
    TailCopy()(n, cut, x, y)
    torch.testing.assert_close(y[: n - cut], (x[: n - cut].float() * 2).half())
    assert torch.isnan(y[n - cut:]).all()


def test_a_partly_aligned_build_keeps_vectors_for_a_row_of_unaligned_length():
    x = torch.zeros(512).half()
    program = ColumnBias().compile(300, x, x).program
    assert list(program.vector_extent_params) == [0]
    partly = _C.generate_cuda(program, True, "sm_80", unaligned_params=[0])["source"]
    assert any("load_global_vec_part<16, false>(" in line for line in _lines(partly, "gb")), partly
    assert any("store_global_vec<16>(" in line for line in _lines(partly, "gc")), partly
    assert "tl_n" in partly


def test_a_partly_aligned_build_keeps_vectors_from_a_rounded_up_element_address():
    x = torch.zeros(8, 512).half()
    program = RowsFromTheirBoundary().compile(8, 500, x, x).program
    assert list(program.vector_extent_params) == [1]  # n
    partly = _C.generate_cuda(program, True, "sm_80", unaligned_params=[1])["source"]
    # rows from their 16-byte boundary: vectors; the head and the 2-D view: elements
    assert any("load_global_vec_part<16, false>(" in line for line in _lines(partly, "row_x")), partly
    assert any("store_global_vec<16>(" in line for line in _lines(partly, "row_z")), partly
    for view in ("head_x", "head_z", "gx", "gz"):
        assert _lines(partly, view) and not any("_vec<" in line for line in _lines(partly, view)), (view, partly)
    # the unaligned build assumes nothing
    unaligned = _C.generate_cuda(program, False, "sm_80")["source"]
    assert "_vec<" not in unaligned


@pytest.mark.parametrize("m, n", [(5, 500), (3, 16), (4, 13)])
def test_rows_from_their_boundary_in_the_interpreter(m, n):
    x = torch.randn(m, n).half()
    z = torch.full_like(x, float("nan"))
    RowsFromTheirBoundary()(m, n, x, z)
    torch.testing.assert_close(z, x + 1)


def _assert_rows_move_in_vectors(source, row_load):
    """The shifted softmax's views (examples/softmax.py shifted_views): `rest`, a row from
    its 16-byte boundary, read (`row_load`) and written in vectors; `before`, its head,
    the only view written element by element."""
    # cp.async reads from a thread's base address into `rest` (emit_copy_async's tl_src)
    bases = re.findall(r"const auto (tl_src\w*) = rest \+", source)
    assert any(re.search(re.escape(row_load) + r"[^;]*, " + name + r"\b", source) for name in ["rest"] + bases), source
    assert "tilus::store_global_vec<16>(rest" in source, source
    element_stores = re.findall(r"\*\((\w+) \+ [^;]*\) = ", source)
    assert element_stores and all(view.startswith("before") for view in element_stores), element_stores
    assert "load_realigned_16<false>(before" in source  # (the head: two aligned chunks)


@pytest.mark.parametrize("dtype, vector, row_tiles", [(tilus.float16, 8, 7), (tilus.float32, 4, 0)])
def test_softmax_walks_unaligned_rows_from_their_boundary_in_vectors(example, dtype, vector, row_tiles):
    """examples/softmax.py `shifted` (the wrapper's choice for rows not a multiple of 16),
    long rows: the passes read and write 16-byte vectors, only the head goes by elements. Its
    views need no assumption of n, so every call takes the aligned build."""
    sm = example("softmax")
    script = sm.Softmax(dtype, 8192, block_m=1, warps=16, persistent=False, staged=False, row_tiles=row_tiles,
                        long_rows=True, long_split=1, prefetch=False, shifted=True)
    rows = torch.zeros(8, 8)
    program = script.compile(4096, 50257, 132, rows, rows).program
    assert list(program.vector_extent_params) == []
    source = _C.generate_cuda(program, True, "sm_90a")["source"]
    _assert_rows_move_in_vectors(source, "tilus::load_global_vec_part<16, false>(")
    assert f"start = (((first + {vector - 1}) / {vector}) * {vector});" in source


def test_softmax_takes_the_shifted_walk_for_unaligned_rows_only(example, monkeypatch):
    sm = example("softmax")
    made = []
    real = sm.Softmax

    def record(*args, **kwargs):
        made.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(sm, "Softmax", record)
    monkeypatch.setattr(sm, "_SCRIPTS", {})
    for n, block_n in ((300, 256), (1000, 256), (1008, 256), (200, 256), (208, 256), (100, 64)):
        x = torch.randn(3, n)
        torch.testing.assert_close(sm.softmax(x, block_n=block_n, shifted=True), torch.softmax(x, dim=1))
    torch.testing.assert_close(sm.softmax(torch.randn(3, 300), block_n=256).sum(1), torch.ones(3))  # (default: off)
    # (a tile of 64 is too narrow for one row over 4 warps: such rows keep block_m rows a block)
    assert [(k["long_rows"], k["shifted"], k.get("block_m")) for k in made] == [
        (True, True, 1), (True, True, 1), (True, False, None), (False, True, 1), (False, False, None),
        (True, False, None), (True, False, None)]


@pytest.mark.parametrize("persistent, staged", [(False, False), (True, False), (True, True)])
def test_softmax_walks_unaligned_one_tile_rows_from_their_boundary_in_vectors(example, persistent, staged):
    sm = example("softmax")
    script = sm.Softmax(tilus.float16, 32768, block_m=1, warps=32, persistent=persistent, staged=staged,
                        long_split=1, prefetch=False, shifted=True)
    rows = torch.zeros(8, 8)
    program = script.compile(4096, 32001, 132, rows, rows).program
    assert list(program.vector_extent_params) == []
    source = _C.generate_cuda(program, True, "sm_90a")["source"]
    _assert_rows_move_in_vectors(source, "cp_async_16(" if staged else "tilus::load_global_vec_part<16, false>(")


def test_softmax_walks_unaligned_rows_wider_than_16384_shifted_by_default(example, monkeypatch):
    """The wrapper's default (timed on the H100, benchmarks/README.md): rows not a multiple
    of 16 take the shifted walk where they are copied to shared memory (`copy_rows`: longer
    than 4096, float32 8192; streamed where they do not fit 128 KB) and, with
    copy_rows=False, where they are wider than 16384, but float32 rows wider than 32768
    (read twice) and rows of 16384 or fewer keep the aligned walk's rows a block."""
    sm = example("softmax")
    made = []
    real = sm.Softmax

    def record(*args, **kwargs):
        made.append((args[1], kwargs["shifted"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(sm, "Softmax", record)
    monkeypatch.setattr(sm, "_SCRIPTS", {})
    x = torch.randn(2, 20001)  # (run: float32 rows copied over 4096-wide tiles, shifted)
    torch.testing.assert_close(sm.softmax(x), torch.softmax(x, dim=1))
    x = torch.randn(2, 16001)  # (run: float32 rows of one 16384-wide tile, not copied nor shifted)
    torch.testing.assert_close(sm.softmax(x, copy_rows=False), torch.softmax(x, dim=1))
    assert made == [(4096, True), (16384, False)]
    expected = {(torch.float32, 16001, None): True, (torch.float32, 40001, None): True, (torch.float32, 40001, False): False,
                (torch.float16, 40001, None): True, (torch.bfloat16, 131071, None): True,
                (torch.float16, 16001, None): True, (torch.float16, 20000, None): False,
                (torch.float16, 8191, None): True, (torch.float32, 8191, None): False,
                (torch.float16, 16001, False): False, (torch.float16, 8191, False): False,
                (torch.float16, 20001, False): True}
    for (dtype, n, copy_rows), shifted in expected.items():
        made.clear()
        monkeypatch.setattr(sm, "_SCRIPTS", {})
        monkeypatch.setattr(sm, "Softmax", lambda *args, **kwargs: made.append(kwargs["shifted"]) or (lambda *a: None))
        sm.softmax(torch.empty(1, n, dtype=dtype), copy_rows=copy_rows)
        assert made == [shifted], (dtype, n, copy_rows)
