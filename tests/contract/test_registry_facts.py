"""Facts about a plug-in live on its registry entry: no code decides by comparing a plug-in's
name or module path with a literal (``config.algorithm == "krum"``, ``spec.server ==
"stamen.algorithms.fedper.server"``, ``method in ("wash", ...)``); it reads the spec instead."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = {"algorithm", "unlearn_method", "server", "client"}  # what names a plug-in


def _literal(node: ast.AST) -> bool:
    """A string, or a tuple/list/set of strings."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and all(_literal(e) for e in node.elts)


def _names_a_plugin(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in NAMES


def _dispatches(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_a_plugin(s) for s in sides) and any(_literal(s) for s in sides):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_compares_a_plugins_name_or_module_with_a_literal():
    packages = [p for p in ROOT.iterdir() if (p / "__init__.py").exists() and p.name != "tests"]
    found = [hit for package in packages for path in sorted(package.rglob("*.py")) for hit in _dispatches(path)]
    assert found == []


def test_the_scan_finds_a_dispatch_on_a_name(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('def f(config, spec):\n    return config.algorithm == "krum" or spec.server in ("server.a",)\n')
    assert len(_dispatches(sample, tmp_path)) == 2
