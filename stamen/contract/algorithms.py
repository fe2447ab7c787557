"""The FL algorithms a run may use: one registry entry per algorithm, by run-config name.

An algorithm is a server part (a factory ``make_strategy(config) -> Strategy``, named
``module`` or ``module:function`` when one module holds the factories of several
variants, loaded by :mod:`stamen.server.algorithms`) and a client part (a module's ``PART``, a
:class:`stamen.client.algorithms.ClientAlgorithm`, named ``module``, or ``module:NAME`` when one
module holds the parts of several variants, loaded by :mod:`stamen.client.algorithms`). This
floor may not import either side, so a spec names them by dotted module path; both
sides load them with :mod:`importlib` only when a run asks for the algorithm.

What the run config, its validation, ``stamen config``, ``--help`` choices and the
docs know about an algorithm comes from its spec here, never from a second list:

- ``aggregates``: the server keeps a global model (clients evaluate the model they
  receive; the run reports it). ``False``: every client keeps its own model.
- ``privacy``: the ``privacy`` modes the algorithm admits (``none`` always).
- ``options``: the run-config keys only this algorithm reads.
- ``resumable``: ``resume-from`` can continue its run exactly (the server's state
  between rounds is the checkpoint: the weights and the client sampler).
- ``averages``: the server's aggregate is the clients' weights averaged by training
  nodes (then perhaps transformed, as FedAvgM's momentum), so ``secure-aggregation``
  may compute it from their masked sum (:mod:`stamen.server.secagg`).
- ``shares_encoder``: the server averages only the encoder (the heads stay with the
  clients), so the model must have encoder weights.
- ``least_clients``: ``(a, b)``: a round needs at least ``a f + b`` replies, ``f`` =
  ``num-malicious-nodes`` (the Byzantine-robust rules); checked before a run starts, in
  every round, and by the attack bench.
- ``unlearnable``: its clients train the run's node classifier as FedAvg's do, so the
  unlearning methods can edit or retrain the global model (``unlearn-request``).
- ``any_task``: its clients run FedAvg's local step, which is the run's task's own
  (:mod:`stamen.client.tasks`), and its server only combines weights: it knows nothing of what the
  model predicts, so every task of :mod:`stamen.contract.tasks` may use it.
- ``equals``, ``equals_when``: ``(key, value, why)`` settings under which the algorithm computes exactly what
  algorithm ``equals`` does (FedProx at ``local-epochs=1`` is FedAvg), said once where its figures appear
  (:mod:`stamen.contract.equivalences`).
- ``task``: non-empty: the one task the algorithm is made for (GCFL and FedStar are graph-FL
  methods, for clients holding graph sets: ``graph-classification``); every other task refuses
  it, with that reason (:func:`stamen.contract.tasks.check_task`).

- ``keys``: run-config keys the algorithm declares itself (a plug-in's options; :func:`stamen.contract.keys.option`):
  they take part in validation, ``stamen config``, sweeps, tune and every engine as the built-in keys do, and
  :meth:`stamen.contract.run_config.RunConfig.option` reads them.

Every algorithm enters :data:`ALGORITHMS` through :func:`register_algorithm`: Stamen's own below, a
researcher's from Python or from a package's ``stamen.algorithms`` entry points (:mod:`stamen.common.registry`).
Adding an algorithm: its server module, its client module (or an existing one) and its spec.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from enum import StrEnum

from stamen.common.registry import BUILT_IN, PYTHON, Registry
from stamen.contract.keys import Key


class FedSageSchedule(StrEnum):
    """When fedsage+'s federated generator steps happen (``fedsage-schedule``; :mod:`stamen.server.fedsage`)."""

    PAPER = "paper"  # step t just before classifier round t, for t <= fedsage-gen-rounds (the reference's)
    PRETRAIN = "pretrain"  # all steps before the classifier's first round (Stamen's earlier schedule)


