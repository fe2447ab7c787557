"""A deployed run stopped from outside (``flwr stop``): its run directory recorded as ended.

The SuperLink ends a stopped run's ServerApp before it can write its own end, so the run directory's
``status.json`` would read ``running`` for ever; or the ServerApp writes an end it was not told the reason of:
``failed`` (Flower exited it) or ``interrupted`` (its heartbeat, refused by the SuperLink, raised SIGINT in
it: Flower's ``supercore/heartbeat.py``). Which one comes first is a race. The command that followed the run
finds that folder by the Flower run id the ServerApp recorded in it and writes ``failed`` there, with the
cause ``stopped``, through :meth:`stamen.server.rundir.RunDirectory.set_status` (atomic, and in place on a
full disk), as every ended run is recorded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from stamen.server.rundir import STATUS_FILE, RunDirectory, RunStatus
from stamen.simulations.errors import RunFailed

STOPPED = "finished:stopped"  # the SuperLink's status of a run ended by `flwr stop`
CAUSE = "stopped"  # status.json's cause of a run stopped from outside
_ENDS_WITHOUT_A_REASON = (RunStatus.FAILED.value, RunStatus.INTERRUPTED.value)  # what a stopped ServerApp may write


def deployed_run_folder(output_dir: str, run_name: str, flower_run_id: int) -> RunDirectory | None:
    """The run directory the ServerApp of Flower run ``flower_run_id`` wrote: ``output_dir/run_name`` when
    the run was named, else the folder under ``output_dir`` whose ``status.json`` records that run id;
    None when there is none (the run was stopped before its ServerApp wrote a folder)."""
    root = Path(output_dir).expanduser()
    candidates = [root / run_name] if run_name else (sorted(root.iterdir()) if root.is_dir() else [])
    for folder in candidates:
        status = folder / STATUS_FILE
        if folder.is_symlink() or status.is_symlink() or not status.is_file():
            continue
        try:
            record = json.loads(status.read_text())
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(record, dict) and record.get("flower_run_id") == flower_run_id:
            return RunDirectory(folder)
    return None


def stopped_from_outside(output_dir: str, run_name: str, flower_run_id: int) -> RunFailed:
    """Record Flower run ``flower_run_id``, stopped from outside, as failed in its run directory (if it is
    still ``running`` there, or ``failed`` or ``interrupted`` with no cause: the ServerApp's own record of an end
    it was not told the reason of, kept as ``serverapp_error``), and return the one-line failure to raise
    (exit 1)."""
    error = f"the run was stopped from outside (flwr stop, Flower run {flower_run_id}) before it finished"
    run_dir = deployed_run_folder(output_dir, run_name, flower_run_id)
    if run_dir is None:
        return RunFailed(f"{error}; it wrote no run directory")
    recorded = run_dir.status()
    if recorded.get("status") == RunStatus.RUNNING.value:
        run_dir.set_status(RunStatus.FAILED, error=error, cause=CAUSE, ended=time.time())
    elif recorded.get("status") in _ENDS_WITHOUT_A_REASON and "cause" not in recorded:
        # the ServerApp saw its end come (Flower exits it, or its refused heartbeat raises SIGINT) but not why:
        # the SuperLink says why
        run_dir.set_status(RunStatus.FAILED, error=error, cause=CAUSE, serverapp_error=recorded.get("error"))
    return RunFailed(f"{error}; {run_dir.path / STATUS_FILE} records it as {run_dir.status().get('status')}")
