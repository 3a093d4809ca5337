"""examples/softmax.py and examples/norms.py compute what torch does, on CPU tensors (the
interpreter): odd shapes, every input dtype, the one-tile path and the looping path for
rows longer than the tile. Fresh random data; outputs poisoned first."""

import pytest
import torch

import tilus

DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def _tol(dtype):
    return dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
# (20, 129, 32): rows longer than the tile and more row tiles (5 of 4 rows) than the
# interpreter's 3 persistent blocks: the long-row path must walk the rows too
@pytest.mark.parametrize("m,n,block_n", [(37, 70, None), (3, 1, None), (5, 129, 32), (2, 33, 32), (20, 129, 32)])
@pytest.mark.parametrize("persistent,staged", [(False, False), (True, False), (True, True)])
def test_softmax(example, dtype, m, n, block_n, persistent, staged):
    sm = example("softmax")
    x = (torch.randn(m, n) * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.softmax(x, y, block_n=block_n, persistent=persistent, staged=staged)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), **_tol(dtype))


@pytest.mark.parametrize("staged", [False, True])
def test_persistent_softmax_walks_more_rows_than_blocks(example, staged):
    # 3 blocks (the interpreter's grid), 2 rows a tile: each block takes 3-4 tiles, the
    # last one partly past the end (staged: through shared memory by cp.async)
    x = torch.randn(19, 300) * 4
    y = torch.full_like(x, float("nan"))
    example("softmax").Softmax(tilus.float32, 512, block_m=2, warps=4, persistent=True,
                               staged=staged)(19, 300, 3, x, y)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


@pytest.mark.parametrize("row_tiles", [0, 5])
@pytest.mark.parametrize("persistent", [False, True])
# long_rows False: a kernel with both paths, choosing at run time (n > block_n here)
@pytest.mark.parametrize("long_rows,long_split,prefetch", [(True, 1, False), (True, 2, False), (True, 1, True),
                                                         (True, 2, True), (False, 1, False)])
def test_long_rows_read_twice_or_kept_in_shared_memory(example, row_tiles, persistent, long_rows, long_split,
                                                       prefetch):
    # rows of 5 tiles of 64 (the last one partial; long_split 2: 10 tiles of 32, the last
    # one past the row): read twice from global memory (row_tiles 0, rows over 128 KB) or
    # kept in shared memory between the passes; 13 rows of 2 a tile over the interpreter's
    # 3 persistent blocks
    x = torch.randn(13, 290) * 4
    y = torch.full_like(x, float("nan"))
    example("softmax").Softmax(tilus.float32, 64, block_m=2, warps=1, persistent=persistent, staged=False,
                               row_tiles=row_tiles, long_rows=long_rows, long_split=long_split,
                               prefetch=prefetch)(13, 290, 3, x, y)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("cols", [290, 296])
@pytest.mark.parametrize("row_tiles", [0, 5])
@pytest.mark.parametrize("persistent,long_split,prefetch", [(False, 1, False), (True, 2, False), (True, 1, True),
                                                          (False, 2, True)])
def test_long_rows_walked_from_their_16_byte_boundary(example, dtype, cols, row_tiles, persistent, long_split,
                                                      prefetch):
    # `shifted`: each row from its first element on a 16-byte boundary, the head (0 to 7
    # elements: rows of 290 start at every misalignment, rows of 296 halves at 0 or 8
    # bytes) element by element; 7 rows over the interpreter's 3 persistent blocks
    sm = example("softmax")
    x = (torch.randn(7, cols) * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.Softmax(sm._TORCH_TO_TILUS[dtype], 64, block_m=1, warps=1, persistent=persistent, staged=False,
               row_tiles=row_tiles, long_rows=True, long_split=long_split, prefetch=prefetch,
               shifted=True)(7, cols, 3, x, y)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), atol=2e-3, rtol=2e-2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("cols,shifted", [(290, True), (296, True), (290, False), (256, False)])
