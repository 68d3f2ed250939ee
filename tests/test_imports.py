"""The project's module layering, read from the source with ``ast`` (nothing is imported): no
import cycle among the project's own modules, and nothing under reporting/, steps/ or models/
imports benchmarks/ (benchmark scripts use the project, never the other way round)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("steps", "models", "reporting", "tools", "benchmarks")
LAYERED = ("reporting", "steps", "models")  # none of these may import benchmarks


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path = REPO) -> Dict[str, Path]:
    """Every module of the project's packages, by dotted name."""
    return {module_name(path, root): path for package in PACKAGES for path in sorted((root / package).rglob("*.py"))}


def resolve(name: str, importer: Path, modules: Dict[str, Path], root: Path, exact: bool = False) -> Optional[str]:
    """The project module ``name`` refers to, or None for a third-party or standard module (with
    ``exact``, None too when ``name`` is not itself a module). A bare name that is a file beside a
    script (``from records import …`` in benchmarks/) is that file."""
    if name.split(".")[0] not in PACKAGES:
        if not (importer.parent / (name.split(".")[0] + ".py")).is_file():
            return None
        name = module_name(importer.parent, root) + "." + name
    while not exact and name and name not in modules:  # ``import a.b.c`` where c is a name
        name = name.rpartition(".")[0]
    return name if name in modules else None


def imports(path: Path, module: str, modules: Dict[str, Path], root: Path = REPO) -> Set[str]:
    """The project modules ``path`` imports, at module level or inside a function, relative imports
    resolved: ``from a import b`` imports ``a.b`` when that is a module, else ``a`` itself."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets |= {resolve(alias.name, path, modules, root) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                name = f"{base}.{alias.name}" if base else alias.name
                targets.add(resolve(name, path, modules, root, exact=True) or resolve(base, path, modules, root))
    return targets - {None, module}


def import_graph(root: Path = REPO) -> Dict[str, Set[str]]:
    """Module → the project modules it imports."""
    modules = project_modules(root)
    return {module: imports(path, module, modules, root) for module, path in modules.items()}


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One import cycle as [a, b, …, a], or None (iterative depth-first search)."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_reporting_steps_and_models_do_not_import_benchmarks():
    offending = sorted(f"{module} imports {target}" for module, targets in import_graph().items()
                       if module.split(".")[0] in LAYERED for target in targets if target.split(".")[0] == "benchmarks")
    assert not offending, "; ".join(offending)


def write(root: Path, files: Dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_graph_sees_function_level_relative_and_sibling_imports(tmp_path):
    root = write(tmp_path, {
        "models/__init__.py": "",
        "models/a.py": "def f():\n    from .objectives import helper\n",
        "models/objectives/__init__.py": "from models.objectives.b import helper\n",
        "models/objectives/b.py": "import os\nfrom models.a import f\n",
        "reporting/__init__.py": "",
        "reporting/r.py": "from benchmarks import records\n",
        "benchmarks/__init__.py": "",
        "benchmarks/records.py": "",
        "benchmarks/script.py": "from records import x\nimport torch\n",
    })
    graph = import_graph(root)
    assert graph["models.a"] == {"models.objectives"}
    assert graph["models.objectives"] == {"models.objectives.b"}
    assert graph["models.objectives.b"] == {"models.a"}
    assert graph["reporting.r"] == {"benchmarks.records"}
    assert graph["benchmarks.script"] == {"benchmarks.records"}
    assert find_cycle(graph) == ["models.a", "models.objectives", "models.objectives.b", "models.a"]
    del graph["models.objectives.b"]
    assert find_cycle(graph) is None


@pytest.mark.parametrize("source, expected", [
    ("from models import a\n", {"models.a"}),           # a submodule
    ("from models import thing\n", {"models"}),          # a name defined in the package
    ("from models import a, thing\n", {"models.a", "models"}),
    ("import models.a\n", {"models.a"}),
])
def test_from_imports_point_at_the_module_that_holds_the_name(tmp_path, source, expected):
    root = write(tmp_path, {"models/__init__.py": "thing = 1\n", "models/a.py": "", "steps/__init__.py": "", "steps/s.py": source})
    assert import_graph(root)["steps.s"] == expected
