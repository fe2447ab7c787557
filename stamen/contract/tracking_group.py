"""A tracking group: the runs of one sweep or study tracked together, as MLflow's users compare them.

A sweep (``stamen sweep``, :func:`stamen.sweep`) or a study (``stamen tune``) is one MLflow
experiment, named after it, in one store, with an MLflow run per unit (a sweep's run, a study's
trial), tagged with what sets the unit apart: ``stamen.sweep`` (or ``stamen.study``), its swept values
(``stamen.grid.<key>``) and its seed. The unit's params are its run config, as for any run, so
MLflow's UI lines the units up by their keys. For W&B the same group is W&B's ``group`` (the
experiment's name) and the tags are W&B tags ``<tag>=<value>``: the synced units are one group.

The sweep or study hands its group to each unit's run through the environment variable
:data:`GROUP_VARIABLE` (a JSON object; the ServerApp reads it where the run is tracked,
:mod:`stamen.server.tracking`): set around an in-process unit (:func:`tracking_group`) and in a unit
process's environment (:func:`group_environment`). It is read as data only; a value that is not a
group's JSON is ignored, the run tracked alone.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

GROUP_VARIABLE = "STAMEN_TRACKING_GROUP"
GROUP_STORE = "mlflow.db"  # a group's store in its folder, where $MLFLOW_TRACKING_URI names none


@dataclass(frozen=True)
class TrackingGroup:
    """One sweep's or study's tracking: its store, its experiment and a unit's tags."""

    experiment: str
    uri: str
    tags: dict[str, str] = field(default_factory=dict)

    def encode(self) -> str:
        return json.dumps({"experiment": self.experiment, "uri": self.uri, "tags": self.tags}, sort_keys=True)

    @classmethod
    def decode(cls, text: str | None) -> TrackingGroup | None:
        """The group ``text`` encodes; None for none, or for a text that is not one."""
        try:
            value = json.loads(text) if text else None
        except ValueError:
            return None
        if not isinstance(value, dict) or not all(isinstance(value.get(k), str) for k in ("experiment", "uri")):
            return None
        tags = value.get("tags", {})
        if not isinstance(tags, dict):
            return None
        return cls(value["experiment"], value["uri"], {str(k): str(v) for k, v in tags.items()})


def group_of(
    kind: str, name: str, folder: os.PathLike[str] | str, values: Mapping[str, object], seed: int
) -> TrackingGroup:
    """The group of one unit of the sweep or study (``kind``: ``sweep`` or ``study``) ``name`` written in
    ``folder``: the experiment ``<kind> <name>``, the store ``$MLFLOW_TRACKING_URI`` or ``folder``'s
    :data:`GROUP_STORE`, the unit's swept values and seed as tags."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{os.path.abspath(os.path.join(folder, GROUP_STORE))}"
    tags = {f"stamen.{kind}": name, "stamen.seed": str(seed)}
    tags |= {f"stamen.grid.{key}": _text(value) for key, value in values.items()}
    return TrackingGroup(f"{kind} {name}", uri, tags)


def current_group() -> TrackingGroup | None:
    """The group the environment hands this run, if any."""
    return TrackingGroup.decode(os.environ.get(GROUP_VARIABLE))


@contextlib.contextmanager
def tracking_group(group: TrackingGroup) -> Iterator[None]:
    """``group`` in this process's environment while an in-process unit runs; the earlier value after."""
    earlier = os.environ.get(GROUP_VARIABLE)
    os.environ[GROUP_VARIABLE] = group.encode()
    try:
        yield
    finally:
        if earlier is None:
            os.environ.pop(GROUP_VARIABLE, None)
        else:
            os.environ[GROUP_VARIABLE] = earlier


def group_environment(group: TrackingGroup) -> dict[str, str]:
    """This process's environment with ``group`` set, for a unit's own process."""
    return {**os.environ, GROUP_VARIABLE: group.encode()}


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
