"""``stamen tune``: search run-config values with Optuna, on the in-process engine, resumable.

    stamen tune --name lr --trials 20 --space "lr=log:1e-3..1e-1" --space "local-epochs=int:1..5" \\
                -c "dataset='cora' data-root='/data' num-server-rounds=50" --clients 10
    stamen tune --name lr --trials 30 ...       (the same study, continued to 30 trials in all)
    stamen tune --name opt --space-file space.toml -c exp.toml   (space.toml: [space] lr = "log:1e-3..1e-1")

Each trial is one ``stamen run`` (its own run directory under ``<out>/<name>/``) with values
drawn by a seeded TPE sampler; it is scored by the validation accuracy at its best round
(never the test accuracy) and may be stopped early by a median pruner on the rounds'
validation accuracy (its run folder is kept, marked ``pruned``). The study (``study.db``)
is kept in the folder: the same command with a larger ``--trials`` goes on, and Ctrl-C
keeps every finished trial. The study ends with a table of the best configs and writes
``tune.json`` (with provenance), ``tune.csv`` and ``tune.png`` into its folder.
"""

from __future__ import annotations

import argparse
import sys

from stamen.cli.commands.run import federation_args
from stamen.cli.helptext import HelpFormatter
from stamen.experiments.tune import run_tune
from stamen.experiments.tune_space import parse_dimension, space_file
from stamen.experiments.tune_trials import DEFAULT_OUT, TuneSpec
from stamen.simulations.overrides import parse_overrides


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="search run-config values with Optuna (seeded TPE, median pruning), resumable",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--space", action="append", default=[], metavar="KEY=KIND:VALUES",
        help="a searched key: float:LOW..HIGH, log:LOW..HIGH, int:LOW..HIGH or cat:A,B",
    )  # fmt: skip
    parser.add_argument("--space-file", default="", metavar="FILE", help="searched keys from a TOML [space] table")
    parser.add_argument("--trials", type=int, default=20, help="trials in all (a re-run goes on up to this many)")
    parser.add_argument("--run-config", "-c", action="append", default=[], help="fixed run-config overrides")
    parser.add_argument("--federation-config", action="append", default=[], help="as for stamen run")
    parser.add_argument("--clients", type=int, default=None, help="number of clients (as for stamen run)")
    parser.add_argument("--sampler-seed", type=int, default=0, help="the TPE sampler's seed (runs use -c seed=N)")
    parser.add_argument("--startup", type=int, default=5, help="random trials before TPE models the earlier ones")
    parser.add_argument("--no-prune", action="store_true", help="never stop a trial early")
    parser.add_argument("--prune-startup", type=int, default=3, help="finished trials before any is pruned")
    parser.add_argument("--prune-warmup", type=int, default=5, help="rounds of a trial before it may be pruned")
    parser.add_argument("--top", type=int, default=5, help="best configs shown")
    parser.add_argument("--name", default="", help="the study's folder name; give it again to resume")
    parser.add_argument("--out", default=DEFAULT_OUT, help="where study folders go")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    space = [*(space_file(args.space_file) if args.space_file else []), *map(parse_dimension, args.space)]
    spec = TuneSpec(
        space=space,
        trials=args.trials,
        run_config=parse_overrides(args.run_config),
        federation_config=parse_overrides(federation_args(args), "federation config", files=False),
        name=args.name,
        out=args.out,
        sampler_seed=args.sampler_seed,
        startup=args.startup,
        prune=not args.no_prune,
        prune_startup=args.prune_startup,
        prune_warmup=args.prune_warmup,
        top=args.top,
    )
    result = run_tune(spec)
    if result.best is None:  # every trial failed or was pruned: there is no best config to report
        print(
            f"stamen tune: failed: none of the study's {len(result.trials)} trials completed, so there are no best "
            f"parameters; {result.folder / 'tune.csv'} says how each ended",
            file=sys.stderr,
        )
        return 1
    return 0
