"""Live tracking: each round's figures handed to TensorBoard, MLflow and W&B while the run goes.

The round loop's row callback (:func:`stamen.server.app.train_and_report`) hands each row, as
encoded for ``metrics.jsonl``, to :meth:`Tracking.record` on the run's record writer
(:class:`stamen.server.writer.BehindWriter`), right after the row's own write: a tracker sees a
round only once its row is on its way to disk, in round order, and never changes a row,
so the figures of a run are the same whatever ``tracking`` names (:mod:`stamen.contract.tracking`).

What a row gives a tracker (:func:`figures`): every number of the row except ``round``
(the step) and booleans, split in two groups by the names of :mod:`stamen.contract.figures`:

- ``metrics``: accuracies, the loss, epsilons, the clients counted, and each client's test
  accuracies (``client_<partition>/test_acc``);
- ``timings``: the keys of :data:`stamen.contract.figures.ROW_TIMINGS` (wall times in seconds).

TensorBoard (:class:`TensorBoardTracker`): tags ``metrics/<name>`` and ``timings/<name>``,
step = round, the event file flushed after every round (``tensorboard --logdir <output-dir>``
shows a run while it trains). A resumed run's writer purges the steps from the checkpoint's
round on, which the run computes again.

MLflow (:class:`MlflowTracker`): one MLflow run per run directory in the experiment
``stamen`` (a sweep's or study's unit: in the group's experiment and store, with its tags,
:mod:`stamen.contract.tracking_group`); params = the run config; metrics = ``<name>`` for the metrics group and
``timings/<name>`` for timings, step = round. Its store is ``$MLFLOW_TRACKING_URI`` when set,
else ``sqlite:///<run-dir>/mlflow.db`` (MLflow 3 refuses a plain-folder store unless an
environment variable allows it; a file in the run directory needs none:
``mlflow ui --backend-store-uri sqlite:///<run-dir>/mlflow.db``). The MLflow run id is
kept in ``status.json``; a resumed run continues that MLflow run (its rows from the
checkpoint's round on are logged again, a second value at the same step), or, when the
store no longer holds it, starts a new one tagged ``stamen.resumed_from``.

W&B (:class:`WandbTracker`): one W&B run in W&B's offline mode (never online, never a login, no
network), all of it in ``<run-dir>/wandb/``: its offline run folder (``offline-run-<time>-<id>/``,
``wandb sync <run-dir>/wandb`` uploads it), and the cache, config and data folders of W&B's
service process (``.cache/``, ``.config/``, ``.data/``; W&B's own folders in the home directory
are never made). Its config = the run config; each row's figures logged at step = round under the
names MLflow gets; a sweep's or study's unit: W&B's group = the group's experiment (``sweep NAME``),
its tags ``key=value``. W&B's lines go to its own logs there, never to the screen. The service
process (``wandb-core``) this tracker starts is ended when the run ends, as it ends (finished,
failed or Ctrl-C: :meth:`WandbTracker.close`); should the run's process die at once (``kill -9``),
the service sees its parent gone and exits by itself. A resumed run is a new W&B run, tagged
``stamen.resumed_from_round``.

A tracker that fails to start (a store a bad ``MLFLOW_TRACKING_URI`` names) or later (a full disk,
an MLflow server gone) is dropped with one warning in the run's log; the run and its
``metrics.jsonl`` go on.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from logging import WARNING
from pathlib import Path
from typing import Any, Protocol

from flwr.common import log

from stamen.contract.figures import GLOBAL_TEST_ACC, ROUND, ROW_TIMINGS, TEST_ACC
from stamen.contract.run_config import RunConfig
from stamen.contract.tracking_group import TrackingGroup, current_group

MLFLOW_DB = "mlflow.db"
MLFLOW_EXPERIMENT = "stamen"
WANDB_FOLDER = "wandb"  # in the run directory: W&B's offline runs (its own name for the folder) and its homes
WANDB_PROJECT = "stamen"
WANDB_HOMES = {"WANDB_CACHE_DIR": ".cache", "WANDB_CONFIG_DIR": ".config", "WANDB_DATA_DIR": ".data",
               "WANDB_ARTIFACT_DIR": ".artifacts"}  # fmt: skip
WANDB_TAG_LENGTH = 64  # W&B refuses a longer tag
CLIENT_FIGURES = (TEST_ACC, GLOBAL_TEST_ACC)  # each client's figures tracked (as the curves show them)


class Group(StrEnum):
    """The two kinds of figure a row holds."""

    METRICS = "metrics"
    TIMINGS = "timings"


class Ending(StrEnum):
    """How the run ended, for the trackers that record it."""

    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"


@dataclass(frozen=True)
class Figure:
    """One number of a row: its group, its name within the group, its value."""

    group: Group
    name: str
    value: float


def figures(row: dict[str, Any]) -> list[Figure]:
    """Every numeric figure of ``row`` (not ``round``, not booleans, not ``null``), by group."""
    found = []
    for key, value in row.items():
        if key != ROUND and _is_number(value):
            found.append(Figure(Group.TIMINGS if key in ROW_TIMINGS else Group.METRICS, key, float(value)))
    for pid, client in sorted(row.get("per_client", {}).items(), key=lambda item: int(item[0])):
        for key in CLIENT_FIGURES:
            if _is_number(client.get(key)):
                found.append(Figure(Group.METRICS, f"client_{pid}/{key}", float(client[key])))
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class Tracker(Protocol):
    """What every tracker does: record one row, then close once with the run's ending."""

    name: str

    def record(self, row: dict[str, Any]) -> None: ...

    def close(self, ending: Ending) -> None: ...


