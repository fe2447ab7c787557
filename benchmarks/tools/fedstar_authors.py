"""FedStar, FedAvg and self-training by FedStar's authors' code, on Stamen's cross-dataset federation of graph sets.

The authors' code (github yuetan031/FedStar: ``lib/{client,models,server,setupGC,training,utils}.py``) is read
from ``--authors-code`` (a folder outside this repository; nothing of it is copied here). The federation is
Stamen's own (:meth:`stamen.contract.run_config.RunConfig.federation`,
:func:`stamen.graphs.federation.build_federation`):
``graphs-synth+tu:MUTAG+tu:PROTEINS``, ``cross-dataset``, 3 clients (one per dataset), ``train-frac`` 0.8,
``val-frac`` 0.1, the seed, so every client holds exactly Stamen's graphs and splits. Each client's graphs are
handed over with its dataset's own feature columns (Stamen zero-pads every dataset to the widest; the authors
build each client's input layer on its dataset's width) and their structural embeddings (``stc_enc``) are
computed by the authors' ``init_structure_encoding`` (``rw_dg``, ``n_rw`` = ``n_dg`` = 16).

Methods (the authors' hyperparameters: ``exps/main_multiDS.py``'s defaults, which ``scripts/run.sh`` keeps):
GIN_dc/GIN with 3 layers of width 64, dropout 0.5, Adam lr 0.001 and weight decay 5e-4 made once per client,
mini-batches of 128 graphs, 1 local epoch a round, 200 rounds; the seed sets ``random``, NumPy and torch as their
script does, then their ``setup_devices`` builds the clients and the server.

- ``fedstar``: their ``run_fedstar`` loop (every client trains, ``aggregate_weights_se`` averages the ``_s``
  weights by training graphs, every client downloads them; the every-5-rounds test pass of their logging is kept,
  so the random stream is theirs);
- ``fedavg``: their ``run_fedavg`` loop (the ``GIN``/``serverGIN`` pair: ``aggregate_weights`` averages what the
  server model holds, the GIN layers; the input layer and the head stay local); their script never calls it;
- ``local``: their ``run_selftrain_GC`` (every client downloads the server's GIN layers, then trains alone for
  200 epochs in one go).

Figures, pooled over the clients' test graphs (each client's accuracy times its test graphs, summed, over all
test graphs), per round (per epoch for ``local``) and per client:

- ``client``: each client's model right after its local training, scored by the authors' ``train_gc`` on their
  validation and test loaders (Stamen's "client models" columns);
- ``received`` (``fedstar``, ``fedavg``): each client's model after it downloaded the round's average (what
  ``run_fedstar`` reports at its end), scored here on one batch of the client's graphs (no loader, so no random
  draw is added to their stream).

The best round is chosen as Stamen's summary chooses it: the first round of the highest pooled validation accuracy
of the received model where the method has one (Stamen's global model), else of the client models. Usage::

    python benchmarks/tools/fedstar_authors.py --authors-code ../fedstar-authors --data-root ../shared/datasets \
        --seeds 0,1,2 --out benchmarks/fedstar-authors-cross-dataset.json
    python benchmarks/tools/fedstar_authors.py --table benchmarks/fedstar-authors-cross-dataset.json \
        --stamen-record benchmarks/graph-classification-cross-dataset.json \
        --markdown benchmarks/fedstar-authors-cross-dataset.md
"""

from __future__ import annotations

import argparse
import copy
import importlib
import importlib.machinery
import json
import os
import random
import shlex
import sys
import time
import types
from pathlib import Path
from typing import Any

from fedstar_authors_table import DATASET, METHODS, table

CLIENTS = 3
AUTHORS_FILES = ("lib/client.py", "lib/models.py", "lib/server.py", "lib/setupGC.py", "lib/training.py", "lib/utils.py")
HYPERPARAMETERS: dict[str, Any] = {  # the authors' exps/main_multiDS.py defaults (scripts/run.sh sets none of these)
    "hidden": 64,
    "nlayer": 3,
    "dropout": 0.5,
    "lr": 0.001,
    "weight_decay": 5e-4,
    "batch_size": 128,
    "local_epoch": 1,
    "num_rounds": 200,
    "selftrain_epochs": 200,  # exps/main_multiDS.py: process_selftrain(..., local_epoch=200)
    "n_rw": 16,
    "n_dg": 16,
    "type_init": "rw_dg",
    "seq_length": 5,
}
SHIMS = (
    "dgl: an empty module (lib/utils.py imports it and calls nothing of it)",
    "dtaidistance.dtw: an empty module (lib/server.py imports it for GCFL's distances, not called here)",
    "sklearn.model_selection.train_test_split: a stand-in that refuses to run, where scikit-learn is missing "
    "(lib/utils.py imports it for split_data; the splits here are Stamen's)",
    "MPLBACKEND=Agg (lib/training.py imports matplotlib.pyplot and draws nothing)",
)