@pytest.mark.parametrize("persistent,long_split", [(False, 1), (True, 2)])
def test_long_rows_copied_to_shared_memory_at_once(example, dtype, cols, shifted, persistent, long_split):
    # `copy_rows`: every tile of a row copied by cp.async before the first is reduced, each
    # thread's running max and sum over its own rows of the tiles, met once a row; rows
    # of 290 end inside a tile (and, long_split 2, leave the last tile of 32 empty), rows
    # of 256 fill four of the five tiles; 7 rows over the interpreter's 3 persistent blocks
    sm = example("softmax")
    x = (torch.randn(7, cols) * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.Softmax(sm._TORCH_TO_TILUS[dtype], 64, block_m=1, warps=1, persistent=persistent, staged=False,
               row_tiles=5, long_rows=True, long_split=long_split, prefetch=False, shifted=shifted,
               copy_rows=True)(7, cols, 3, x, y)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), atol=2e-3, rtol=2e-2)


def _record_scripts(sm, monkeypatch):
    """The (block_n, row_tiles, copy_rows, shifted, block_m, prefetch) of every Softmax the
    wrapper builds from now on."""
    made = []
    real = sm.Softmax

    def record(dtype, block_n, **kwargs):
        made.append((block_n, *(kwargs.get(k) for k in ("row_tiles", "copy_rows", "shifted", "block_m", "prefetch"))))
        return real(dtype, block_n, **kwargs)

    monkeypatch.setattr(sm, "Softmax", record)
    monkeypatch.setattr(sm, "_SCRIPTS", {})
    return made


def _record_builds(sm, monkeypatch, *keys):
    """The (block_n, *keys) of every Softmax the wrapper builds from now on; the scripts
    are not built or run (the wrapper's choice alone, for rows too long to run here)."""
    made = []
    monkeypatch.setattr(sm, "_SCRIPTS", {})
    monkeypatch.setattr(sm, "Softmax", lambda dtype, block_n, **kwargs: made.append(
        (block_n, *(kwargs.get(k) for k in keys))) or (lambda *args: None))
    return made


def test_the_wrapper_copies_rows_kept_in_shared_memory_when_asked(example, monkeypatch):
    # softmax(copy_rows=True) with a given tile builds one row a block, without prefetch,
    # where rows are kept in shared memory (longer than a tile, and fitting 128 KB), and
    # ignores it elsewhere (shifted: rows of 300 and 301 are not 16-byte aligned)
    sm = example("softmax")
    made = _record_scripts(sm, monkeypatch)
    for n, dtype in ((300, torch.float16), (301, torch.bfloat16), (100, torch.float32)):
        x = (torch.randn(5, n) * 4).to(dtype)
        torch.testing.assert_close(sm.softmax(x, block_n=128, copy_rows=True).float(), torch.softmax(x.float(), 1),
                                   atol=2e-3, rtol=2e-2)
    assert made == [(128, 3, True, True, 1, False)] * 2 + [(128, 0, None, False, None, None)]


def test_the_wrapper_copies_long_rows_by_default(example, monkeypatch):
    # rows longer than COPIED_TILE that fit 128 KB of shared memory are copied over
    # 4096-wide tiles (shifted where not 16-byte aligned), but float32 rows of 8192 or
    # fewer, rows of one tile, rows too long to keep, and copy_rows=False are not
    sm = example("softmax")
    made = _record_scripts(sm, monkeypatch)
    for n, dtype, copy_rows in ((4112, torch.float16, None), (4097, torch.bfloat16, None), (5000, torch.float32, None),
                                (8200, torch.float32, None), (4100, torch.float16, False), (4096, torch.float16, None)):
        x = (torch.randn(2, n) * 4).to(dtype)
        y = torch.full_like(x, float("nan"))
        sm.softmax(x, y, copy_rows=copy_rows)
        torch.testing.assert_close(y.float(), torch.softmax(x.float(), 1), atol=2e-3, rtol=2e-2)
    assert made == [(4096, 2, True, False, 1, False), (4096, 2, True, True, 1, False),
                    (8192, 0, None, False, None, None), (4096, 3, True, True, 1, False),
                    (8192, 0, None, False, None, None), (4096, 0, None, False, None, None)]
    assert sm._copies_rows(65536, 2) and not sm._copies_rows(65537, 2)
    assert sm._copies_rows(32768, 4) and not sm._copies_rows(32769, 4)


