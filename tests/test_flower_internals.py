"""Flower's non-public modules are imported in one place only: the adapter, ``stamen/simulations/flower_internals/``.

Every ``.py`` file of the project outside ``tests/`` is parsed (nothing is imported) and each
reference to Flower is listed: ``import flwr...``, ``from flwr... import ...`` (inside
functions too), ``importlib.import_module("flwr...")`` and attribute chains such as
``flwr.supercore.x``. A reference is public when it names one of the packages Flower documents
for users (:data:`PUBLIC`) and, for ``from PACKAGE import NAME``, NAME is one that package
exports (or is itself a public package); anything deeper is not. A non-public reference
outside the adapter fails, unless :data:`ALLOWED` lists it with its reason.

The adapter refuses another Flower in one line; the copies ``server/`` and ``client/`` keep of
a few Flower constants and functions equal Flower's (so an upgrade that changes one fails here);
and ``docs/upgrading-flower.md`` names every module the adapter stands in for.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
import tomllib
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import flwr
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = Path("stamen", "simulations", "flower_internals")
UPGRADING = ROOT / "docs" / "upgrading-flower.md"
FLOWER = Path(flwr.__file__).resolve().parent

# The packages Flower documents for users; for ``from PACKAGE import NAME`` only the names the package
# exports (its ``__all__``) count. ``flwr`` itself: its ``__version__`` and the packages below.
PUBLIC = frozenset(
    {
        "flwr",
        "flwr.app",
        "flwr.serverapp",
        "flwr.serverapp.strategy",
        "flwr.clientapp",
        "flwr.clientapp.mod",
        "flwr.common",
        "flwr.server",
        "flwr.server.strategy",
        "flwr.server.workflow",
        "flwr.client",
        "flwr.client.mod",
        "flwr.simulation",
    }
)

# Non-public Flower references allowed outside the adapter: {(file, Flower module): why it cannot go
# through the adapter}. A file below simulations/ (floor 4: server/, client/) cannot import the adapter
# (floor 5); such a file would be listed here. None is needed today: server/ and client/ use public API
# only (stamen/server/secagg.py drives SecAgg+ through flwr.server.workflow and flwr.server's LegacyContext).
ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class FlowerReference:
    """One reference to Flower in a source file: the Flower module it reaches and, for ``from M import N``, N."""

    path: str
    line: int
    module: str
    name: str = ""

    @property
    def public(self) -> bool:
        return self.module in PUBLIC and (not self.name or self.name in _exports(self.module))

    def __str__(self) -> str:
        what = f"from {self.module} import {self.name}" if self.name else self.module
        return f"{self.path}:{self.line} {what}"


@cache
def _exports(module: str) -> frozenset[str]:
    """What the public package ``module`` exports (its ``__all__``; else its names without a leading _)."""
    imported = importlib.import_module(module)
    names = getattr(imported, "__all__", None)
    if names is None:
        names = [name for name in dir(imported) if not name.startswith("_")]
    return frozenset(names) | ({"__version__"} if module == "flwr" else frozenset())


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` is a module or package of the installed Flower (looked up on disk, nothing imported)."""
    where = FLOWER.joinpath(*dotted.split(".")[1:])
    return where.is_dir() or where.with_suffix(".py").is_file()


def _flower(name: str) -> bool:
    return name == "flwr" or name.startswith("flwr.")


def _attribute_chain(node: ast.Attribute) -> str | None:
    parts = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name) or current.id != "flwr":
        return None
    return ".".join(["flwr", *reversed(parts)])


