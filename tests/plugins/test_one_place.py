"""Adding a task, a partitioner or a dataset touches its own folder or module and one entry-point line:
for each built-in, the places outside its own that name it (docs and tests aside) are listed here, and none
other is allowed.

A place *names* a built-in when its code (docstrings and comments aside: they are its docs) holds the
built-in's name as a whole string (``"link-prediction"``), its package or module path
(``stamen.tasks.link_prediction``) or its identifier (``link_prediction``, ``LINK_PREDICTION``). The places
each kind may have besides its entry-point line are few, and each says why.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = "pyproject.toml: entry point"
FLOWER_DEFAULT = "pyproject.toml: [tool.flwr.app.config]"  # the run config's default, which Flower's config holds
TASKS = Path("stamen/tasks")
PARTITIONERS = Path("stamen/graphs/partitioners")
FORMS = Path("stamen/graphs/forms")
# Each built-in: (its name, its package or module identifier, its own folder or module).
BUILT_INS = {
    "node-classification": ("node_classification", TASKS / "node_classification"),
    "link-prediction": ("link_prediction", TASKS / "link_prediction"),
    "graph-classification": ("graph_classification", TASKS / "graph_classification"),
    "louvain": ("louvain", PARTITIONERS / "louvain.py"),
    "metis": ("metis", PARTITIONERS / "metis.py"),
    "label-dirichlet": ("label_dirichlet", PARTITIONERS / "label_dirichlet.py"),
    "random": ("random_deal", PARTITIONERS / "random_deal.py"),
    # datasets: a form by its prefix (``npz:``), which no code but its own module writes as a whole string.
    # csbm is not here: its generator's options are run-config keys of their own (csbm-nodes, ...), read by the
    # run config, the size pre-flight and the commands that make a csbm graph.
    "cora": ("citation_graphs", FORMS / "citation_graphs.py"),
    "citeseer": ("citation_graphs", FORMS / "citation_graphs.py"),
    "pubmed": ("citation_graphs", FORMS / "citation_graphs.py"),
    "cora_ml": ("cora_ml", FORMS / "cora_ml.py"),
    "graphs-synth": ("graphs_synth", FORMS / "graphs_synth.py"),
    "npz:": ("npz_stem", FORMS / "npz_stem.py"),
    "pyg:": ("pyg", FORMS / "pyg.py"),
    "ogb:": ("ogb", FORMS / "ogb.py"),
    "tu:": ("tu", FORMS / "tu.py"),
}
# Places besides the entry-point line, each with why. Every built-in may be named by the dev-only benches
# (stamen/benches/: its tables beside published ones, its command-line defaults).
BENCHES = "stamen/benches/"
ALLOWED = {
    "node-classification": {
        FLOWER_DEFAULT,
        "stamen/contract/tasks.py",  # DEFAULT_TASK: the run config's default
        "stamen/models/names.py",  # the node encoders it trains: the model specs say so
    },
    "link-prediction": {"stamen/models/names.py"},  # the node encoders it trains: the model specs say so
    "graph-classification": {
        "stamen/contract/algorithms.py",  # GCFL and FedStar are methods made for it: their specs say so
        "stamen/models/names.py",  # GIN (and GCN with a readout) is trained by it: the model specs say so
        # FedStar, a method made for it, builds its feature encoder of the task's GIN layers and trains its
        # graphs with the task's loop
        "stamen/algorithms/fedstar/model.py",
        "stamen/algorithms/fedstar/client.py",
    },
    "louvain": {FLOWER_DEFAULT, "stamen/graphs/names.py"},  # DEFAULT_PARTITIONER: the run config's default
    "metis": set(),
    "label-dirichlet": set(),
    "random": {
        "stamen/tasks/graph_classification/__init__.py",  # the partitioner a graph set takes by default
        "stamen/graphs/cross_dataset.py",  # deals each dataset's graphs among its clients as random does
        "stamen/contract/certify_config.py",  # certify's own 'random' split of the labelled nodes, by that name
        "stamen/cli/commands/certify.py",  # ... which the certify command reads
    },
    "cora": set(),
    "citeseer": {"stamen/graphs/planetoid.py"},  # the Planetoid reader's one file quirk (PyG's too) is CiteSeer's
    "pubmed": set(),
    "cora_ml": set(),
    "graphs-synth": {"stamen/tasks/graph_classification/__init__.py"},  # the task's default dataset
    "npz:": set(),
    "pyg:": set(),
    "ogb:": set(),
    "tu:": set(),
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree``."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def names_in_code(source: str, name: str, identifier: str) -> bool:
    """Whether Python ``source`` names the built-in ``name`` (package or module ``identifier``) in its code."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    words = {identifier, identifier.upper()}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            module = node.value.split(":")[0]
            if node.value == name or identifier in module.split(".") and "." in module:
                return True
        elif isinstance(node, ast.Name) and node.id in words:
            return True
        elif isinstance(node, ast.Attribute) and node.attr in words:
            return True
        elif isinstance(node, ast.alias) and (node.name.split(".")[-1] in words or node.asname in words):
            return True
        elif isinstance(node, ast.ImportFrom) and node.module and identifier in node.module.split("."):
            return True
    return False