def test_the_wrapper_streams_rows_too_long_to_keep(example, monkeypatch):
    # rows whose copy does not fit 128 KB stream through a ring of 4096-wide tiles (for the
    # interpreter 128 KB of them; on a GPU what the device lets a block have), one row a
    # block, persistent or not (tuned); with copy_rows=False they are read twice (not run here)
    sm = example("softmax")
    made = _record_builds(sm, monkeypatch, "row_tiles", "copy_rows", "streamed", "persistent", "shifted")
    for n, dtype, copy_rows in ((65537, torch.float16, None), (131072, torch.bfloat16, None),
                                (32769, torch.float32, None), (65537, torch.float16, False)):
        sm.softmax(torch.empty(1, n, dtype=dtype), copy_rows=copy_rows)
    assert made == [(4096, 16, True, True, None, True), (4096, 16, True, True, None, False),
                    (4096, 8, True, True, None, True), (32768, 0, None, None, None, True)]


class _H100:
    shared_memory_per_block_optin = 232448
    shared_memory_per_multiprocessor = 233472


class _Sm89:  # (an RTX 4090's: 99 KB a block, 100 KB an SM)
    shared_memory_per_block_optin = 101376
    shared_memory_per_multiprocessor = 102400


@pytest.mark.parametrize("props,n,element_size,expected", [
    (_H100, 65537, 2, (4096, 13)), (_H100, 77824, 2, (4096, 13)), (_H100, 77825, 2, (8192, 13)),
    (_H100, 131071, 2, (8192, 13)), (_H100, 32769, 4, (4096, 13)), (_H100, 131071, 4, (4096, 13)),
    (_Sm89, 50257, 2, (4096, 5)), (_Sm89, 131071, 2, (8192, 5)), (_Sm89, 30000, 4, (4096, 5))])
def test_the_streamed_ring_follows_the_device_and_the_row(example, monkeypatch, props, n, element_size, expected):
    # on an H100: 16-bit rows of up to 19 4096-wide tiles in the ring two blocks an SM
    # hold (13 of 8 KB), longer ones in 8192-wide tiles filling one block's shared memory
    # (13 of 16 KB); float32 in 4096-wide tiles, 13 of 16 KB. A 99 KB part: rings of 5
    sm = example("softmax")
    monkeypatch.setattr(sm, "_SHARED_BYTES", {})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props())
    assert sm._stream_ring(torch.device("cuda", 0), n, element_size) == expected


@pytest.mark.parametrize("props,capability,n,element_size,expected", [
    (_H100, (9, 0), 65537, 2, (2, 9)), (_H100, (9, 0), 131071, 2, (4, 8)), (_H100, (9, 0), 131071, 4, (8, 4)),
    (_H100, (9, 0), 50257, 4, (4, 4)), (_H100, (9, 0), 8 * 13 * 4096, 2, (8, 13)),
    (_H100, (9, 0), 8 * 13 * 4096 + 1, 2, None), (_Sm89, (8, 9), 65537, 2, None)])
def test_rows_too_long_to_keep_split_over_a_cluster_on_hopper(example, monkeypatch, props, capability, n,
                                                              element_size, expected):
    # the fewest blocks (2, 4, 8) whose parts fit one of two blocks an SM (H100: 13
    # tiles of 4096 16-bit elements, 6 of float32: a 13-tile float32 row takes 4 blocks
    # of 4, not 2 of 7); longer rows, and GPUs without clusters, stream
    sm = example("softmax")
    monkeypatch.setattr(sm, "_SHARED_BYTES", {})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props())
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: capability)
    assert sm._cluster_split(torch.device("cuda", 0), n, element_size) == expected