class TensorBoardTracker:
    """An event file in the run directory, each round's events written and flushed before the next round's.

    tensorboardX's ``SummaryWriter`` queues events to a thread of its own and flushes on a
    timer (its ``flush()`` does not wait for that queue); the records thread this runs on
    is already off the round loop, so events are written here directly, in order.
    """

    name = "tensorboard"

    def __init__(self, run_dir: Path, resumed_round: int | None) -> None:
        # on use: tensorboardX stays out of this module's import
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto.event_pb2 import Event, SessionLog

        suffix = f".stamen-{os.getpid()}-{resumed_round or 0}"  # a resume within the same second: a file of its own
        self._events = EventsWriter(str(run_dir / "events"), suffix)
        if resumed_round is not None:  # the rounds from the checkpoint's on run again: TensorBoard drops their events
            self._events.write_event(Event(step=resumed_round, file_version="brain.Event:2"))
            self._events.write_event(Event(step=resumed_round, session_log=SessionLog(status=SessionLog.START)))
        self._events.flush()

    def record(self, row: dict[str, Any]) -> None:
        # on use: tensorboardX stays out of this module's import
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary

        values = [Summary.Value(tag=f"{f.group}/{f.name}", simple_value=f.value) for f in figures(row)]
        # one event per round holds every figure (TensorBoard reads each value as its own scalar)
        self._events.write_event(Event(wall_time=time.time(), step=int(row[ROUND]), summary=Summary(value=values)))
        self._events.flush()

    def close(self, ending: Ending) -> None:
        self._events.close()


