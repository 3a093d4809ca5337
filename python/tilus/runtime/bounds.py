"""The host side of ``tilus.option.debug.bounds_check`` on the GPU.

A kernel built with the check (csrc/codegen/emit_bounds.cc) takes, after its own
parameters and workspaces, the byte size of the tensor passed for every pointer
parameter and a pointer to a BoundsRecord (csrc/codegen/device/bounds.cuh). Every global
access compares its address with its tensor; one outside it is skipped (a load reads 0)
and the first of the launch fills the record. After the launch the host synchronises the
stream, reads the record and, when it was filled, clears it and raises
:class:`tilus.lang.errors.ScriptBoundsError` naming the script line, the instruction,
the tensor, the element and the block and thread that made the access.
"""

from __future__ import annotations

import struct
from typing import List, Sequence

from tilus import _C
from tilus.lang import errors

_rt = _C.runtime

# 16 int64: claimed, site, block[3], thread, byte_offset, rank, index[4], done, 3 unused
RECORD_BYTES = 128
# A pointer argument with no tensor behind it (a raw address): nothing to compare with.
UNKNOWN_SIZE = 1 << 62


def record_pointer(device: int, stream: int) -> int:
    """The record of `device` (one per device, zeroed when first allocated and after
    every violation is read, so it is clean before each launch)."""
    return _rt.get_workspace(f"tilus.bounds_record:{device}", RECORD_BYTES, True, stream)


def hidden_args(generated: dict, sizes: Sequence[int], record: int) -> List[tuple]:
    """The (kind, value) pairs of the hidden parameters, in the kernel's order: the size
    of each pointer parameter's tensor (`sizes` by parameter position, -1 unknown), then
    the record."""
    out = []
    for kind, index in generated["bounds_params"]:
        if kind == "size":
            size = sizes[index] if index < len(sizes) else -1
            out.append(("i64", UNKNOWN_SIZE if size is None or size < 0 else int(size)))
        else:
            out.append(("ptr", record))
    return out


def check_record(generated: dict, record: int, stream: int, sizes: Sequence[int],
                 script: str = "") -> None:
    """Wait for the launch, read the record and raise if an access was out of bounds
    (clearing the record first, so the next launch starts clean)."""
    _rt.synchronize(stream)
    raw = _rt.read_device(record, RECORD_BYTES)
    fields = struct.unpack("<16q", raw)
    if fields[0] == 0:
        return
    _rt.zero_device(record, RECORD_BYTES, stream)
    _rt.synchronize(stream)
    raise violation_error(generated, fields, sizes, script)


def violation_error(generated: dict, fields: Sequence[int], sizes: Sequence[int],
                    script: str = "") -> errors.ScriptBoundsError:
    """The error a filled record describes (fields as bounds.cuh lays them out)."""
    site_id, bx, by, bz, thread, offset, rank = fields[1:8]
    index = list(fields[8:8 + min(max(rank, 0), 4)])
    sites = generated["bounds_sites"]
    site = sites[site_id] if 0 <= site_id < len(sites) else None
    if site is None:
        message = (f"bounds check: a global access ({offset} bytes into its tensor) from "
                   f"block ({bx}, {by}, {bz}) thread {thread} was outside its tensor")
        return errors.ScriptBoundsError(message, script=script)
    verb = {"store_global": "wrote", "store_global_scatter": "wrote"}.get(site["op"], "accessed")
    if site["op"] in ("load_global", "copy_async", "element load"):
        verb = "read"
    param_index = _param_index(generated, site["param"])
    size = sizes[param_index] if param_index is not None and param_index < len(sizes) else -1
    view_shape = ", ".join(site["view_shape"])
    extent = (f"the tensor passed as '{site['param']}' holds {size} bytes" if size is not None
              and size >= 0 else f"outside the tensor passed as '{site['param']}'")
    message = (f"bounds check: {site['op']} {verb} element {index} of '{site['view']}' "
               f"(view shape [{view_shape}]), {offset} bytes from the start of "
               f"'{site['param']}', but {extent}; from block ({bx}, {by}, {bz}) thread "
               f"{thread}. The access was skipped; nothing was written outside the tensor")
    error = errors.ScriptBoundsError(message, site["file"], site["line"], site["text"], script)
    error.op, error.view, error.param = site["op"], site["view"], site["param"]
    error.index, error.byte_offset, error.tensor_bytes = index, offset, size
    error.block, error.thread = (bx, by, bz), thread
    return error


def _param_index(generated: dict, name: str):
    for i, (pname, _dtype, workspace) in enumerate(generated["params"]):
        if pname == name and workspace < 0:
            return i
    return None
