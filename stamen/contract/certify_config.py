"""The options of a ``stamen certify`` job, declared once: types, defaults, constraints, help, rules.

Every option is a field of :class:`CertifyConfig` made by :meth:`stamen.contract.keys.Section.key`,
as the run config's keys are (:mod:`stamen.contract.run_config`): its type, default, constraint
(a range, choices from a registry, or a shape) and one line of help. The choices come from
the registries, names only: :mod:`stamen.certify.names` (models, modes, search methods, solvers,
NTK variants, normalisations), :data:`stamen.models.names.NTK_ARCHITECTURES` and
:mod:`stamen.graphs.names` (datasets, partitioners). ``--dataset`` accepts what the run config's
``dataset`` accepts (``csbm``, ``cora``, ..., ``npz:STEM``, ``pyg:CLASS/NAME``,
``ogb:ogbn-NAME``) and ``csbm-paper``, with the run config's one-line error.

The rules between options are :data:`RULES`, one declared line each. :meth:`CertifyConfig.from_values`
is THE check of a job's options: types, each option's constraint, then the rules, each
failure one line naming the flag and what to do. ``stamen certify``'s argparse options
(flag, type, default, help) are derived from :data:`OPTIONS`
(:mod:`stamen.cli.commands.certify`). No file is touched here: ``--out``, ``--graph``,
``--kernel`` and the dataset's files are checked where they are read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stamen.certify.names import ENUMERATE_LIMIT, METHODS, MODELS, MODES, NORMALIZATIONS, SOLVERS, VARIANTS
from stamen.common.suggest import did_you_mean, one_of
from stamen.contract.keys import Form, Key, Section, declared_keys, ge, gt
from stamen.graphs.names import accepted_datasets, dataset_problem, partitioners
from stamen.models.names import NTK_ARCHITECTURES

PAPER_CSBM = "csbm-paper"  # the paper's binary CSBM (stamen.graphs.csbm.make_paper_csbm), certify's own dataset
PARTITIONS = {
    "random": "certify's seeded split of the labelled nodes",
    **dict.fromkeys((name for name in partitioners() if name != "random"), ""),
}
ATTACKERS = ("any",)


def _is_dataset(name: str) -> bool:
    """True for what ``stamen run``'s ``dataset`` accepts (but graph sets: certify reads one graph) and
    ``csbm-paper``; otherwise the run config's line."""
    problem = dataset_problem(name, also=(PAPER_CSBM,), graph_sets=False)
    if problem:
        raise ValueError(problem)
    return True