def test_the_wrapper_splits_rows_over_a_cluster_where_asked(example, monkeypatch):
    # cluster_split=C keeps rows too long for one block with C blocks a row (not
    # persistent), row_tiles the tiles of each; cluster_split=1, and the default where
    # clusters cannot run (the interpreter), stream them; rows short enough to keep in
    # one block ignore it
    sm = example("softmax")
    made = _record_builds(sm, monkeypatch, "row_tiles", "streamed", "cluster_split", "persistent")
    for n, split in ((131071, 4), (131071, None), (131071, 1), (40000, 4)):
        sm.softmax(torch.empty(1, n, dtype=torch.float16), cluster_split=split)
    # (cluster_split=1 finds the default's script)
    assert made == [(4096, 8, None, 4, False), (4096, 16, True, None, None), (4096, 10, None, None, None)]
    # cluster_split=True: the device's choice (_cluster_split); the interpreter has no clusters
    monkeypatch.setattr(sm, "_cluster_split", lambda device, n, element_size: (2, 16))
    sm.softmax(torch.empty(1, 131071, dtype=torch.float16), cluster_split=True)
    assert made[-1] == (4096, 16, None, 2, False)


def test_the_wrapper_keeps_rows_the_ring_would_read_again_in_a_cluster(example, monkeypatch):
    # the default (cluster_split=None) where clusters run: a cluster for rows that the
    # ring would read again in part (131071 fp16 over a ring of 13 x 8192), the ring for
    # rows it holds whole (50257 float32 in 13 x 4096) and with cluster_split=False
    sm = example("softmax")
    made = _record_builds(sm, monkeypatch, "row_tiles", "streamed", "cluster_split")
    monkeypatch.setattr(sm, "_cluster_split", lambda device, n, element_size: (4, 8))
    monkeypatch.setattr(sm, "_stream_ring", lambda device, n, element_size: (
        (8192, 13) if element_size == 2 else (4096, 13)))
    sm.softmax(torch.empty(1, 131071, dtype=torch.float16))
    sm.softmax(torch.empty(1, 50257, dtype=torch.float32))
    sm.softmax(torch.empty(1, 131071, dtype=torch.float16), cluster_split=False)
    assert made == [(4096, 8, None, 4), (4096, 13, True, None), (8192, 13, True, None)]


@pytest.mark.parametrize("props,limit", [(_H100, 128 * 1024), (_Sm89, 101376 - 16 * 1024)])
def test_rows_are_kept_in_the_shared_memory_the_device_has(example, monkeypatch, props, limit):
    # 128 KB where a block may have more (H100), less on a 99 KB part: a 50257-word fp16
    # row (104 KB in 4096-wide tiles) is copied on the H100 and streamed there; 40000
    # words (80 KB) are copied on both
    sm = example("softmax")
    monkeypatch.setattr(sm, "_SHARED_BYTES", {})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props())
    assert sm._keep_limit(torch.device("cuda", 0)) == limit
    on_h100 = props is _H100
    assert (sm._copies_rows(50257, 2, limit), sm._streams_rows(50257, 2, limit)) == (on_h100, not on_h100)
    assert sm._copies_rows(40000, 2, limit) and not sm._streams_rows(40000, 2, limit)


@pytest.mark.parametrize("cols", [1, 9, 70])
def test_copied_rows_shorter_than_a_tile(example, cols):
    # a kernel for long rows called with rows of less than a tile: most rows of the
    # [tile / vector, vector] view hold nothing in any tile, and must add nothing (not NaN)
    sm = example("softmax")
    x = torch.randn(5, cols) * 4
    y = torch.full_like(x, float("nan"))
    sm.Softmax(tilus.float32, 128, block_m=1, warps=1, persistent=True, staged=False, row_tiles=2,
               long_rows=True, long_split=1, prefetch=False, copy_rows=True)(5, cols, 2, x, y)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("cols", [5, 64, 200, 290, 296, 513])
