"""The package's layout: modules grouped by pipeline stage, imports only in the allowed direction, and no circles
(lazy imports inside functions included)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "matmul_study"

# What each group may import besides itself. Presenting and analysis read tables: they never import the code that
# builds or measures. The workflow glue wires everything together.
ALLOWED = {
    "core": set(),
    "launch": {"core"},
    "measure": {"core", "launch"},
    "analysis": {"core"},
    "present": {"core", "analysis"},
    "pipeline": {"core", "launch", "measure", "analysis", "present"},
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path, modules: set[str]) -> set[str]:
    """Package modules that `path` imports at run time (annotation-only TYPE_CHECKING blocks left out)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(sub) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
                   for sub in ast.walk(node)}
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return found & modules


def group(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


def test_every_module_belongs_to_a_documented_group():
    modules = package_modules()
    loose = [m for m in modules if group(m) is None and m not in ("matmul_study", "matmul_study.__main__")]
    assert not loose, f"modules outside the stage groups: {loose}"
    for name in ALLOWED:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
        assert doc and "May import" in doc, f"matmul_study/{name}/__init__.py must say what the group may import"


def test_groups_import_only_in_the_allowed_direction():
    modules = package_modules()
    wrong = []
    for name, path in modules.items():
        mine = group(name)
        if mine is None:
            continue
        for dep in imports(path, set(modules)):
            theirs = group(dep)
            if theirs and theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{name} imports {dep} ({mine} may import {sorted(ALLOWED[mine]) or 'nothing'})")
    assert not wrong, "\n".join(wrong)


def test_the_direction_check_catches_a_wrong_import(tmp_path, monkeypatch):
    # The scan must see an import from presenting into measuring, or the test above could never fail.
    fake = tmp_path / "matmul_study" / "present"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("from matmul_study.measure import timing\nfrom ..measure.gpu_job import run_gpu\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "matmul_study")
    found = imports(fake / "bad.py", {"matmul_study.measure.timing", "matmul_study.measure.gpu_job"})
    assert found == {"matmul_study.measure.timing", "matmul_study.measure.gpu_job"}


def test_no_import_circles():
    modules = package_modules()
    graph = {name: imports(path, set(modules)) - {name} for name, path in modules.items()}
    assert graph["matmul_study.core.registry"] and graph["matmul_study.measure.gpu_job"], \
        "the import scan found nothing: it is broken"
    # A package's __init__ importing its own modules is not a circle through them.
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
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


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_each_group_imports_on_its_own(name):
    __import__(f"matmul_study.{name}")


def test_no_test_module_defines_a_test_twice():
    # A second `def test_x` silently replaces the first, which then never runs.
    twice = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        names = [node.name for node in ast.parse(path.read_text()).body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")]
        twice += [f"{path.name}: {name}" for name in sorted(set(names)) if names.count(name) > 1]
    assert not twice, twice


def test_test_shards_partition_the_collected_tests_in_contiguous_parts():
    from conftest import shard_range

    parts = [shard_range(10, f"{i}/3") for i in (1, 2, 3)]
    assert [list(r) for r in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    for bad in ("0/3", "4/3", "3", "a/b"):
        with pytest.raises(pytest.UsageError, match="MATMUL_STUDY_TEST_SHARD"):
            shard_range(10, bad)