def _parts(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _is_architectures(text: str) -> bool:
    """A comma list of NTK architectures; otherwise one line naming the unknown one."""
    if not _parts(text):
        raise ValueError(f"--arch is empty; give a comma list of: {', '.join(NTK_ARCHITECTURES)}")
    for arch in _parts(text):
        if _parts(text).count(arch) > 1:
            raise ValueError(f"--arch names {arch} twice; give each architecture once")
        if arch not in NTK_ARCHITECTURES:
            raise ValueError(
                f"unknown --arch {arch!r}; --arch must be a comma list of: {', '.join(NTK_ARCHITECTURES)}"
                f"{did_you_mean(arch, NTK_ARCHITECTURES)}"
            )
    return True


def _is_budgets(text: str) -> bool:
    return bool(_parts(text)) and all(part.isdigit() for part in _parts(text))


def _is_c(text: str) -> bool:
    if text.strip().lower() == "cv":
        return True
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value > 0


def _is_classes(text: str) -> bool:
    if text.strip().lower() == "all":
        return True
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        return False
    return len(ids) == 2 and ids[0] != ids[1] and min(ids) >= 0


DATASET = Form(_is_dataset, lambda: accepted_datasets(also=(PAPER_CSBM,), graph_sets=False))
ARCHITECTURES = Form(_is_architectures, f"a comma list of: {', '.join(NTK_ARCHITECTURES)}")
BUDGETS = Form(_is_budgets, "a comma list of integers >= 0, like '1,2,3'")
C_VALUE = Form(_is_c, "a positive number or 'cv'")
CLASSES = Form(_is_classes, "two distinct class ids 'a,b' or 'all'")

GRAPH = Section("graph", "the graph, its labelled nodes and its targets")
MODEL = Section("model", "the kernel machine and its NTK")
CERTIFICATE = Section("certificate", "what is certified, and how the worst case is searched")
FEDERATED = Section("federated attacker", "an attacker restricted to one client's labels")
OUTPUT = Section("output", "where the results go")


@dataclass(frozen=True)
class CertifyConfig:
    """Every option of ``stamen certify`` (attribute: the flag without ``--``, ``-`` as ``_``)."""

    dataset: str = GRAPH.key(
        PAPER_CSBM, "the graph (csbm-paper: the paper's binary CSBM; the others as in stamen run)", form=DATASET
    )
    data_root: str | None = GRAPH.key(None, "folder holding the datasets' files (default: $STAMEN_DATA)", of=str)
    graph: str | None = GRAPH.key(
        None, "npz with arrays x, edge_index, y, labeled, targets (overrides --dataset)", of=str
    )
    kernel: str | None = GRAPH.key(
        None, "n x n float64 .npy kernel over all nodes of the graph (graph order), instead of the NTK", of=str
    )
    csbm_nodes: int = GRAPH.key(200, "nodes of csbm-paper", bound=ge(8))
    classes: str | None = GRAPH.key(
        None, "'a,b' for a binary task (default: the two largest classes) or 'all'", form=CLASSES, of=str
    )
    binary_features: bool = GRAPH.key(
        False, "replace features by x > 0 (the paper's bag-of-words features for Cora-ML)"
    )
    labeled_per_class: int = GRAPH.key(10, "labelled nodes per class", bound=ge(1))
    targets: int = GRAPH.key(100, "number of target nodes (0: all unlabelled)", bound=ge(0))
    seed: int = GRAPH.key(0, "csbm-paper, the labelled/target split, the clients' split, the folds of --C cv")
    model: str = MODEL.key("svm", "the kernel machine", choices={n: e.help for n, e in MODELS.items()})
    arch: str = MODEL.key("gcn", "the NTKs' architectures", form=ARCHITECTURES)
    depth: int = MODEL.key(1, "hidden layers of the network", bound=ge(1))
    normalization: str | None = MODEL.key(
        None, "propagation matrix (default: row; appnp: sym)", choices=NORMALIZATIONS, of=str
    )
    ntk_variant: str = MODEL.key("textbook", "the NTK", choices=VARIANTS)
    C: str = MODEL.key("0.1", "SVM box bound, or 'cv' for 4-fold stratified CV", form=C_VALUE)
    ridge: float = MODEL.key(1.0, "ridge of --model krr", bound=gt(0))
    budgets: str = CERTIFICATE.key("1,2,3", "label-flip budgets", form=BUDGETS)
    mode: str = CERTIFICATE.key("samplewise", "what is certified", choices=MODES)
    decide: bool = CERTIFICATE.key(False, "sample-wise decision MILP (infeasible = certified; no worst-case score)")
    no_screen: bool = CERTIFICATE.key(False, "no bound/greedy screening before a MILP")
    search: str = CERTIFICATE.key("auto", "how a budget is decided", choices=METHODS)
    enumerate_limit: int = CERTIFICATE.key(ENUMERATE_LIMIT, "flip sets up to which auto sweeps", bound=ge(0))
    solver: str = CERTIFICATE.key("highs", "the MILP solver", choices=SOLVERS)
    time_limit: float = CERTIFICATE.key(60.0, "seconds per MILP", bound=gt(0))
    workers: int | None = CERTIFICATE.key(
        None, "processes deciding targets in parallel (default: the available cores; no answer depends on it)",
        bound=ge(1), of=int,
    )  # fmt: skip
    clients: int | None = FEDERATED.key(None, "split the labelled nodes among K clients", bound=ge(1), of=int)
    partitioner: str = FEDERATED.key(
        "random", "how --clients K split the labelled nodes (the others cut the whole graph)", choices=PARTITIONS
    )
    attacker_client: int | None = FEDERATED.key(None, "only this client flips labels", bound=ge(0), of=int)
    attacker: str | None = FEDERATED.key(
        None, "the worst case over the clients, each alone flipping its labels", choices=ATTACKERS, of=str
    )
    out: str | None = OUTPUT.key(None, "output folder (required)", of=str)
    overwrite: bool = OUTPUT.key(False, "allow a non-empty --out")
    json: bool = OUTPUT.key(False, "print certificate.json on stdout")

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> CertifyConfig:
        """Check and build from ``{option: value}`` (names without ``--``); missing ones take defaults.

        ValueError in one line: an unknown option, a type, an option's constraint, a rule.
        """
        unknown = [name for name in values if name not in OPTIONS]
        if unknown:
            raise ValueError(f"unknown certify option {unknown[0]!r}{did_you_mean(unknown[0], OPTIONS)}")
        typed: dict[str, Any] = {OPTIONS[name].attribute: OPTIONS[name].typed(value) for name, value in values.items()}
        config = cls(**typed)
        config.validate()
        return config

    def validate(self) -> None:
        """Each option's constraint, then :data:`RULES`."""
        for key in OPTIONS.values():
            key.check(getattr(self, key.attribute))
        for rule in RULES:
            if rule.broken(self):
                raise ValueError(rule.says.format_map(vars(self)))

    def budget_list(self) -> list[int]:
        """``--budgets`` sorted, each once."""
        return sorted({int(part) for part in _parts(self.budgets)})

    def architectures(self) -> list[str]:
        return _parts(self.arch)

    def c_value(self) -> float | str:
        """``--C`` as the task takes it: a number or ``"cv"``."""
        return "cv" if self.C.strip().lower() == "cv" else float(self.C)

    @property
    def binary(self) -> bool:
        """A two-class task (all but ``--classes all``)."""
        return self.classes is None or self.classes.strip().lower() != "all"

    def class_ids(self) -> list[int] | None:
        """The two classes of ``--classes a,b`` (None: the two largest, or all)."""
        return [int(part) for part in self.classes.split(",")] if self.classes and self.binary else None

    def attacker_spec(self) -> int | str:
        """Who flips labels: ``"all labels"``, ``"any"`` (worst client) or a client id."""
        if self.attacker is not None:
            return self.attacker
        return "all labels" if self.attacker_client is None else self.attacker_client


@dataclass(frozen=True)
class Rule:
    """A rule between options: ``broken(config)`` is true when the options break it; ``says`` is its
    one line, naming what to do (formatted with the options' values, ``{clients}``)."""

    broken: Callable[[CertifyConfig], bool]
    says: str


def _restricted(config: CertifyConfig) -> bool:
    return config.attacker is not None or config.attacker_client is not None


CLIENT_ATTACKER_MODELS = [name for name, entry in MODELS.items() if entry.client_attacker]
BINARY_ONLY_MODELS = [name for name, entry in MODELS.items() if not entry.multiclass]

RULES: tuple[Rule, ...] = (
    Rule(lambda c: c.out is None, "--out is required: the folder for certificate.json, the plot and report.md"),
    Rule(
        lambda c: c.kernel is not None and len(c.architectures()) > 1,
        "--kernel replaces the NTK: give a single --arch label (or omit --arch)",
    ),
    Rule(
        lambda c: c.attacker is not None and c.attacker_client is not None,
        "give either --attacker any or --attacker-client i, not both",
    ),
    Rule(lambda c: _restricted(c) and c.clients is None, "--attacker/--attacker-client need --clients K"),
    Rule(
        lambda c: _restricted(c) and (c.mode != "samplewise" or c.model not in CLIENT_ATTACKER_MODELS),
        f"client-restricted attackers are supported for --mode samplewise --model {one_of(CLIENT_ATTACKER_MODELS)}",
    ),
    Rule(
        lambda c: c.attacker_client is not None and c.clients is not None and c.attacker_client >= c.clients,
        "--attacker-client must be < --clients ({clients}), got {attacker_client}",
    ),
    Rule(
        lambda c: not c.binary and c.mode == "collective",
        "--mode collective needs a binary task (omit --classes all)",
    ),
    Rule(
        lambda c: not c.binary and _restricted(c), "client-restricted attackers need a binary task (omit --classes all)"
    ),
    Rule(
        lambda c: not c.binary and c.model in BINARY_ONLY_MODELS,
        "--model {model} certifies binary tasks only (omit --classes all)",
    ),
)

OPTIONS: dict[str, Key] = declared_keys(CertifyConfig, prefix="--")
SECTIONS: dict[str, Section] = {section.name: section for section in (GRAPH, MODEL, CERTIFICATE, FEDERATED, OUTPUT)}
