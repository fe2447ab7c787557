"""The import floors of the design (``../shared/DESIGN.md``): no import sideways or up.

Every module of Stamen's packages is parsed (nothing is imported) and each of its
imports of another Stamen package is checked against the floors, including imports
inside functions.

The FL algorithms (``stamen/algorithms/<name>/``, the design's wings) are a room of their own
above ``client`` and ``server``: a folder's server part and client part import those rooms,
which never import an algorithm (they load its parts by the dotted paths of its spec). Within
a folder the two parts stay apart as ``client`` and ``server`` do: the server part and the folder's
modules it imports never import ``stamen.client``, the client part and the folder's modules it
imports never ``stamen.server``; and the folder's ``__init__`` (its spec, read by the contract's
registry in every process) imports only the contract and ``common``, no torch and no Flower.
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
    # the wings (a task's spec, client part and model): above the client/ and server/ glue whose protocols
    # they implement; the glue reaches them through the registry alone (a module path in a spec), never an import
    "tasks": 4.5,
    "algorithms": 5,  # the wings: an FL algorithm's spec, server part, client part and math
    "simulations": 6,  # the engines and transports
    "experiments": 7,  # sweeps, tuning, the unlearning experiment, the privacy audit, certification jobs
    "benches": 8,  # the dev-only benches: they run experiments and engines
    "cli": 9,  # the command line: its commands parse the words and call every room below
    FACE: 10,  # the public Python API (stamen/*.py); it calls the commands' functions
}
SPEC_MAY_READ = ("stamen.contract", "stamen.common")  # an algorithm's __init__: its spec
SPEC_MAY_NOT = ("torch", "torch_geometric", "opacus", "flwr", "numpy")
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
        "stamen/graphs/bad.py:4 imports stamen.runs (floor 10 from floor 1)",
    ]
    assert _violations("contract", root) == [
        "stamen/contract/bad.py:1 imports stamen.graphs.splits (the contract reads only: stamen.certify.names, "
        "stamen.common, stamen.graphs.names, stamen.graphs.spec, stamen.models.names)",
        "stamen/contract/bad.py:2 imports torch (the contract holds no torch)",
    ]
    assert _violations(FACE, root) == []  # the face may import every room; ``models`` is not Stamen's


def _folder_violations(folder: Path, root: Path = ROOT) -> list[str]:
    """An algorithm folder's parts kept apart (see the module docstring)."""
    package = f"stamen.algorithms.{folder.name}"
    modules = {path.stem: _imports(path) + _own_modules(path, package) for path in sorted(folder.glob("*.py"))}

    def reached(start: str) -> list[str]:
        """``start`` and the folder's modules it imports, transitively."""
        seen, todo = [], [start]
        while todo:
            module = todo.pop()
            if module in seen or module not in modules:
                continue
            seen.append(module)
            todo += [
                name.removeprefix(package + ".").split(".")[0]
                for _, name in modules[module]
                if name.startswith(package + ".")
            ]
        return sorted(seen)

    problems = []
    for line, name in modules.get("__init__", []):
        if name.split(".")[0] in SPEC_MAY_NOT or (_room(name) is not None and not name.startswith(SPEC_MAY_READ)):
            problems.append(
                f"{folder.relative_to(root.parent)}/__init__.py:{line} imports {name} (a spec reads only "
                f"{', '.join(SPEC_MAY_READ)})"
            )
    clients = [
        "client",
        *(m for m, found in modules.items() if m != "server" and any(n.startswith("stamen.client.") for _, n in found)),
    ]
    for side, starts, other in (("server", ["server"], "stamen.client"), ("client", clients, "stamen.server")):
        for module in sorted({m for start in starts for m in reached(start)}):
            for line, name in modules[module]:
                if name == other or name.startswith(other + "."):
                    problems.append(
                        f"{folder.relative_to(root.parent)}/{module}.py:{line} imports {name} (the "
                        f"{side} part of {folder.name})"
                    )
    return problems


def _own_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """``from stamen.algorithms.NAME import math`` in a module of that folder: the module it names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.lineno, f"{package}.{alias.name}")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == package
        for alias in node.names
    ]


def _algorithm_folders(root: Path = ROOT) -> list[Path]:
    return sorted(path.parent for path in (root / "algorithms").glob("*/__init__.py"))


@pytest.mark.parametrize("folder", _algorithm_folders(), ids=lambda folder: folder.name)
def test_an_algorithms_server_and_client_parts_stay_apart(folder):
    assert _folder_violations(folder) == []


def test_the_check_finds_a_part_reaching_the_other_side(tmp_path):
    folder = tmp_path / "stamen" / "algorithms" / "mine"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        "import torch\nfrom stamen.contract.algorithms import AlgorithmSpec\nfrom stamen.models import names\n"
    )
    (folder / "server.py").write_text(
        "from stamen.server.averaging import WeightedAverage\nfrom stamen.algorithms.mine import math\n"
    )
    (folder / "math.py").write_text("def f():\n    from stamen.client.job import LocalJob\n")
    (folder / "client.py").write_text(
        "from stamen.client.job import LocalJob\nfrom stamen.algorithms.mine.math import f\n"
    )
    (folder / "variant.py").write_text("from stamen.client.weights import weights_record\nimport stamen.server.rows\n")
    assert _folder_violations(folder, tmp_path / "stamen") == [
        "stamen/algorithms/mine/__init__.py:1 imports torch (a spec reads only stamen.contract, stamen.common)",
        "stamen/algorithms/mine/__init__.py:3 imports stamen.models.names (a spec reads only stamen.contract, "
        "stamen.common)",
        "stamen/algorithms/mine/math.py:2 imports stamen.client.job (the server part of mine)",
        "stamen/algorithms/mine/variant.py:2 imports stamen.server.rows (the client part of mine)",
    ]
    (folder / "server.py").write_text("from stamen.algorithms import mine\n")  # the spec alone: no client import
    assert len(_folder_violations(folder, tmp_path / "stamen")) == 3


def test_client_and_server_never_import_an_algorithm(tmp_path):
    """The rooms below load an algorithm's parts by the dotted paths of its spec, never by an import."""
    root = tmp_path / "stamen"
    (root / "server").mkdir(parents=True)
    (root / "server" / "bad.py").write_text("from stamen.algorithms.fedavg import server\n")
    assert _violations("server", root) == [
        "stamen/server/bad.py:1 imports stamen.algorithms.fedavg (floor 5 from floor 4)"
    ]


def test_no_generic_top_level_package_is_left():
    """Stamen installs one top-level package: nothing beside ``stamen/`` in the source folder is a package."""
    beside = sorted(p.name for p in ROOT.parent.iterdir() if (p / "__init__.py").is_file() and p.name != "stamen")
    assert beside == []