@pytest.mark.parametrize("ring,shifted", [(2, False), (3, True), (3, False), (5, True)])
@pytest.mark.parametrize("persistent", [False, True])
def test_rows_streamed_through_a_ring_of_tiles(example, dtype, cols, ring, shifted, persistent):
    # `streamed`: a ring of 2, 3 or 5 tiles of 64 for rows of 1 to 9 tiles: shorter than
    # the ring (nothing read again), as long, or longer (the first tiles read again
    # through the ring in the second pass); the interpreter lands each copy only at its
    # wait, so a wait too short reads the slot's previous tile. Persistent: 7 rows over
    # the interpreter's 3 blocks, each row's second pass copying the next row's first tiles
    _copied_rows_match_torch(example, dtype, cols, persistent=persistent, row_tiles=ring, shifted=shifted,
                             streamed=True)


def _copied_rows_match_torch(example, dtype, cols, **config):
    """A copy_rows Softmax of 64-wide tiles, one warp, on 7 rows of `cols` (3 persistent
    blocks) against torch on a poisoned output."""
    sm = example("softmax")
    x = (torch.randn(7, cols) * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.Softmax(sm._TORCH_TO_TILUS[dtype], 64, block_m=1, warps=1, staged=False, long_rows=True, long_split=1,
               prefetch=False, copy_rows=True, **config)(7, cols, 3, x, y)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), atol=2e-3, rtol=2e-2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("length", ["short", "one part", "part and a tile", "odd", "whole"])
@pytest.mark.parametrize("split,part_tiles,shifted", [(2, 2, False), (2, 3, True), (4, 1, True), (4, 2, False)])
def test_rows_kept_by_a_cluster_of_blocks(example, dtype, length, split, part_tiles, shifted):
    # `cluster_split`: each row kept by 2 or 4 blocks of 1-3 tiles of 64, meeting once
    # through their shared memory: rows shorter than a tile (the other blocks hold nothing
    # and must add nothing), of one block's part, of a part and a tile, of an odd length
    # (a shifted row's head is rank 0's), and as long as the cluster's tiles
    part = part_tiles * 64
    cols = {"short": 5, "one part": part, "part and a tile": part + 64, "odd": split * part - 37,
            "whole": split * part}[length]
    _copied_rows_match_torch(example, dtype, cols, persistent=False, row_tiles=part_tiles, shifted=shifted,
                             cluster_split=split)


@pytest.mark.parametrize("config", [dict(cluster_split=3), dict(cluster_split=2, streamed=True),
                                    dict(cluster_split=2, persistent=True), dict(cluster_split=2, copy_rows=False)])
def test_cluster_split_is_refused_outside_kept_rows(example, config):
    base = dict(block_m=1, warps=1, persistent=False, staged=False, long_rows=True, long_split=1, prefetch=False,
                row_tiles=3, copy_rows=True)
    base.update(config)
    with pytest.raises(ValueError, match="cluster_split"):
        example("softmax").Softmax(tilus.float32, 64, **base)


@pytest.mark.parametrize("streamed", [dict(copy_rows=False), dict(row_tiles=1)])
def test_streamed_is_refused_without_copy_rows_over_a_ring(example, streamed):
    config = dict(block_m=1, warps=1, persistent=False, staged=False, long_rows=True, long_split=1, prefetch=False,
                  row_tiles=3, copy_rows=True)
    config.update(streamed)
    with pytest.raises(ValueError, match="streamed"):
        example("softmax").Softmax(tilus.float32, 64, streamed=True, **config)


@pytest.mark.parametrize("copy_rows", [dict(row_tiles=0), dict(row_tiles=5, prefetch=True),
                                       dict(row_tiles=2, block_m=2)])
def test_copy_rows_is_refused_without_one_row_kept_in_shared_memory(example, copy_rows):
    config = dict(block_m=1, warps=1, persistent=False, staged=False, long_rows=True, long_split=1, prefetch=False)
    config.update(copy_rows)
    with pytest.raises(ValueError, match="copy_rows"):
        example("softmax").Softmax(tilus.float32, 64, copy_rows=True, **config)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("cols", [301, 296, 5])