FEDSAGE_SCHEDULES = {
    FedSageSchedule.PAPER.value: "generator step t before classifier round t, for the first fedsage-gen-rounds "
    "rounds (as the reference code)",
    FedSageSchedule.PRETRAIN.value: "every generator step before the classifier's first round",
}


@dataclass(frozen=True)
class AlgorithmSpec:
    """One FL algorithm, as the run config and both apps know it (see the module docstring)."""

    name: str
    help: str
    server: str
    client: str
    aggregates: bool = True
    privacy: tuple[str, ...] = ("none",)
    options: tuple[str, ...] = ()
    resumable: bool = True
    averages: bool = False
    shares_encoder: bool = False
    least_clients: tuple[int, int] | None = None
    unlearnable: bool = False
    any_task: bool = False
    task: str = ""
    equals: str = ""
    equals_when: tuple[tuple[str, bool | int | float | str, str], ...] = ()
    keys: tuple[Key, ...] = ()

    def least_replies(self, malicious: int) -> int:
        """The fewest replies a round of this algorithm works with, ``malicious`` of them arbitrary."""
        factor, constant = self.least_clients or (0, 1)
        return factor * malicious + constant

    def admits(self, privacy: str) -> bool:
        return privacy in self.privacy


_FEDLOG_OPTIONS = tuple(
    f"fedlog-{name}"
    for name in (
        "lr", "hidden", "embedding", "batch-size", "num-proto", "gamma", "beta-metric", "beta-norm", "beta-cd",
        "lambda-step", "lambda-threshold", "warmup-epochs", "warmup-patience", "generator-epochs", "generator-hidden",
    )
)  # fmt: skip

_FEDSAGE_OPTIONS = tuple(f"fedsage-{n}" for n in ("hidden-portion", "max-pred", "gen-epochs", "gen-hidden", "gen-lr"))
_FEDPUB_OPTIONS = tuple(f"fedpub-{n}" for n in ("tau", "proxy-nodes", "proxy-graphs", "l1", "prune", "loc-l2"))
_FEDGTA_OPTIONS = tuple(f"fedgta-{n}" for n in ("prop-steps", "lp-alpha", "temperature", "moments", "accept"))
_FEDOPT_OPTIONS = ("fedopt-eta", "fedopt-beta-1", "fedopt-beta-2", "fedopt-tau")
_GCFL_OPTIONS = tuple(f"gcfl-{n}" for n in ("eps1", "eps2", "warmup-rounds", "sequence-length"))
_FEDSTAR_OPTIONS = ("fedstar-rw-length", "fedstar-degree-length")
GRAPH_FL_TASK = "graph-classification"  # the task of the graph-FL methods (stamen.contract.tasks names it too)

