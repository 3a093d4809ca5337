"""User-facing errors of tilus scripts.

A mistake inside a script's ``__call__`` is reported as a ``ScriptError`` that names the
script file, the line and its source text. Each ``ScriptError`` also derives from the
builtin class that fits it (``TypeError``, ``ValueError``, ...), so ``except TypeError``
works as users expect.
"""

from __future__ import annotations

import linecache
from typing import Optional


class NativeError(Exception):
    """Raised by the C++ core (ScriptError there); converted by the transpiler."""

    def __init__(self, kind: str, message: str, file: str = "", line: int = 0, column: int = 0,
                 text: str = ""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.text = text


class ScriptError(Exception):
    """A mistake in a tilus script, with the location it was found at. `column` and
    `end_column` (0-based, in the unstripped source line; None: unknown) place a caret
    under what the error is about."""

    def __init__(self, message: str, file: str = "", line: int = 0, text: str = "",
                 script: str = "", column: Optional[int] = None,
                 end_column: Optional[int] = None):
        self.message = message
        self.file = file
        self.line = line
        self.text = text
        self.script = script
        self.column = column
        self.end_column = end_column
        super().__init__(self._format())

    def _format(self) -> str:
        if not self.line:
            return self.message
        where = f'  File "{self.file}", line {self.line}'
        if self.script:
            where += f", in {self.script}"
        text = f"\n    {self.text.strip()}" if self.text else ""
        return f"{self.message}\n{where}{text}{self._caret()}"

    def _caret(self) -> str:
        shown = self.text.strip()
        if not shown or self.column is None:
            return ""
        # The text may come stripped (from the C++ core): find its indentation in the file.
        raw = self.text
        if raw == shown and self.file:
            from_file = linecache.getline(self.file, self.line)
            if from_file.strip() == shown:
                raw = from_file
        start = self.column - (len(raw) - len(raw.lstrip()))
        if not 0 <= start < len(shown):
            return ""
        end = self.end_column - (len(raw) - len(raw.lstrip())) if self.end_column else start + 1
        end = min(max(end, start + 1), len(shown))
        return "\n    " + " " * start + "^" * (end - start)

    def same_error(self, other: "ScriptError") -> bool:
        """The same mistake: same class, message and place."""
        return (type(self) is type(other) and self.message == other.message
                and self.file == other.file and self.line == other.line)


class ScriptTypeError(ScriptError, TypeError):
    pass


class ScriptValueError(ScriptError, ValueError):
    pass


class ScriptIndexError(ScriptError, IndexError):
    pass


class ScriptNameError(ScriptError, NameError):
    pass


class ScriptSyntaxError(ScriptError, SyntaxError):
    # SyntaxError formats itself from args; keep our message.
    def __str__(self) -> str:
        return self._format()


class ScriptAttributeError(ScriptError, AttributeError):
    pass


class ScriptRuntimeError(ScriptError, RuntimeError):
    pass


class ScriptNotImplementedError(ScriptError, NotImplementedError):
    """Something the target cannot do (a Hopper instruction built for sm_80, ...)."""


class ScriptZeroDivisionError(ScriptError, ZeroDivisionError):
    pass


class ScriptSourceError(ScriptError, OSError):
    """The source text of a script's function cannot be found (an OSError, as inspect's
    own error is)."""


def source_not_found(fn) -> ScriptSourceError:
    code = fn.__code__
    owner = fn.__qualname__.rsplit(".", 1)[0] if "." in fn.__qualname__ else fn.__qualname__
    return ScriptSourceError(
        f"tilus cannot read the source of {fn.__qualname__}: it was defined in "
        f"{code.co_filename!r}, which Python cannot read back. tilus transpiles a kernel "
        f"from its source text, so define {owner} in a .py file, a notebook or an IPython "
        "session. Code given to `python -c`, read from stdin or passed to exec() as a "
        "string keeps no source; for exec(), compile the text under a file name and "
        "register it first: linecache.cache[name] = (len(text), None, "
        "text.splitlines(True), name)",
        code.co_filename, code.co_firstlineno, "", fn.__qualname__)


class ScriptMemoryError(ScriptError, MemoryError):
    pass


class ScriptDataRaceError(ScriptRuntimeError):
    """The CPU interpreter's race check (tilus.option.debug.race_check) found two threads
    touching one shared or global element, at least one writing, with nothing ordering
    them. The message names both script lines, the element and the threads."""


class ScriptUninitializedReadError(ScriptRuntimeError):
    """The CPU interpreter's uninitialised-read check (tilus.option.debug.uninit_check)
    found a read of a shared element nothing wrote, or of a register tensor declared
    without init and never assigned. The message names the tensor and the element."""


class ScriptBoundsError(ScriptRuntimeError):
    """A GPU kernel built with tilus.option.debug.bounds_check accessed global memory
    outside the tensor passed for the pointer it went through. The message names the
    script line, the instruction, the view and its element, the parameter and the
    block and thread; the attributes op, view, param, index, byte_offset, tensor_bytes,
    block and thread hold them. The access was skipped (a load read 0)."""


class ScriptInternalError(ScriptError, RuntimeError):
    """The IR verifier (tilus.option.verify) found a program that breaks an invariant after
    the builder or a pass: a bug in tilus, located at the script line it concerns. The
    message names the pass ("IR verifier (after layout inference): ...")."""


_BY_KIND = {
    "TypeError": ScriptTypeError,
    "ValueError": ScriptValueError,
    "IndexError": ScriptIndexError,
    "NameError": ScriptNameError,
    "SyntaxError": ScriptSyntaxError,
    "RuntimeError": ScriptRuntimeError,
    "NotImplementedError": ScriptNotImplementedError,
    "AttributeError": ScriptAttributeError,
    "ZeroDivisionError": ScriptZeroDivisionError,
    "MemoryError": ScriptMemoryError,
    "InternalError": ScriptInternalError,
    "DataRaceError": ScriptDataRaceError,
    "UninitializedReadError": ScriptUninitializedReadError,
    "BoundsError": ScriptBoundsError,
}


def script_error(kind: str, message: str, file: str = "", line: int = 0, text: str = "",
                 script: str = "", column: Optional[int] = None,
                 end_column: Optional[int] = None) -> ScriptError:
    return _BY_KIND.get(kind, ScriptError)(message, file, line, text, script, column,
                                           end_column)


def kind_of(exc: BaseException) -> str:
    for kind in ("ZeroDivisionError", "IndexError", "NameError", "AttributeError", "TypeError",
                 "ValueError", "SyntaxError"):
        if isinstance(exc, _builtin(kind)):
            return kind
    return "RuntimeError"


def _builtin(kind: str):
    import builtins

    return getattr(builtins, kind)
