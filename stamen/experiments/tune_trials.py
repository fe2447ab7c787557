"""What a study of ``stamen tune`` is and what it found: its setting (:class:`TuneSpec`), each trial
(:class:`TrialRecord`, :class:`TrialOutcome`) and the study's result (:class:`TuneResult`, :func:`top_trials`).

The study itself is :mod:`stamen.experiments.tune`; its tables and plot :mod:`stamen.experiments.tune_outputs`.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stamen.contract.provenance import Provenance
from stamen.experiments.tune_space import Dimension

DEFAULT_OUT = "tunes"


class TrialOutcome(enum.StrEnum):
    """How a trial ended, as the study's table shows it."""

    COMPLETE = "complete"
    PRUNED = "pruned"
    FAILED = "failed"  # the run failed (e.g. diverged): counted, no value
    INTERRUPTED = "interrupted"  # Ctrl-C or a kill: not counted, run again


@dataclass(frozen=True)
class TuneSpec:
    """One study, as ``stamen tune`` and :func:`stamen.tune` give it.

    Attributes:
        space: the searched keys (:mod:`stamen.experiments.tune_space`).
        trials: the study's trials in all (a re-run continues up to this many).
        run_config: the fixed run-config keys (``-c`` parsed, or the Python API's dict).
        federation_config: Flower's federation keys (``--clients`` folded in), as given.
        sampler_seed: the TPE sampler's seed (the runs' seed is the run config's ``seed``).
        startup: trials drawn at random before TPE models the earlier ones.
        prune: stop trials with MedianPruner; ``prune_startup`` finished trials and
            ``prune_warmup`` rounds come first.
        top: configs shown in the table.
        provenance: who started the study, recorded in ``tune.json`` and each trial's run (``None``: this
            process's).
    """

    space: list[Dimension]
    trials: int
    run_config: dict[str, Any] = field(default_factory=dict)
    federation_config: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    out: str = DEFAULT_OUT
    sampler_seed: int = 0
    startup: int = 5
    prune: bool = True
    prune_startup: int = 3
    prune_warmup: int = 5
    top: int = 5
    provenance: Provenance | None = None

    def setting(self) -> dict[str, Any]:
        """What makes the study this study: a resumed one must give the same."""
        return {
            "space": [item.text() for item in self.space],
            "run_config": dict(self.run_config),  # as values: -c "a=1 b=2" is -c a=1 -c b=2
            "federation_config": dict(self.federation_config),
            "sampler_seed": self.sampler_seed,
            "startup": self.startup,
            "prune": self.prune,
            "prune_startup": self.prune_startup,
            "prune_warmup": self.prune_warmup,
        }


@dataclass(frozen=True)
class TrialRecord:
    """One trial: its values, how it ended, its objective and the figures beside it, its run folder."""

    number: int
    outcome: TrialOutcome
    params: dict[str, Any]
    best_val_acc: float | None
    best_round: int | None
    test_acc_at_best_val: float | None
    final_val_acc: float | None
    rounds: int
    run_dir: str
    error: str = ""
    repeat_of: int | None = None  # the earlier trial of the same values, whose result this is (not run again)

    def row(self) -> dict[str, Any]:
        """As in ``tune.json``: the figures' field names are their declared names (a test keeps them so)."""
        return {**asdict(self), "outcome": self.outcome.value}


@dataclass(frozen=True)
class TuneResult:
    """A study that ran: its folder, every trial in order, and the best completed ones (top ``k``)."""

    folder: Path
    trials: list[TrialRecord]
    top: list[TrialRecord]

    @property
    def best(self) -> TrialRecord | None:
        return self.top[0] if self.top else None


def top_trials(found: list[TrialRecord], k: int) -> list[TrialRecord]:
    """The ``k`` completed trials of highest objective (ties: the earlier trial first), each config once."""
    complete = [
        r for r in found if r.outcome is TrialOutcome.COMPLETE and r.best_val_acc is not None and r.repeat_of is None
    ]
    return sorted(complete, key=lambda r: (-r.best_val_acc, r.number))[:k]  # type: ignore[operator]