_BUILT_INS = (
    AlgorithmSpec(
        "fedavg",
        "FedAvg, the clients' weights averaged by training nodes",
        "stamen.server.fedavg",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd", "client-dp"),
        averages=True,
        unlearnable=True,
        any_task=True,
    ),
    AlgorithmSpec(
        "fedprox",
        "FedProx, FedAvg with a proximal term around the global model",
        "stamen.server.fedprox",
        "stamen.client.fedprox",
        privacy=("none", "client-dp"),
        options=("proximal-mu",),
        averages=True,
        unlearnable=True,
        any_task=True,
        equals="fedavg",
        equals_when=(
            ("proximal-mu", 0.0, "its proximal term is zero"),
            (
                "local-epochs",
                1,
                "the proximal term's gradient is zero at the received weights, where the only local step is taken",
            ),
        ),
    ),
    AlgorithmSpec(
        "local",
        "no aggregation, each client trains alone",
        "stamen.server.local",
        "stamen.client.local",
        aggregates=False,
        privacy=("none", "dp-sgd"),
        any_task=True,
    ),
    AlgorithmSpec(
        "fedlog",
        "FedLoG, prototype branches and global synthetic nodes (docs/algorithms.md)",
        "stamen.server.fedlog",
        "stamen.client.fedlog",
        options=_FEDLOG_OPTIONS,
    ),
    AlgorithmSpec(
        "fedavgm",
        "FedAvgM, FedAvg with server momentum (Flower's FedAvgM)",
        "stamen.server.fedavgm",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=("server-momentum", "server-learning-rate"),
        resumable=False,
        averages=True,
        unlearnable=True,
        any_task=True,
    ),
    # graph FL: FedSage (local NeighGen), FED-PUB, FedGTA
    AlgorithmSpec(
        "fedsage-local",
        "FedSage with local NeighGen: classifier FedAvg on subgraphs mended with generated neighbours "
        "(Zhang et al. 2021; use model='sage')",
        "stamen.server.fedsage",
        "stamen.client.fedsage",
        options=_FEDSAGE_OPTIONS,
        resumable=False,
    ),
    AlgorithmSpec(
        "fedsage+",
        "FedSage+: fedsage-local whose generators also learn from the other clients' subgraphs "
        "(cross-client feature matching; Zhang et al. 2021; use model='sage')",
        "stamen.server.fedsage:make_plus_strategy",
        "stamen.client.fedsage:PLUS_PART",
        options=(*_FEDSAGE_OPTIONS, "fedsage-gen-rounds", "fedsage-cross-weight", "fedsage-schedule"),
        resumable=False,
    ),
    AlgorithmSpec(
        "fedpub",
        "FED-PUB, personalised aggregates by functional similarity, personal sparse masks (Baek et al. 2023)",
        "stamen.server.fedpub",
        "stamen.client.fedpub",
        options=_FEDPUB_OPTIONS,
        resumable=False,
    ),
    AlgorithmSpec(
        "fedgta",
        "FedGTA, personalised confidence-weighted averages over clients with similar label moments (Li et al. 2024)",
        "stamen.server.fedgta",
        "stamen.client.fedgta",
        options=_FEDGTA_OPTIONS,
        resumable=False,
    ),
    # personalised FL: the personal parts live in the clients' state, outside the checkpoint: not resumable
    AlgorithmSpec(
        "fedper",
        "FedPer, the encoder averaged, each client's head kept local",
        "stamen.server.shared_encoder",
        "stamen.client.fedper",
        resumable=False,
        shares_encoder=True,
    ),
    AlgorithmSpec(
        "fedrep",
        "FedRep, local head trained first, then the shared encoder (averaged)",
        "stamen.server.shared_encoder",
        "stamen.client.fedrep",
        options=("rep-head-epochs",),
        resumable=False,
        shares_encoder=True,
    ),
    AlgorithmSpec(
        "ditto",
        "Ditto, FedAvg plus a personal model held near the global one",
        "stamen.server.fedavg",
        "stamen.client.ditto",
        options=("ditto-lambda", "ditto-personal-epochs"),
        resumable=False,
    ),
    AlgorithmSpec(
        "fedproto",
        "FedProto, class prototypes shared instead of weights",
        "stamen.server.fedproto",
        "stamen.client.fedproto",
        options=("fedproto-lambda",),
        resumable=False,
    ),
    # graph-FL over clients holding graph sets: the cluster assignment and the personal parts are server
    # and client state outside the checkpoint: not resumable
    AlgorithmSpec(
        "gcfl",
        "GCFL, clusters of clients split by their updates' similarity, one model per cluster (Xie et al. 2021; "
        "gcfl-sequence-length > 0: GCFL+, by DTW over update-norm sequences)",
        "stamen.server.gcfl",
        "stamen.client.fedavg",
        options=_GCFL_OPTIONS,
        resumable=False,
        task=GRAPH_FL_TASK,
    ),
    AlgorithmSpec(
        "fedstar",
        "FedStar, a structure encoder over random-walk and degree embeddings shared, the feature encoder "
        "and head local (Tan et al. 2023)",
        "stamen.server.fedavg",
        "stamen.client.fedstar",
        options=_FEDSTAR_OPTIONS,
        resumable=False,
        task=GRAPH_FL_TASK,
    ),
    # Flower's strategies as algorithms (stamen/server/fedopt.py, stamen/server/median.py, stamen/server/krum.py)
    AlgorithmSpec(
        "fedadam",
        "FedAdam, Adam steps on the server over the averaged update (Flower's FedAdam)",
        "stamen.server.fedopt:make_fedadam",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=_FEDOPT_OPTIONS,
        resumable=False,
        unlearnable=True,
        any_task=True,
    ),
    AlgorithmSpec(
        "fedyogi",
        "FedYogi, Yogi steps on the server over the averaged update (Flower's FedYogi)",
        "stamen.server.fedopt:make_fedyogi",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=_FEDOPT_OPTIONS,
        resumable=False,
        unlearnable=True,
        any_task=True,
    ),
    AlgorithmSpec(
        "fedadagrad",
        "FedAdagrad, Adagrad steps on the server over the averaged update (Flower's FedAdagrad)",
        "stamen.server.fedopt:make_fedadagrad",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=("fedopt-eta", "fedopt-tau"),
        resumable=False,
        unlearnable=True,
        any_task=True,
    ),
    AlgorithmSpec(
        "fedmedian",
        "coordinate-wise median of the clients' weights (Flower's FedMedian)",
        "stamen.server.median:make_median",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        unlearnable=True,
        any_task=True,
    ),
    AlgorithmSpec(
        "fedtrimmedavg",
        "coordinate-wise trimmed mean of the clients' weights (Flower's FedTrimmedAvg)",
        "stamen.server.median:make_trimmed_mean",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=("trimmed-beta",),
        unlearnable=True,
        any_task=True,
    ),
    AlgorithmSpec(
        "krum",
        "Krum, the one reply closest to its neighbours (Flower's Krum)",
        "stamen.server.krum:make_krum",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=("num-malicious-nodes",),
        unlearnable=True,
        least_clients=(2, 3),
        any_task=True,
    ),
    AlgorithmSpec(
        "multikrum",
        "Multi-Krum, the average of the replies Krum scores best (Flower's MultiKrum)",
        "stamen.server.krum:make_multikrum",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=("num-malicious-nodes", "num-nodes-to-select"),
        unlearnable=True,
        least_clients=(2, 3),
        any_task=True,
    ),
    AlgorithmSpec(
        "bulyan",
        "Bulyan, Krum selection then a trimmed mean around the median (Flower's Bulyan)",
        "stamen.server.krum:make_bulyan",
        "stamen.client.fedavg",
        privacy=("none", "dp-sgd"),
        options=("num-malicious-nodes",),
        unlearnable=True,
        least_clients=(4, 3),
        any_task=True,
    ),
)


