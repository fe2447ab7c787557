"""``stamen unlearn RUN_DIR``: forget data from a finished run and compare with retraining.

The run directory must hold ``config.json`` (the run config), ``summary.json`` (its
``clients``) and ``model.pt`` (see :mod:`stamen.server.outputs`). The federation is rebuilt
from the config with that many clients. For the run's own seed (``seed`` in
``config.json``) the saved model is the original model; for every other seed of
``--seeds`` the original model is trained in-process with the run's algorithm and
config, initialised from that seed (the partition and splits stay those of the run).
Retraining from scratch, every method and the evaluation then run in-process
(:func:`stamen.experiments.unlearn_experiment.run_request`: the app's round loop and ClientApp over an
in-process grid, and the server's unlearning flow for every method). ``federaser`` replays the clients'
recorded training updates, which a run directory does not hold, so ``--methods all`` leaves it out here (and
says so); ``stamen bench unlearn`` runs it on originals trained in-process.

Outputs go to ``RUN_DIR/unlearn/<request>/`` (``result.json``, ``report.md``,
``unlearning.png``); an existing, non-empty folder there is refused unless
``--overwrite`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from stamen.common.options import renamed
from stamen.common.pictures import figure_bytes
from stamen.common.screen import output_console
from stamen.contract import strict_json
from stamen.contract.provenance import provenance
from stamen.contract.requests import parse_request
from stamen.contract.run_config import RunConfig
from stamen.contract.tasks import TASKS
from stamen.experiments.unlearn_experiment import (
    METHODS,
    NEEDS_HISTORY,
    check_algorithm,
    new_model,
    parse_methods,
    parse_seeds,
    run_request,
)
from stamen.graphs import build_federation
from stamen.server.rundir import RunDirectory, RunStatus, atomic_write
from stamen.server.runlock import FolderLock
from stamen.unlearn.report import markdown, mia_gap_line, rich_table, targets_table, unlearning_figure


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "unlearn",
        help="forget a client, some nodes or a class from a finished run; compare with retraining",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a finished run's directory")
    parser.add_argument(
        "--request",
        action="append",
        required=True,
        help="client:i, nodes:i:FRACTION or class:c (repeat for several requests)",
    )
    parser.add_argument("--methods", dest="method", default="all", help=f"all or a comma list of: {', '.join(METHODS)}")
    renamed(parser, "--method", "--methods")
    parser.add_argument("--seeds", default="", help="comma-separated model seeds (default: the run's seed)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--overwrite", action="store_true", help="replace earlier results of the same request")
    parser.set_defaults(func=main)


def load_run(run_dir: Path) -> tuple[Any, int, dict[str, torch.Tensor]]:
    """``(RunConfig, number of clients, saved state dict)`` of a run directory."""
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory {run_dir} not found")
    run = RunDirectory.open(run_dir)
    status = run.status().get("status", RunStatus.FINISHED.value)  # older run directories have no status
    if status != RunStatus.FINISHED.value:
        raise ValueError(f"run {run_dir} is {status}, not finished; unlearning starts from a finished run's model")
    for name in ("summary.json", "model.pt"):
        if not (run_dir / name).is_file():
            raise FileNotFoundError(f"{run_dir / name} not found: is {run_dir} a finished run directory?")
    values, summary = run.recorded_config(), run.summary()
    config = RunConfig.from_flower(values)
    why = dict(TASKS[config.task].fixed).get("unlearn-request")  # a task that trains no node classifier says why
    if why is not None:
        raise ValueError(f"run {run_dir} has task={config.task!r}, which cannot be unlearnt: unlearning {why}")
    num_clients = summary.get("clients")
    if not isinstance(num_clients, int) or num_clients < 1:
        raise ValueError(f"{run_dir / 'summary.json'} has no positive 'clients' count")
    try:
        saved = torch.load(run_dir / "model.pt", map_location="cpu", weights_only=True)
    except Exception as error:  # a corrupt file is one line for the user
        raise ValueError(f"{run_dir / 'model.pt'} cannot be read ({type(error).__name__})") from None
    if not isinstance(saved, dict) or "state_dict" not in saved:
        raise ValueError(f"{run_dir / 'model.pt'} has no 'state_dict'")
    spec = saved.get("spec", {})
    for key in ("model", "hidden", "num_layers"):
        if key in spec and spec[key] != getattr(config, key):
            raise ValueError(
                f"model.pt was saved for {key}={spec[key]!r} but config.json says {getattr(config, key)!r}"
            )
    return config, num_clients, saved["state_dict"]


def main(args: argparse.Namespace) -> int:
    """Unlearn (:func:`unlearn_run`), then print each request's tables (``--json``: the results on stdout)."""
    done = unlearn_run(
        args.run_dir,
        args.request,
        methods=args.method,
        seeds=args.seeds,
        overwrite=args.overwrite,
        command=args.invocation,
    )
    console = output_console(stderr=True) if args.json else output_console()
    for out, result in done:
        console.print(rich_table(result))
        console.print(mia_gap_line(result), highlight=False)
        console.print(targets_table(result))
        console.print(f"wrote {out / 'report.md'}, {out / 'unlearning.png'}, {out / 'result.json'}")
    if args.json:
        results = [result for _, result in done]
        print(strict_json.dumps(results if len(results) > 1 else results[0]))
    return 0


