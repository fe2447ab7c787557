"""No module of Stamen imports, at run time, a module that imports it back, however far round.

Every module under ``stamen/`` is parsed (nothing is imported); its run-time imports of Stamen's
modules (at module level or inside a function; imports under ``if TYPE_CHECKING:`` are names for
the type checker only) are the arrows. A circle among them would mean an import order that works
by accident of which module is imported first. The floors (``tests/test_floors.py``) forbid arrows
between packages that run up or sideways; this test covers the arrows within one package too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(path: Path, name: str) -> set[str]:
    """The modules (and names, as ``module.name``) ``path`` imports when it runs."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base) if node.level else str(node.module)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def circles(root: Path) -> list[list[str]]:
    """The circles (strongly connected groups of two or more modules) of the run-time imports under ``root``."""
    paths = {_module(path, root): path for path in (root / "stamen").rglob("*.py")}
    arrows = {
        name: sorted(m for m in _runtime_imports(path, name) if m in paths and m != name)
        for name, path in paths.items()
    }
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in arrows[module]:
            if other not in order:
                connect(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(paths):
        if module not in order:
            connect(module)
    return found


def test_no_module_imports_itself_back_at_run_time():
    assert circles(ROOT) == []


def test_the_check_finds_a_circle_through_a_function_level_import_and_not_a_type_only_one(tmp_path):
    package = tmp_path / "stamen" / "contract"
    package.mkdir(parents=True)
    (tmp_path / "stamen" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from stamen.contract.b import B\n")
    (package / "b.py").write_text("B = 1\ndef f():\n    from stamen.contract import a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nfrom .a import B\nif TYPE_CHECKING:\n    from stamen.contract.d import D\n"
    )
    (package / "d.py").write_text("from stamen.contract.c import B\n")
    assert circles(tmp_path) == [["stamen.contract.a", "stamen.contract.b"]]
