"""AST transpiler: a Script's ``__call__`` source -> IR through ``_C.IRBuilder``.

The walk evaluates compile-time Python as it goes (attribute reads on ``self``, int
arithmetic, ``if`` on Python values, calls to ordinary functions), and turns runtime
values (parameters, ``blockIdx``, everything computed from them) into IR. Helper methods
defined on the script class are inlined by walking their source too.

Scoping follows Python for runtime scalars: a variable first assigned inside a runtime
``if`` or loop stays visible afterwards (the IR declares it once). A tensor first
defined inside a runtime ``if`` or loop is local to it, and using it afterwards is an
error naming where it was defined. Rebinding the name of a register tensor may write into
that tensor (``acc = self.dot(a, b, acc)`` updates ``acc`` in place), so loop-carried
tiles work; other names of the tile keep its value, as in Python (rebind_register).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
import linecache
import numbers
import operator
import textwrap
from typing import Any, Dict, List, Optional

from tilus import _C
from tilus.lang import errors
from tilus.lang.context import building, current_launch_attrs
from tilus.lang.classes import Class
from tilus.lang.instructions import InstructionMixin, _Range
from tilus.lang.types import DataType
from tilus.lang.values import Expr, Tensor, as_expr, is_scalar, register_index

_PY_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,
}
_PY_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_,
    ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


# Tilus 0.2's instruction groups for Blackwell (sm_100), which tilus does not compile for
BLACKWELL_GROUPS = {"tcgen05": "tensor memory and tcgen05.mma", "clc": "cluster launch control"}


def _unknown_instruction_hint(script, name: str) -> str:
    """What to say after "the script has no attribute NAME": Tilus 0.2's Blackwell
    instruction groups by name, else the closest instruction names (a typo), else that
    it is no instruction."""
    if name in BLACKWELL_GROUPS:
        return (f": Tilus 0.2's self.{name} ({BLACKWELL_GROUPS[name]}) is for Blackwell GPUs (sm_100), "
                "which tilus does not compile for (sm_80 and sm_90)")
    return _close_names(script, name) or " (unknown instruction?)"


def _close_names(obj, name: str) -> str:
    """The public names of obj closest to name, as " (did you mean 'x'?)", or "" when none is."""
    close = difflib.get_close_matches(name, [n for n in dir(obj) if not n.startswith("_")], n=3, cutoff=0.75)
    return " (did you mean " + " or ".join(f"'{c}'" for c in close) + "?)" if close else ""


class _Unbound:
    """Marks a name whose tensor was defined inside a runtime block that has ended, or
    that named the variable of a runtime loop that has ended (loop_var)."""

    def __init__(self, name: str, line: int, kind: str, loop_var: bool = False):
        self.name, self.line, self.kind, self.loop_var = name, line, kind, loop_var


class _Ambiguous:
    """Marks a name that held a compile-time value before a runtime block and was given
    another value inside it: after the block it is the one or the other, depending on
    whether the block ran, so reading it is refused (`_Scope.rebound`)."""

    def __init__(self, name: str, old, line: int, kind: str, text: str, dtype: str):
        self.name, self.old, self.line, self.text, self.dtype = name, old, line, text, dtype
        self.final = old  # the value the block left it (set when the block closes)
        self.kind = {"for": "for loop", "while": "while loop", "else": "else branch"}.get(kind, kind)

    def message(self) -> str:
        scalar = isinstance(self.old, (bool, int, float))
        held = f"the compile-time value {self.old!r}" if scalar or self.old is None else \
            f"a {type(self.old).__name__}"
        advice = (f"declare it as a runtime variable before the {self.kind}, e.g. "
                  f"`{self.name}: {self.dtype} = {self.old!r}`, or use another name inside it" if scalar else
                  f"give it before the {self.kind} the value it should have when the {self.kind} does not "
                  f"run (for a tile: a register tile of the same shape and dtype, which the assignment "
                  f"inside then writes into)")
        return (f"'{self.name}' held {held} before the runtime {self.kind} in which line {self.line} "
                f"(`{self.text}`) gives it another value, so after it the name would be either; "
                + advice)


class _SharedTile(_Ambiguous):
    """Marks a name of a register tile that a runtime block wrote in place as another
    name's new value (rebind_register): the name no longer holds what it was bound to."""

    def __init__(self, name: str, tile, line: int, kind: str, text: str, writer: str, by_helper: bool = False):
        super().__init__(name, tile, line, kind, text, "")
        self.writer, self.by_helper = writer, by_helper

    @staticmethod
    def advice(name: str, writer: str, kind: str) -> str:
        kind = {"for": "for loop", "while": "while loop"}.get(kind, kind)
        return (f"Give '{name}' a tile of its own before the {kind}, e.g. `{name} = "
                f"self.register_tensor(dtype=..., shape=[...])` and `self.assign({name}, {writer})`")

    @staticmethod
    def helper_advice(writer: str, kind: str) -> str:
        kind = {"for": "for loop", "while": "while loop"}.get(kind, kind)
        return (f"give '{writer}' a tile of its own in the helper before the {kind}, e.g. "
                f"`fresh = self.register_tensor(dtype=..., shape=[...])`, `self.assign(fresh, {writer})`, "
                f"`{writer} = fresh`")

    def message(self) -> str:
        if self.by_helper:  # a caller's name of a tile a helper's runtime block carries
            return (f"'{self.name}' names the register tile that the helper's line {self.line} "
                    f"(`{self.text}`) writes in place as the new value of '{self.writer}' inside a "
                    f"runtime {self.kind} (a tile a runtime block carries is updated in place), so "
                    f"'{self.name}' no longer holds the value it was given. Read '{self.name}' before the "
                    f"call, or " + self.helper_advice(self.writer, self.kind))
        return (f"'{self.name}' names the register tile that line {self.line} (`{self.text}`) writes "
                f"in place as the new value of '{self.writer}' inside a runtime {self.kind} (a tile a "
                f"runtime block carries is updated in place), so '{self.name}' no longer holds the value "
                f"it was given. " + self.advice(self.name, self.writer, self.kind))


def _holds(value, tile, depth: int = 3, skip: Optional[tuple] = None) -> bool:
    """Whether the Python container or tilus.Class object `value` refers to `tile` (a few
    levels deep), not counting the attribute `skip` (an (object, name) pair)."""
    if depth == 0:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif isinstance(value, dict):
        items = value.values()
    elif isinstance(value, Class):
        items = [v for k, v in vars(value).items() if skip is None or not (value is skip[0] and k == skip[1])]
    else:
        return False
    return any(item is tile or _holds(item, tile, depth - 1, skip) for item in items)


