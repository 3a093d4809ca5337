"""The Python modules of tilus form a DAG: no module imports, directly or through
others, one that imports it back. Imports inside functions count too (a function-local
import only hides a cycle until the function runs)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "python"


def _modules():
    """Dotted name -> path of every module under python/tilus."""
    out = {}
    for path in (ROOT / "tilus").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name, path, modules):
    """The tilus modules `name` imports anywhere in its file. `from package import x`
    depends on package.x when that is a module, else on the package itself; native
    modules (tilus._C) are not Python files and have no imports of their own."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.add(f"{base}.{alias.name}")
                elif base in modules and not alias.name.startswith("_C"):
                    found.add(base)
    found.discard(name)
    return found


def import_graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def find_cycle(graph):
    """One cycle as a list of module names (first == last), or None."""
    state = {}  # name -> 1 while on the DFS stack, 2 when done
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_package_imports_form_a_dag():
    graph = import_graph()
    assert "tilus.script" in graph and "tilus.tuning.tuner" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_function_local_imports_are_edges_too():
    # The checker itself: a cycle through an import inside a function is found.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    graph = import_graph()
    assert "tilus.dlpack" in graph["tilus.arguments"]  # imported inside describe_tensor
    assert "tilus.script" not in graph["tilus.autotune"]
