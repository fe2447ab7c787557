"""``stamen bench``: the project's headline figures, measured, into ``benchmarks/``.

Each benchmark (a module of :mod:`stamen.benches`) writes ``<out>/<name>.json``
and its table as ``<out>/<name>.md``, and nothing else: no other file of the folder is
read or rewritten (``benchmarks/README.md`` is written by hand). Benchmarks report what
the code measured on that run; nothing here is a pass/fail test.

A bench is a long job of units (one federated run, one setting, one repeat: each bench's
``run`` says): each finished unit is kept in ``<out>/<name>.partial.jsonl``
(:mod:`stamen.experiments.journal`) as it completes, and the same command again resumes from
it; Ctrl-C keeps what is finished. The journal is removed once the record holds it all.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import ModuleType

from stamen.benches import (
    algorithms,
    attacks,
    deploy,
    dpsgd,
    fedlog,
    gpu,
    plots,
    privacy,
    scale,
    sim,
    unlearn,
)
from stamen.benches.records import header, new_record
from stamen.common.file_writes import atomic_write
from stamen.contract import strict_json
from stamen.experiments.journal import UnitJournal
from stamen.experiments.long_job import long_job
from stamen.server.rundir import check_output_dir, check_run_name

BENCHES: tuple[ModuleType, ...] = (sim, fedlog, algorithms, privacy, dpsgd, unlearn, deploy, gpu, attacks, scale)

#: options that change no figure of a bench, left out of its journal's digest: where it writes and
#: under which name, and how many runs go at once (``--jobs``: wall times aside, the same runs)
NOT_FIGURES = frozenset({"out", "name", "jobs"})


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="measure the headline figures into benchmarks/")
    benches = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for bench in BENCHES:
        sub = benches.add_parser(bench.NAME, help=bench.HELP, description=bench.__doc__)
        bench.add_arguments(sub)
        sub.add_argument("--name", default=bench.NAME, help="benchmark name: <out>/<name>.json")
        sub.add_argument(
            "--out", default="runs/benchmarks", help="output folder (the committed figures: --out benchmarks)"
        )
        sub.set_defaults(func=run_bench, module=bench)
    plot = benches.add_parser(
        "plot",
        help="a record's picture (PNG), drawn from the record alone",
        description=plots.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plot.add_argument("record", type=Path, help="a benchmark record, e.g. benchmarks/algorithms-cora.json")
    plot.add_argument("--out", type=Path, default=None, help="the PNG to write (default: the record's, .png)")
    plot.set_defaults(func=plot_bench)


def plot_bench(args: argparse.Namespace) -> int:
    """``stamen bench plot RECORD``: write the record's picture."""
    print(f"wrote {plots.plot_record(args.record, args.out)}")
    return 0


def check_replaceable(out: Path, name: str) -> None:
    """Refuse an output folder holding files of these names that Stamen did not write (record, table)."""
    record, table = out / f"{name}.json", out / f"{name}.md"
    for path in (record, table):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise FileExistsError(f"{path} is not a plain file; choose another --out or --name")
    if record.is_file():
        try:
            ours = "bench" in json.loads(record.read_text()) or "results" in json.loads(record.read_text())
        except (ValueError, UnicodeDecodeError):
            ours = False
        if not ours:
            raise FileExistsError(f"{record} is not a benchmark record; choose another --out or --name")


def run_bench(args: argparse.Namespace) -> int:
    """Measure one bench, keeping each finished unit in its journal; write its record and its table."""
    check_run_name(args.name)
    out = check_output_dir(args.out)
    bench: ModuleType = args.module
    setting = {
        k: v for k, v in vars(args).items() if k not in ("func", "module", "out", "bench", "command", "invocation")
    }
    journal = UnitJournal.open(
        out / args.name,
        f"stamen bench {bench.NAME}",
        {k: v for k, v in setting.items() if k not in NOT_FIGURES},
        what="benchmark",
        advice="or give another --out or --name",
    )  # its lock: one writer of this record from here to the end
    try:
        check_replaceable(out, args.name)  # before the (long) measurement, never after
        out.mkdir(parents=True, exist_ok=True)
        with long_job(journal, f"bench {bench.NAME}", args.invocation) as units:
            results = bench.run(args, units)
        record = new_record(bench.NAME, args.name, setting, results)
        atomic_write(out / f"{args.name}.json", strict_json.dumps(record, indent=2) + "\n")
        atomic_write(out / f"{args.name}.md", "\n".join(header(record) + bench.markdown(record)) + "\n")
        journal.remove()  # the record holds every unit now
    finally:
        journal.close()
    bench.print_table(record)
    return 0
