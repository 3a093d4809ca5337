"""spatial / column_spatial / local / column_local / replicate: coordinates by definition."""

import pytest

from tilus.layout import RegisterLayout, column_local, column_spatial, local, replicate, spatial


def test_spatial_row_major_threads():
    layout = spatial(2, 3)
    assert layout.shape == [2, 3]
    assert (layout.num_threads, layout.local_size) == (6, 1)
    assert [layout.coords(t, 0) for t in range(6)] == [(t // 3, t % 3) for t in range(6)]


def test_column_spatial():
    layout = column_spatial(2, 3)
    assert [layout.coords(t, 0) for t in range(6)] == [(t % 2, t // 2) for t in range(6)]


def test_local_row_major_registers():
    layout = local(2, 3)
    assert (layout.num_threads, layout.local_size) == (1, 6)
    assert [layout.coords(0, i) for i in range(6)] == [(i // 3, i % 3) for i in range(6)]


def test_column_local():
    layout = column_local(2, 3)
    assert [layout.coords(0, i) for i in range(6)] == [(i % 2, i // 2) for i in range(6)]


def test_replicate():
    layout = replicate(4, rank=2)
    assert layout.shape == [1, 1]
    assert layout.num_threads == 4 and layout.is_replicated()
    assert {layout.coords(t, 0) for t in range(4)} == {(0, 0)}


def test_list_argument_and_fields():
    layout = spatial([2, 3])
    assert layout == spatial(2, 3)
    assert layout.mode_shape == [2, 3]
    assert layout.spatial_modes == [0, 1] and layout.local_modes == []
    assert str(layout) == (
        "RegisterLayout(shape=[2, 3], mode_shape=[2, 3], spatial_modes=[0, 1], local_modes=[])"
    )


def test_canonical_equality():
    assert spatial(4) == spatial(2) * spatial(2)
    assert local(2, 6) == local(2, 2) * local(1, 3)
    assert spatial(2, 3) != column_spatial(2, 3)
    assert hash(spatial(4)) == hash(spatial(2) * spatial(2))
    assert RegisterLayout([8, 4], [2, 1, 4, 4], [0, 2], [1, 3]) == spatial(8, 1) * local(1, 4)


def test_errors():
    with pytest.raises(ValueError):
        spatial(0, 2)
    with pytest.raises(ValueError):
        spatial(2).coords(2, 0)
    with pytest.raises(ValueError):
        RegisterLayout([4], [2, 2], [0], [])  # mode 1 is neither spatial nor local