def references(path: Path, root: Path = ROOT) -> list[FlowerReference]:
    """Every reference to Flower in the file at ``path``."""
    relative = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[FlowerReference] = []
    inner: set[int] = set()  # attributes inside a chain already listed
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [FlowerReference(relative, node.lineno, a.name) for a in node.names if _flower(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _flower(node.module):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if _is_module(submodule):  # ``from flwr.common import serde`` is the module flwr.common.serde
                    found.append(FlowerReference(relative, node.lineno, submodule))
                else:
                    found.append(FlowerReference(relative, node.lineno, node.module, alias.name))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            text = node.args[0].value
            if called in ("import_module", "__import__") and isinstance(text, str) and _flower(text):
                found.append(FlowerReference(relative, node.lineno, text))
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            chain = _attribute_chain(node)
            for child in ast.walk(node):
                inner.add(id(child))
            if chain is None:
                continue
            parts = chain.split(".")
            modules = [".".join(parts[:n]) for n in range(2, len(parts) + 1) if _is_module(".".join(parts[:n]))]
            if modules:  # ``flwr.supercore.x.y``: the deepest module it names
                found.append(FlowerReference(relative, node.lineno, modules[-1]))
    return sorted(found, key=lambda r: (r.line, r.module, r.name))


def source_files(root: Path = ROOT) -> list[Path]:
    """Every ``.py`` file under ``root`` but ``tests/``, hidden folders, caches and virtual environments."""
    files = []
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        subfolders[:] = sorted(
            name
            for name in subfolders
            if not name.startswith(".")
            and name != "__pycache__"
            and not (here == root and name == "tests")
            and not (here / name / "pyvenv.cfg").exists()
        )
        files += [here / name for name in sorted(names) if name.endswith(".py")]
    return files


def violations(root: Path = ROOT, allowed: dict[tuple[str, str], str] = ALLOWED) -> list[str]:
    """Non-public Flower references outside the adapter and not in ``allowed``, one line each."""
    problems = []
    for path in source_files(root):
        if path.relative_to(root).is_relative_to(ADAPTER):
            continue
        for reference in references(path, root):
            if not reference.public and (reference.path, reference.module) not in allowed:
                problems.append(f"{reference} (not Flower's public API: use stamen/simulations/flower_internals/)")
    return problems


def test_flowers_non_public_modules_are_imported_by_the_adapter_only():
    assert violations() == []


def test_every_flower_reference_is_listed():
    """The scan sees the project's Flower imports: public ones everywhere, non-public ones in the adapter."""
    listed = [ref for path in source_files() for ref in references(path)]
    public = {(ref.path, ref.module, ref.name) for ref in listed if ref.public}
    assert ("stamen/server/app.py", "flwr.serverapp", "ServerApp") in public
    assert ("stamen/benches/records.py", "flwr", "") in public  # flwr.__version__
    internal = {ref.module for ref in listed if not ref.public}
    assert {"flwr.supercore.task_identity", "flwr.proto.fleet_pb2", "flwr.common.config"} <= internal
    assert all(ref.path.startswith(ADAPTER.as_posix() + "/") for ref in listed if not ref.public)
    assert not any(path.relative_to(ROOT).parts[0] == "tests" for path in source_files())


def test_allowed_entries_are_still_needed():
    """Each allowed reference still exists (an entry for a reference that is gone is removed)."""
    listed = {(ref.path, ref.module) for path in source_files() for ref in references(path)}
    assert [entry for entry in ALLOWED if entry not in listed] == []


def test_the_check_finds_a_non_public_import(tmp_path):
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "bad.py").write_text(
        "import importlib\n"
        "import flwr\n"
        "from flwr.app import Message\n"
        "from flwr.common import log, serde\n"
        "from flwr.common.constant import ErrorCode\n"
        "from flwr.server import LegacyContext, compat\n"
        "from flwr.serverapp.strategy import FedAvg, fedopt\n"
        "def f():\n"
        "    import flwr.supercore.task_identity\n"
        "    importlib.import_module('flwr.cli.install')\n"
        "    return flwr.proto.fleet_pb2.PullMessagesResponse, flwr.__version__\n"
    )
    adapter = tmp_path / ADAPTER
    adapter.mkdir(parents=True)
    (adapter / "fine.py").write_text("from flwr.supercore.task_identity import TaskIdentity\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("from flwr.common.constant import ErrorCode\n")
    hint = "(not Flower's public API: use stamen/simulations/flower_internals/)"
    expected = [
        "server/bad.py:4 flwr.common.serde",
        "server/bad.py:5 from flwr.common.constant import ErrorCode",
        "server/bad.py:6 flwr.server.compat",
        "server/bad.py:7 flwr.serverapp.strategy.fedopt",
        "server/bad.py:9 flwr.supercore.task_identity",
        "server/bad.py:10 flwr.cli.install",
        "server/bad.py:11 flwr.proto.fleet_pb2",
    ]
    assert violations(tmp_path, {}) == [f"{line} {hint}" for line in expected]
    assert violations(tmp_path, {("server/bad.py", "flwr.common.serde"): "a reason"}) == [
        f"{line} {hint}" for line in expected[1:]
    ]
    (tmp_path / "server" / "bad.py").write_text("from flwr.common import FedOptInternal\n")  # not exported
    assert violations(tmp_path, {}) == [f"server/bad.py:1 from flwr.common import FedOptInternal {hint}"]


# --- the version check ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.43.0", "1.41.2", "2.42.0", "1.4.2", "1.420.0", "nightly"])
def test_another_flower_is_refused_in_one_line(monkeypatch, version):
    from stamen.simulations.flower_internals.version import UnsupportedFlower, check_flower_version

    monkeypatch.setattr(flwr, "__version__", version)
    with pytest.raises(UnsupportedFlower) as refused:
        check_flower_version()
    message = str(refused.value)
    assert "\n" not in message
    assert f"Flower {version} is installed" in message
    assert "supports Flower 1.42.x only" in message
    assert 'pip install "flwr>=1.42,<1.43"' in message
    assert isinstance(refused.value, RuntimeError)  # the CLI prints it as one line, exit 2


@pytest.mark.parametrize("version", ["1.42.0", "1.42.7", "1.42.1rc2", "1.42.0.dev20251201"])
def test_a_1_42_flower_is_accepted(version):
    from stamen.simulations.flower_internals.version import check_flower_version

    check_flower_version(version)


def _forget_the_adapter(monkeypatch):
    """As in a fresh process: the adapter's package and every module of it unimported (restored afterwards).
    A submodule left in sys.modules would be returned as it is, without importing the package again."""
    for name in [
        n
        for n in sys.modules
        if n == "stamen.simulations.flower_internals" or n.startswith("stamen.simulations.flower_internals.")
    ]:
        monkeypatch.delitem(sys.modules, name)


def test_importing_the_adapter_checks_the_version(monkeypatch):
    monkeypatch.setattr(flwr, "__version__", "1.43.0")
    _forget_the_adapter(monkeypatch)
    with pytest.raises(RuntimeError, match="Flower 1.43.0 is installed") as refused:
        importlib.import_module("stamen.simulations.flower_internals.task_identity")
    assert type(refused.value).__name__ == "UnsupportedFlower"  # the class of the freshly imported adapter


def test_the_cli_says_it_in_one_line(monkeypatch, capsys, tmp_path):
    from stamen.cli.main import main

    monkeypatch.setattr(flwr, "__version__", "1.43.0")
    _forget_the_adapter(monkeypatch)
    monkeypatch.chdir(tmp_path)
    run = ["run", "--engine", "inprocess", "-c", f"output-dir='{tmp_path}' num-server-rounds=1"]
    assert main(run) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("stamen run: error: Flower 1.43.0 is installed")
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_the_pin_is_the_adapters_range():
    from stamen.simulations.flower_internals.version import REQUIREMENT

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if d.split("[")[0].split(">")[0].split("<")[0].strip() == "flwr"]
    assert pin.replace("flwr[simulation]", "flwr") == REQUIREMENT


# --- what server/ and client/ copied from Flower -----------------------------------------------


def test_the_copied_constants_equal_flowers():
    from flwr.clientapp.typing import ClientAppCallable
    from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
    from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
    from flwr.server.workflow.constant import Key as WorkflowKey

    import stamen.client.clipping
    import stamen.client.secagg
    import stamen.server.loop
    import stamen.server.secagg

    lost = {ErrorCode.NODE_UNAVAILABLE, ErrorCode.MESSAGE_UNAVAILABLE, ErrorCode.REPLY_MESSAGE_UNAVAILABLE}
    assert stamen.server.loop._LOST_CODES == lost
    assert stamen.server.loop.SUPERLINK_NODE_ID == SUPERLINK_NODE_ID
    assert stamen.server.secagg.RECORD_KEY_CONFIGS == RECORD_KEY_CONFIGS
    assert stamen.server.secagg.STAGE_KEY == Key.STAGE
    assert stamen.server.secagg.COLLECT_MASKED_VECTORS == Stage.COLLECT_MASKED_VECTORS
    assert stamen.server.secagg.MAIN_PARAMS_RECORD == MAIN_PARAMS_RECORD
    assert stamen.server.secagg.MAIN_CONFIGS_RECORD == MAIN_CONFIGS_RECORD
    assert stamen.server.secagg.CURRENT_ROUND_KEY == WorkflowKey.CURRENT_ROUND
    for module in (stamen.client.clipping, stamen.client.secagg):
        assert typing.get_args(module.ClientAppCallable) == typing.get_args(ClientAppCallable)


def test_the_copied_noise_is_flowers_to_the_bit():
    from flwr.supercore import differential_privacy as flowers

    from stamen.server import privacy as ours

    for args in [(1.0, 0.5, 10), (0.7, 3.0, 3), (2.5, 1e-3, 1)]:
        assert ours.compute_stdv(*args) == flowers.compute_stdv(*args)
    shapes = [((64, 7), np.float32), ((7,), np.float32), ((3, 2), np.float64)]
    arrays = [np.random.default_rng(0).standard_normal(shape).astype(dtype) for shape, dtype in shapes]
    mine, theirs = [a.copy() for a in arrays], [a.copy() for a in arrays]
    np.random.seed(11)
    ours.add_gaussian_noise_inplace(mine, 0.3)
    after_ours = np.random.random()
    np.random.seed(11)
    flowers.add_gaussian_noise_inplace(theirs, 0.3)
    assert np.random.random() == after_ours  # the same draws from NumPy's global generator
    assert [a.tobytes() for a in mine] == [a.tobytes() for a in theirs]
    assert [a.dtype for a in mine] == [a.dtype for a in theirs]


# --- the adapter's documentation -----------------------------------------------------------------


def _adapter_modules() -> list[Path]:
    return sorted(p for p in (ROOT / ADAPTER).glob("*.py") if p.name != "__init__.py")


def test_each_adapter_module_names_what_it_replaces():
    """Its docstring and docs/upgrading-flower.md name every non-public Flower module it imports."""
    guide = UPGRADING.read_text()
    missing = []
    for path in _adapter_modules():
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert "Replaces:" in docstring and "Dropping it:" in docstring, path.name
        assert f"`{path.stem}`" in guide or f"{path.stem}.py" in guide, f"{path.name} is not in {UPGRADING.name}"
        for reference in references(path):
            if not reference.public:
                missing += [f"{path.name}: {reference.module}"] if reference.module not in docstring else []
                missing += [f"{UPGRADING.name}: {reference.module}"] if reference.module not in guide else []
    assert missing == []
