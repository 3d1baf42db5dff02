"""The package's layout: no import circle among its modules or its packages, at most 10 modules at the top
level, and the model code in llm/. The graph is read from the source (every import statement, at module level,
inside functions and under TYPE_CHECKING alike), so a lazy import cannot hide a circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "infra_radar"
TOP_LEVEL_LIMIT = 10


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _from_module(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module a `from … import` statement of module `name` (file `path`) names, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The package modules one import statement of module `name` loads (a name imported from a module counts
    as that module; `from . import x` as submodule x when there is one)."""
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        module = _from_module(name, path, node)
        wanted = [f"{module}.{alias.name}" for alias in node.names]
    out = []
    for target in wanted:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.append(target)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                graph[name].update(_targets(name, path, node, modules))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package_of(name: str, modules: dict[str, Path]) -> str:
    """infra_radar.store.save -> infra_radar.store; a top-level module is its own node."""
    parts = name.split(".")
    if modules[name].name == "__init__.py" or len(parts) == 2:
        return name
    return ".".join(parts[:2])


def test_no_import_circle_among_modules():
    assert circles(import_graph()) == []


def test_no_import_circle_among_packages():
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, targets in import_graph().items():
        mine = _package_of(name, modules)
        graph.setdefault(mine, set()).update(t for t in map(lambda t: _package_of(t, modules), targets) if t != mine)
    # the package itself (infra_radar/__init__.py) only holds the version
    graph.pop("infra_radar", None)
    assert circles(graph) == []


def test_the_circle_finder_finds_circles():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_at_most_ten_top_level_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_LIMIT, top


def test_the_model_code_lives_in_llm():
    assert not list(PACKAGE.glob("llm_*.py")) and not list((PACKAGE / "analyse").glob("*llm*.py"))
    for name in ("transport", "client", "prompts", "grounding", "stage", "render"):
        assert (PACKAGE / "llm" / f"{name}.py").is_file(), name


def test_no_command_module_imports_the_command_group():
    graph = import_graph()
    for name in graph:
        if name.startswith("infra_radar.cli."):
            assert "infra_radar.cli" not in graph[name], name


def test_every_package_folder_is_a_regular_package():
    """A folder of modules without __init__.py imports from a checkout but is left out of a wheel."""
    for folder in (p for p in PACKAGE.rglob("*") if p.is_dir() and any(p.glob("*.py"))):
        assert (folder / "__init__.py").is_file(), folder


def _defined(tree: ast.Module) -> set[str] | None:
    """The names a module defines at its top level (functions, classes, assignments, imports, also under `if`
    and `try`), or None when a star import makes them unknowable."""
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, block, []):
                    todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return names


def test_every_name_imported_from_the_package_exists():
    """A name imported from one of the package's modules is defined there (or is a submodule): a module split
    by job leaves no import of a moved name behind, even inside a function that no test happens to run."""
    modules = _modules()
    defined = {name: _defined(ast.parse(path.read_text(encoding="utf-8"))) for name, path in modules.items()}
    missing = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.level or (node.module or "").startswith("infra_radar")):
                continue
            module = _from_module(name, path, node)
            if module not in modules or defined[module] is None:
                continue
            missing += [f"{name}:{node.lineno} {module}.{alias.name}" for alias in node.names
                        if alias.name not in defined[module] and f"{module}.{alias.name}" not in modules]
    assert missing == []