@pytest.mark.parametrize("persistent,staged", [(False, False), (True, False), (True, True)])
def test_one_tile_rows_walked_from_their_16_byte_boundary(example, dtype, cols, persistent, staged):
    # `shifted` rows of one tile (5: rows shorter than a vector, all head); 7 rows over
    # the interpreter's 3 persistent blocks
    sm = example("softmax")
    x = (torch.randn(7, cols) * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.Softmax(sm._TORCH_TO_TILUS[dtype], 512, block_m=1, warps=4, persistent=persistent, staged=staged,
               long_split=1, prefetch=False, shifted=True)(7, cols, 3, x, y)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), atol=2e-3, rtol=2e-2)


def test_the_shifted_walk_is_refused_for_several_rows_a_block(example):
    with pytest.raises(ValueError, match="shifted"):
        example("softmax").Softmax(tilus.float16, 256, block_m=2, warps=4, persistent=False, staged=False,
                                   long_rows=True, long_split=1, prefetch=False, shifted=True)


def test_rows_kept_in_shared_memory_are_limited_to_128_kb(example):
    with pytest.raises(ValueError, match="row_tiles"):
        example("softmax").Softmax(tilus.float16, 32768, block_m=2, warps=32, persistent=False, staged=False,
                                   row_tiles=2, long_rows=True, long_split=1, prefetch=False)


@pytest.mark.parametrize("cols,row_tiles", [(200, 0), (700, 0), (700, 3)])
def test_every_softmax_configuration_on_every_path(example, cols, row_tiles):
    """Every configuration of the tuning space, fixed, on each path (rows of one tile; longer
    rows read twice; longer rows kept in shared memory), 11 rows: more row tiles than the
    interpreter's 3 persistent blocks. The tuner keeps the fastest configuration, so one that
    skips work would be chosen (the persistent long-row path once computed 3 x block_m rows)."""
    sm = example("softmax")
    x = (torch.randn(11, cols) * 4).to(torch.float16)
    expected = torch.softmax(x.float(), dim=1).to(torch.float16)
    ran = []
    long_rows = cols > 256
    for config in sm.Softmax(tilus.float16, 256, row_tiles=row_tiles, long_rows=long_rows).configs:
        try:
            kernel = sm.Softmax(tilus.float16, 256, row_tiles=row_tiles, long_rows=long_rows, **config)
        except ValueError:  # refused at construction (too many threads for the tile, ...)
            continue
        y = torch.full_like(x, float("nan"))
        kernel(11, cols, 3, x, y)
        torch.testing.assert_close(y, expected, atol=2e-2, rtol=2e-2, msg=lambda m: f"{config}: {m}")
        ran.append(config)
    assert len(ran) >= 18 and {c["persistent"] for c in ran} == {False, True}
    assert {c["long_split"] for c in ran} == ({1, 2, 4} if long_rows else {1})
    assert {c["prefetch"] for c in ran} == ({False, True} if long_rows else {False})


@pytest.mark.parametrize("cols", [200, 700])
def test_every_norm_configuration_on_both_paths(example, cols):
    nm = example("norms")
    x = torch.randn(11, cols).to(torch.float16)
    w, b = torch.randn(cols).to(torch.float16), torch.randn(cols).to(torch.float16)
    ln = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float(), 1e-5).to(torch.float16)
    rms = (x.float() * torch.rsqrt(x.float().pow(2).mean(1, keepdim=True) + 1e-6) * w.float()).to(torch.float16)
    ran = 0
    for config in nm.LayerNorm(tilus.float16, 256).configs:
        try:
            layer, rms_kernel = nm.LayerNorm(tilus.float16, 256, **config), nm.RMSNorm(tilus.float16, 256, **config)
        except ValueError:
            continue
        y, z = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
        layer(11, cols, x, w, b, y, 1e-5)
        rms_kernel(11, cols, x, w, z, 1e-6)
        torch.testing.assert_close(y, ln, atol=2e-2, rtol=2e-2, msg=lambda m: f"layer norm {config}: {m}")
        torch.testing.assert_close(z, rms, atol=2e-2, rtol=2e-2, msg=lambda m: f"RMS norm {config}: {m}")
        ran += 1
    assert ran >= 6


