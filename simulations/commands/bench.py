"""``stamen bench``: the project's headline figures, measured, into ``benchmarks/``.

Each benchmark (a module of :mod:`simulations.benches`) writes ``<out>/<name>.json``
and its table as ``<out>/<name>.md``;
``<out>/README.md`` is regenerated from every record there. Benchmarks report what
the code measured on that run; nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import ModuleType

from simulations.benches import deploy, dpsgd, fedlog, gpu, privacy, sim, unlearn
from simulations.benches.records import header, new_record, write_readme

BENCHES: tuple[ModuleType, ...] = (sim, fedlog, privacy, dpsgd, unlearn, deploy, gpu)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="measure the headline figures into benchmarks/")
    benches = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for bench in BENCHES:
        sub = benches.add_parser(bench.NAME, help=bench.HELP, description=bench.__doc__)
        bench.add_arguments(sub)
        sub.add_argument("--name", default=bench.NAME, help="benchmark name: <out>/<name>.json")
        sub.add_argument("--out", default="benchmarks", help="output folder")
        sub.set_defaults(func=run_bench, module=bench)


def run_bench(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    bench: ModuleType = args.module
    results = bench.run(args)
    setting = {k: v for k, v in vars(args).items() if k not in ("func", "module", "out", "bench", "command")}
    record = new_record(bench.NAME, args.name, setting, results)
    (out / f"{args.name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / f"{args.name}.md").write_text("\n".join(header(record) + bench.markdown(record)) + "\n")
    write_readme(out, {b.NAME: b.markdown for b in BENCHES})
    bench.print_table(record)
    return 0
