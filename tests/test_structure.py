"""The package's modules import each other without circles, lazy imports inside functions included."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "matmul_study"


def imports(path: Path, modules: set[str]) -> set[str]:
    """Package modules that `path` imports at run time (annotation-only TYPE_CHECKING blocks left out)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(sub) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
                   for sub in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1:
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif node.module == "matmul_study":
            found |= {a.name for a in node.names}
        elif node.module and node.module.startswith("matmul_study."):
            found.add(node.module.split(".")[1])
    return found & modules


def test_no_import_circles():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    graph = {p.stem: imports(p, modules) for p in PACKAGE.glob("*.py")}
    assert graph["registry"] and graph["gpu"], "the import scan found nothing: it is broken"
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(graph[module]):
            assert state.get(dep) != "open", f"import circle: {' -> '.join(path + [dep])}"
            if dep not in state:
                visit(dep, path + [dep])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_no_test_module_defines_a_test_twice():
    # A second `def test_x` silently replaces the first, which then never runs.
    twice = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        names = [node.name for node in ast.parse(path.read_text()).body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")]
        twice += [f"{path.name}: {name}" for name in sorted(set(names)) if names.count(name) > 1]
    assert not twice, twice