def test_staged_softmax_is_refused_without_the_persistent_walk(example):
    with pytest.raises(ValueError, match="staged"):
        example("softmax").Softmax(tilus.float32, 512, block_m=1, warps=4, persistent=False, staged=True,
                                   long_split=1, prefetch=False)


def test_narrower_long_row_tiles_are_refused_for_rows_of_one_tile(example):
    with pytest.raises(ValueError, match="long_split"):
        example("softmax").Softmax(tilus.float32, 512, block_m=1, warps=4, persistent=False, staged=False,
                                   long_split=2, prefetch=False)


def test_softmax_of_very_negative_rows(example):
    x = torch.randn(4, 50) - 1000.0  # zero padding must not become the row max
    y = torch.full_like(x, float("nan"))
    example("softmax").softmax(x, y)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n,block_n", [(37, 70, None), (5, 129, 32)])
def test_layer_norm_and_rms_norm(example, dtype, m, n, block_n):
    nm = example("norms")
    x = (torch.randn(m, n) * 2 + 0.5).to(dtype)
    w, b = torch.randn(n).to(dtype), torch.randn(n).to(dtype)
    y = torch.full_like(x, float("nan"))
    nm.layer_norm(x, w, b, 1e-5, out=y, block_n=block_n)
    ref = torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).to(dtype)
    torch.testing.assert_close(y, ref, **_tol(dtype))
    z = torch.full_like(x, float("nan"))
    nm.rms_norm(x, w, 1e-6, out=z, block_n=block_n)
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + 1e-6) * w.float()).to(dtype)
    torch.testing.assert_close(z, ref, **_tol(dtype))


def _limit_elements(monkeypatch, module, limit):
    """Lower the per-call element limit of the wrappers (2^31 - 1) to `limit`."""
    monkeypatch.setitem(module.row_slices.__globals__, "INT32_ELEMENTS", limit)


def test_softmax_past_the_int32_limit_runs_in_slices_of_rows(example, monkeypatch):
    sm = example("softmax")
    _limit_elements(monkeypatch, sm, 100)  # 3 rows of 30 a call: 7 rows in 3 calls
    assert [rows for rows, _ in sm.row_slices(torch.zeros(7, 30))] == [3, 3, 1]
    x = torch.randn(7, 30) * 4
    y = torch.full_like(x, float("nan"))
    sm.softmax(x, y)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))
    with pytest.raises(ValueError, match="rows of 101 elements: more than a kernel call indexes"):
        sm.softmax(torch.randn(2, 101))


def test_row_slices_start_16_byte_aligned_when_a_call_takes_16_rows_or_more(example, monkeypatch):
    sm = example("softmax")
    _limit_elements(monkeypatch, sm, 33 * 31)  # 33 rows of 31 would fit a call: 32 do
    x = torch.randn(70, 31, dtype=torch.float16)
    slices = sm.row_slices(x)
    assert [rows for rows, _ in slices] == [32, 32, 6]
    assert all((part.data_ptr() - x.data_ptr()) % 16 == 0 for _, (part,) in slices)
    x = torch.randn(70, 31) * 4  # (float32, through the wrapper: three calls)
    y = torch.full_like(x, float("nan"))
    sm.softmax(x, y)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


def test_norms_past_the_int32_limit_run_in_slices_of_rows(example, monkeypatch):
    nm = example("norms")
    _limit_elements(monkeypatch, nm, 64)  # 2 rows of 30 a call
    x, w, b = torch.randn(5, 30), torch.randn(30), torch.randn(30)
    y = torch.full_like(x, float("nan"))
    nm.layer_norm(x, w, b, 1e-5, out=y)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, [30], w, b, 1e-5), atol=1e-5, rtol=1e-5)
    z = torch.full_like(x, float("nan"))
    nm.rms_norm(x, w, 1e-6, out=z)
    torch.testing.assert_close(z, x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + 1e-6) * w)