class MlflowTracker:
    """One MLflow run: the run config as params, each row's figures as metrics (step = round)."""

    name = "mlflow"

    def __init__(self, run_dir: Path, config: RunConfig, status: dict[str, Any]) -> None:
        # on use: mlflow stays out of this module's import
        from mlflow.tracking import MlflowClient

        group = current_group()  # a sweep's or study's unit: its experiment and store, its tags
        own = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(run_dir / MLFLOW_DB).resolve()}"
        self.uri = group.uri if group else own
        self._client = MlflowClient(tracking_uri=self.uri)
        earlier = status.get("mlflow_run_id") if status.get("mlflow_tracking_uri") == self.uri else None
        self.run_id = self._continued(earlier) if earlier else None
        if self.run_id is None:
            name = group.experiment if group else MLFLOW_EXPERIMENT
            experiment_id = self._experiment(name)
            tags = {"stamen.run_dir": str(run_dir), **(group.tags if group else {})}
            if status.get("mlflow_run_id"):
                tags["stamen.resumed_from"] = str(status["mlflow_run_id"])
            self.run_id = self._client.create_run(experiment_id, run_name=run_dir.name, tags=tags).info.run_id
        self._log_params(config)

    def _experiment(self, name: str) -> str:
        """The id of experiment ``name``, made if the store has none (another unit may make it at the same time)."""
        # optional: mlflow (stamen[mlflow])
        from mlflow.exceptions import MlflowException

        found = self._client.get_experiment_by_name(name)
        if found:
            return str(found.experiment_id)
        try:
            return str(self._client.create_experiment(name))
        except MlflowException:  # made by a unit running beside this one
            again = self._client.get_experiment_by_name(name)
            if again is None:
                raise
            return str(again.experiment_id)

    def _continued(self, run_id: str) -> str | None:
        """``run_id`` set running again, or None when the store does not hold it."""
        # on use: mlflow stays out of this module's import
        from mlflow.exceptions import MlflowException

        try:
            self._client.get_run(run_id)
        except MlflowException:
            return None
        self._client.update_run(run_id, status="RUNNING")
        return run_id

    def _log_params(self, config: RunConfig) -> None:
        """The run config as params; a resumed run's changed keys (MLflow keeps a param's first value) as tags."""
        # on use: mlflow stays out of this module's import
        from mlflow.entities import Param, RunTag

        logged = self._client.get_run(self.run_id).data.params
        values = {key: str(value) for key, value in config.to_flower().items()}
        params = [Param(k, v) for k, v in values.items() if k not in logged]
        tags = [RunTag(f"stamen.resumed.{k}", v) for k, v in values.items() if k in logged and logged[k] != v]
        for start in range(0, max(len(params), len(tags)), 100):  # MLflow's batch limit
            self._client.log_batch(self.run_id, params=params[start : start + 100], tags=tags[start : start + 100])

    def record(self, row: dict[str, Any]) -> None:
        # on use: mlflow stays out of this module's import
        from mlflow.entities import Metric

        step, stamp = int(row[ROUND]), int(time.time() * 1000)
        metrics = [
            Metric(f.name if f.group is Group.METRICS else f"{f.group}/{f.name}", f.value, stamp, step)
            for f in figures(row)
        ]
        self._client.log_batch(self.run_id, metrics=metrics)

    def close(self, ending: Ending) -> None:
        self._client.set_terminated(self.run_id, status=ending.value)


class WandbTracker:
    """One W&B run in offline mode, all of it in ``<run-dir>/wandb/``: the run config as its config, each row's
    figures logged at step = round; the service process it starts ends with it."""

    name = "wandb"
    EXIT_CODES = {Ending.FINISHED: 0, Ending.FAILED: 1, Ending.KILLED: 255}  # W&B's own code for Ctrl-C: 255

    def __init__(self, run_dir: Path, config: RunConfig, resumed_round: int | None) -> None:
        # on use: wandb stays out of this module's import
        import wandb

        group = current_group()
        tags = [f"{key}={value}" for key, value in (group.tags if group else {}).items()]
        if resumed_round is not None:
            tags.append(f"stamen.resumed_from_round={resumed_round}")
        folder = run_dir / WANDB_FOLDER
        folder.mkdir(exist_ok=True)
        # a service this process has not started yet is this run's: ended with it (W&B hands its address on in
        # WANDB_SERVICE), and the exit hooks W&B puts in place while it runs are put back
        self._owned = wandb.env.SERVICE not in os.environ
        self._hooks = (sys.exit, sys.excepthook)
        settings = wandb.Settings(
            silent=True, console="off", disable_git=True, save_code=False, x_disable_stats=True, x_disable_meta=True,
            x_disable_machine_info=True, x_save_requirements=False,
        )  # fmt: skip
        try:
            with _wandb_environment(run_dir, folder):
                self._run = wandb.init(
                    mode="offline", dir=run_dir, project=WANDB_PROJECT, name=run_dir.name,
                    group=group.experiment if group else None, tags=[tag[:WANDB_TAG_LENGTH] for tag in tags],
                    config=config.to_flower(), reinit="create_new", settings=settings,
                )  # fmt: skip
        except BaseException:
            self._end_service()
            raise

    def record(self, row: dict[str, Any]) -> None:
        values = {f.name if f.group is Group.METRICS else f"{f.group}/{f.name}": f.value for f in figures(row)}
        try:
            self._run.log(values, step=int(row[ROUND]))
        except Exception:  # dropped from here on (Tracking): its run closed as failed, its service ended now
            with contextlib.suppress(Exception):
                self.close(Ending.FAILED)
            raise

    def close(self, ending: Ending) -> None:
        try:
            self._run.finish(exit_code=self.EXIT_CODES[ending])
        finally:
            self._end_service()

    def _end_service(self) -> None:
        """End the service process this tracker started (none started: nothing to end)."""
        if not self._owned:
            return
        # on use: wandb stays out of this module's import
        import wandb

        self._owned = False
        try:
            wandb.teardown()
        finally:
            sys.exit, sys.excepthook = self._hooks


