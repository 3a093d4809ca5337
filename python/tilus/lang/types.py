"""Data types exported as ``tilus.float16`` etc. ``~float16`` is a pointer type."""

from tilus import _C

DataType = _C.DataType

boolean = _C.dtype("boolean")
int8 = _C.dtype("int8")
int16 = _C.dtype("int16")
int32 = _C.dtype("int32")
int64 = _C.dtype("int64")
uint8 = _C.dtype("uint8")
uint16 = _C.dtype("uint16")
uint32 = _C.dtype("uint32")
uint64 = _C.dtype("uint64")
float16 = _C.dtype("float16")
bfloat16 = _C.dtype("bfloat16")
float32 = _C.dtype("float32")
float64 = _C.dtype("float64")

ALL = [boolean, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16,
       float32, float64]

# Names torch and numpy give the same types.
_FOREIGN_NAMES = {
    "bool": boolean, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "float16": float16, "half": float16, "bfloat16": bfloat16, "float32": float32,
    "float": float32, "float64": float64, "double": float64,
}


def from_foreign(dtype) -> "DataType | None":
    """The tilus type of a torch or numpy dtype, or None."""
    name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    return _FOREIGN_NAMES.get(name)
