"""The typed run configuration shared by the ServerApp, the ClientApp and the CLI, declared once.

Flower hands both apps the run config as a flat ``{key: value}`` mapping (the
``[tool.flwr.app.config]`` table of ``pyproject.toml`` with the user's overrides).
Every key every run reads is declared below, once, in its feature's section, with its type (the
annotation), default, constraint (range, choices from a registry, or shape) and one
line of help (:mod:`stamen.contract.keys`); an algorithm's own keys are declared the same way in its
spec (:attr:`stamen.contract.algorithms.AlgorithmSpec.keys`, in ``stamen/algorithms/<name>/``) and read
with :meth:`RunConfig.option`. :meth:`RunConfig.from_flower` is THE validation
of a run config: unknown keys (with a suggestion), types, each key's constraint and the
rules between keys (:mod:`stamen.contract.rules`), each failure one line. ``stamen run``'s
preflight, the ServerApp of a plain ``flwr run``, the ClientApp and the benches all
call it, so a mistake fails before any training. It gives a frozen object whose
attribute names are the core keys with ``-`` turned into ``_``. The defaults, the algorithms' too, equal those
in ``pyproject.toml`` (a test keeps them equal); ``stamen config`` and the reference's key
table are printed from these declarations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stamen.common.registry import Helps
from stamen.common.suggest import did_you_mean
from stamen.contract.algorithms import ALGORITHMS, AlgorithmSpec, check_specs_with, plugin_keys
from stamen.contract.key_forms import BUDGETS, DATASET, DEVICE, MALICIOUS, REQUEST, TRACKING
from stamen.contract.keys import Key, Section, declared_keys, ge, gt, within
from stamen.contract.privacy_modes import PRIVACY
from stamen.contract.rules import check_rules
from stamen.contract.run_mapping import kebab_values
from stamen.contract.tasks import DEFAULT_TASK, TASKS, with_task_defaults
from stamen.contract.tracking import trackers, translate_retired
from stamen.contract.unlearn_methods import UNLEARN_METHOD_SPECS
from stamen.graphs.names import DEFAULT_PARTITIONER, RUN_PARTITIONERS
from stamen.graphs.spec import FederationSpec
from stamen.models.names import LINK_DECODERS, MODEL_SPECS, NTK_ARCHITECTURES

CLIPPINGS = ("server-fixed", "client-fixed", "server-adaptive", "client-adaptive")
MAX_ROUNDS = 10_000_000  # a round takes at least the engine's 0.1 s tick on Flower: beyond a year of rounds
UNLEARN_METHODS = tuple(UNLEARN_METHOD_SPECS)  # what a federated run can do with unlearn-request


ATTACKS = {
    "none": "no attack",
    "label-flip": "train on labels flipped to another class (attack-flip-fraction of them)",
    "sign-flip": "send global - attack-scale * (local - global)",
    "gaussian": "send global + N(0, attack-std^2) per weight, whatever was learnt",
}


TRAINING = Section("training", "what to train, for how long")
DATA = Section("data", "the graph, its partition into clients, the splits")
SETTINGS = Section("settings", "evaluation settings of local generalization (stamen/graphs/settings.py)")
MODEL = Section("model", "the GNN every client trains")
LOCAL = Section("local", "local training on each client")
ATTACK = Section("attack", "malicious clients, to test robust aggregation (stamen/client/attacks.py; empty: none)")
CERTIFY = Section("certify", "federated label-flip certificates after training (empty budgets: off)")
UNLEARN = Section("unlearn", "federated unlearning after training (empty request: off)")
FEDERATION = Section("federation", "client sampling and time-outs")
OUTPUTS = Section("outputs", "where the run's results go")
PRIVACY_SECTION = Section("privacy", "differential privacy (docs/privacy.md)")
RESUME = Section("resume", "deployment: continue a run from its checkpoint")
LINK = Section("link", "link prediction's options (task='link-prediction', stamen/contract/tasks.py)")
GRAPHS = Section("graphs", "graph classification's options (task='graph-classification', stamen/contract/tasks.py)")


_SEED = within(-1, 2**32, "[)")  # a separate seed of one part of a run: -1 (the default) takes ``seed``


@dataclass(frozen=True)
class RunConfig:
    """Every run-config key of the Stamen app (``stamen config`` lists them with their help)."""

    task: str = TRAINING.key(
        DEFAULT_TASK,
        "what the clients learn (stamen/contract/tasks.py)",
        choices=Helps(TASKS),
    )
    algorithm: str = TRAINING.key("fedavg", "the FL algorithm", choices=Helps(ALGORITHMS))
    num_server_rounds: int = TRAINING.key(100, "federated rounds (at most 10,000,000)", bound=within(1, MAX_ROUNDS))
    dataset: str = DATA.key(
        "csbm", "the graph (csbm: generated from the seed; the others read files, docs/datasets.md)", form=DATASET
    )
    data_root: str = DATA.key("", "folder holding the datasets' files (docs/datasets.md); empty: $STAMEN_DATA")
    partitioner: str = DATA.key(
        DEFAULT_PARTITIONER,
        "how the graph is cut into clients (cross-dataset: a dataset list's)",
        choices=RUN_PARTITIONERS,
    )
    dirichlet_alpha: float = DATA.key(0.5, "label skew of label-dirichlet (smaller: more skewed)", bound=gt(0))
    train_frac: float = DATA.key(0.6, "per-client random split: training share", bound=within(0, 1, "()"))
    val_frac: float = DATA.key(
        0.2, "per-client random split: validation share (test: the rest)", bound=within(0, 1, "[)")
    )
    new_client: bool = DATA.key(False, "hold out one more partition that never trains (the new-client setting)")
    seed: int = DATA.key(
        0,
        "graph generation, partition, splits, initial model, dropout (0 to 2**32 - 1, NumPy's seeds)",
        bound=within(0, 2**32, "[)"),
    )
    data_seed: int = DATA.key(-1, "seed of the generated graph (csbm, graph sets) alone; -1: seed", bound=_SEED)
    partition_seed: int = DATA.key(-1, "seed of the partition and the splits alone; -1: seed", bound=_SEED)
    model_seed: int = DATA.key(
        -1, "seed of the initial model and the clients' training draws (dropout, batches) alone; -1: seed", bound=_SEED
    )
    csbm_nodes: int = DATA.key(3000, "csbm: nodes", bound=ge(2))
    csbm_classes: int = DATA.key(7, "csbm: classes", bound=ge(2))
    csbm_degree: float = DATA.key(8.0, "csbm: mean degree", bound=gt(0))
    csbm_homophily: float = DATA.key(0.8, "csbm: share of a node's edges within its class", bound=within(0, 1))
    csbm_features: int = DATA.key(64, "csbm: feature dimension", bound=ge(1))
    csbm_signal: float = DATA.key(1.0, "csbm: distance of the class means in feature space", bound=ge(0))
    size_check: bool = DATA.key(
        True,
        "refuse, before any work, a run whose estimated memory exceeds what this machine has available "
        "(stamen/simulations/size_check.py); false: go on anyway",
    )
    unseen_node_frac: float = SETTINGS.key(
        0.0,
        "share of each client's nodes held out of training with their edges (unseen node)",
        bound=within(0, 1, "[)"),
    )
    missing_classes: int = SETTINGS.key(
        0, "classes whose labels each client withholds: its rarest ones (missing class)", bound=ge(0)
    )
    model: str = MODEL.key(
        "gcn", "the GNN (encoder -> linear head; graph classification: a readout between)", choices=Helps(MODEL_SPECS)
    )
    hidden: int = MODEL.key(64, "hidden width", bound=ge(1))
    num_layers: int = MODEL.key(2, "layers", bound=ge(1))
    dropout: float = MODEL.key(0.5, "dropout rate", bound=within(0, 1, "[)"))
    local_epochs: int = LOCAL.key(
        1,
        "local epochs per round: one full-batch step each (graph sets: a step per graph-batch-size graphs)",
        bound=ge(1),
    )
    lr: float = LOCAL.key(0.01, "Adam's learning rate", bound=gt(0))
    weight_decay: float = LOCAL.key(5e-4, "Adam's weight decay", bound=ge(0))
    keep_optimizer_state: bool = LOCAL.key(True, "each client keeps its Adam moments across rounds")
    local_eval: bool = LOCAL.key(
        True,
        "clients also evaluate their models after local training (the client figures); false: the received "
        "global model only, on an algorithm that aggregates",
    )
    device: str = LOCAL.key("auto", "auto: a visible GPU, else the CPU", form=DEVICE)
    # attacks on robust aggregation (stamen/client/attacks.py)
    malicious_clients: str = ATTACK.key(
        "", "malicious clients: a count N (chosen by the seed) or partition ids '0,3' (one id: '3,')", form=MALICIOUS
    )
    attack: str = ATTACK.key("none", "what the malicious clients do", choices=ATTACKS)
    attack_flip_fraction: float = ATTACK.key(
        1.0, "label-flip: share of a malicious client's training labels flipped", bound=within(0, 1, "(]")
    )
    attack_scale: float = ATTACK.key(10.0, "sign-flip: s in global - s * (local - global)", bound=gt(0))
    attack_std: float = ATTACK.key(1.0, "gaussian: std of the noise sent as the update", bound=gt(0))
    certify_budgets: str = CERTIFY.key(
        "", "after training, clients certify their own predictions against these label-flip budgets", form=BUDGETS
    )
    certify_arch: str = CERTIFY.key("gcn", "the NTK's architecture", choices=NTK_ARCHITECTURES)
    certify_c: float = CERTIFY.key(0.01, "the SVM's C", bound=gt(0))
    certify_labels_per_class: int = CERTIFY.key(10, "labelled nodes per class", bound=ge(1))
    certify_targets: int = CERTIFY.key(20, "target nodes certified per client", bound=ge(1))
    certify_time_limit: float = CERTIFY.key(60.0, "seconds per MILP", bound=gt(0))
    unlearn_request: str = UNLEARN.key(
        "", "after training, forget this through Flower messages and evaluate", form=REQUEST
    )
    unlearn_method: str = UNLEARN.key(
        "wash",
        "how (all but federaser retrain if a client holding data to forget does not answer)",
        choices={n: s.help for n, s in UNLEARN_METHOD_SPECS.items()},
    )
    fraction_train: float = FEDERATION.key(1.0, "share of clients sampled per round", bound=within(0, 1, "(]"))
    min_clients: int = FEDERATION.key(2, "fewest clients a round may go on with", bound=ge(1))
    round_timeout: float = FEDERATION.key(600.0, "seconds to wait for a round's replies", bound=gt(0))
    output_dir: str = OUTPUTS.key("runs", "folder of the run directories")
    run_name: str = OUTPUTS.key("", "the run directory's name; empty: <dataset>-<algorithm>-<time>")
    overwrite: bool = OUTPUTS.key(False, "replace an earlier run directory of the same name")
    tracking: str = OUTPUTS.key(
        "none",
        "live tracking each round: none, tensorboard, mlflow, wandb or several joined by commas (docs/runs.md)",
        form=TRACKING,
    )
    privacy: str = PRIVACY_SECTION.key("none", "differential privacy", choices=PRIVACY)
    noise_multiplier: float = PRIVACY_SECTION.key(
        1.0, "Gaussian noise std over the clipping norm (per sample for dp-sgd, per update for client-dp)", bound=gt(0)
    )
    target_epsilon: float = PRIVACY_SECTION.key(
        0.0,
        "> 0: solve the noise multiplier so the whole run spends this epsilon (noise-multiplier unused)",
        bound=ge(0),
    )
    target_delta: float = PRIVACY_SECTION.key(1e-5, "the delta of every reported epsilon", bound=within(0, 1, "()"))
    max_grad_norm: float = PRIVACY_SECTION.key(1.0, "dp-sgd: per-sample gradient clipping norm", bound=gt(0))
    dp_batch_size: int = PRIVACY_SECTION.key(
        32, "dp-sgd: expected Poisson batch size (at most a client's training nodes, or graphs)", bound=ge(1)
    )
    clipping: str = PRIVACY_SECTION.key(
        "server-fixed", "client-dp: where and how updates are clipped", choices=CLIPPINGS
    )
    clipping_norm: float = PRIVACY_SECTION.key(
        1.0, "client-dp: the update clipping norm (the initial one when adaptive)", bound=gt(0)
    )
    secure_aggregation: bool = PRIVACY_SECTION.key(
        False,
        "average through Flower's SecAgg+: the server sees only the clients' weighted sum (stamen/server/secagg.py)",
    )
    secagg_shares: float = PRIVACY_SECTION.key(
        1.0,
        "secure-aggregation: share of the round's clients each shares its keys with (1: SecAgg; less: faster SecAgg+)",
        bound=within(0, 1, "(]"),
    )
    secagg_threshold: float = PRIVACY_SECTION.key(
        0.6,
        "secure-aggregation: share of those key shares needed to unmask (> 0.5: safer; lower: more dropouts)",
        bound=within(0, 1, "(]"),
    )
    secagg_max_weight: float = PRIVACY_SECTION.key(
        1000.0, "secure-aggregation: most training nodes one client may weigh (quantisation scale)", bound=gt(0)
    )
    resume_from: str = RESUME.key(
        "", "a run directory (or a file in it) whose checkpoint the run continues (docs/runs.md)"
    )
    link_decoder: str = LINK.key("dot", "how two node embeddings give an edge's score", choices=LINK_DECODERS)
    link_val_frac: float = LINK.key(
        0.05, "share of each client's edges held out for validation", bound=within(0, 1, "()")
    )
    link_test_frac: float = LINK.key(0.1, "share of each client's edges held out for test", bound=within(0, 1, "()"))
    hits_k: int = LINK.key(
        50,
        "K of Hits@K: share of positive edges scored above the K-th best non-edge (none for a client with fewer "
        "than K non-edges: not computable)",
        bound=ge(1),
    )
    graph_batch_size: int = GRAPHS.key(32, "graphs per mini-batch of a client's local step", bound=ge(1))

    plugin_options: tuple[tuple[str, Any], ...] = ()
    """The values other than their defaults given for the keys that the algorithms declare (their specs'
    :attr:`~stamen.contract.algorithms.AlgorithmSpec.keys`, Stamen's and plug-ins' alike), by name; :meth:`option`
    reads them, a key not given reads its default."""

    @classmethod
    def from_flower(cls, values: Mapping[str, Any]) -> RunConfig:
        """Check and build from Flower's run config; missing keys take defaults. ValueError in one line.

        A key of earlier versions reads as the key that took its place
        (:func:`stamen.contract.tracking.translate_retired`); a key a plug-in algorithm declares is checked
        as a built-in one (:func:`stamen.contract.algorithms.plugin_keys`).
        """
        values = translate_retired(values)
        extra = plugin_keys()
        unknown = [key for key in values if key not in KEYS and key not in extra]
        if unknown:
            every = {**KEYS, **extra}
            named = ", ".join(f"{key!r}{did_you_mean(key, every, ' (')}".replace("?", "?)") for key in unknown)
            plural = "s" if len(unknown) > 1 else ""
            raise ValueError(f"unknown run-config key{plural} {named}; `stamen config` lists every key")
        typed: dict[str, Any] = {
            KEYS[key].attribute: KEYS[key].typed(value) for key, value in values.items() if key in KEYS
        }
        typed_options = {key: extra[key].typed(value) for key, value in values.items() if key in extra}
        # only the values other than the defaults: a config is the same whether a default was given or not
        options = tuple(sorted((key, value) for key, value in typed_options.items() if value != extra[key].default))
        config = cls(**with_task_defaults(typed, DEFAULTS), plugin_options=options)
        config.validate()
        return config

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "run config") -> RunConfig:
        """Check and build from run-config keys in either spelling (``num-server-rounds`` or ``num_server_rounds``:
        Python's dict, an experiment file, the command line's parsed ``-c`` items); missing keys take defaults.

        The one constructor of the Python API and the command line: one key in both spellings and a value no key
        holds are refused (:func:`stamen.contract.run_mapping.kebab_values`), then :meth:`from_flower` checks.
        ValueError in one line.
        """
        return cls.from_flower(kebab_values(values, where))

    def to_flower(self) -> dict[str, Any]:
        """The kebab-case mapping that :meth:`from_flower` reads (the plug-ins' keys last)."""
        values = {key.name: getattr(self, key.attribute) for key in KEYS.values()}
        return values | {name: self.option(name) for name in plugin_keys()}

    def option(self, name: str) -> Any:
        """The value of run-config key ``name``, a built-in key's or a plug-in's (its default where not given)."""
        if name in KEYS:
            return getattr(self, KEYS[name].attribute)
        given = dict(self.plugin_options)
        if name in given:
            return given[name]
        extra = plugin_keys()
        if name not in extra:
            raise ValueError(f"no run-config key {name!r}{did_you_mean(name, {**KEYS, **extra})}")
        return extra[name].default

    def validate(self) -> None:
        """Each key's constraint, then the rules between keys (:mod:`stamen.contract.rules`)."""
        for key in KEYS.values():
            key.check(getattr(self, key.attribute))
        for name, key in plugin_keys().items():
            key.check(self.option(name))
        check_rules(self)

    def replace(self, **changes: Any) -> RunConfig:
        """A checked copy with ``changes`` (attribute names: ``local_epochs=1``); ValueError in one line."""
        config = dataclasses.replace(self, **changes)
        config.validate()
        return config

    def federation(self, num_clients: int, data_root: str | None = None) -> FederationSpec:
        """The clients' data of this run over ``num_clients`` clients: derived here, and only here.

        ``data_root`` replaces the config's own (a deployment's host names its own folder).
        The csbm generator's options enter only for ``dataset='csbm'``, under its own names.
        """
        options: tuple[tuple[str, float], ...] = ()
        if self.dataset == "csbm":
            options = tuple(
                sorted(
                    {
                        "num_nodes": self.csbm_nodes,
                        "num_classes": self.csbm_classes,
                        "avg_degree": self.csbm_degree,
                        "homophily": self.csbm_homophily,
                        "num_features": self.csbm_features,
                        "signal": self.csbm_signal,
                    }.items()
                )
            )
        graph_seed, partition_seed = self.seed_of(self.data_seed), self.seed_of(self.partition_seed)
        return FederationSpec(
            dataset=self.dataset,
            num_clients=num_clients,
            partitioner=self.partitioner,
            seed=partition_seed,
            data_seed=None if graph_seed == partition_seed else graph_seed,
            data_root=self.data_root if data_root is None else data_root,
            dirichlet_alpha=self.dirichlet_alpha,
            train_frac=self.train_frac,
            val_frac=self.val_frac,
            new_client=self.new_client,
            unseen_node_frac=self.unseen_node_frac,
            missing_classes=self.missing_classes,
            dataset_options=options,
        )

    def seed_of(self, part_seed: int) -> int:
        """The seed of one part of the run: ``part_seed`` (``data-seed``, ``partition-seed``, ``model-seed``) where
        it is set (>= 0), else ``seed``; with all three unset a run is what it was before they existed."""
        return self.seed if part_seed < 0 else part_seed

    def trackers(self) -> tuple[str, ...]:
        """``tracking`` as the trackers' names (empty: none)."""
        return trackers(self.tracking)

    def budgets(self) -> list[int]:
        """``certify-budgets`` as a sorted list of label-flip budgets (empty: no certificates)."""
        return sorted({int(part) for part in self.certify_budgets.split(",") if part.strip()})


KEYS: dict[str, Key] = declared_keys(RunConfig)
DEFAULTS: dict[str, Any] = {name: key.default for name, key in KEYS.items()}


def _no_key_of_the_run_config(spec: AlgorithmSpec, origin: str) -> None:
    """An algorithm's own keys (:attr:`AlgorithmSpec.keys`) are none of the run config's: ValueError in one line."""
    for key in spec.keys:
        if key.name in KEYS:
            raise ValueError(
                f"algorithm {spec.name!r}: key {key.name!r} is already a run-config key; name it otherwise"
            )


check_specs_with(_no_key_of_the_run_config)
SECTIONS: dict[str, Section] = {
    section.name: section
    for section in (TRAINING, DATA, SETTINGS, MODEL, LOCAL, ATTACK, CERTIFY, UNLEARN, FEDERATION, OUTPUTS,
                    PRIVACY_SECTION, RESUME, LINK, GRAPHS)
}  # fmt: skip


def run_config_keys() -> dict[str, Key]:
    """Every key, in declaration order (the sections' order groups them)."""
    return dict(KEYS)