@pytest.mark.parametrize("bad", ["shape", "dtype", "strides"])
def test_a_wrong_out_is_refused_before_anything_is_written(example, bad):
    x = torch.randn(6, 40)
    out = {"shape": torch.full((5, 40), 7.0), "dtype": torch.full((6, 40), 7.0, dtype=torch.float16),
           "strides": torch.full((40, 6), 7.0).t()}[bad]
    for call in (lambda: example("softmax").softmax(x, out),
                 lambda: example("norms").layer_norm(x, torch.ones(40), torch.zeros(40), out=out),
                 lambda: example("norms").rms_norm(x, torch.ones(40), out=out)):
        with pytest.raises(ValueError, match=r"out must be a contiguous torch.float32 \[6, 40\] tensor"):
            call()
        assert (out == 7.0).all()


def test_norm_parameters_of_the_wrong_shape_or_dtype_are_refused(example):
    nm = example("norms")
    x = torch.randn(6, 40)
    with pytest.raises(ValueError, match=r"LayerNorm: weight must be a contiguous torch.float32 \[40\] tensor"):
        nm.layer_norm(x, torch.ones(39), torch.zeros(40))
    with pytest.raises(ValueError, match=r"LayerNorm: bias must be a contiguous torch.float32 \[40\] tensor"):
        nm.layer_norm(x, torch.ones(40), torch.zeros(40, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"RMSNorm: weight must be"):
        nm.rms_norm(x, torch.ones(40, 1))
    with pytest.raises(ValueError, match="x must be a contiguous 2-D"):
        nm.rms_norm(torch.randn(40), torch.ones(40))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("block_n, cols", [(512, 301), (512, 296), (512, 5), (128, 301), (128, 300), (128, 133)])
def test_norm_rows_walked_from_their_16_byte_boundary(example, dtype, block_n, cols):
    # `shifted`: x and y from each row's 16-byte boundary, the weight and bias from the
    # same columns, the head (0 to 7 elements over the 9 rows; 5: the whole row) element
    # by element; rows of one tile (512) or of several (128: the passes of long rows, 133
    # one tile and a few columns past the head)
    nm = example("norms")
    x = (torch.randn(9, cols) * 2 + 0.5).to(dtype)
    w, b = torch.randn(cols).to(dtype), torch.randn(cols).to(dtype)
    y, z = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    nm.LayerNorm(nm._TORCH_TO_TILUS[dtype], block_n, block_m=1, warps=4, shifted=True)(9, cols, x, w, b, y, 1e-5)
    nm.RMSNorm(nm._TORCH_TO_TILUS[dtype], block_n, block_m=1, warps=4, shifted=True)(9, cols, x, w, z, 1e-6)
    tol = _tol(dtype) if dtype != torch.float32 else dict(atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x.float(), [cols], w.float(), b.float(),
                                                                 1e-5).to(dtype), **tol)
    torch.testing.assert_close(z, nm._rms_reference(x, w, 1e-6), **tol)


def test_the_norm_wrappers_take_the_shifted_walk_when_asked_for_unaligned_rows(example):
    nm = example("norms")
    nm._SCRIPTS.clear()
    for n, block_n in ((300, None), (304, None), (300, 128), (304, 128)):
        x, w = torch.randn(3, n), torch.randn(n)
        for shifted in (None, True):
            torch.testing.assert_close(nm.rms_norm(x, w, block_n=block_n, shifted=shifted),
                                       nm._rms_reference(x, w, 1e-6), atol=1e-4, rtol=1e-4)
    # rows longer than the tile (300 over 128) too; never rows that are a multiple of 16
    assert sorted(key[2:] for key in nm._SCRIPTS) == [(128, False), (128, True), (512, False), (512, True)]
