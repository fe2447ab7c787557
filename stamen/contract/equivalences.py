"""Settings under which an algorithm computes exactly what another does, said once where its figures appear.

A comparison of FedProx and FedAvg where a client takes one local step a round (``local-epochs=1`` on a
full-batch task, :attr:`stamen.contract.tasks.TaskSpec.full_batch`) shows two equal columns: FedProx's
proximal term :math:`\\frac{\\mu}{2}\\lVert w - w_t\\rVert^2` has the gradient :math:`\\mu (w - w_t)`, which
is zero at the received weights :math:`w = w_t`, where that only step is taken; with ``proximal-mu=0`` it is
zero everywhere. Graph classification's epoch is a step per mini-batch of ``graph-batch-size`` graphs, so
there FedProx differs from FedAvg at ``local-epochs=1`` as soon as a client holds more graphs than a batch.
GCFL that never splits keeps one cluster, whose aggregate is FedAvg's to the bit
(:mod:`stamen.algorithms.gcfl.server`). Nothing says so in the numbers themselves, so
:func:`config_notes` (from the run config, before the run) and :func:`run_notes` (from its rows, after)
give the line that does; a run's ``summary.json`` keeps them under ``notes``, and ``stamen run``,
``stamen sweep`` and ``stamen compare`` print each once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stamen.contract.algorithms import ALGORITHMS, Condition
from stamen.contract.figures import CLUSTER_SPLITS, CLUSTERS
from stamen.contract.run_config import RunConfig


def config_notes(config: RunConfig) -> list[str]:
    """What ``config``'s algorithm equals under its settings, from its spec's ``equals_when``, and what its settings
    make of its figures, from its spec's ``notes_when`` (empty: nothing)."""
    spec = ALGORITHMS[config.algorithm]
    notes = [note for key, value, note in spec.notes_when if config.option(key) == value]
    for key, value, why in spec.equals_when:
        if isinstance(key, Condition):
            if key.holds(config) == value:
                return [f"{spec.name} with {key.words} is {spec.equals}: {why}", *notes]
        elif config.option(key) == value:
            shown = f"{value:g}" if isinstance(value, float) else value
            return [f"{spec.name} with {key}={shown} is {spec.equals}: {why}", *notes]
    return notes


def run_notes(rows: list[dict[str, Any]]) -> list[str]:
    """What a run equalled, from its rows (empty: nothing): GCFL without a split is FedAvg."""
    clustered = [row for row in rows if CLUSTERS in row]
    if clustered and len(clustered[-1][CLUSTERS]) == 1 and not any(row.get(CLUSTER_SPLITS) for row in rows):
        return [
            "gcfl never split its one cluster: every round's aggregate was fedavg's (a higher gcfl-eps1 or a lower "
            "gcfl-eps2 lets it split)"
        ]
    return []


def notes_once(named: Iterable[tuple[str, Iterable[str]]]) -> list[str]:
    """Each note of several runs or configs (``(name, notes)`` pairs) once, with the names it holds for:
    ``fedprox-a, fedprox-b: fedprox with proximal-mu=0 is fedavg: ...``."""
    where: dict[str, list[str]] = {}
    for name, notes in named:
        for note in dict.fromkeys(notes):
            where.setdefault(note, []).append(name)
    return [f"{', '.join(names)}: {note}" for note, names in where.items()]