def fail(message: str) -> None:
    """One line naming the problem and what to do, exit 2."""
    print(f"fedstar_authors: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors-code", help="folder of the authors' code (lib/, exps/)")
    parser.add_argument("--data-root", help="data root holding MUTAG/raw and PROTEINS/raw (TU layout)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    parser.add_argument("--rounds", type=int, default=HYPERPARAMETERS["num_rounds"], help="rounds (default 200)")
    parser.add_argument("--out", help="JSON record to write (runs already in it are kept and not run again)")
    parser.add_argument("--table", help="a record of this tool to tabulate (with --markdown), instead of running")
    parser.add_argument("--stamen-record", help="Stamen's bench record of the same setting, for the table")
    parser.add_argument("--markdown", help="markdown file to write the side-by-side table to")
    args = parser.parse_args(argv)
    if args.table:
        if not args.markdown:
            fail("--table needs --markdown FILE to write the table to")
        for name in (args.table, args.stamen_record):
            if name and not Path(name).is_file():
                fail(f"{name!r} is not a file; give the record's path")
        return args
    if not (args.authors_code and args.data_root and args.out):
        fail("give --authors-code DIR, --data-root DIR and --out FILE.json (or --table RECORD --markdown FILE)")
    missing = [name for name in AUTHORS_FILES if not (Path(args.authors_code) / name).is_file()]
    if missing:
        fail(f"--authors-code {args.authors_code!r} lacks {', '.join(missing)}; give the folder of the FedStar code")
    for name in ("MUTAG", "PROTEINS"):
        if not (Path(args.data_root) / name / "raw").is_dir():
            fail(f"--data-root {args.data_root!r} has no {name}/raw folder; give the folder holding the TU datasets")
    out = Path(args.out)
    if out.is_dir() or not out.parent.is_dir() or out.suffix != ".json":
        fail(f"--out {args.out!r} must be a .json file in an existing folder")
    try:
        args.seed_list = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        fail(f"--seeds {args.seeds!r}: give comma-separated integers, e.g. 0,1,2")
    args.method_list = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in args.method_list if m not in METHODS]
    if unknown or not args.method_list or not args.seed_list:
        fail(f"--methods {args.methods!r}: choose from {', '.join(METHODS)}; --seeds must name one seed or more")
    if args.rounds < 1:
        fail(f"--rounds {args.rounds}: give 1 or more")
    return args


def stand_in(name: str) -> types.ModuleType:
    """An empty module ``name`` with a spec (so that a search for it finds one)."""
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return module