_NAME = re.compile(r"[a-z0-9][a-z0-9+._-]*")
_PART = re.compile(r"[A-Za-z_][\w.]*(:[A-Za-z_]\w*)?")


def register_algorithm(spec: AlgorithmSpec, *, origin: str = PYTHON) -> AlgorithmSpec:
    """Enter ``spec`` in :data:`ALGORITHMS` (as registered, its ``keys`` among its ``options``); ValueError in
    one line when the spec cannot be one.

    ``origin``: where it comes from (:mod:`stamen.common.registry`): from Python in this process (the
    default), an entry point, or Stamen itself.
    """
    if not isinstance(spec, AlgorithmSpec):
        raise ValueError(f"an algorithm plug-in is a stamen.AlgorithmSpec, got {type(spec).__name__}")
    if not _NAME.fullmatch(spec.name):
        raise ValueError(f"algorithm name {spec.name!r} must be lower-case letters, digits and - + . _")
    for part, path in (("server", spec.server), ("client", spec.client)):
        if not _PART.fullmatch(path):
            raise ValueError(f"algorithm {spec.name!r}: {part} must name a module or module:attribute, got {path!r}")
    if origin != BUILT_IN:
        _check_facts(spec)
    if not all(isinstance(key, Key) for key in spec.keys):
        raise ValueError(f"algorithm {spec.name!r}: each key is a stamen.option(name, ...) with a kebab-case name")
    keys = tuple(dataclasses.replace(key, section=spec.name) for key in spec.keys)
    if keys:
        _check_keys(spec.name, keys)
    options = (*spec.options, *(key.name for key in keys if key.name not in spec.options))
    registered = dataclasses.replace(spec, keys=keys, options=options)
    ALGORITHMS.add(spec.name, registered, origin)
    return registered