class _Scope:
    """Names first bound inside one runtime block (if/for/while body); the compile-time
    names given another value inside it (rebound: name -> _Ambiguous, the value before
    the block and where it changed), which hold their old value again when the block
    ends and are ambiguous after the statement; and, for loop bodies, the line of the
    first read of each name (a rebinding after it would change what the next iteration
    reads)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.new_names: List[str] = []
        self.rebound: Dict[str, _Ambiguous] = {}
        self.reads: Dict[str, int] = {}
        # loop bodies: names read here that a helper's runtime block then wrote in place
        # (name -> (line of the read, the _SharedTile marker)); an error if still unbound at the end
        self.helper_writes: Dict[str, tuple] = {}


class _Source:
    """A function's parsed AST and where it came from (cached per code object)."""

    def __init__(self, fn):
        self.file = inspect.getsourcefile(fn) or inspect.getfile(fn)
        try:
            # Files, notebook/IPython cells and exec()'d text registered with linecache.
            lines, first_line = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            raise errors.source_not_found(fn) from None
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, first_line - 1)
        # Columns in the tree count from the dedented text; errors point into the file.
        self.column_shift = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.node = tree.body[0]
        if not isinstance(self.node, ast.FunctionDef):
            raise TypeError(f"{fn.__qualname__} is not a plain function definition")
        # the names the body binds (assignment, loop and with-as targets): inline copies the
        # caller's runtime variables passed for them
        self.assigned_names = {n.id for n in ast.walk(self.node)
                               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


_SOURCE_CACHE: Dict[Any, _Source] = {}


class _Function:
    """A function to walk: its (shared) AST plus the globals and closure of this very
    function object. Classes made by a factory share one code object but not closures."""

    def __init__(self, fn):
        fn = inspect.unwrap(fn)
        source = _SOURCE_CACHE.get(fn.__code__)
        if source is None:
            source = _SOURCE_CACHE[fn.__code__] = _Source(fn)
        self.fn = fn
        self.file = source.file
        self.node = source.node
        self.column_shift = source.column_shift
        self.assigned_names = source.assigned_names
        self.globals = fn.__globals__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass
        self.qualname = fn.__qualname__


def parse_function(fn) -> _Function:
    return _Function(fn)


class _LoopExit(Exception):
    """A break/continue of an unrolled Python loop decided at compile time."""

    def __init__(self, is_break: bool):
        self.is_break = is_break


class _Unrolled:
    """A Python loop being unrolled, and how its break/continue are carried out.

    A break or continue reached with no runtime block opened since the loop began is
    decided now: the unrolling stops, or the rest of this iteration is not emitted.
    One under a runtime condition sets a runtime flag (declared before the loop); every
    statement after a place that may have set it runs only while the flags are clear.
    """

    def __init__(self, depth: int, broke, skipped):
        self.depth = depth      # len(Transpiler.scopes) when the loop began
        self.broke = broke      # runtime bool set by break, or None when none can be
        self.skipped = skipped  # runtime bool set by continue, reset every iteration
        self.exits = 0          # runtime breaks/continues emitted so far
        self.breaks = 0

    def stay(self):
        """The runtime condition for the loop body to go on."""
        flags = [f for f in (self.broke, self.skipped) if f is not None]
        left = flags[0] if len(flags) == 1 else _C.binary("or", flags[0], flags[1])
        return _C.logical_not(left)


def _exits_of(body: List[ast.stmt], nested: bool = False, found=None):
    """The kinds of break/continue that leave the loop owning `body` ({"break",
    "continue"}) and whether any sits under an if (so may depend on a runtime value)."""
    found = found if found is not None else [set(), False]
    for stmt in body:
        if isinstance(stmt, (ast.Break, ast.Continue)):
            found[0].add("break" if isinstance(stmt, ast.Break) else "continue")
            found[1] = found[1] or nested
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            _exits_of(stmt.orelse, True, found)  # the loop's own body owns its exits
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                _exits_of(getattr(stmt, field, []) or [], True, found)
            for handler in getattr(stmt, "handlers", []) or []:
                _exits_of(handler.body, True, found)
    return found


_BOOL = _C.dtype("boolean")
# The scope kind of the runtime `if` that skips what follows a runtime break/continue.
_GUARD = "if (the code after a break/continue that depends on a runtime value)"
# ... and of the one that skips what follows a `return` under a runtime condition.
_EXIT_GUARD = "if (the code after a return under a runtime condition)"


class _WhileTest(ast.stmt):
    """The test of a while loop that calls anything, as the first statement of its body."""

    _fields = ("test",)


class _Return(Exception):
    """Carries the value of a `return` out of an inlined helper method."""

    def __init__(self, value):
        self.value = value


class Transpiler:
    def __init__(self, script, kernel_fn, kernel_name: str):
        self.script = script
        self.func = parse_function(kernel_fn)
        self.builder = _C.IRBuilder(kernel_name, self.func.file)
        self.kernel_name = kernel_name
        self.env: Dict[str, Any] = {}
        # The names of the functions an inlined helper was called from, innermost last
        # (a helper's argument is the caller's tile: shared_elsewhere).
        self.caller_envs: List[Dict[str, Any]] = []
        self.caller_scopes: List[List[_Scope]] = []  # their open runtime blocks
        self.scopes: List[_Scope] = []
        self.current_func = self.func
        self.current_node: Optional[ast.AST] = None
        self.loop_vars: List[Expr] = []  # variables of the runtime loops being walked
        # The loops being walked, innermost last: None for a runtime loop.
        self.loops: List[Optional[_Unrolled]] = []
        # A `return` under a runtime condition ends the kernel (Tilus 0.2's semantics): it
        # sets this flag (declared at the kernel's start on first use) and the statements
        # after any place that may have set it run only while it is clear.
        self.exit_flag: Optional[Expr] = None
        self.kernel_exits = 0    # such returns emitted so far
        self.thread_groups = 0   # open `with self.thread_group(...)` blocks
        # Runtime scalars declared to a compile-time int and not assigned since:
        # id(var) -> (value, the runtime block it was declared in (block_token), var); what
        # a ring counter holds when its loop starts (static_rings below). The entry keeps
        # the var alive, so its id names no other expression meanwhile.
        self.declared_constants: Dict[int, tuple] = {}
        # While a loop unrolled by its ring is walked: id(update statement) -> (name,
        # the counter's constant after it), in the copy being walked.
        self.ring_updates: Dict[int, tuple] = {}

    # ------------------------------------------------------------------ entry
    def transpile(self, params: List[tuple]):
        """params: (name, kind, value) with kind 'jit' (value = Python value) or
        'runtime' (value = tilus DataType). Returns the finished Program."""
        node = self.func.node
        with building(self.builder):
            try:
                self.set_loc(node)
                self.env[node.args.args[0].arg] = self.script
                for name, kind, value in params:
                    if kind == "jit":
                        self.env[name] = value
                    else:
                        self.env[name] = self.builder.add_param(name, value)
                self.visit_body(node.body)
                self.set_loc(node)
                return self.builder.finish()
            except errors.ScriptError:
                raise
            except _Return:
                return self.builder.finish()
            except errors.NativeError as e:
                raise self.error_from_native(e) from None
            except Exception as e:  # a Python error raised while evaluating script code
                raise self.error(errors.kind_of(e), f"{type(e).__name__}: {e}") from e

    # ------------------------------------------------------------------ errors
    def set_loc(self, node: ast.AST):
        self.current_node = node
        line = getattr(node, "lineno", 0)
        text = linecache.getline(self.current_func.file, line).strip() if line else ""
        self.builder.set_loc(line, getattr(node, "col_offset", 0) + self.current_func.column_shift,
                             text)

    def error(self, kind: str, message: str, node: Optional[ast.AST] = None) -> errors.ScriptError:
        node = node or self.current_node
        line = getattr(node, "lineno", 0)
        text = linecache.getline(self.current_func.file, line) if line else ""
        shift = self.current_func.column_shift
        column = getattr(node, "col_offset", None) if line else None
        end = getattr(node, "end_col_offset", None)
        if column is not None:
            column += shift
        if getattr(node, "end_lineno", line) != line:
            end = len(text.rstrip())
        elif end is not None:
            end += shift
        return errors.script_error(kind, message, self.current_func.file, line, text,
                                   self.current_func.qualname, column, end)

    def error_from_native(self, e: errors.NativeError) -> errors.ScriptError:
        if e.line:
            return errors.script_error(e.kind, e.message, e.file or self.current_func.file,
                                       e.line, e.text, self.current_func.qualname, e.column)
        return self.error(e.kind, e.message)

    def guarded(self, node: ast.AST, fn, *args):
        """Run fn with `node` as the location of any error it raises."""
        try:
            return fn(*args)
        except (errors.ScriptError, _Return, _LoopExit):
            raise
        except errors.NativeError as e:
            raise self.error_from_native(e) from None
        except Exception as e:
            raise self.error(errors.kind_of(e), str(e), node) from e

    # ------------------------------------------------------------------ statements
    def visit_body(self, stmts: List[ast.stmt]):
        loop = self.loops[-1] if self.loops else None
        for k, stmt in enumerate(stmts):
            exits = loop.exits if loop is not None else 0
            kernel_exits = self.kernel_exits
            self.visit_stmt(stmt)
            if self.kernel_exits != kernel_exits:
                if isinstance(stmt, ast.Return):
                    return  # what follows in this block is unreachable
                self.set_loc(stmt)
                if self.loops and loop is None:
                    # Directly in a runtime loop's body: an exit leaves the loop.
                    self.builder.begin_if(self.exit_flag)
                    self.builder.emit_break()
                    self.builder.end_if()
                elif k + 1 < len(stmts):
                    self.builder.begin_exit_guard(_C.logical_not(self.exit_flag))
                    try:
                        self.visit_block(stmts[k + 1:], _EXIT_GUARD)
                    except (_LoopExit, _Return):  # control leaves from inside: a compile-time
                        self.builder.end_if()        # break, the helper's own return
                        raise
                    self.builder.end_if()
                    return
            if loop is None or loop.exits == exits:
                continue
            if isinstance(stmt, (ast.Break, ast.Continue)):
                return  # what follows in this block is unreachable
            if k + 1 < len(stmts):
                # A runtime break/continue of the unrolled loop may have run.
                self.set_loc(stmts[k + 1])
                self.builder.begin_if(loop.stay())
                self.visit_block(stmts[k + 1:], _GUARD)
                self.builder.end_if()
            return

    def visit_stmt(self, node: ast.stmt):
        self.set_loc(node)
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error("SyntaxError",
                             f"{type(node).__name__} statements are not supported in tilus scripts")
        self.guarded(node, method, node)

    def stmt_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.eval(node.value)

    def stmt_Pass(self, node):
        pass

    def stmt_Assign(self, node: ast.Assign):
        update = self.ring_updates.get(id(node))
        if update is not None:  # a ring counter's advance, in a copy of a ring-unrolled loop
            self.env[update[0]] = update[1]
            return
        value = self.eval(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign):
        if isinstance(node.target, ast.Attribute):
            annotation = self.eval(node.annotation)
            if node.value is None:
                raise self.error("SyntaxError", f"'{ast.unparse(node.target)}' is declared "
                                 "without a value")
            value = self.eval(node.value)
            if isinstance(annotation, DataType):
                value = _C.cast(as_expr(value, f"the value of '{ast.unparse(node.target)}'"),
                                annotation)
                return self.assign_attribute(node.target, value, declare=annotation)
            return self.assign_attribute(node.target, value)
        if not isinstance(node.target, ast.Name):
            raise self.error("SyntaxError", "only names can be annotated")
        annotation = self.eval(node.annotation)
        name = node.target.id
        if node.value is None:
            raise self.error("SyntaxError", f"'{name}' is declared without a value")
        value = self.eval(node.value)
        if isinstance(annotation, DataType):
            # `x: int32 = ...` always makes a runtime variable, even from a Python value.
            expr = as_expr(value, f"the value of '{name}'")
            current = self.env.get(name)
            if isinstance(current, Expr) and current.kind == "var" and current.dtype == annotation:
                self.builder.assign(current, expr)
                self.declared_constants.pop(id(current), None)
            else:
                if current is not None and not isinstance(current, (_Unbound, _Ambiguous)):
                    # a new variable of this block: after it, the name is ambiguous
                    self.rebind_compile_time(name, current, value, node, annotation.name)
                var = self.builder.declare(name, annotation, expr)
                self.bind(name, var)
                if isinstance(value, int) and not isinstance(value, bool):
                    self.declared_constants[id(var)] = (value, self.block_token(), var)
        elif annotation in (int, float, bool):
            if isinstance(value, (Expr, Tensor)):
                raise self.error("TypeError", f"'{name}' is annotated {annotation.__name__}, a "
                                 "compile-time constant, but its value is known only at run time")
            self.assign(node.target, annotation(value), node)
        else:
            self.assign(node.target, value, node)

    def stmt_AugAssign(self, node: ast.AugAssign):
        target = node.target
        if isinstance(target, (ast.Attribute, ast.Subscript)):  # self.count += 1, phases[stage] ^= 1
            current = self.eval(target)
            return self.assign(target, self.binop(node.op, current, self.eval(node.value)), node)
        if not isinstance(target, ast.Name):
            raise self.error("SyntaxError", "augmented assignment only works on names, "
                             "attributes and register tensor elements")
        current = self.lookup(target.id, target)
        value = self.binop(node.op, current, self.eval(node.value))
        self.assign(target, value, node)

    def stmt_If(self, node: ast.If):
        cond = self.eval(node.test)
        if not isinstance(cond, Expr):
            if isinstance(cond, Tensor):
                raise self.error("TypeError", "an if condition cannot be a tensor")
            self.visit_body(node.body if cond else node.orelse)
            return
        self.builder.begin_if(cond)
        scopes = [self.visit_block(node.body, "if", mark_rebound=False)]
        if node.orelse:  # it sees the values from before the if (visit_block restored them)
            self.set_loc(node)
            self.builder.begin_else()
            scopes.append(self.visit_block(node.orelse, "else", mark_rebound=False))
        self.builder.end_if()
        self.mark_rebound(scopes)

    def stmt_With(self, node: ast.With):
        from tilus.lang.inst_groups import ThreadGroupContext

        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise self.error("SyntaxError", "a with statement in a tilus script takes one "
                             "self.thread_group(...) (or single_thread/single_warp/warp_group) and no 'as'")
        ctx = self.eval(node.items[0].context_expr)
        if not isinstance(ctx, ThreadGroupContext):
            raise self.error("SyntaxError", "with statements in tilus scripts open thread groups "
                             f"(self.thread_group(...)); got a {type(ctx).__name__}")
        self.builder.begin_thread_group(ctx.thread_begin, ctx.num_threads)
        self.thread_groups += 1
        try:
            self.visit_block(node.body, "thread group")
        finally:
            self.thread_groups -= 1
        self.builder.end_thread_group()

    def stmt_For(self, node: ast.For):
        if node.orelse:
            raise self.error("SyntaxError", "for ... else is not supported")
        if isinstance(node.iter, ast.Call):
            func = self.eval(node.iter.func)
            if func is builtins.range:
                args = [self.eval(a) for a in node.iter.args]
                if node.iter.keywords or not 1 <= len(args) <= 3:
                    raise self.error("TypeError", "range takes 1 to 3 positional arguments")
                start, end, step = (0, args[0], 1) if len(args) == 1 else (
                    args[0], args[1], args[2] if len(args) == 3 else 1)
                return self.runtime_for(node, start, end, step, 0)
        iterable = self.eval(node.iter)
        if isinstance(iterable, _Range):
            unroll = iterable.unroll or 0
            return self.runtime_for(node, iterable.start, iterable.end, iterable.step, unroll)
        if isinstance(iterable, (Expr, Tensor)):
            raise self.error("TypeError", "cannot iterate over a runtime value; use range(...) "
                             "or self.range(...)")
        self.unrolled_for(node, iterable)

    def unrolled_for(self, node: ast.For, iterable):
        """A Python iterable: the body is emitted once per item."""
        kinds, conditional = _exits_of(node.body)
        broke = skipped = None
        if conditional:  # flags for exits that may depend on runtime values
            if "break" in kinds:
                broke = self.builder.declare("unrolled_break", _BOOL, _C.const_bool(False))
            if "continue" in kinds:
                skipped = self.builder.declare("unrolled_continue", _BOOL, _C.const_bool(False))
        loop = _Unrolled(self.runtime_depth(), broke, skipped)
        self.loops.append(loop)
        kernel_exits = self.kernel_exits
        try:
            for item in iterable:
                self.set_loc(node)
                if skipped is not None and loop.exits:  # a new iteration is not skipped
                    self.builder.assign(skipped, _C.const_bool(False))
                self.assign(node.target, item, node)
                exited = self.kernel_exits != kernel_exits  # an earlier iteration may have
                if exited:
                    self.builder.begin_exit_guard(_C.logical_not(self.exit_flag))
                try:
                    if loop.breaks:  # an earlier iteration may have broken out at run time
                        self.builder.begin_if(loop.stay())
                        self.visit_block(node.body, _GUARD)
                        self.builder.end_if()
                    elif exited:
                        self.visit_block(node.body, _EXIT_GUARD)
                    else:
                        self.visit_body(node.body)
                except (_LoopExit, _Return) as e:  # control leaves the iteration: close the guard
                    if exited:
                        self.builder.end_if()
                    if isinstance(e, _Return):
                        raise
                    if e.is_break:
                        break
                    continue
                if exited:
                    self.builder.end_if()
        finally:
            self.loops.pop()

    def runtime_for(self, node: ast.For, start, end, step, unroll: int):
        if not isinstance(node.target, ast.Name):
            raise self.error("SyntaxError", "a runtime loop variable must be a single name")
        for what, v in (("start", start), ("end", end), ("step", step)):
            if not is_scalar(v):
                raise self.error("TypeError", f"the loop {what} must be an integer, got {v!r}")
        descending = isinstance(step, int) and not isinstance(step, bool) and step < 0
        rings = {} if descending else self.ring_counters(node, step, unroll)
        if rings:
            return self.ring_unrolled_for(node, start, end, step, unroll, rings)
        if descending:
            # range(start, end, -s): count = max(0, ceil((start - end) / s)) iterations of a
            # counter k, the loop variable start - k * s (a variable of the body)
            stride = -step
            count = _C.binary("max", as_expr((start - end + (stride - 1)) // stride), as_expr(0))
            counter = self.builder.begin_for(node.target.id + "_step", as_expr(0), count, as_expr(1), unroll)
            value = as_expr(start) - counter * stride
            var = self.builder.declare(node.target.id, value.dtype, value)
        else:
            var = self.builder.begin_for(node.target.id, as_expr(start), as_expr(end), as_expr(step),
                                         unroll)
        scope = _Scope("for")
        self.scopes.append(scope)
        saved = self.env.get(node.target.id, _MISSING)
        self.env[node.target.id] = var
        self.loop_vars.append(var)
        self.loops.append(None)
        try:
            self.visit_body(node.body)
        finally:
            self.scopes.pop()
            self.loop_vars.pop()
            self.loops.pop()
        self.close_scope(scope, node)
        self.mark_rebound([scope])
        self.builder.end_for()
        self.end_loop_var(node, saved)

    def end_loop_var(self, node: ast.For, saved):
        """The loop variable ends with the loop (the IR has no value for it after): the name
        returns to what it was bound to before, or becomes unbound, so that reading it is
        an error naming the loop and assigning it makes a new variable."""
        if saved is not _MISSING:
            self.env[node.target.id] = saved
        else:
            self.env[node.target.id] = _Unbound(node.target.id, node.lineno, "for", loop_var=True)

    def block_token(self) -> Optional[_Scope]:
        """The innermost runtime block being walked (None: the kernel's top level). The
        scope itself, not its id: a closed block's id may be reused by a later one."""
        return self.scopes[-1] if self.scopes else None

    def ring_counters(self, node: ast.For, step, unroll: int) -> Dict[str, tuple]:
        """The ring counters of a runtime loop that static_rings unrolls: name -> (var,
        value at the loop's start, its advance statement). A ring counter is a runtime
        int declared to a constant in the block the loop is in and not assigned since,
        advanced once per iteration by a top-level ``v = (v + 1) % unroll`` and assigned
        nowhere else in the body. Nothing when the option is off, the step is not a
        compile-time int, or the body has a break, continue or return of its own, or
        assigns the loop variable."""
        from tilus import option

        if unroll < 2 or not option.get_static_rings() or not isinstance(step, int):
            return {}
        assigned: Dict[str, int] = {}
        for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if isinstance(sub, (ast.Break, ast.Continue, ast.Return)):
                return {}
            targets = sub.targets if isinstance(sub, ast.Assign) else \
                [sub.target] if isinstance(sub, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        assigned[name.id] = assigned.get(name.id, 0) + 1
        if isinstance(node.target, ast.Name) and node.target.id in assigned:
            return {}
        rings = {}
        for stmt in node.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)):
                continue
            name = stmt.targets[0].id
            v = stmt.value
            if not (isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mod) and isinstance(v.left, ast.BinOp)
                    and isinstance(v.left.op, ast.Add)):
                continue
            terms = (v.left.left, v.left.right)
            is_name = [isinstance(t, ast.Name) and t.id == name for t in terms]
            is_one = [isinstance(t, ast.Constant) and t.value == 1 for t in terms]
            if not ((is_name[0] and is_one[1]) or (is_one[0] and is_name[1])) or assigned.get(name) != 1:
                continue
            var = self.env.get(name)
            known = self.declared_constants.get(id(var)) if isinstance(var, Expr) else None
            if known is None or known[1] is not self.block_token():
                continue
            try:
                modulus = self.eval(v.right)
            except Exception:  # not evaluable here: not a ring counter
                continue
            if modulus == unroll and 0 <= known[0] < modulus:
                rings[name] = (var, known[0], stmt)
        return rings

    def ring_unrolled_for(self, node: ast.For, start, end, step: int, unroll: int, rings: Dict[str, tuple]):
        """``for k in range(start, end, step)`` whose ring counters advance mod `unroll`
        (ring_counters), as

            for k0 in range(start, end, step * unroll):
                copy 0 of the body with k = k0, each counter v = (v0 + 0) % unroll
                if k0 + step < end:       copy 1, k = k0 + step, v = (v0 + 1) % unroll
                ...

        In each copy the counters are compile-time constants (sa[stage] is a constant
        view), and each copy ends by storing the counters' next values in their variables,
        which therefore hold after the loop what the rolled loop would leave there."""
        self.set_loc(node)
        end_value = as_expr(end)
        if not end_value.is_const:  # the bound the copies test, evaluated once
            end_value = self.builder.declare(f"{node.target.id}_end", end_value.dtype, end_value)
        var = self.builder.begin_for(node.target.id, as_expr(start), end_value, as_expr(step * unroll), 0)
        outer = _Scope("for")
        self.scopes.append(outer)
        saved = self.env.get(node.target.id, _MISSING)
        self.loop_vars.append(var)
        self.loops.append(None)
        try:
            for j in range(unroll):
                at = var if j == 0 else var + j * step
                if j > 0:
                    self.set_loc(node)
                    self.builder.begin_if(at < end_value)
                copy = _Scope("for")
                self.scopes.append(copy)
                self.env[node.target.id] = at
                for name, (_, first, update) in rings.items():
                    self.env[name] = (first + j) % unroll
                    self.ring_updates[id(update)] = (name, (first + j + 1) % unroll)
                try:
                    self.visit_body(node.body)
                finally:
                    self.scopes.pop()
                    for name, (ring_var, _, update) in rings.items():
                        self.ring_updates.pop(id(update), None)
                        self.env[name] = ring_var
                self.close_scope(copy, node)
                self.mark_rebound([copy])
                for name, (ring_var, first, _) in rings.items():
                    self.builder.assign(ring_var, as_expr((first + j + 1) % unroll))
                if j > 0:
                    self.builder.end_if()
        finally:
            self.scopes.pop()
            self.loop_vars.pop()
            self.loops.pop()
        for ring_var, _, _ in rings.values():
            self.declared_constants.pop(id(ring_var), None)
        self.close_scope(outer, node)
        self.mark_rebound([outer])
        self.builder.end_for()
        self.end_loop_var(node, saved)

    def stmt_While(self, node: ast.While):
        if node.orelse:
            raise self.error("SyntaxError", "while ... else is not supported")
        body = node.body
        if any(isinstance(sub, ast.Call) for sub in ast.walk(node.test)):
            # The test may emit instructions (`self.sum(acc).item() < 100`: a reduction of a
            # tile the body updates) or have effects (an atomic): Python evaluates it before
            # every iteration, so it is evaluated at the top of the loop, `while True: if not
            # test: break`, never once before it.
            cond = _C.const_bool(True)
            body = [ast.copy_location(_WhileTest(test=node.test), node.test), *node.body]
        else:
            cond = self.eval(node.test)
        if isinstance(cond, Tensor):
            raise self.error("TypeError", "a while condition must be a scalar; take a one-element "
                             "tile's value with .item()")
        if not isinstance(cond, Expr):
            if not cond:  # `while False:` (a compile-time false) runs nothing
                return
            cond = _C.const_bool(True)  # `while True:` until a break
        self.builder.begin_while(cond)
        self.loops.append(None)
        try:
            self.visit_block(body, "while")
        finally:
            self.loops.pop()
        self.builder.end_while()

    def stmt__WhileTest(self, node: "_WhileTest"):
        """A while loop's test at the top of its body (stmt_While): leaves the loop when false."""
        cond = self.eval(node.test)
        if not isinstance(cond, Expr):
            raise self.error("TypeError", "a while condition must be a runtime value; loops on "
                             "compile-time values are written with for over a range", node)
        self.builder.begin_if(_C.logical_not(cond))
        self.builder.emit_break()
        self.builder.end_if()

    def stmt_Break(self, node):
        self.loop_exit(True)

    def stmt_Continue(self, node):
        self.loop_exit(False)

    def loop_exit(self, is_break: bool):
        loop = self.loops[-1] if self.loops else None
        if loop is None:  # a runtime loop's (the builder reports one outside any loop)
            self.builder.emit_break() if is_break else self.builder.emit_continue()
            return
        if self.runtime_depth() == loop.depth:
            raise _LoopExit(is_break)
        flag = loop.broke if is_break else loop.skipped
        assert flag is not None, "_exits_of missed a break/continue under a runtime block"
        self.builder.assign(flag, _C.const_bool(True))
        loop.exits += 1
        loop.breaks += is_break

    def runtime_depth(self) -> int:
        """The runtime blocks open around the current statement, less the guards after a
        kernel exit: a compile-time break inside one still stops the unrolling, since the
        iterations it skips would be skipped at run time too."""
        return sum(1 for scope in self.scopes if scope.kind != _EXIT_GUARD)

    def stmt_Return(self, node: ast.Return):
        value = None if node.value is None else self.eval(node.value)
        if self.current_func is self.func and value is not None:
            raise self.error("SyntaxError", "a kernel's __call__ cannot return a value")
        if all(scope.kind == _EXIT_GUARD for scope in self.scopes):
            # The function's own return (perhaps after an earlier runtime exit, whose guard
            # holds the rest of the function).
            if self.scopes and isinstance(value, (Expr, Tensor)):
                raise self.error("SyntaxError", "this helper may end the kernel early (a return "
                                 "under a runtime condition above), so it cannot also return a "
                                 "runtime value; return it through an argument (out=) instead")
            raise _Return(value)
        # Under a runtime if or loop: as in Tilus 0.2, the kernel ends here.
        if value is not None:
            raise self.error("SyntaxError", "a return under a runtime if or loop ends the kernel "
                             "and cannot return a value; a helper returns a value only from its "
                             "top level")
        if self.thread_groups:
            raise self.error("SyntaxError", "a return under a runtime condition inside a thread "
                             "group is not supported: the group's threads would leave while the "
                             "others wait for them at the next barrier; end the group instead")
        if self.exit_flag is None:
            self.exit_flag = self.builder.declare_at_top("kernel_exited", _BOOL,
                                                         _C.const_bool(False))
        self.builder.assign(self.exit_flag, _C.const_bool(True))
        self.kernel_exits += 1

    def stmt_Assert(self, node: ast.Assert):
        cond = self.eval(node.test)
        if isinstance(cond, (Expr, Tensor)):
            raise self.error("TypeError", "assert needs a compile-time condition")
        if not cond:
            msg = self.eval(node.msg) if node.msg is not None else "assertion failed"
            raise self.error("ValueError", f"AssertionError: {msg}")

    def visit_block(self, body, kind: str, mark_rebound: bool = True) -> _Scope:
        scope = _Scope(kind)
        self.scopes.append(scope)
        try:
            self.visit_body(body)
        finally:
            self.scopes.pop()
        self.close_scope(scope, None)
        if mark_rebound:
            self.mark_rebound([scope])
        return scope

    def close_scope(self, scope: _Scope, node):
        # A loop's next iteration reads what a helper wrote into a tile this body read, unless
        # the body gave the name a new value after the helper (`acc = self.step(acc)`).
        for name, (read_line, marker) in scope.helper_writes.items():
            if self.env.get(name) is marker:
                raise self.error("TypeError", (
                    f"this runtime {scope.kind} loop reads '{name}' at line {read_line}, and the helper's "
                    f"line {marker.line} (`{marker.text}`) writes that register tile in place as the new value "
                    f"of '{marker.writer}' inside a runtime {marker.kind}: the next iteration would read the "
                    f"new value. Give '{name}' its new value in the loop (`{name} = ...`), or "
                    + _SharedTile.helper_advice(marker.writer, marker.kind)), node)
        # Tensors defined inside a runtime block do not outlive it.
        for name in scope.new_names:
            value = self.env.get(name)
            if isinstance(value, Tensor):
                line = getattr(self.current_node, "lineno", 0)
                self.env[name] = _Unbound(name, line, scope.kind)
        # Compile-time names given another value inside it hold their old value again
        # (what an else branch sees); mark_rebound makes them ambiguous after the statement.
        for name, ambiguous in scope.rebound.items():
            ambiguous.final = self.env.get(name, _MISSING)  # what the block left it
            self.env[name] = ambiguous.old

    def mark_rebound(self, scopes: List[_Scope]):
        """After a runtime statement, the compile-time names its blocks gave another value
        are ambiguous: reading one is refused (lookup), assigning it binds it anew. An if
        whose two branches both leave a name the same Python value leaves it that value."""
        for scope in scopes:
            for name, ambiguous in scope.rebound.items():
                self.env[name] = ambiguous
        if len(scopes) == 2:
            for name in scopes[0].rebound.keys() & scopes[1].rebound.keys():
                first, second = scopes[0].rebound[name].final, scopes[1].rebound[name].final
                if not isinstance(first, (Expr, Tensor, _Unbound, _Ambiguous)) and \
                        (first is second or _same_value(first, second)):
                    self.env[name] = first

    # ------------------------------------------------------------------ binding
    def rebind_compile_time(self, name: str, current, value, node, dtype: str):
        """`name` holds the compile-time value `current` (or a tensor or view) and is given
        another value inside runtime blocks: allowed, and recorded in each block up to the
        one that bound it (the name holds `current` again when a block ends, and is
        ambiguous after it: mark_rebound), unless a runtime loop body read it before this
        point, whose next iteration would then read the new value where the traced body
        used the old one."""
        def loop_read(scope: _Scope) -> str:
            old = "a tensor" if isinstance(current, Tensor) else f"the compile-time value {current!r}"
            return (f"'{name}' holds {old}, which line {scope.reads[name]} read in this runtime "
                    f"{scope.kind} before this assignment gives it another value: the next iteration "
                    f"would read the new value. "
                    + (f"Declare it as a runtime variable before the {scope.kind}, e.g. "
                       f"`{name}: {dtype} = {current!r}`" if is_scalar(current) else
                       "Use another name inside the loop"))

        self.record_rebinding(name, node, loop_read,
                              lambda line, kind, text: _Ambiguous(name, current, line, kind, text, dtype))

    def record_rebinding(self, name: str, node, loop_read, marker) -> Optional[_Ambiguous]:
        """Records in each runtime block open here, up to the one that bound `name`, that
        line `node` changes what `name` holds: `marker(line, kind, text)` (an _Ambiguous),
        which close_scope and mark_rebound put in place. A runtime loop among them that
        read `name` earlier is refused with `loop_read(scope)`: its next iteration would
        read the new value. Returns the marker of the outermost block recorded (None: no
        block)."""
        scopes = []
        for scope in reversed(self.scopes):
            if name in scope.new_names:
                break
            if scope.kind == _EXIT_GUARD:  # what follows a guard runs only when its body ran
                continue
            if scope.kind in ("for", "while") and name in scope.reads:
                raise self.error("TypeError", loop_read(scope))
            scopes.append(scope)
        line = getattr(node, "lineno", 0)
        text = ast.unparse(node).split("\n")[0] if node is not None else name
        recorded = None
        for scope in scopes:
            recorded = scope.rebound.setdefault(name, marker(line, scope.kind, text))
        return recorded

    def rebinding_scope(self, name: Optional[str] = None) -> Optional[_Scope]:
        """The innermost runtime block in which rebinding a compile-time value is ambiguous
        (the value after the block would depend on whether it ran), or None. The block a
        name was first bound in is not, nor a guard after a kernel exit: what follows one
        runs only when the guard's body ran."""
        for scope in reversed(self.scopes):
            if name is not None and name in scope.new_names:
                return None
            if scope.kind != _EXIT_GUARD:
                return scope
        return None

    def bind(self, name: str, value):
        if isinstance(value, Tensor):
            self.builder.name_tensor(value, name)
        if name not in self.env or isinstance(self.env[name], _Unbound):
            if self.scopes:
                self.scopes[-1].new_names.append(name)
        self.env[name] = value

    def assign(self, target: ast.AST, value, node):
        """Assignment in a script, ``x = value``: the ``assign`` instruction for register tiles.

        Rebinding a name that holds a register tensor to another register tensor of the same
        dtype and shape writes the value into the existing tensor (an ``assign`` instruction),
        which is how loop-carried tiles work: ``acc = self.dot(a, b, acc)`` inside a loop
        updates ``acc``. Any other assignment binds the name (runtime scalars become variables,
        compile-time Python values stay Python values).

        Args:
            target: the assignment target (a name, a tuple of names, or ``self.attrs.*``).
            value: the value assigned.
            node: the statement, for error locations.

        Dtypes and layouts:
            The value must have the tile's dtype and shape (cast first); after the assignment the
            two tiles share a layout.

        Raises:
            TypeError: a tile defined outside a loop or ``if`` is given another dtype or shape
                inside it; a runtime value is unpacked.
            ValueError: a tuple unpacking has the wrong number of values.
            SyntaxError: the target is not a name, tuple or ``self.attrs`` field.

        Example:
            .. code-block:: python

                acc = self.register_tensor(dtype=float32, shape=[64, 64], init=0.0)
                for k in range(num_k):
                    acc = self.dot(a, b, acc)   # writes into acc
        """
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (Expr, Tensor)):
                raise self.error("TypeError", "cannot unpack a runtime value")
            values = list(value)
            if len(values) != len(target.elts):
                raise self.error("ValueError", f"cannot unpack {len(values)} values into "
                                 f"{len(target.elts)} names")
            # Python evaluates the whole right side first, but an earlier target's runtime
            # variable or register tile is written in place before a later value is
            # assigned: a value that could read one is taken into a new variable or tile
            # first (`a, b = b, a`, `a, b = b, a + b`)
            for i, v in enumerate(values):
                earlier = [self.env.get(t.id) for t in target.elts[:i] if isinstance(t, ast.Name)]
                if isinstance(v, Tensor) and v.scope == "register" and any(w is v for w in earlier):
                    values[i] = self.copy_tile(v, "r")
                elif isinstance(v, Expr) and not v.is_const and _C.expr_mentions(
                        v, [w for w in earlier if isinstance(w, Expr) and w.kind == "var"]):
                    values[i] = self.builder.declare("value", v.dtype, v)
            for t, v in zip(target.elts, values):
                self.assign(t, v, node)
            return
        if isinstance(target, ast.Attribute):
            return self.assign_attribute(target, value)
        if isinstance(target, ast.Subscript):
            return self.assign_element(target, value)
        if not isinstance(target, ast.Name):
            raise self.error("SyntaxError", f"cannot assign to {ast.unparse(target)} in a tilus "
                             "script")
        name = target.id
        current = self.env.get(name, _MISSING)
        if isinstance(current, _SharedTile) and current.by_helper:
            # a caller's name of a tile a helper's loop wrote: given a new value, it names
            # the tile again (a loop of this function may carry it: `acc = self.step(acc)`)
            current = self.env[name] = current.old
        if isinstance(current, (_Unbound, _Ambiguous)):
            current = _MISSING
        if isinstance(value, Tensor):
            if (isinstance(current, Tensor) and current.scope == "register"
                    and value.scope == "register" and current is not value):
                if current.dtype == value.dtype and current.shape == value.shape:
                    self.rebind_register(name, current, value, node)
                    return
                if self.scopes and name not in self.scopes[-1].new_names:
                    raise self.error("TypeError", f"'{name}' is a {current.type_str()} tensor "
                                     f"defined outside this {self.scopes[-1].kind}; assigning a "
                                     f"{value.type_str()} to it here would change its type")
            if (isinstance(current, Expr) and current.kind == "var" and self.scopes
                    and name not in self.scopes[-1].new_names):
                raise self.error("TypeError", f"'{name}' is a runtime {current.dtype.name} scalar "
                                 f"defined outside this {self.scopes[-1].kind}; assigning a "
                                 f"{value.type_str()} tensor to it here would change its type "
                                 "(for a one-element tile, take its value with .item())")
            if current is not _MISSING and current is not value:
                # a view or a compile-time value (None, say) given a tensor inside a block
                self.rebind_compile_time(name, current, value, node, _dtype_hint(current))
            self.bind(name, value)
            return
        if any(current is v for v in self.loop_vars):
            raise self.error("SyntaxError", f"'{name}' is the variable of a runtime loop; like "
                             "Python's range, the loop does not see assignments to it. Use "
                             "another name")
        if isinstance(value, Expr) or (isinstance(current, Expr) and current.kind == "var"
                                       and is_scalar(value)):
            value = as_expr(value)
            if isinstance(current, Expr) and current.kind == "var":
                self.builder.assign(current, value)
                self.declared_constants.pop(id(current), None)
            else:
                # A compile-time value bound before a runtime block becomes a variable of
                # the block; after it the name is ambiguous (rebind_compile_time).
                if current is not _MISSING:
                    self.rebind_compile_time(name, current, value, node, value.dtype.name)
                self.bind(name, self.builder.declare(name, value.dtype, value))
            return
        # A compile-time Python value.
        if current is not _MISSING and current is not value and not _same_value(current, value):
            self.rebind_compile_time(name, current, value, node, _dtype_hint(current))
        self.bind(name, value)

    def rebind_register(self, name: str, tile: Tensor, value: Tensor, node):
        """`name = value`, where `name` holds the register tile `tile` of value's dtype and
        shape. As in Python, other names of `tile` keep its value:

        * `name` bound in this block (or no runtime block is open): the value is written
          into `tile` only when nothing else refers to it; otherwise `name` is bound to
          `value` and `tile` is left alone (`b = a; a = a + 1`, a helper rebinding its
          argument, a compile-time loop over a list of tiles);
        * `name` bound outside the runtime block (a tile a loop carries, or an if/else
          sets): the value is written into `tile`, which is what carries it. Other names
          of `tile` bound in this block keep its old value in a copy made here (`x = nxt`
          then `nxt = self.load_global(...)` in a loop body); ones bound outside it cannot
          (the block runs more than once, or not at all), so reading them after this
          point is refused (_SharedTile), and a runtime loop that read one earlier is
          refused here. Lists and helper-calling functions holding `tile` see the write."""
        if not self.scopes or name in self.scopes[-1].new_names:
            if self.shared_elsewhere(tile, name):
                self.bind(name, value)
            else:
                self.builder.assign_tensor(tile, value)
            return
        self.keep_other_names(tile, name, name, node)
        self.builder.assign_tensor(tile, value)

    def rebind_member_tile(self, obj, attr: str, tile: Tensor, value: Tensor):
        """`self.attr = value` in a method of a tilus.Class whose attribute holds the register
        tile `tile` (value's dtype and shape): rebind_register's rules, the attribute in
        the place of the name. Outside runtime blocks the attribute is rebound when anything
        else refers to the tile; inside one the tile is written (the block carries it) and
        the names of this function that refer to it are kept as rebind_register keeps them."""
        if not self.scopes and not any(self.caller_scopes):
            if self.shared_elsewhere(tile, None, (obj, attr)):
                setattr(obj, attr, value)
            else:
                self.builder.assign_tensor(tile, value)
            return
        # (a method called inside a caller's runtime block: the object may come from
        # outside it, so the block carries its tile)
        self.keep_other_names(tile, None, f"self.{attr}", self.current_node)
        self.builder.assign_tensor(tile, value)

    def keep_other_names(self, tile: Tensor, name: Optional[str], writer: str, node):
        """Before a runtime block writes `tile` in place as `writer`'s new value: the other
        names of this function that refer to it keep its old value, in a copy for those
        bound in this block, refused from here on for those bound before it."""
        for other, held in list(self.env.items()):
            if held is not tile or other == name:
                continue
            if not self.scopes or other in self.scopes[-1].new_names:
                self.env[other] = self.copy_tile(tile, other)
            else:
                self.mark_shared_tile(other, writer, tile, node)
        if not self.scopes and self.caller_envs:
            # a method called inside its caller's runtime block writes a tile its object
            # carries: the caller's names of it bound in that block keep the old value too
            env, scopes = self.caller_envs[-1], self.caller_scopes[-1]
            for other, held in list(env.items()):
                if held is tile and (not scopes or other in scopes[-1].new_names):
                    env[other] = self.copy_tile(tile, other)
        elif self.scopes:
            # a helper's own runtime block writes a tile its callers name (an argument it
            # rebinds in a loop): every caller's name was bound before that block, so a
            # copy made here would already hold the new value; reading one is refused
            line, kind = getattr(node, "lineno", 0), self.scopes[-1].kind
            text = ast.unparse(node).split("\n")[0] if node is not None else writer
            for env, scopes in zip(self.caller_envs, self.caller_scopes):
                for other, held in list(env.items()):
                    if held is not tile:
                        continue
                    marker = env[other] = _SharedTile(other, tile, line, kind, text, writer, by_helper=True)
                    for scope in reversed(scopes):  # a caller's loop that read it (checked
                        if other in scope.new_names:  # when the loop closes: close_scope)
                            break
                        if scope.kind in ("for", "while") and other in scope.reads:
                            scope.helper_writes.setdefault(other, (scope.reads[other], marker))

    def shared_elsewhere(self, tile: Tensor, name: Optional[str], member: Optional[tuple] = None) -> bool:
        """Whether anything but the name `name` of this function (or the attribute `member`,
        an (object, name) pair) refers to `tile`: another name here or in a function that
        called this helper, or a list, tuple, dict or tilus.Class object one of them holds."""
        for env in (self.env, *self.caller_envs):
            for other, value in env.items():
                if value is tile and not (env is self.env and other == name):
                    return True
                if value is not tile and _holds(value, tile, skip=member):
                    return True
        return False

    def copy_tile(self, tile: Tensor, name: str) -> Tensor:
        """A new register tile holding `tile`'s current value (its layout)."""
        copy = self.builder.register_tensor(tile.dtype, list(tile.shape), None, None, name)
        self.builder.assign_tensor(copy, tile)
        return copy

    def mark_shared_tile(self, other: str, name: str, tile: Tensor, node):
        """`other`, bound outside the runtime blocks open here, names `tile`, which line
        `node` writes in place as `name`'s new value: reading `other` from here on, and
        after the blocks, is refused (close_scope gives it back its tile where the block
        did not run: an else branch). A runtime loop that read it earlier would read the
        new value in its next iteration: refused now."""
        def loop_read(scope: _Scope) -> str:
            return (f"'{other}' and '{name}' name one register tile, which this runtime {scope.kind} loop "
                    f"carries in '{name}': this assignment writes it in place, so the next iteration's "
                    f"read of '{other}' at line {scope.reads[other]} would see the new value. "
                    + _SharedTile.advice(other, name, scope.kind))

        marker = self.record_rebinding(
            other, node, loop_read, lambda line, kind, text: _SharedTile(other, tile, line, kind, text, name))
        if marker is not None:
            self.env[other] = marker

    def assign_element(self, target: ast.Subscript, value):
        """Assignment to elements of a register tensor: ``r[i] = v``, ``r[i, :] = row``,
        ``r[i] ^= 1`` (Tilus 0.2's slice assignment); a scalar value fills the indexed part.

        Args:
            target: the subscript assigned to: a register tensor and one index per leading
                dimension (runtime or constant integers; ``:`` keeps a whole dimension, as do
                the dimensions after the last index).
            value: a register tensor of the indexed part's shape (``[1]`` for one element)
                and the tensor's dtype, or a scalar.

        Dtypes and layouts:
            Any dtype of 8 bits or more. The tensor is laid out so that every thread holds all
            of it (element ``k`` in row-major order at register ``k``): a runtime index reads
            and writes the thread's own registers, no data moves between threads. Keep such
            tensors small (a phase per pipeline stage); nvcc keeps them in local memory when
            the index does not fold.

        Raises:
            TypeError: the tensor is not a register tensor, the value has another shape or
                dtype, or the elements are narrower than a byte.
            IndexError: a constant index is out of range (at run time the interpreter reports
                an index out of range at the line), or a slice other than ``:``.

        Example:
            .. code-block:: python

                phases = self.register_tensor(dtype=uint32, shape=[stages], init=0)
                self.mbarrier.wait(full[stage], phase=phases[stage])
                phases[stage] ^= 1
        """
        tensor = self.eval(target.value)
        if not isinstance(tensor, Tensor) or tensor.scope != "register":
            what = tensor.type_str() + " tensor" if isinstance(tensor, Tensor) else type(tensor).__name__
            raise self.error("TypeError", f"cannot assign to an element of a {what}: elements are "
                             "assigned in register tensors; a shared or global tensor is written "
                             "with store_shared / store_global")
        index = self.eval(target.slice)
        offsets, kept = register_index(tensor, index if isinstance(index, tuple) else (index,))
        if not isinstance(value, Tensor):
            shape = [tensor.shape[d] for d in kept] or [1]
            value = self.builder.register_tensor(tensor.dtype, shape,
                                                 _C.cast(as_expr(value, "the value"), tensor.dtype),
                                                 None, "v")
        self.builder.tile_op("slice_assign_register", [value], dims=kept, args=offsets, out=tensor)

    def assign_attribute(self, target: ast.Attribute, value, declare=None):
        obj = self.eval(target.value)
        if isinstance(obj, Class):
            return self.assign_member(obj, target.attr, value, declare)
        if isinstance(obj, _Attrs):
            if self.scopes:
                raise self.error("ValueError", f"self.attrs.{target.attr} must be set at the top "
                                 "level of __call__, not inside a runtime if or loop")
            return obj.set(target.attr, value, self)
        raise self.error("SyntaxError", f"cannot assign to {ast.unparse(target)} inside a tilus "
                         "script; set attributes in __init__")

    def assign_member(self, obj, attr: str, value, declare=None):
        """``self.<attr> = value`` in a method of a tilus.Class: the same rules as names
        (a runtime variable or register tile is written in place; anything else binds)."""
        current = obj.__dict__.get(attr, _MISSING)
        what = f"{type(obj).__name__}.{attr}"
        if isinstance(value, Tensor):
            if (isinstance(current, Tensor) and current.scope == "register"
                    and value.scope == "register" and current is not value):
                if current.dtype != value.dtype or current.shape != value.shape:
                    raise self.error("TypeError", f"{what} is a {current.type_str()} tensor; "
                                     f"assigning a {value.type_str()} to it would change its type")
                self.rebind_member_tile(obj, attr, current, value)
                return
            if self.scopes and current is not value:
                raise self.error("TypeError", f"{what} cannot be bound to another tensor inside "
                                 f"a runtime {self.scopes[-1].kind}")
            setattr(obj, attr, value)
            return
        is_var = isinstance(current, Expr) and current.kind == "var"
        if declare is None and is_var and is_scalar(value):
            self.builder.assign(current, _C.cast(as_expr(value), current.dtype))
            return
        if declare is not None or isinstance(value, Expr):
            if self.scopes:
                raise self.error("TypeError", f"{what} is first given a runtime value inside a "
                                 f"runtime {self.scopes[-1].kind}; declare it in __init__ "
                                 f"(`self.{attr}: int32 = 0`)")
            expr = as_expr(value)
            setattr(obj, attr, self.builder.declare(attr, declare or expr.dtype, expr))
            return
        scope = self.rebinding_scope()
        if scope is not None and current is not _MISSING and not _same_value(current, value):
            raise self.error("TypeError", f"{what} holds the compile-time value {current!r}; "
                             f"reassigning it inside a runtime {scope.kind} is ambiguous; "
                             f"declare it as a runtime variable (`self.{attr}: int32 = ...`)")
        setattr(obj, attr, value)

    def lookup(self, name: str, node):
        if name in self.env:
            value = self.env[name]
            if isinstance(value, _Ambiguous):
                raise self.error("NameError", value.message(), node)
            for scope in self.scopes:  # reads before a rebinding, for rebind_compile_time
                if scope.kind in ("for", "while") and name not in scope.rebound:
                    scope.reads.setdefault(name, getattr(node, "lineno", 0))
            if isinstance(value, _Unbound) and value.loop_var:
                raise self.error("NameError", f"'{name}' is the variable of the runtime loop at "
                                 f"line {value.line}, which has ended: its last value is not kept "
                                 "(copy it into another variable inside the loop)", node)
            if isinstance(value, _Unbound):
                raise self.error("NameError", f"'{name}' is a tensor defined inside a runtime "
                                 f"{value.kind} block and cannot be used after it", node)
            return value
        if name in self.current_func.closure:
            return self.current_func.closure[name]
        if name in self.current_func.globals:
            return self.current_func.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error("NameError", f"name '{name}' is not defined", node)

    # ------------------------------------------------------------------ expressions
    def eval(self, node: ast.expr):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error("SyntaxError", f"{type(node).__name__} expressions are not "
                             "supported in tilus scripts", node)
        return method(node)

    def expr_Constant(self, node: ast.Constant):
        return node.value

    def expr_Name(self, node: ast.Name):
        return self.lookup(node.id, node)

    def expr_Attribute(self, node: ast.Attribute):
        obj = self.eval(node.value)
        if obj is self.script and node.attr == "attrs":
            return _Attrs(self.builder)
        try:
            return getattr(obj, node.attr)
        except AttributeError:
            what = type(obj).__name__ if obj is not self.script else "the script"
            hint = _unknown_instruction_hint(obj, node.attr) if obj is self.script else _close_names(obj, node.attr)
            raise self.error("AttributeError", f"{what} has no attribute '{node.attr}'{hint}", node) from None

    def expr_Lambda(self, node: ast.Lambda):
        """A lambda in a script is a function whose body the transpiler evaluates when it
        is called (``register_tensor(init=lambda i, j: i >= j)``), in the scope it was
        written in, like a Python closure."""
        spec = node.args
        if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.posonlyargs:
            raise self.error("SyntaxError", "a lambda in a tilus script takes plain positional "
                             "parameters only", node)
        names = [a.arg for a in spec.args]
        defaults = [self.eval(d) for d in spec.defaults]
        env, func = self.env, self.current_func

        def call(*values):
            if not len(names) - len(defaults) <= len(values) <= len(names):
                raise TypeError(f"the lambda at line {node.lineno} takes {len(names)} "
                                f"arguments, got {len(values)}")
            values = list(values) + defaults[len(values) - len(names) + len(defaults):]
            saved = self.env, self.current_func
            self.env, self.current_func = {**env, **dict(zip(names, values))}, func
            try:
                return self.eval(node.body)
            finally:
                self.env, self.current_func = saved

        return call

    def expr_ListComp(self, node: ast.ListComp):
        """``[1 for _ in range(self.stages)]``: comprehensions are evaluated while the
        script is built, over compile-time iterables (their items may be runtime values or
        tiles); the loop names are their own, as in Python."""
        return [item for item, in self.comprehension(node, [node.elt])]

    def expr_GeneratorExp(self, node: ast.GeneratorExp):
        # Built eagerly: sum(...), any(...), tuple(...) consume it at once.
        return iter([item for item, in self.comprehension(node, [node.elt])])

    def expr_SetComp(self, node: ast.SetComp):
        return {item for item, in self.comprehension(node, [node.elt])}

    def expr_DictComp(self, node: ast.DictComp):
        return dict(self.comprehension(node, [node.key, node.value]))

    def comprehension(self, node, elts: List[ast.expr]) -> List[list]:
        results: List[list] = []
        outer = self.env
        self.env = dict(outer)  # the comprehension's names do not leak out

        def walk(k: int):
            if k == len(node.generators):
                results.append([self.eval(e) for e in elts])
                return
            gen = node.generators[k]
            if gen.is_async:
                raise self.error("SyntaxError", "async comprehensions are not supported", gen)
            for item in self.compile_time_iterable(gen.iter):
                self.bind_comprehension_target(gen.target, item)
                keep = True
                for cond in gen.ifs:
                    value = self.eval(cond)
                    if isinstance(value, (Expr, Tensor)):
                        raise self.error("TypeError", "a comprehension's condition must be a "
                                         "compile-time value; it is evaluated while the script "
                                         "is built", cond)
                    if not value:
                        keep = False
                        break
                if keep:
                    walk(k + 1)

        try:
            walk(0)
        finally:
            self.env = outer
        return results

    def compile_time_iterable(self, node: ast.expr):
        if isinstance(node, ast.Call) and self.eval(node.func) is builtins.range:
            bounds = [self.eval(a) for a in node.args]
            if node.keywords or not all(isinstance(b, int) for b in bounds):
                raise self.error("TypeError", "range(...) in a comprehension takes compile-time "
                                 "integers; a runtime range is a for statement", node)
            return range(*bounds)
        iterable = self.eval(node)
        if isinstance(iterable, (Expr, Tensor)):
            raise self.error("TypeError", "a comprehension iterates over compile-time values "
                             "(a list, a range of ints); use a for statement for a runtime "
                             "range", node)
        return iterable

    def bind_comprehension_target(self, target: ast.expr, item):
        if isinstance(target, ast.Name):
            self.env[target.id] = item
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(item)
            if len(items) != len(target.elts):
                raise self.error("ValueError", f"cannot unpack {len(items)} values into "
                                 f"{len(target.elts)} names", target)
            for t, v in zip(target.elts, items):
                self.bind_comprehension_target(t, v)
        else:
            raise self.error("SyntaxError", f"cannot bind {ast.unparse(target)} in a "
                             "comprehension", target)

    def expr_Tuple(self, node: ast.Tuple):
        return tuple(self.displayed_items(node.elts))

    def expr_List(self, node: ast.List):
        return self.displayed_items(node.elts)

    def displayed_items(self, elts: List[ast.expr]) -> list:
        """The items of a tuple or list display; ``*items`` unpacks a compile-time iterable
        (a tuple a helper returned, say: ``(*origin, -1)``)."""
        items = []
        for e in elts:
            if isinstance(e, ast.Starred):
                items.extend(self.eval(e.value))
            else:
                items.append(self.eval(e))
        return items

    def expr_Dict(self, node: ast.Dict):
        return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}

    def expr_JoinedStr(self, node: ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                parts.append(format(self.eval(v.value),
                                    self.eval(v.format_spec) if v.format_spec else ""))
        return "".join(parts)

    def expr_FormattedValue(self, node):
        return format(self.eval(node.value))

    def expr_BinOp(self, node: ast.BinOp):
        return self.binop(node.op, self.eval(node.left), self.eval(node.right))

    def binop(self, op: ast.operator, left, right):
        fn = _PY_BINOPS.get(type(op))
        if fn is None:
            raise self.error("SyntaxError", f"operator {type(op).__name__} is not supported")
        symbolic = isinstance(left, (Expr, Tensor)) or isinstance(right, (Expr, Tensor))
        if symbolic and type(op) not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
                                         ast.Mod, ast.BitXor, ast.BitAnd, ast.BitOr, ast.LShift,
                                         ast.RShift):
            raise self.error("TypeError", f"operator {type(op).__name__} is not supported on "
                             "runtime values")
        return fn(left, right)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        if isinstance(node.op, ast.Invert) and isinstance(node.operand, ast.Subscript):
            # ~tensor[i, j]: the address of a global tensor element.
            base = self.eval(node.operand.value)
            if isinstance(base, Tensor):
                index = self.eval(node.operand.slice)
                index = index if isinstance(index, tuple) else (index,)
                return _C.element_addr(base, [as_expr(i, "an index") for i in index])
        value = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            if isinstance(value, Expr):
                return _C.logical_not(value)
            if isinstance(value, Tensor):
                return ~value
            return not value
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        if isinstance(node.op, ast.Invert):
            if isinstance(value, Expr):
                raise self.error("TypeError", "bitwise ~ on runtime integers is not supported")
            return ~value
        raise self.error("SyntaxError", f"unary {type(node.op).__name__} is not supported")

    def expr_BoolOp(self, node: ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        result = None
        for value_node in node.values:
            value = self.eval(value_node)
            if result is None:
                result = value
            elif isinstance(result, Expr) or isinstance(value, Expr):
                result = _runtime_bool_op(is_and, as_expr(result), as_expr(value))
                continue
            else:
                result = value if (result if is_and else not result) else result
            # Python short-circuit on compile-time values
            if not isinstance(result, (Expr, Tensor)) and (not result if is_and else result):
                return result
        return result

    def expr_Compare(self, node: ast.Compare):
        left = self.eval(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            fn = _PY_CMPOPS[type(op)]
            if isinstance(left, (Expr, Tensor)) or isinstance(right, (Expr, Tensor)):
                if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                    raise self.error("TypeError", f"{type(op).__name__} is not supported on "
                                     "runtime values", node)
            value = fn(left, right)
            if result is None:
                result = value
            elif isinstance(result, Expr) or isinstance(value, Expr):
                result = _C.binary("and", as_expr(result), as_expr(value))
            else:
                result = result and value
            left = right
        return result

    def expr_IfExp(self, node: ast.IfExp):
        cond = self.eval(node.test)
        if isinstance(cond, Expr):
            body, orelse = self.eval(node.body), self.eval(node.orelse)
            if isinstance(body, Tensor) or isinstance(orelse, Tensor):
                raise self.error("TypeError", "`a if condition else b` with a runtime condition chooses "
                                 "between scalars; for tiles write an if statement, or self.where(condition, "
                                 "a, b) to choose element by element", node)
            return _C.select(cond, as_expr(body), as_expr(orelse))
        return self.eval(node.body) if cond else self.eval(node.orelse)

    def expr_Subscript(self, node: ast.Subscript):
        base = self.eval(node.value)
        index = self.eval(node.slice)
        return base[index]

    def expr_Slice(self, node: ast.Slice):
        part = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
        return slice(*part)

    def expr_Call(self, node: ast.Call):
        func = self.eval(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.eval(a.value))
            else:
                args.append(self.eval(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        return self.call(func, args, kwargs, node)

    def call(self, func, args, kwargs, node):
        symbolic = any(isinstance(a, (Expr, Tensor)) for a in list(args) + list(kwargs.values()))
        if func in (builtins.min, builtins.max) and symbolic and not kwargs:
            values = list(args[0]) if len(args) == 1 else list(args)
            op = "min" if func is builtins.min else "max"
            result = as_expr(values[0])
            for v in values[1:]:
                result = _C.binary(op, result, as_expr(v))
            return result
        if func in (builtins.int, builtins.float, builtins.bool) and symbolic:
            from tilus.lang.types import boolean, float32, int32
            target = {int: int32, float: float32, bool: boolean}[func]
            return _C.cast(as_expr(args[0]), target)
        from tilus.lang import scalar_math
        if symbolic and scalar_math.handles(func):  # math.exp(x) ... on a runtime x
            return scalar_math.call(func, args, kwargs)
        if func is builtins.range:
            raise self.error("TypeError", "range(...) can only be used as the iterable of a for "
                             "statement", node)
        if inspect.isclass(func) and issubclass(func, Class) and func is not Class:
            # A tilus.Class made inside the kernel: its __init__ is transpiled like a method.
            obj = object.__new__(func)
            init = func.__init__
            if init is not object.__init__:
                self.inline(init, args, kwargs, node, obj)
            elif args or kwargs:
                raise self.error("TypeError", f"{func.__name__}() takes no arguments", node)
            return obj
        helper = self.helper_method(func)
        if helper is not None:
            return self.inline(helper, args, kwargs, node, func.__self__)
        return func(*args, **kwargs)

    def helper_method(self, func):
        """The function of a method defined on the user's script class (not tilus's own),
        which we inline by transpiling its source."""
        if not inspect.ismethod(func) or (func.__self__ is not self.script
                                          and not isinstance(func.__self__, Class)):
            return None
        fn = func.__func__
        if getattr(InstructionMixin, fn.__name__, None) is fn:
            return None
        for klass in type(func.__self__).__mro__:
            if klass.__dict__.get(fn.__name__) is fn:
                # tilus's own helpers run as Python, except the methods of tilus.Class
                # subclasses tilus ships (tilus.Pipeline), which are kernel code.
                if klass.__module__.startswith("tilus.") and klass.__module__ != "__main__" and \
                        not (issubclass(klass, Class) and klass is not Class):
                    return None
                return fn
        return None

    def inline(self, fn, args, kwargs, node, receiver):
        parsed = parse_function(fn)
        sig = inspect.signature(fn)
        try:
            bound = sig.bind(receiver, *args, **kwargs)
        except TypeError as e:
            raise self.error("TypeError", f"{parsed.qualname}: {e}", node) from None
        bound.apply_defaults()
        saved_env, saved_func, saved_scopes = self.env, self.current_func, self.scopes
        self.caller_envs.append(saved_env)
        self.caller_scopes.append(saved_scopes)
        self.env = dict(bound.arguments)
        self.current_func = parsed
        self.scopes = []
        try:
            # A parameter holding the caller's runtime variable that the helper gives another
            # value (`n = n + 1`, `n += 1`) names a copy: as in Python, rebinding it must not
            # change the caller's variable (assign writes a variable in place)
            rebound = parsed.assigned_names
            for name, value in list(self.env.items()):
                if name in rebound and isinstance(value, Expr) and value.kind == "var":
                    self.env[name] = self.builder.declare(name, value.dtype, value)
            self.visit_body(parsed.node.body)
            result = None
        except _Return as r:
            result = r.value
        finally:
            self.caller_envs.pop()
            self.caller_scopes.pop()
            self.env, self.current_func, self.scopes = saved_env, saved_func, saved_scopes
            self.set_loc(node)
        return result


_MISSING = object()


def _runtime_bool_op(is_and: bool, a: Expr, b: Expr) -> Expr:
    """Python's `a and b` / `a or b` of runtime scalars: a boolean of two booleans (C's &&,
    ||), else one of the operands, as Python gives it (`n or default`): b if a is true
    (and) / false (or), else a. Either way the second operand is evaluated only when it
    decides the result (an element read past a tensor's end behind `i < n and` is not made)."""
    if a.dtype.is_bool and b.dtype.is_bool:
        return _C.binary("and" if is_and else "or", a, b)
    truthy = _C.binary("!=", a, as_expr(0))
    return _C.select(truthy, b, a) if is_and else _C.select(truthy, a, b)


def _dtype_hint(value) -> str:
    """The runtime type a declaration of a compile-time value would take, for messages."""
    if isinstance(value, bool):
        return "boolean"
    return "float32" if isinstance(value, float) else "int32"


def _same_value(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


class _Attrs:
    """``self.attrs`` inside a script: blocks and warps go straight to the builder."""

    def __init__(self, builder):
        self._builder = builder

    def __getattr__(self, name: str):
        """Reading an attribute the script set (``self.attrs.warps * 32``). The errors are
        ValueErrors, which the transpiler reports with their message at the line."""
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in ("blocks", "warps", "cluster_blocks"):
            raise ValueError(f"unknown kernel attribute self.attrs.{name} (known: blocks, "
                             "warps, cluster_blocks)")
        value = getattr(current_launch_attrs(), name, None)
        if value is None:
            raise ValueError(f"self.attrs.{name} is read before the script sets it")
        return value

    def set(self, name: str, value, transpiler: Transpiler):
        if name == "blocks":
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            if not 1 <= len(values) <= 3:
                raise transpiler.error("ValueError", f"self.attrs.blocks takes 1 to 3 values, got "
                                       f"{len(values)}")
            exprs = [as_expr(v, "a self.attrs.blocks entry") for v in values]
            self._builder.set_grid(exprs)
            current_launch_attrs().blocks = exprs
        elif name == "warps":
            if isinstance(value, Expr) or isinstance(value, bool) or \
                    not isinstance(value, numbers.Integral):
                raise transpiler.error("TypeError", "self.attrs.warps must be a compile-time "
                                       f"int, got {value!r}")
            self._builder.set_warps(int(value))
            current_launch_attrs().warps = int(value)
        elif name == "cluster_blocks":
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            if not 1 <= len(values) <= 3 or any(isinstance(v, (bool, Expr)) or
                                                not isinstance(v, numbers.Integral) for v in values):
                raise transpiler.error("TypeError", "self.attrs.cluster_blocks takes 1 to 3 "
                                       f"compile-time ints, got {value!r}")
            self._builder.set_cluster([int(v) for v in values])
            current_launch_attrs().cluster_blocks = [int(v) for v in values]
        else:
            raise transpiler.error("ValueError", f"unknown kernel attribute self.attrs.{name} "
                                   "(known: blocks, warps, cluster_blocks)")