def load_authors(folder: str) -> dict[str, types.ModuleType]:
    """The authors' modules, imported from ``folder``/lib after the shims (see :data:`SHIMS`)."""
    import torch_geometric  # noqa: F401  (before the stand-ins: torch looks for some of these names' specs)

    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.modules.setdefault("dgl", stand_in("dgl"))
    dtai = sys.modules.setdefault("dtaidistance", stand_in("dtaidistance"))
    dtai.dtw = sys.modules.setdefault("dtaidistance.dtw", stand_in("dtaidistance.dtw"))  # type: ignore[attr-defined]
    try:
        importlib.import_module("sklearn.model_selection")
    except ImportError:

        def train_test_split(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("scikit-learn is not installed: the splits here are Stamen's")

        sklearn = sys.modules.setdefault("sklearn", stand_in("sklearn"))
        selection = stand_in("sklearn.model_selection")
        selection.train_test_split = train_test_split  # type: ignore[attr-defined]
        sklearn.model_selection = selection  # type: ignore[attr-defined]
        sys.modules["sklearn.model_selection"] = selection
    lib = str((Path(folder) / "lib").resolve())
    sys.path.insert(0, lib)
    try:
        return {name: importlib.import_module(name) for name in ("utils", "client", "server", "models", "setupGC")}
    finally:
        sys.path.remove(lib)


def stamen_clients(seed: int, data_root: str) -> list[dict[str, Any]]:
    """Stamen's clients of the setting for ``seed``: per client its dataset and its train/val/test graphs
    (``x`` cut to the dataset's own columns, ``edge_index``, ``y``)."""
    import torch
    from torch_geometric.data import Data

    from stamen.contract.run_config import RunConfig
    from stamen.graphs.federation import build_federation
    from stamen.graphs.graph_set_clients import load_graph_set
    from stamen.graphs.names import client_datasets

    config = RunConfig.from_mapping(
        {
            "task": "graph-classification", "dataset": DATASET, "partitioner": "cross-dataset", "seed": seed,
            "train-frac": 0.8, "val-frac": 0.1, "data-root": data_root, "model": "gin", "num-layers": 3,
            "hidden": 64, "lr": 0.001,
        }
    )  # fmt: skip
    spec = config.federation(CLIENTS)
    federation = build_federation(spec)
    held = client_datasets(DATASET, CLIENTS)
    clients = []
    for index, (name, batch) in enumerate(zip(held, federation.clients, strict=True)):
        width = int(load_graph_set(name, spec.data_root or None, spec.graph_seed)[0].x.size(1))
        graphs = batch.to_data_list()
        sets = {}
        for split, mask in (("train", batch.train_mask), ("val", batch.val_mask), ("test", batch.test_mask)):
            sets[split] = [
                Data(x=g.x[:, :width].clone(), edge_index=g.edge_index.clone(), y=g.y.clone())
                for g, keep in zip(graphs, mask.tolist(), strict=True)
                if keep
            ]
        padding = torch.cat([g.x[:, width:] for g in graphs]) if int(batch.x.size(1)) > width else None
        if padding is not None and bool(padding.abs().sum() > 0):
            raise RuntimeError(f"client {index}: columns past {name}'s {width} are not Stamen's zero padding")
        clients.append({"client": index, "dataset": name, "width": width, **sets})
    return clients


def authors_args(method: str, seed: int, rounds: int) -> argparse.Namespace:
    h = HYPERPARAMETERS
    return argparse.Namespace(
        alg=method if method != "local" else "selftrain", device="cpu", seed=seed, num_rounds=rounds,
        local_epoch=h["local_epoch"], lr=h["lr"], weight_decay=h["weight_decay"], nlayer=h["nlayer"],
        hidden=h["hidden"], dropout=h["dropout"], batch_size=h["batch_size"], n_rw=h["n_rw"], n_dg=h["n_dg"],
        n_se=h["n_rw"] + h["n_dg"], type_init=h["type_init"], seq_length=h["seq_length"], repeat=None,
    )  # fmt: skip


def prepared(lib: dict[str, types.ModuleType], clients: list[dict[str, Any]], args: argparse.Namespace) -> dict:
    """Stamen's clients as the authors' ``prepareData_multiDS`` returns its data: name -> (loaders, features,
    labels, training graphs), with ``stc_enc`` by their ``init_structure_encoding``."""
    from torch_geometric.loader import DataLoader

    data = {}
    for c in clients:
        loaders = {}
        for split in ("train", "val", "test"):
            graphs = lib["utils"].init_structure_encoding(args, gs=c[split], type_init=args.type_init)
            loaders[split] = DataLoader(graphs, batch_size=args.batch_size, shuffle=True)
        labels = lib["utils"].get_numGraphLabels(c["train"])
        data[f"{c['client']}-{c['dataset']}"] = (loaders, c["width"], labels, len(c["train"]))
    return data


def score(model: Any, graphs: list[Any]) -> float:
    """Accuracy of ``model`` on ``graphs`` in one batch (their ``eval_gc`` without its loader's random draw)."""
    import torch
    from torch_geometric.data import Batch

    model.eval()
    with torch.no_grad():
        batch = Batch.from_data_list(graphs)
        return float(model(batch).max(dim=1)[1].eq(batch.y).sum().item()) / len(graphs)


def run_method(lib: dict[str, types.ModuleType], clients: list[dict[str, Any]], method: str, seed: int, rounds: int):
    """One run of ``method`` by the authors' code: per round, per client, validation and test accuracies."""
    import numpy as np
    import torch

    args = authors_args(method, seed, rounds)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    data = prepared(lib, clients, args)
    init_clients, init_server, _ = lib["setupGC"].setup_devices(data, args)
    group, server = copy.deepcopy(init_clients), copy.deepcopy(init_server)  # as their __main__ hands them over
    val_graphs = [[g for g in c.dataLoader["val"].dataset] for c in group]
    test_graphs = [[g for g in c.dataLoader["test"].dataset] for c in group]
    trace: list[dict[str, Any]] = []
    for client in group:
        client.download_from_server(args, server)
    if method == "local":  # their 200 epochs are the rounds' number (--rounds)
        for client in group:
            client.local_train(rounds)
        for epoch in range(rounds):
            trace.append(
                {
                    "round": epoch + 1,
                    "client_val": [c.train_stats["valAccs"][epoch] for c in group],
                    "client_test": [c.train_stats["testAccs"][epoch] for c in group],
                }
            )
        return trace
    aggregate = server.aggregate_weights_se if method == "fedstar" else server.aggregate_weights
    for c_round in range(1, rounds + 1):
        selected = group if c_round == 1 else server.randomSample_clients(group, 1.0)
        for client in selected:
            client.local_train(args.local_epoch)
        aggregate(selected)
        for client in selected:
            client.download_from_server(args, server)
        if c_round % 25 == 0:
            print(f"  {method} seed {seed}: round {c_round}", file=sys.stderr, flush=True)
        if c_round % 5 == 0:  # their logging's test pass (its loader draws from torch's random stream)
            for client in group:
                client.evaluate()
        trace.append(
            {
                "round": c_round,
                "client_val": [c.train_stats["valAccs"][-1] for c in group],
                "client_test": [c.train_stats["testAccs"][-1] for c in group],
                "received_val": [score(c.model, g) for c, g in zip(group, val_graphs, strict=True)],
                "received_test": [score(c.model, g) for c, g in zip(group, test_graphs, strict=True)],
            }
        )
    return trace


def pooled(accuracies: list[float], sizes: list[int]) -> float:
    """Accuracy over all the clients' graphs: each client's correct graphs summed, over all graphs."""
    return sum(round(a * n) for a, n in zip(accuracies, sizes, strict=True)) / sum(sizes)


def summary(trace: list[dict[str, Any]], clients: list[dict[str, Any]]) -> dict[str, Any]:
    """Best-validation and final figures of one run, pooled and per dataset (see the module docstring)."""
    vals, tests = [len(c["val"]) for c in clients], [len(c["test"]) for c in clients]
    selector = "received_val" if "received_val" in trace[0] else "client_val"
    scores = [pooled(row[selector], vals) for row in trace]
    best = trace[scores.index(max(scores))]  # the first round of the highest, as Stamen's summary
    out: dict[str, Any] = {"best_round": best["round"], "selected_on": selector}
    for when, row in (("best", best), ("final", trace[-1])):
        figures: dict[str, Any] = {}
        for model in ("client", "received"):
            if f"{model}_test" in row:
                figures[f"{model}_test_acc"] = pooled(row[f"{model}_test"], tests)
                figures[f"{model}_test_acc_per_dataset"] = {
                    c["dataset"]: a for c, a in zip(clients, row[f"{model}_test"], strict=True)
                }
        out[when] = figures
    return out


def run(args: argparse.Namespace) -> None:
    from stamen.common.file_writes import atomic_write
    from stamen.contract.provenance import provenance

    out = Path(args.out)
    record: dict[str, Any] = {}
    if out.is_file():
        record = json.loads(out.read_text())
        if record.get("tool") != "fedstar_authors":
            fail(f"--out {args.out!r} is not a record of this tool; give a new file")
    import torch

    torch.set_num_threads(1)  # one thread: a run's figures do not hang on the machine's cores
    lib = load_authors(args.authors_code)
    command = " ".join(["python", "benchmarks/tools/fedstar_authors.py", *map(shlex.quote, sys.argv[1:])])
    earlier = record.get("commands") or ([record.pop("command")] if "command" in record else [])
    record.update(
        tool="fedstar_authors",
        commands=list(dict.fromkeys([*earlier, command])),  # each invocation that added runs
        provenance=provenance(seeds=args.seed_list),
        setting={
            "dataset": DATASET,
            "partitioner": "cross-dataset",
            "clients": CLIENTS,
            "train-frac": 0.8,
            "val-frac": 0.1,
            "rounds": args.rounds,
        },  # fmt: skip
        hyperparameters=HYPERPARAMETERS,
        shims=list(SHIMS),
    )
    record.setdefault("runs", [])
    done = {(r["method"], r["seed"], r["rounds"]) for r in record["runs"]}
    for seed in args.seed_list:
        clients = stamen_clients(seed, args.data_root)
        for method in args.method_list:
            if (method, seed, args.rounds) in done:
                continue
            started = time.perf_counter()
            trace = run_method(lib, clients, method, seed, args.rounds)
            seconds = time.perf_counter() - started
            result = {
                "method": method, "seed": seed, "rounds": args.rounds, "seconds": round(seconds, 1), "command": command,
                "clients": [
                    {"client": c["client"], "dataset": c["dataset"], "features": c["width"],
                     **{split: len(c[split]) for split in ("train", "val", "test")}}
                    for c in clients
                ],
                **summary(trace, clients),
                "trace": trace,
            }  # fmt: skip
            record["runs"].append(result)
            atomic_write(out, json.dumps(record, indent=1) + "\n")
            best, final = result["best"]["client_test_acc"], result["final"]["client_test_acc"]
            print(f"{method} seed {seed}: client models {100 * best:.1f} at best val, {100 * final:.1f} final "
                  f"({seconds:.0f} s)", flush=True)  # fmt: skip


def main(argv: list[str]) -> None:
    args = parse(argv)
    if args.table:
        table(Path(args.table), Path(args.stamen_record) if args.stamen_record else None, Path(args.markdown))
    else:
        run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
