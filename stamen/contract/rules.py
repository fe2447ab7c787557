"""The rules between run-config keys, read from the registries (never from a second list).

- ``privacy`` x ``algorithm``: the algorithm's spec admits the privacy mode
  (:mod:`stamen.contract.algorithms`); node classification's DP-SGD needs a decoupled model
  (:mod:`stamen.models.names`; graph classification's records are whole graphs,
  :mod:`stamen.tasks.graph_classification.dp_sgd`).
- ``resume-from``: not with a privacy mode (the clients' accountants would start
  empty), not with an algorithm whose spec is not ``resumable``, not with an unlearning
  method whose spec ``replays_history`` (:mod:`stamen.contract.unlearn_methods`).
- ``task``: the task's spec admits the algorithm, model, dataset, privacy and settings
  (:mod:`stamen.contract.tasks`); ``link-val-frac + link-test-frac < 1`` (training edges get the rest).
- ``train-frac + val-frac < 1``: the test split gets the rest.
- ``attack`` and ``malicious-clients``: both or neither; an attack needs an algorithm
  that aggregates (:mod:`stamen.client.attacks`).
- ``local-eval=false``: only on an algorithm that aggregates (its figures are then the global
  model's; a personalised algorithm's figures are its clients' models).
- an algorithm's own rule, its spec's ``check`` (fedsage+: ``fedsage-schedule='paper'`` needs
  ``fedsage-gen-rounds <= num-server-rounds``, one generator step per round).
- ``secure-aggregation``: only with an algorithm whose spec ``averages`` (the server
  gets a weighted sum, nothing else), not with ``client-dp`` (its server-side clipping
  and noise need each update in the clear; DP-SGD on top is distributed DP), not with
  an unlearning request (its methods read or replay single clients' updates), and with
  ``min-clients >= 2`` (the sum of one update is that update).

Each rule fails with one line naming the keys and what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stamen.common.suggest import one_of
from stamen.contract.algorithms import ALGORITHMS, admitting, averaging
from stamen.contract.tasks import check_task
from stamen.contract.unlearn_methods import UNLEARN_METHOD_SPECS
from stamen.models.names import encoder_has_weights

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig

# Why a privacy mode constrains the algorithm, for the error line.
PRIVACY_NEEDS = {
    "dp-sgd": "trains with plain DP-SGD",
    "client-dp": "adds noise to an aggregate",
}


def check_rules(config: RunConfig) -> None:
    """ValueError in one line at the first rule ``config`` breaks."""
    if config.train_frac + config.val_frac >= 1:
        raise ValueError(
            f"train-frac + val-frac must be < 1 (the test split gets the rest), "
            f"got {config.train_frac} + {config.val_frac}"
        )
    check_task(config)  # the task's own rules too (its spec's check)
    spec = ALGORITHMS[config.algorithm]
    if config.privacy != "none":
        _check_privacy(config)
    _check_attack(config)
    if not config.local_eval and not spec.aggregates:
        raise ValueError(
            f"local-eval=false leaves algorithm={config.algorithm!r} with no figures: it keeps no global model, "
            "its clients' models are what it reports; set local-eval=true"
        )
    if spec.shares_encoder and not encoder_has_weights(config.model, config.num_layers):
        raise ValueError(
            f"algorithm={config.algorithm!r} shares the encoder, and model={config.model!r} with "
            f"num-layers={config.num_layers} has no encoder weights; choose a model with a trained encoder "
            "(gcn, sage, gat, appnp, or mlp with num-layers >= 2)"
        )
    if config.unlearn_request and not spec.unlearnable:
        raise ValueError(
            f"unlearn-request edits or retrains the run's global node classifier, which algorithm="
            f"{config.algorithm!r} does not train as FedAvg's clients do; use fedavg, fedprox or a strategy on "
            "their clients, or leave unlearn-request empty"
        )
    if config.secure_aggregation:
        _check_secure_aggregation(config)
    if spec.check is not None:  # the algorithm's own rule (fedsage+'s schedule against the rounds)
        spec.check(config)
    if not config.resume_from:
        return
    if config.privacy != "none":
        raise ValueError(
            f"resume-from cannot continue a privacy={config.privacy!r} run: a resumed run is a new Flower run, "
            "its clients' accountants start empty and the reported epsilon would undercount; start a new run"
        )
    if not spec.resumable:
        raise ValueError(
            f"resume-from cannot continue an algorithm={config.algorithm!r} run: its server state between rounds "
            "is not in the checkpoint, so the resumed run would differ from an uninterrupted one; start a new run"
        )
    method = UNLEARN_METHOD_SPECS[config.unlearn_method]
    if config.unlearn_request and method.replays_history:
        raise ValueError(
            f"unlearn-method={method.name!r} replays every round's client updates, which a resumed run lacks "
            "before its checkpoint; choose another unlearn-method"
        )


def _check_privacy(config: RunConfig) -> None:
    if not ALGORITHMS[config.algorithm].admits(config.privacy):
        raise ValueError(
            f"privacy={config.privacy!r} {PRIVACY_NEEDS[config.privacy]}: use algorithm "
            f"{one_of(admitting(config.privacy))}, not {config.algorithm!r}"
        )


def _check_attack(config: RunConfig) -> None:
    """``attack`` and ``malicious-clients`` come together, on an algorithm that aggregates."""
    if (config.attack == "none") != (config.malicious_clients == ""):
        missing = "malicious-clients (a count or partition ids)" if config.attack != "none" else "attack"
        raise ValueError(
            f"attack={config.attack!r} with malicious-clients={config.malicious_clients!r}: "
            f"an attack needs both keys; set {missing}, or neither for no attack"
        )
    if config.attack != "none" and not ALGORITHMS[config.algorithm].aggregates:
        raise ValueError(
            f"attack={config.attack!r} needs an algorithm that aggregates the clients' replies; "
            f"algorithm={config.algorithm!r} does not"
        )


def _check_secure_aggregation(config: RunConfig) -> None:
    if not ALGORITHMS[config.algorithm].averages:
        raise ValueError(
            f"secure-aggregation=true gives the server only a weighted sum of the clients' weights, which "
            f"algorithm={config.algorithm!r} does not aggregate by; use algorithm {one_of(averaging())} "
            "or secure-aggregation=false"
        )
    if config.privacy == "client-dp":
        raise ValueError(
            "secure-aggregation=true hides each client's update, which privacy='client-dp' clips and noises "
            "on the server; use privacy='dp-sgd' (distributed DP: each client's noisy update is summed securely)"
        )
    if config.unlearn_request:
        raise ValueError(
            "secure-aggregation=true hides each client's update, which unlearning reads or replays; "
            "leave unlearn-request empty or set secure-aggregation=false"
        )
    if config.min_clients < 2:
        raise ValueError(
            f"secure-aggregation=true needs min-clients >= 2 (the sum of one client's update is that update), "
            f"got min-clients={config.min_clients}"
        )
