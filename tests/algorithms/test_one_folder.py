"""Each of Stamen's FL algorithms lives in its folder: outside it, only its entry-point line names it.

For every built-in algorithm (registered from Stamen's own entry points) this counts the places outside its folder
``stamen/algorithms/<folder>/`` that name it, where a place is

- a line of ``pyproject.toml`` naming its module path (``stamen.algorithms.<folder>`` or
  ``stamen/algorithms/<folder>``): its own entry-point line is the one allowed;
- in a Python module of the ``stamen`` package (parsed, not imported; comments and docstrings are prose and not
  read): an import of its folder's modules, a string literal holding its module path, or a code identifier in
  snake_case or UPPER_CASE (a name, attribute, function, argument, keyword or module name) one of whose ``_``- or
  ``.``-separated words is its spec name or its folder's name, as ``fedlog_lr``, ``FEDSAGE_SCHEDULES`` or
  ``stamen.models.fedstar`` do (a CamelCase class name such as Flower's ``FedAvg`` is not one); a spec name that
  is an ordinary word the core uses in its own sense (:data:`ORDINARY`) counts only by module path.

Docs, tests and examples are not counted, nor the dev-only benches and the command that lists them
(:data:`NOT_COUNTED`), experiments that compare algorithms by name. The check runs on the working tree and, to show
it can fail, on a temporary tree with a spec put back into the contract.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from pathlib import Path

import pytest

from stamen.common.registry import BUILT_IN
from stamen.contract.algorithms import ALGORITHMS

PROJECT = Path(__file__).resolve().parents[2]
ORDINARY = {"local"}  # local training, a client's local model: the core's own words
NOT_COUNTED = ("stamen/benches/", "stamen/cli/commands/bench.py")


def _folder(name: str) -> str:
    return ALGORITHMS[name].server.split(":")[0].split(".")[2]


def _words(identifier: str) -> set[str]:
    """The words of a snake_case, UPPER_CASE or dotted identifier (none of a CamelCase one)."""
    parts = [part for part in re.split(r"[._]", identifier) if part]
    if any(part != part.lower() and part != part.upper() for part in parts):
        return set()
    return {part.lower() for part in parts}


def _identifiers(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            found.append((line, node.id))
        elif isinstance(node, ast.Attribute):
            found.append((line, node.attr))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((line, node.name))
        elif isinstance(node, ast.arg):
            found.append((line, node.arg))
        elif isinstance(node, ast.keyword) and node.arg:
            found.append((line, node.arg))
        elif isinstance(node, ast.Import):
            found += [(line, alias.name) for alias in node.names] + [(line, a.asname) for a in node.names if a.asname]
        elif isinstance(node, ast.ImportFrom):
            found += [(line, node.module or "")] + [(line, alias.asname or alias.name) for alias in node.names]
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    return {
        id(body[0].value)
        for body in (getattr(n, "body", []) for n in nodes)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    }


@functools.cache
def _scanned(project: Path) -> tuple[tuple[str, tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]], ...]:
    """Each counted module of ``project``'s ``stamen`` package: its path, its identifiers and its string literals
    other than docstrings, with their lines."""
    scanned = []
    for file in sorted((project / "stamen").rglob("*.py")):
        relative = file.relative_to(project).as_posix()
        if relative.startswith(NOT_COUNTED):
            continue
        tree = ast.parse(file.read_text(), filename=relative)
        docstrings = _docstrings(tree)
        strings = tuple(
            (node.lineno, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
        )
        scanned.append((relative, tuple(_identifiers(tree)), strings))
    return tuple(scanned)


def places(project: Path, name: str, folder: str) -> list[str]:
    """The places outside ``stamen/algorithms/<folder>/`` of ``project`` that name algorithm ``name``."""
    module, path = f"stamen.algorithms.{folder}", f"stamen/algorithms/{folder}"
    mentions = re.compile(rf"({re.escape(module)}|{re.escape(path)})(?![\w])")
    words = ({name, folder} if re.fullmatch(r"[a-z0-9]+", name) else {folder}) - ORDINARY
    entry = re.compile(r'"?[a-z0-9+._-]+"? = "stamen\.algorithms\.[\w.]+:\w+"$')  # an algorithm's entry point
    found = [
        f"pyproject.toml:{number}: {line.strip()}"
        for number, line in enumerate((project / "pyproject.toml").read_text().split("\n"), 1)
        if mentions.search(line) and not entry.match(line.strip())
    ]
    for relative, identifiers, strings in _scanned(project):
        if relative.startswith(f"{path}/"):
            continue
        found += [f"{relative}:{line}: the string {value!r}" for line, value in strings if mentions.search(value)]
        found += [
            f"{relative}:{line}: {identifier}"
            for line, identifier in identifiers
            if mentions.search(identifier) or _words(identifier) & words
        ]
    return sorted(set(found))


def entry_lines(project: Path, name: str) -> list[str]:
    """The ``pyproject.toml`` lines that register ``name`` from its folder (its entry point)."""
    lines = (project / "pyproject.toml").read_text().split("\n")
    key = f'"{name}"' if not re.fullmatch(r"[A-Za-z0-9_-]+", name) else name
    return [line for line in lines if line.startswith(f'{key} = "stamen.algorithms.{_folder(name)}:')]


BUILT_INS = [name for name in ALGORITHMS if ALGORITHMS.origin(name) == BUILT_IN]


def test_every_built_in_is_registered_by_its_one_entry_point_line():
    assert len(BUILT_INS) == 23
    for name in BUILT_INS:
        assert len(entry_lines(PROJECT, name)) == 1, name


@pytest.mark.parametrize("name", BUILT_INS)
def test_outside_its_folder_only_its_entry_point_names_it(name):
    assert places(PROJECT, name, _folder(name)) == []


def test_the_count_finds_a_spec_put_back_into_the_contract(tmp_path):
    """A copy of the tree with FedLoG's spec and keys back in the contract, and the core reading its key by its
    old attribute: each is a place that names FedLoG outside its folder."""
    copy = tmp_path / "project"
    shutil.copytree(PROJECT / "stamen", copy / "stamen", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT / "pyproject.toml", copy / "pyproject.toml")
    assert places(copy, "fedlog", "fedlog") == []
    contract = copy / "stamen" / "contract" / "algorithms.py"
    contract.write_text(
        contract.read_text()
        + '\n_FEDLOG_OPTIONS = ("fedlog-lr",)\nBUILT_INS = (AlgorithmSpec("fedlog", "FedLoG", '
        + '"stamen.algorithms.fedlog.server", "stamen.algorithms.fedlog.client", options=_FEDLOG_OPTIONS),)\n'
    )
    rules = copy / "stamen" / "contract" / "rules.py"
    rules.write_text(rules.read_text() + "\n\ndef _lr(config):\n    return config.fedlog_lr\n")
    pyproject = copy / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n# FedLoG's keys: stamen/algorithms/fedlog/__init__.py\n")
    _scanned.cache_clear()  # the copy's modules changed
    found = places(copy, "fedlog", "fedlog")
    assert [place.split(": ", 1)[1] for place in found] == [
        "# FedLoG's keys: stamen/algorithms/fedlog/__init__.py",
        "_FEDLOG_OPTIONS",
        "_FEDLOG_OPTIONS",
        "the string 'stamen.algorithms.fedlog.client'",
        "the string 'stamen.algorithms.fedlog.server'",
        "fedlog_lr",
    ], found
    assert places(copy, "fedavg", "fedavg") == []  # the others are untouched