def _check_facts(spec: AlgorithmSpec) -> None:
    """A plug-in's facts are of their types and name what exists (a task, privacy modes): ValueError in one line."""
    name = spec.name
    if not isinstance(spec.help, str):
        raise ValueError(f"algorithm {name!r}: help must be a string, got {spec.help!r}")
    if isinstance(spec.privacy, str) or not all(isinstance(mode, str) for mode in spec.privacy):
        raise ValueError(f"algorithm {name!r}: privacy must be a tuple of privacy modes; got {spec.privacy!r}")
    least = spec.least_clients
    if least is not None and not (
        isinstance(least, tuple) and len(least) == 2 and all(type(n) is int and n >= 0 for n in least)
    ):
        raise ValueError(f"algorithm {name!r}: least_clients must be (factor, constant), integers >= 0; got {least!r}")
    try:  # the floor above names the tasks and privacy modes (an entry point loaded while it loads: types only)
        from stamen.contract.run_config import PRIVACY
        from stamen.contract.tasks import TASKS
    except ImportError:
        return
    if spec.task and spec.task not in TASKS:
        raise ValueError(f"algorithm {name!r}: task {spec.task!r} is not one of {', '.join(TASKS)}")
    if any(mode not in PRIVACY for mode in spec.privacy):
        raise ValueError(f"algorithm {name!r}: privacy must be a tuple of {', '.join(PRIVACY)}; got {spec.privacy!r}")


def _check_keys(name: str, keys: tuple[Key, ...]) -> None:
    """A plug-in's keys: kebab-case, each declared once, none a built-in key or another algorithm's."""
    from stamen.contract.run_config import KEYS  # the floor above declares its keys from this registry's names

    taken = {key.name: other for other, spec in ALGORITHMS.items() if other != name for key in spec.keys}
    seen: set[str] = set()
    for key in keys:
        if not isinstance(key, Key) or not re.fullmatch(r"[a-z][a-z0-9-]*", key.name):
            raise ValueError(f"algorithm {name!r}: each key is a stamen.option(name, ...) with a kebab-case name")
        if key.name in KEYS or key.name in seen:
            raise ValueError(f"algorithm {name!r}: key {key.name!r} is already a run-config key; name it otherwise")
        if key.name in taken:
            raise ValueError(f"algorithm {name!r}: key {key.name!r} is declared by algorithm {taken[key.name]!r}")
        seen.add(key.name)


ALGORITHMS: Registry[AlgorithmSpec] = Registry("algorithm", "stamen.algorithms", register_algorithm)
for _spec in _BUILT_INS:
    register_algorithm(_spec, origin=BUILT_IN)


def algorithm_spec(name: str) -> AlgorithmSpec:
    """The spec of ``name``; ValueError in one line (with a suggestion) if there is none."""
    return ALGORITHMS.lookup(name, "algorithm")


def admitting(privacy: str) -> tuple[str, ...]:
    """The algorithms that admit a ``privacy`` mode, in registry order."""
    return tuple(name for name, spec in ALGORITHMS.items() if spec.admits(privacy))


def averaging() -> tuple[str, ...]:
    """The algorithms whose aggregate is a weighted average of the clients' weights, in registry order."""
    return tuple(name for name, spec in ALGORITHMS.items() if spec.averages)


def plugin_keys() -> dict[str, Key]:
    """The run-config keys the registered algorithms declare themselves (:attr:`AlgorithmSpec.keys`), by name."""
    return {key.name: key for spec in ALGORITHMS.values() for key in spec.keys}
