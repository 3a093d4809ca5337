"""User-facing errors of tilus scripts.

A mistake inside a script's ``__call__`` is reported as a ``ScriptError`` that names the
script file, the line and its source text. Each ``ScriptError`` also derives from the
builtin class that fits it (``TypeError``, ``ValueError``, ...), so ``except TypeError``
works as users expect.
"""

from __future__ import annotations


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
    """A mistake in a tilus script, with the location it was found at."""

    def __init__(self, message: str, file: str = "", line: int = 0, text: str = "",
                 script: str = ""):
        self.message = message
        self.file = file
        self.line = line
        self.text = text
        self.script = script
        super().__init__(self._format())

    def _format(self) -> str:
        if not self.line:
            return self.message
        where = f'  File "{self.file}", line {self.line}'
        if self.script:
            where += f", in {self.script}"
        text = f"\n    {self.text.strip()}" if self.text else ""
        return f"{self.message}\n{where}{text}"


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


class ScriptZeroDivisionError(ScriptError, ZeroDivisionError):
    pass


class ScriptMemoryError(ScriptError, MemoryError):
    pass


_BY_KIND = {
    "TypeError": ScriptTypeError,
    "ValueError": ScriptValueError,
    "IndexError": ScriptIndexError,
    "NameError": ScriptNameError,
    "SyntaxError": ScriptSyntaxError,
    "RuntimeError": ScriptRuntimeError,
    "AttributeError": ScriptAttributeError,
    "ZeroDivisionError": ScriptZeroDivisionError,
    "MemoryError": ScriptMemoryError,
}


def script_error(kind: str, message: str, file: str = "", line: int = 0, text: str = "",
                 script: str = "") -> ScriptError:
    return _BY_KIND.get(kind, ScriptError)(message, file, line, text, script)


def kind_of(exc: BaseException) -> str:
    for kind in ("ZeroDivisionError", "IndexError", "NameError", "AttributeError", "TypeError",
                 "ValueError", "SyntaxError"):
        if isinstance(exc, _builtin(kind)):
            return kind
    return "RuntimeError"


def _builtin(kind: str):
    import builtins

    return getattr(builtins, kind)