def unlearn_run(
    run_dir: str | Path,
    requests: Sequence[str],
    *,
    methods: str = "all",
    seeds: str = "",
    overwrite: bool = False,
    command: str = "",
    show: bool = True,
) -> list[tuple[Path, dict[str, Any]]]:
    """Check the run and the requests, then unlearn each request; the run directory's lock held throughout.

    ``requests``: ``client:i``, ``nodes:i:FRACTION``, ``class:c``; ``methods``: ``all`` or a comma list;
    ``seeds``: comma-separated model seeds (empty: the run's). Each request's ``result.json``,
    ``report.md`` and ``unlearning.png`` go to ``RUN_DIR/unlearn/<request>/`` (``overwrite``: replace
    earlier ones); ``command`` is named in the report; ``show``: progress on stderr. Returns each
    request's folder and result, in order.
    """

    folder = Path(run_dir).expanduser().resolve()
    if not folder.is_dir():
        raise FileNotFoundError(f"run directory {folder} not found")
    with FolderLock(folder):  # one writer: not while the run itself, or another unlearn, writes there
        if not os.access(folder, os.W_OK | os.X_OK):  # checked before the slow work, not after it
            raise PermissionError(13, "not writable: unlearning writes its results into the run directory", str(folder))
        return _unlearn(folder, list(requests), methods, seeds, overwrite, command, show)


def _unlearn(
    run_dir: Path, texts: list[str], method: str, seed_text: str, overwrite: bool, command: str, show: bool
) -> list[tuple[Path, dict[str, Any]]]:
    config, num_clients, state = load_run(run_dir)
    check_algorithm(config.algorithm)
    methods = parse_methods(method)
    left_out = [m for m in methods if m in NEEDS_HISTORY] if method.strip() == "all" else []
    methods = [m for m in methods if m not in left_out]
    seeds = parse_seeds(seed_text) if seed_text else [config.seed]

    federation = build_federation(config.federation(num_clients))
    num_classes = int(federation.clients[0].num_classes)
    requests = [parse_request(text, num_clients, num_classes) for text in texts]
    out_dirs = []
    for request in requests:
        out = run_dir / "unlearn" / request.slug
        for folder in (out.parent, out):  # written into below: never through a link to elsewhere
            if folder.is_symlink():
                raise ValueError(f"{folder} is a symbolic link; Stamen writes only into real folders: remove the link")
        if out.exists() and any(out.iterdir()) and not overwrite:
            raise FileExistsError(f"{out} already holds results; pass --overwrite to replace them")
        out_dirs.append(out)
    # check the saved weights fit the rebuilt model before any long work
    try:
        new_model(config, federation.clients[0].num_features, num_classes, config.seed).load_state_dict(state)
    except RuntimeError as error:
        first = str(error).strip().splitlines()[0]
        raise ValueError(f"model.pt does not fit the run's model: {first}") from None
    err = output_console(stderr=True)
    if left_out and show:
        err.print(
            f"[unlearn] {', '.join(left_out)} left out: it replays the clients' recorded training updates, which a "
            "saved run does not keep (`stamen bench unlearn` runs it)",
            highlight=False,
        )
    done = []
    originals = {config.seed: state}  # filled with the other seeds' originals as they are trained
    for request, out in zip(requests, out_dirs):
        with err.status(f"{request}: starting") if show else contextlib.nullcontext() as status:
            if not show:

                def progress(message: str) -> None:
                    pass
            elif err.is_terminal:

                def progress(message: str, request=request) -> None:
                    status.update(f"{request}: {message}")
            else:  # a log file: one line per step

                def progress(message: str, request=request) -> None:
                    err.print(f"[unlearn] {request}: {message}", highlight=False)

            result = run_request(config, num_clients, request, methods, seeds, originals=originals, progress=progress)
        result["run_dir"] = str(run_dir)
        result["provenance"] = provenance(seeds=seeds)
        out.mkdir(parents=True, exist_ok=True)

        atomic_write(out / "result.json", strict_json.dumps(result, indent=2) + "\n")
        atomic_write(out / "report.md", markdown(result, command))
        atomic_write(out / "unlearning.png", figure_bytes(unlearning_figure(result), "png"))
        done.append((out, result))
    return done