def places(name: str, identifier: str, own: Path, root: Path = ROOT) -> set[str]:
    """The places outside ``own`` (a folder or a module) that name the built-in (see the module docstring)."""
    found = set()
    for path in sorted((root / "stamen").rglob("*.py")) + [root / "hatch_build.py"]:
        if not path.is_file() or path == own or own in path.parents:
            continue
        if names_in_code(path.read_text(), name, identifier):
            found.add(str(path.relative_to(root)))
    section = ""
    for line in (root / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            section = line
        elif re.search(rf"[\"']{re.escape(name)}[\"']|^{re.escape(name)}\s*=|\.{identifier}\b", line):
            found.add(ENTRY_POINT if section.startswith("[project.entry-points.") else f"pyproject.toml: {section}")
    return found


@pytest.mark.parametrize("name", sorted(BUILT_INS))
def test_a_built_in_is_named_only_in_its_own_place_and_its_entry_point(name):
    identifier, own = BUILT_INS[name]
    found = places(name, identifier, ROOT / own)
    assert ENTRY_POINT in found
    assert {place for place in found - {ENTRY_POINT} - ALLOWED[name] if not place.startswith(BENCHES)} == set()


def test_the_check_finds_a_place_that_names_a_task(tmp_path):
    (tmp_path / "stamen" / "tasks" / "link_prediction").mkdir(parents=True)
    (tmp_path / "stamen" / "server").mkdir()
    (tmp_path / "hatch_build.py").write_text("")
    (tmp_path / "stamen" / "tasks" / "link_prediction" / "__init__.py").write_text('NAME = "link-prediction"\n')
    (tmp_path / "stamen" / "server" / "fine.py").write_text('"""Link prediction: task=\'link-prediction\'."""\n')
    (tmp_path / "stamen" / "server" / "outputs.py").write_text('def f(task):\n    return task == "link-prediction"\n')
    (tmp_path / "stamen" / "server" / "rows.py").write_text("from stamen.tasks.link_prediction import client\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project.entry-points."stamen.tasks"]\nlink-prediction = "stamen.tasks.link_prediction:SPEC"\n'
        '[tool.flwr.app.config]\ntask = "link-prediction"\n'
    )
    own = tmp_path / "stamen" / "tasks" / "link_prediction"
    assert places("link-prediction", "link_prediction", own, tmp_path) == {
        ENTRY_POINT,
        "pyproject.toml: [tool.flwr.app.config]",
        "stamen/server/outputs.py",
        "stamen/server/rows.py",
    }


def test_the_check_finds_a_place_that_names_a_dataset_form(tmp_path):
    (tmp_path / "stamen" / "graphs" / "forms").mkdir(parents=True)
    (tmp_path / "hatch_build.py").write_text("")
    (tmp_path / "stamen" / "graphs" / "forms" / "ogb.py").write_text('SPEC = DatasetSpec("ogb:", "h", "m:read")\n')
    (tmp_path / "stamen" / "graphs" / "fine.py").write_text('"""Reads ``ogb:ogbn-arxiv``."""\n')
    (tmp_path / "stamen" / "graphs" / "chain.py").write_text('def f(prefix):\n    return prefix == "ogb:"\n')
    (tmp_path / "stamen" / "graphs" / "reader.py").write_text("from stamen.graphs.forms.ogb import check\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project.entry-points."stamen.datasets"]\n7-ogb = "stamen.graphs.forms.ogb:SPEC"\n'
    )
    own = tmp_path / "stamen" / "graphs" / "forms" / "ogb.py"
    assert places("ogb:", "ogb", own, tmp_path) == {ENTRY_POINT, "stamen/graphs/chain.py", "stamen/graphs/reader.py"}
