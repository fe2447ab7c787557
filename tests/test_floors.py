"""The import floors of the design (``../shared/DESIGN.md``): no import sideways or up.

Every module of Stamen's packages is parsed (nothing is imported) and each of its
imports of another Stamen package is checked against the floors, including imports
inside functions.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "stamen"
FACE = "stamen"  # the package's own modules (stamen/*.py): the public API
FLOORS = {
    "common": 0,
    "graphs": 1,
    "models": 1,
    "certify": 2,
    "unlearn": 2,
    "contract": 3,
    "client": 4,
    "server": 4,
    "simulations": 5,  # the engines and transports
    "experiments": 6,  # sweeps, tuning, the unlearning experiment, the privacy audit, certification jobs
    "benches": 7,  # the dev-only benches: they run experiments and engines
    "cli": 8,  # the command line: its commands parse the words and call every room below
    FACE: 9,  # the public Python API (stamen/*.py); it calls the commands' functions
}
# The contract reads floor 0 (common) and, of floors 1 and 2, names and plain specs only, never code: the
# datasets and partitioners, the federation's spec (a frozen value), the models and NTK architectures, and
# certify's models, modes, search methods, solvers and NTK variants (for the options of stamen certify,
# stamen/contract/certify_config.py); each of these modules imports nothing heavy.
CONTRACT_MAY_READ = {
    "stamen.common",
    "stamen.graphs.names",
    "stamen.graphs.spec",
    "stamen.models.names",
    "stamen.certify.names",
}
CONTRACT_MAY_NOT = ("torch", "torch_geometric", "opacus")


def _room(name: str) -> str | None:
    """The room a module name belongs to: ``stamen.server.loop`` -> ``server``, ``stamen.runs`` -> the face;
    ``None`` for a module that is not Stamen's."""
    parts = name.split(".")
    if parts[0] != "stamen":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in FLOORS and parts[1] != FACE else FACE


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "stamen" or (
                _room(node.module) not in (None, FACE) and node.module.count(".") == 1
            ):  # ``from stamen.graphs import names``: what is imported is stamen.graphs.names
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return sorted(found)


def _files(package: str, root: Path) -> list[Path]:
    if package == FACE:
        return sorted(root.glob("*.py"))
    return sorted((root / package).rglob("*.py"))


def _violations(package: str, root: Path = ROOT) -> list[str]:
    problems = []
    for path in _files(package, root):
        for line, name in _imports(path):
            top = _room(name)
            where = f"{path.relative_to(root.parent)}:{line} imports {name}"
            if package == "contract" and name.split(".")[0] in CONTRACT_MAY_NOT:
                problems.append(f"{where} (the contract holds no torch)")
            if top is None or top == package:
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
    root = tmp_path / "stamen"
    (root / "graphs").mkdir(parents=True)
    (root / "graphs" / "bad.py").write_text(
        "def f():\n    from stamen.server.loop import run_rounds\nimport stamen.models\nfrom stamen import runs\n"
    )
    (root / "contract").mkdir()
    (root / "contract" / "bad.py").write_text("from stamen.graphs import names, splits\nimport torch\n")
    (root / "runs.py").write_text("from stamen.server import rundir\nimport models\n")
    assert _violations("graphs", root) == [
        "stamen/graphs/bad.py:2 imports stamen.server.loop (floor 4 from floor 1)",
        "stamen/graphs/bad.py:3 imports stamen.models (floor 1 from floor 1)",
        "stamen/graphs/bad.py:4 imports stamen.runs (floor 9 from floor 1)",
    ]
    assert _violations("contract", root) == [
        "stamen/contract/bad.py:1 imports stamen.graphs.splits (the contract reads only: stamen.certify.names, "
        "stamen.common, stamen.graphs.names, stamen.graphs.spec, stamen.models.names)",
        "stamen/contract/bad.py:2 imports torch (the contract holds no torch)",
    ]
    assert _violations(FACE, root) == []  # the face may import every room; ``models`` is not Stamen's


def test_the_engines_and_experiments_never_import_the_command_line(tmp_path):
    root = tmp_path / "stamen"
    for room, text in {
        "simulations": "from stamen.experiments.sweep import expand\nfrom stamen.cli import main\n",
        "experiments": "from stamen.cli.commands.run import federation_args\nfrom stamen.benches import records\n",
        "benches": "def f():\n    from stamen.cli.commands import run\n",
    }.items():
        (root / room).mkdir(parents=True)
        (root / room / "bad.py").write_text(text)
    assert _violations("simulations", root) == [
        "stamen/simulations/bad.py:1 imports stamen.experiments.sweep (floor 6 from floor 5)",
        "stamen/simulations/bad.py:2 imports stamen.cli.main (floor 8 from floor 5)",
    ]
    assert _violations("experiments", root) == [
        "stamen/experiments/bad.py:1 imports stamen.cli.commands.run (floor 8 from floor 6)",
        "stamen/experiments/bad.py:2 imports stamen.benches.records (floor 7 from floor 6)",
    ]
    assert _violations("benches", root) == [
        "stamen/benches/bad.py:2 imports stamen.cli.commands (floor 8 from floor 7)"
    ]


def test_no_generic_top_level_package_is_left():
    """Stamen installs one top-level package: nothing beside ``stamen/`` in the source folder is a package."""
    beside = sorted(p.name for p in ROOT.parent.iterdir() if (p / "__init__.py").is_file() and p.name != "stamen")
    assert beside == []
