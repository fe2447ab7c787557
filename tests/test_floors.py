"""The import floors of the design (``../shared/DESIGN.md``): no import sideways or up.

Every module of Stamen's packages is parsed (nothing is imported) and each of its
imports of another Stamen package is checked against the floors, including imports
inside functions.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = {
    "graphs": 1,
    "models": 1,
    "certify": 2,
    "unlearn": 2,
    "contract": 3,
    "client": 4,
    "server": 4,
    "simulations": 5,
    "stamen": 6,
}
# The contract reads names and plain specs only, never code: the datasets and partitioners, the
# federation's spec (a frozen value), the models and NTK architectures, and certify's models, modes,
# search methods, solvers and NTK variants (for the options of stamen certify,
# contract/certify_config.py); each of these modules imports nothing heavy.
CONTRACT_MAY_READ = {"graphs.names", "graphs.spec", "models.names", "certify.names"}
CONTRACT_MAY_NOT = ("torch", "torch_geometric", "opacus")


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in FLOORS:  # ``from graphs import names``: what is imported is graphs.names
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return sorted(found)


def _violations(package: str, root: Path = ROOT) -> list[str]:
    problems = []
    for path in sorted((root / package).rglob("*.py")):
        for line, name in _imports(path):
            top = name.split(".")[0]
            where = f"{path.relative_to(root)}:{line} imports {name}"
            if package == "contract" and top in CONTRACT_MAY_NOT:
                problems.append(f"{where} (the contract holds no torch)")
            if top not in FLOORS or top == package:
                continue
            if package == "contract":
                if not any(name == allowed or name.startswith(allowed + ".") for allowed in CONTRACT_MAY_READ):
                    problems.append(f"{where} (the contract reads only: {', '.join(sorted(CONTRACT_MAY_READ))})")
                continue
            if FLOORS[top] >= FLOORS[package]:
                problems.append(f"{where} (floor {FLOORS[top]} from floor {FLOORS[package]})")
    return problems


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_a_package_imports_only_lower_floors(package):
    assert _violations(package) == []


def test_the_check_finds_sideways_and_upward_imports(tmp_path):
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "bad.py").write_text("def f():\n    from server.loop import run_rounds\nimport models\n")
    (tmp_path / "contract").mkdir()
    (tmp_path / "contract" / "bad.py").write_text("from graphs import names, splits\nimport torch\n")
    assert _violations("graphs", tmp_path) == [
        "graphs/bad.py:2 imports server.loop (floor 4 from floor 1)",
        "graphs/bad.py:3 imports models (floor 1 from floor 1)",
    ]
    assert _violations("contract", tmp_path) == [
        "contract/bad.py:1 imports graphs.splits (the contract reads only: certify.names, graphs.names, "
        "graphs.spec, models.names)",
        "contract/bad.py:2 imports torch (the contract holds no torch)",
    ]
