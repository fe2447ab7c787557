"""One federated run from Python: :func:`run` trains, :func:`load` reads a run folder, both give a :class:`Run`.

:func:`run` is ``stamen run``: its dict becomes the typed run config
(:meth:`stamen.contract.run_config.RunConfig.from_mapping`, the command line's constructor), and the
typed entry that the command calls too (:func:`stamen.simulations.runner.run`) checks it, takes the run
directory's lock, trains on the engine asked for, and records the run's status, outputs and provenance
(``stamen.run({...}, clients=3)``); only the printing is the command's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stamen.config import Config, call_text, federation_config, run_config
from stamen.contract.figures import headline_key
from stamen.contract.provenance import Provenance
from stamen.server.rundir import RunDirectory, RunStatus
from stamen.simulations.errors import EnvironmentFailed, is_bad_input, one_line, os_error_line
from stamen.tables import data_frame

if TYPE_CHECKING:
    import pandas


@dataclass(frozen=True, repr=False)
class Run:
    """A run folder's records, as read once.

    Its ``repr`` is one line: the folder, the status, the rounds trained and the headline test figure
    (:func:`stamen.contract.figures.headline`) at the last round, e.g.
    ``Run('runs/csbm-fedavg', finished, 20 rounds, global_test_acc=0.8040)``.

    Attributes:
        dir: the run directory.
        config: the run config it trained with (``config.json``, kebab-case keys).
        status: running, finished, failed or interrupted (``None``: a folder of an early
            version that recorded none).
        rows: one dict per round, exactly as in ``metrics.jsonl``.
        summary: ``summary.json`` (empty until the run wrote one: an interrupted run).
    """

    dir: Path
    config: dict[str, Any]
    status: RunStatus | None
    rows: list[dict[str, Any]]
    summary: dict[str, Any]

    def __repr__(self) -> str:
        status = self.status.value if self.status is not None else "status unknown"
        trained = self.summary.get("rounds")
        if trained is None:  # no summary yet (an interrupted or running run): the rows trained so far
            trained = sum(1 for row in self.rows if "seconds" in row)
        last = self.summary.get("final") or (self.rows[-1] if self.rows else {})
        key = headline_key(last)
        figure = "" if key is None else f", {key}={_figure_text(last[key])}"
        return f"Run({_path_text(self.dir)!r}, {status}, {trained} round{'' if trained == 1 else 's'}{figure})"

    @property
    def degraded(self) -> bool:
        """The run finished without some of its clients (``stamen run``'s exit 3)."""
        return bool(self.summary.get("degraded"))

    def to_pandas(self) -> pandas.DataFrame:
        """The rows as a DataFrame, one row per round (needs pandas: ``pip install 'stamen[pandas]'``)."""
        return data_frame(self.rows, "Run.to_pandas")

    def clients_frame(self) -> pandas.DataFrame:
        """Each client's figures in long format, one row per round, client and figure: columns ``round``,
        ``client`` (partition id), ``figure`` and ``value`` (the rows' ``per_client``; needs pandas)."""
        long = [
            {"round": row["round"], "client": int(client), "figure": figure, "value": value}
            for row in self.rows
            for client, figures in sorted(row.get("per_client", {}).items(), key=lambda item: int(item[0]))
            for figure, value in figures.items()
        ]
        return data_frame(long, "Run.clients_frame")


def _figure_text(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _path_text(path: Path | None) -> str:
    """``path`` relative to the working directory where it lies below it, else as it is."""
    if path is None:
        return "None"
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except (ValueError, OSError):  # elsewhere, or no working directory left
        return str(path)


def load(run_dir: str | os.PathLike[str]) -> Run:
    """Read the run folder ``run_dir`` (finished, interrupted, failed or still running); writes nothing.

    Raises:
        FileNotFoundError: ``run_dir`` is not a run directory (no ``config.json``).
        ValueError: a file of it is damaged (the message names the file and line).
    """
    if not isinstance(run_dir, str | os.PathLike):
        raise ValueError(f"give the path of a run directory, e.g. stamen.load('runs/cora-fedavg-1'); got {run_dir!r}")
    folder = RunDirectory.open(run_dir)
    recorded = folder.status().get("status")
    known = {member.value for member in RunStatus}
    if recorded is not None and recorded not in known:
        raise ValueError(
            f"{folder.path / 'status.json'} records the status {recorded!r}, not one of {', '.join(sorted(known))}; "
            "the run directory is damaged"
        )
    status = RunStatus(recorded) if recorded is not None else None
    has_summary = os.path.lexists(folder.path / "summary.json")  # a link to a device is read, and refused
    # a run that did not finish may have been stopped while writing its last row
    if status is RunStatus.FINISHED:
        rows = folder.finished_rows()  # no resume would write a cut-short last row again
    else:
        rows = folder.rows(torn_last_ok=status is not None)
    return Run(folder.path, folder.config(), status, rows, folder.summary() if has_summary else {})


def run(
    config: Config = None,
    *,
    clients: int | None = None,
    engine: str = "inprocess",
    out: str | os.PathLike[str] | None = None,
    progress: bool = False,
    in_turn: bool = False,
    federation: Mapping[str, Any] | None = None,
    ray_address: str | None = None,
    **overrides: Any,
) -> Run:
    """Train one federated run, as ``stamen run`` does, and return it.

    Args:
        config: run-config keys (a dict, kebab- or snake_case) or the path of a TOML file of them.
        clients: the number of clients (``--clients``; default 10).
        engine: ``inprocess`` (this process) or ``flower`` (``flwr run`` on a SuperLink of its own).
        out: the folder the run directory goes into (``output-dir``; default ``runs``).
        progress: show a progress bar (otherwise nothing is printed; the log is kept in ``run.log``).
        in_turn: in-process engine: each client's message answered alone (``--in-turn``).
        federation: Flower's federation config (``--federation-config``), e.g. client resources.
        ray_address: flower engine: the Ray cluster to run on, ``"HOST:PORT"`` (``--ray-address``; default
            ``$RAY_ADDRESS`` if set, else a Ray instance of the run's own).
        overrides: more run-config keys, snake_case (``num_server_rounds=3``); they win over ``config``.

    Raises:
        ValueError: bad input, before anything is written; the message is the line ``stamen run`` prints.
        FileExistsError: the run directory exists (set ``overwrite=True`` or another ``run_name``).
        stamen.simulations.errors.RunFailed: the run started and failed (its status says ``failed``).
        stamen.simulations.errors.EnvironmentFailed: the machine failed the run (a full disk mid-run).
        stamen.simulations.errors.RunInterrupted: Ctrl-C; the run is marked interrupted, the message says how to resume.
    """
    # on use: torch, torch_geometric, flwr stay out of this module's import
    from stamen.simulations import runner

    command = call_text("stamen.run", config, clients=clients, engine=engine, out=out, **overrides)
    try:
        chosen = runner.Engine.named(engine)
        typed = run_config(config, overrides, output_dir=None if out is None else str(out))
        launched = runner.run(
            typed,
            federation=federation_config(clients, federation),
            engine=chosen,
            provenance=Provenance.of_command(command),
            progress=runner.ProgressMode.PROGRESS if progress else runner.ProgressMode.QUIET,
            in_turn=in_turn,
            ray_address=ray_address,
        )
    except ValueError as error:
        raise ValueError(one_line(error)) from None
    except OSError as error:
        if is_bad_input(error):
            raise
        raise EnvironmentFailed(os_error_line(error)) from error  # the line the command prints, exit 4
    return load(launched.run_dir)