@contextlib.contextmanager
def _wandb_environment(run_dir: Path, folder: Path) -> Iterator[None]:
    """W&B's folders in ``folder`` (and its runs in ``run_dir``) while its run and service process start, and
    its error reports off (no network); the earlier values after."""
    values = {"WANDB_DIR": str(run_dir), "WANDB_ERROR_REPORTING": "false", "WANDB_SILENT": "true"}
    values |= {variable: str(folder / name) for variable, name in WANDB_HOMES.items()}
    earlier = {variable: os.environ.get(variable) for variable in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for variable, value in earlier.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value


def prepare_group_store(group: TrackingGroup) -> None:
    """Make ``group``'s store and experiment once, before its units start side by side in processes of their own
    (each would otherwise create the store's tables at the same moment, and all but one fail)."""
    # optional: mlflow (stamen[mlflow])
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=group.uri)
    if client.get_experiment_by_name(group.experiment) is None:
        client.create_experiment(group.experiment)


class Tracking:
    """The trackers a run's config names, fed together; one that fails is dropped with a warning."""

    def __init__(self, trackers: list[Tracker]) -> None:
        self._trackers = list(trackers)

    @classmethod
    def open(cls, config: RunConfig, run_dir: Path, status: dict[str, Any], resumed_round: int | None) -> Tracking:
        """Start the trackers of ``config.tracking`` for the run in ``run_dir``.

        ``status``: the run's ``status.json`` (a resumed run's MLflow run id); ``resumed_round``:
        the checkpoint's round of a resumed run, else None. What ``status.json`` keeps of
        them: :meth:`status_fields`.
        """
        trackers: list[Tracker] = []
        for name in config.trackers():
            try:
                if name == TensorBoardTracker.name:
                    trackers.append(TensorBoardTracker(run_dir, resumed_round))
                elif name == MlflowTracker.name:
                    trackers.append(MlflowTracker(run_dir, config, status))
                elif name == WandbTracker.name:
                    trackers.append(WandbTracker(run_dir, config, resumed_round))
            except Exception as error:  # a store that cannot be reached or made (a bad MLFLOW_TRACKING_URI): run on
                reason = " ".join(str(error).split())
                log(WARNING, "stamen: tracking %s could not start (%s: %s); the run goes on without it, "
                    "metrics.jsonl keeps every round", name, type(error).__name__, reason)  # fmt: skip
        return cls(trackers)

    @property
    def active(self) -> bool:
        """Whether any tracker is recording."""
        return bool(self._trackers)

    def status_fields(self) -> dict[str, str]:
        """What ``status.json`` keeps of the trackers: the MLflow run, for a resume to continue."""
        for tracker in self._trackers:
            if isinstance(tracker, MlflowTracker):
                return {"mlflow_run_id": str(tracker.run_id), "mlflow_tracking_uri": tracker.uri}
        return {}

    def record_line(self, line: str) -> None:
        """Record one row, given as its line of ``metrics.jsonl`` (its figures fixed when it was handed over)."""
        if self._trackers:
            self._each(lambda tracker, row: tracker.record(row), json.loads(line))

    def close(self, ending: Ending) -> None:
        self._each(lambda tracker, _: tracker.close(ending), None)
        self._trackers = []

    def _each(self, call, row: dict[str, Any] | None) -> None:  # a tracker and its row
        for tracker in list(self._trackers):
            try:
                call(tracker, row)
            except Exception as error:  # a copy of the figures failed: the run goes on
                self._trackers.remove(tracker)
                where = f"at round {row[ROUND]}" if row else "while closing"
                log(WARNING, "stamen: tracking %s stopped %s (%s: %s); metrics.jsonl keeps every round",
                    tracker.name, where, type(error).__name__, error)  # fmt: skip
