"""Live tracking of a run: the trackers a run can feed each round, declared once (names, help, extras).

The run-config key ``tracking`` names them: ``none`` (the default), one tracker
(``tensorboard``, ``mlflow``, ``wandb``) or several joined by commas (``tensorboard,mlflow``), each
at most once; the order does not matter. Each round's row is handed to every tracker
named (:mod:`stamen.server.tracking`) as it is written to ``metrics.jsonl``; a tracker copies
the row's figures and never changes one, so the figures of a run are the same with any
value of ``tracking``.

A tracker's package is an optional extra of Stamen (``pip install 'stamen[mlflow]'``):
:func:`missing_tracker` names the one a run asks for and cannot import, checked before
any slow work (the command's pre-flight, and the ServerApp of a plain ``flwr run``).

``tensorboard=true``, the key before ``tracking`` (in earlier experiment files and run
directories), still reads as ``tracking='tensorboard'`` (:func:`translate_retired`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stamen.common.suggest import did_you_mean

NONE = "none"


@dataclass(frozen=True)
class TrackerSpec:
    """One tracker: its help line, the module it needs and the extra that installs it."""

    help: str
    module: str
    extra: str


TRACKERS: dict[str, TrackerSpec] = {
    "tensorboard": TrackerSpec(
        "TensorBoard event files in the run directory, written and flushed each round", "tensorboardX", "tensorboard"
    ),
    "mlflow": TrackerSpec(
        "an MLflow run: the run config as params, each round's figures as metrics (step = round); "
        "store: $MLFLOW_TRACKING_URI, else <run-dir>/mlflow.db; a sweep or study: one experiment, a run per unit",
        "mlflow",
        "mlflow",
    ),
    "wandb": TrackerSpec(
        "a Weights & Biases run in offline mode, kept in <run-dir>/wandb (never online, no login): the run config "
        "as its config, each round's figures logged at step = round; a sweep or study: one W&B group; "
        "upload with wandb sync",
        "wandb",
        "wandb",
    ),
}
TRACKING_FORM_TEXT = f"{NONE!r} or tracker names joined by commas, each once: " + ", ".join(TRACKERS)


def trackers(text: str) -> tuple[str, ...]:
    """The trackers ``text`` names (``()`` for ``none`` or empty); ValueError naming a wrong one."""
    names = [part.strip() for part in text.split(",")]
    if [n for n in names if n] in ([], [NONE]):
        return ()
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(
            f"tracking={text!r}: {unknown[0]!r} is no tracker{did_you_mean(unknown[0], TRACKERS)}; "
            f"give {TRACKING_FORM_TEXT}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"tracking={text!r} names a tracker twice; give each once")
    return tuple(names)


def is_tracking(text: str) -> bool:
    """The form of ``tracking`` (a ValueError naming the problem otherwise)."""
    trackers(text)
    return True


def missing_tracker(text: str) -> str:
    """The one line for the first tracker of ``text`` whose package is not installed; ``""`` when all are."""
    for name in trackers(text):
        spec = TRACKERS[name]
        if importlib.util.find_spec(spec.module) is None:
            return f"tracking={text!r}: {name} needs {spec.module}: pip install 'stamen[{spec.extra}]'"
    return ""


def translate_retired(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with ``tensorboard=true`` read as ``tensorboard`` added to ``tracking`` (false: dropped)."""
    values = dict(values)
    if "tensorboard" not in values:
        return values
    old = values.pop("tensorboard")
    if old is True or (isinstance(old, str) and old.strip().lower() == "true"):
        named = list(trackers(str(values.get("tracking", NONE))))
        values["tracking"] = ",".join(dict.fromkeys([*named, "tensorboard"]))
    elif not (old is False or (isinstance(old, str) and old.strip().lower() == "false")):
        raise ValueError(f"tensorboard must be true or false, got {old!r} (it is now tracking='tensorboard')")
    return values
