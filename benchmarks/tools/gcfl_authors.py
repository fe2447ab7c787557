"""GCFL beside its authors' code: the same clients, graphs and splits, trained by their loop and by Stamen's `gcfl`.

The authors' code (github.com/Oxfordblue7/GCFL: ``models.py``, ``client.py``, ``server.py``, ``training.py``,
``setupGC.py``, ``utils.py``) is read from ``--authors-code``, a folder outside this repository; nothing of it is
copied here. For each seed the driver

1. builds Stamen's federation of the TU dataset (:func:`stamen.graphs.graph_federation.build_graph_federation`:
   10 clients, ``partitioner='random'``, train-frac 0.8, val-frac 0.1, the seed), so that every client holds
   Stamen's graphs and Stamen's train/validation/test split of them;
2. hands each client's three graph lists, as their ``DataLoader`` s, to their ``setupGC.setup_devices`` (their
   ``GIN`` per client, one Adam each, their ``serverGIN``) and runs their ``training.run_gcfl`` with the
   hyperparameters of their ``runnerfile`` for the dataset (:data:`AUTHORS_SETTINGS`, :data:`COMMON`),
   seeding ``random``, numpy and torch with the seed as their ``main_oneDS.py`` does;
3. runs Stamen's ``gcfl`` on the same config in process (:func:`stamen.run`) and reads its summary and rows.

What is recorded of their run is observed by wrapping their methods, never by changing what they compute:
``Client_GC.compute_weight_update`` (each client's validation and test accuracy after its local training, from
their ``train_gc``'s own figures, and its GIN-layer update norm), ``Server.compute_max_update_norm`` and
``compute_mean_update_norm`` (each cluster's norms against eps2 and eps1, every round), ``Server.min_cut`` (each
split) and ``Server.aggregate_clusterwise`` (after it, each client's model, its cluster's GIN layers and its own
input layer and head, scored on its validation and test graphs with their ``eval_gc``, the torch random state
kept as it was so that their run draws what it would draw without the driver).

Figures (test accuracy pooled over the clients' test graphs: correct graphs over all clients / test graphs):

- ``clients``: each client's model after its local training of the round, Stamen's "client models"
  (``test_acc``, :mod:`stamen.contract.figures`); ``clusters``: each client's model after the round's
  aggregation, Stamen's ``global_test_acc`` of a personalised algorithm (each client on its cluster's model);
- ``final``: at the last round; ``best``: at the round of best pooled validation accuracy of the cluster models,
  the first such round, as Stamen's summary chooses its best round (on ``global_val_acc``, the headline's
  validation figure);
- ``reported``: their own figure, ``run_gcfl``'s frame: per client the best of the test accuracies cached at
  the splits and at the end, averaged over the clients unweighted.

Shims for today's PyG and torch, applied from here: ``torch_geometric.data.DataLoader`` is PyG's
``torch_geometric.loader.DataLoader`` (moved in PyG 2.0; their ``setupGC.py`` imports the old name); where
scikit-learn is not installed, ``sklearn.model_selection`` is a stub whose ``train_test_split`` raises (their
``utils.py`` imports it for their own splits, which are not used here). Torch runs one thread, as Stamen's clients
do. Usage (from the repository root)::

    python benchmarks/tools/gcfl_authors.py --authors-code ../gcfl-authors --dataset MUTAG \\
        --data-root ../shared/datasets --seeds 0,1,2 --out benchmarks/gcfl-authors-mutag.json

writes the JSON record and the table beside it (``.md``); a seed already in ``--out`` is kept, not run again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch
from gcfl_authors_table import AUTHORS_REPOSITORY, best_and_final, markdown_table, pair, pooled, splits_text

# Per dataset: their thresholds and GCFL+'s sequence length, and where they come from.
AUTHORS_SETTINGS: dict[str, dict[str, Any]] = {
    "MUTAG": {"eps1": 0.05, "eps2": 0.1, "seq_length": 5, "source": "main_oneDS.py's defaults (MUTAG is not in "
              "runnerfile)"},
    "PROTEINS": {"eps1": 0.03, "eps2": 0.06, "seq_length": 10, "source": "runnerfile's PROTEINS lines"},
}  # fmt: skip
# main_oneDS.py's defaults, which runnerfile keeps: 200 rounds of one local epoch, Adam lr 1e-3, weight decay 5e-4,
# GIN 3 x 64 with dropout 0.5, batches of 128 graphs, 10 clients.
COMMON: dict[str, Any] = {
    "num_rounds": 200, "local_epoch": 1, "lr": 1e-3, "weight_decay": 5e-4, "nlayer": 3, "hidden": 64,
    "dropout": 0.5, "batch_size": 128, "num_clients": 10, "device": "cpu",
}  # fmt: skip
SPLIT = {"train_frac": 0.8, "val_frac": 0.1}


# ----------------------------------------------------------------------------------------------- Stamen's clients
@dataclass
class ClientGraphs:
    """One client's graphs as Stamen's federation holds them, split train / validation / test."""

    train: list[Any]
    val: list[Any]
    test: list[Any]


def stamen_clients(dataset: str, data_root: str, seed: int, num_clients: int) -> tuple[list[ClientGraphs], int]:
    """Each client's train/validation/test graphs of Stamen's federation of ``tu:<dataset>``, and the class count."""
    from stamen.graphs.graph_federation import build_graph_federation
    from stamen.graphs.graph_set_clients import load_graph_set
    from stamen.graphs.spec import FederationSpec

    spec = FederationSpec(
        dataset=f"tu:{dataset}", num_clients=num_clients, partitioner="random", seed=seed, data_root=data_root,
        train_frac=SPLIT["train_frac"], val_frac=SPLIT["val_frac"],
    )  # fmt: skip
    federation = build_graph_federation(spec)
    graphs = load_graph_set(spec.dataset, data_root, spec.graph_seed)  # the graphs the federation dealt out
    clients = []
    for part, batch in zip(federation.parts, federation.clients, strict=True):
        held = [graphs[int(g)] for g in part]
        if batch.num_graphs != len(held) or not all(
            int(batch.y[k]) == int(held[k].y.reshape(-1)[0]) for k in range(len(held))
        ):
            raise RuntimeError("the graph lists do not match the federation's client batches")
        masks = (batch.train_mask, batch.val_mask, batch.test_mask)
        train, val, test = ([held[k] for k in range(len(held)) if bool(mask[k])] for mask in masks)
        clients.append(ClientGraphs(train, val, test))
    return clients, int(federation.graph.num_classes)


# ----------------------------------------------------------------------------------------------- their run
@dataclass
class Observed:
    """What the wrappers saw of their run, by round (1-based)."""

    round: int = 0  # rounds aggregated so far
    after_training: dict[int, dict[int, dict[str, float]]] = field(default_factory=dict)  # round -> client -> ...
    after_aggregation: dict[int, dict[int, dict[str, float]]] = field(default_factory=dict)
    norms: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # round -> per cluster
    splits: list[dict[str, Any]] = field(default_factory=list)


def import_authors(code: Path) -> tuple[dict[str, ModuleType], list[str]]:
    """Their modules, imported from ``code`` with the shims (module docstring), and the shims applied."""
    import torch_geometric.data
    import torch_geometric.loader

    torch_geometric.data.DataLoader = torch_geometric.loader.DataLoader
    shims = ["torch_geometric.data.DataLoader = torch_geometric.loader.DataLoader"]
    try:
        import sklearn.model_selection  # noqa: F401  (their utils.py's split, which this driver never calls)
    except ImportError:
        stub = ModuleType("sklearn.model_selection")

        def train_test_split(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("their split is not used: the clients hold Stamen's splits")

        setattr(stub, "train_test_split", train_test_split)  # noqa: B010  (a module built here)
        sys.modules.setdefault("sklearn", ModuleType("sklearn"))
        sys.modules["sklearn.model_selection"] = stub
        shims.append("sklearn.model_selection: a stub whose train_test_split raises (scikit-learn not installed)")
    sys.path.insert(0, str(code))
    import importlib

    names = ("models", "server", "client", "training", "setupGC")
    for name in names:
        if name in sys.modules and not str(getattr(sys.modules[name], "__file__", "")).startswith(str(code)):
            raise RuntimeError(f"a module {name!r} from elsewhere is already imported")
    return {name: importlib.import_module(name) for name in names}, shims


def authors_digest(code: Path) -> str:
    """A digest of their Python files (name and bytes), to name the code that ran."""
    digest = hashlib.sha256()
    for path in sorted(code.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def run_authors(mods: dict[str, ModuleType], clients: list[ClientGraphs], num_classes: int, seed: int,
                eps1: float, eps2: float) -> dict[str, Any]:  # fmt: skip
    """Their ``run_gcfl`` on ``clients`` (module docstring), observed; the figures and splits it made."""
    client_mod, server_mod, training, setup = mods["client"], mods["server"], mods["training"], mods["setupGC"]
    loader = sys.modules["torch_geometric.loader"].DataLoader
    bs = COMMON["batch_size"]
    split = {}
    for k, graphs in enumerate(clients):
        loaders = {
            "train": loader(graphs.train, batch_size=bs, shuffle=True),
            "val": loader(graphs.val, batch_size=bs, shuffle=True),
            "test": loader(graphs.test, batch_size=bs, shuffle=True),
        }  # as their prepareData_oneDS builds them
        split[f"{k}-client"] = (loaders, int(graphs.train[0].x.shape[1]), num_classes, len(graphs.train))
    sizes = {k: (len(g.val), len(g.test)) for k, g in enumerate(clients)}
    args = argparse.Namespace(**COMMON, seed=seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    their_clients, server, _ = setup.setup_devices(split, args)
    seen = Observed()
    cls, srv = client_mod.Client_GC, server_mod.Server
    originals = {
        (cls, "compute_weight_update"): cls.compute_weight_update,
        (srv, "compute_max_update_norm"): srv.compute_max_update_norm,
        (srv, "compute_mean_update_norm"): srv.compute_mean_update_norm,
        (srv, "min_cut"): srv.min_cut,
        (srv, "aggregate_clusterwise"): srv.aggregate_clusterwise,
    }

    def compute_weight_update(self: Any, local_epoch: int) -> None:
        originals[(cls, "compute_weight_update")](self, local_epoch)
        n_val, n_test = sizes[self.id]
        seen.after_training.setdefault(seen.round + 1, {})[self.id] = {
            "val": round(self.train_stats["valAccs"][-1] * n_val),
            "test": round(self.train_stats["testAccs"][-1] * n_test),
            "update_norm": self.convDWsNorm,
        }

    def norm(which: str) -> Any:
        def wrapped(self: Any, cluster: list[Any]) -> float:
            value = originals[(srv, f"compute_{which}_update_norm")](self, cluster)
            rows = seen.norms.setdefault(seen.round + 1, [])
            ids = [int(c.id) for c in cluster]
            if not rows or rows[-1]["cluster"] != ids or which in rows[-1]:
                rows.append({"cluster": ids})
            rows[-1][which] = value
            return value

        return wrapped

    def min_cut(self: Any, similarity: Any, idc: Any) -> Any:
        c1, c2 = originals[(srv, "min_cut")](self, similarity, idc)
        norms = seen.norms.get(seen.round + 1, [{}])[-1]
        seen.splits.append({
            "round": seen.round + 1, "cluster": [int(i) for i in idc],
            "parts": sorted([sorted(int(i) for i in c1), sorted(int(i) for i in c2)]),
            "mean_update_norm": norms.get("mean"), "max_update_norm": norms.get("max"),
        })  # fmt: skip
        return c1, c2

    def aggregate_clusterwise(self: Any, client_clusters: list[list[Any]]) -> None:
        originals[(srv, "aggregate_clusterwise")](self, client_clusters)
        seen.round += 1
        state = torch.get_rng_state()  # their loaders shuffle: scoring here must not move their random stream
        scores = {}
        for c in their_clients:
            _, val = client_mod.eval_gc(c.model, c.dataLoader["val"], c.args.device)
            _, test = client_mod.eval_gc(c.model, c.dataLoader["test"], c.args.device)
            n_val, n_test = sizes[c.id]
            scores[c.id] = {"val": round(val * n_val), "test": round(test * n_test)}
        torch.set_rng_state(state)
        seen.after_aggregation[seen.round] = scores
        seen.norms.setdefault(seen.round, []).append({"clusters": [[int(c.id) for c in k] for k in client_clusters]})

    wrappers = {
        "compute_weight_update": compute_weight_update, "compute_max_update_norm": norm("max"),
        "compute_mean_update_norm": norm("mean"), "min_cut": min_cut, "aggregate_clusterwise": aggregate_clusterwise,
    }  # fmt: skip
    started = time.perf_counter()
    try:
        for (owner, name), _ in originals.items():
            setattr(owner, name, wrappers[name])
        frame = training.run_gcfl(their_clients, server, COMMON["num_rounds"], COMMON["local_epoch"], eps1, eps2)
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)
    wall = time.perf_counter() - started
    return summarize_authors(seen, sizes, float(frame["test_acc"].mean()), wall)


def summarize_authors(seen: Observed, sizes: dict[int, tuple[int, int]], reported: float, wall: float) -> dict:
    """Per round pooled figures of their run, and the record of a seed's side."""
    rounds = []
    for r in sorted(seen.after_aggregation):
        trained, aggregated = seen.after_training[r], seen.after_aggregation[r]
        row: dict[str, float] = {"round": r}
        for name, scores in (("clients", trained), ("clusters", aggregated)):
            for which, index in (("val", 0), ("test", 1)):
                row[f"{name}_{which}"] = pooled([(scores[k][which], sizes[k][index]) for k in scores])
        rounds.append(row)
    chosen = best_and_final(rounds, "clusters_val", ("clients_test", "clusters_test", "clusters_val"))
    return {
        "clients": {"best": chosen["best"]["clients_test"], "final": chosen["final"]["clients_test"]},
        "clusters": {"best": chosen["best"]["clusters_test"], "final": chosen["final"]["clusters_test"]},
        "best_round": chosen["best_round"],
        "reported": reported,
        "splits": seen.splits,
        "final_clusters": seen.norms[max(seen.norms)][-1]["clusters"],
        "norms": {str(r): [n for n in rows if "clusters" not in n] for r, rows in sorted(seen.norms.items())},
        "client_update_norms": {str(r): {str(k): v["update_norm"] for k, v in sorted(scores.items())}
                                for r, scores in sorted(seen.after_training.items())},
        "wall_seconds": wall,
    }  # fmt: skip


# ----------------------------------------------------------------------------------------------- Stamen's run
def stamen_config(dataset: str, data_root: str, seed: int, eps1: float, eps2: float, measure: str) -> dict[str, Any]:
    """The run config of Stamen's ``gcfl`` in their setting (``graph-batch-size`` their batch of 128)."""
    return {
        "task": "graph-classification", "dataset": f"tu:{dataset}", "data-root": data_root, "partitioner": "random",
        "algorithm": "gcfl", "model": "gin", "num-layers": COMMON["nlayer"], "hidden": COMMON["hidden"],
        "lr": COMMON["lr"], "weight-decay": COMMON["weight_decay"], "dropout": COMMON["dropout"],
        "local-epochs": COMMON["local_epoch"], "graph-batch-size": COMMON["batch_size"],
        "train-frac": SPLIT["train_frac"], "val-frac": SPLIT["val_frac"], "num-server-rounds": COMMON["num_rounds"],
        "gcfl-eps1": eps1, "gcfl-eps2": eps2, "gcfl-sequence-length": 0, "gcfl-measure": measure, "seed": seed,
    }  # fmt: skip


def run_stamen(config: dict[str, Any], out: str, name: str) -> dict[str, Any]:
    """Stamen's ``gcfl`` on ``config`` in process, its figures and splits from its summary, and every round's
    cluster norms (read by wrapping its server's split step, which computes nothing else)."""
    import stamen
    from stamen.algorithms.gcfl import server as gcfl_server

    norms: dict[str, list[dict[str, Any]]] = {}
    original = gcfl_server.GCFL._split

    def split(self: Any, server_round: int, ids: list[int], updates: np.ndarray) -> None:
        values = np.linalg.norm(updates, axis=1)
        rows = norms.setdefault(str(server_round), [])
        for cluster in self.clusters:
            members = [k for k, partition in enumerate(ids) if partition in cluster]
            if members:
                mean = float(np.linalg.norm(updates[members].mean(axis=0)))
                rows.append({"cluster": list(cluster), "max": float(values[members].max()), "mean": mean})
        original(self, server_round, ids, updates)

    started = time.perf_counter()
    gcfl_server.GCFL._split = split  # type: ignore[method-assign]
    try:
        run = stamen.run({**config, "run-name": name, "overwrite": True}, clients=COMMON["num_clients"], out=out)
    finally:
        gcfl_server.GCFL._split = original  # type: ignore[method-assign]
    wall = time.perf_counter() - started
    summary = run.summary
    return {
        "clients": {"best": summary["best"]["test_acc"], "final": summary["final"]["test_acc"]},
        "clusters": {"best": summary["best"]["global_test_acc"], "final": summary["final"]["global_test_acc"]},
        "best_round": summary["best_round"],
        "splits": [
            {key: s[key] for key in ("round", "cluster", "parts", "mean_update_norm", "max_update_norm")}
            for s in summary.get("cluster_splits", [])
        ],
        "final_clusters": summary.get("clusters"),
        "norms": norms,
        "client_update_norms": {},
        "run_dir": os.path.relpath(run.dir),
        "wall_seconds": wall,
    }


# ----------------------------------------------------------------------------------------------- the record
def shown(path: str) -> str:
    """A path as the record writes it: relative to the working folder where it lies below it or beside it, else
    its last name (the record speaks of no folder of one machine)."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("../..") else Path(path).name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors-code", required=True, help="a folder holding their training.py, server.py, ...")
    parser.add_argument("--dataset", required=True, choices=sorted(AUTHORS_SETTINGS))
    parser.add_argument("--data-root", required=True, help="the data root holding <DATASET>/raw (TU layout)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", required=True, help="the JSON record; the table is written beside it (.md)")
    parser.add_argument("--runs", default="benchout/gcfl-authors", help="where Stamen's run directories go")
    parser.add_argument("--rounds", type=int, default=COMMON["num_rounds"], help="rounds (theirs: 200)")
    parser.add_argument("--measure", default="model", choices=("model", "layers"), help="Stamen's gcfl-measure")
    args = parser.parse_args(argv)
    code, out = Path(args.authors_code), Path(args.out)
    problems = [
        f"--authors-code {code}: no {name} there; give the folder of a checkout of {AUTHORS_REPOSITORY}"
        for name in ("training.py", "server.py", "client.py", "models.py", "setupGC.py")
        if not (code / name).is_file()
    ][:1]
    if not (Path(args.data_root) / args.dataset / "raw").is_dir():
        problems.append(f"--data-root {args.data_root}: no {args.dataset}/raw folder there")
    if out.suffix != ".json" or not out.parent.is_dir():
        problems.append(f"--out {out}: give a .json file in an existing folder")
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        problems.append(f"--seeds {args.seeds!r}: give integers separated by commas, e.g. 0,1,2")
    if problems:
        print(f"gcfl_authors: {problems[0]}", file=sys.stderr)
        return 2
    from stamen.common.file_writes import atomic_write
    from stamen.contract.provenance import provenance

    settings = AUTHORS_SETTINGS[args.dataset]
    COMMON["num_rounds"] = args.rounds
    torch.set_num_threads(1)  # as Stamen's clients train (stamen.client.device); two threads crawl on a busy machine
    command = " ".join(
        shlex.quote(a) for a in ["python", shown(sys.argv[0]), *_shown_args(argv if argv is not None else sys.argv[1:])]
    )
    record: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    if record and (
        record.get("dataset") != args.dataset
        or record.get("stamen_measure") != args.measure
        or record.get("authors_settings", {}).get("num_rounds") != args.rounds
    ):
        print(f"gcfl_authors: --out {out} holds another setting's record; give another --out", file=sys.stderr)
        return 2
    done = record.get("seeds", {})
    mods, shims = import_authors(code)
    for seed in seeds:
        if str(seed) in done:
            continue
        clients, num_classes = stamen_clients(args.dataset, args.data_root, seed, COMMON["num_clients"])
        authors = run_authors(mods, clients, num_classes, seed, settings["eps1"], settings["eps2"])
        config = stamen_config(args.dataset, args.data_root, seed, settings["eps1"], settings["eps2"], args.measure)
        ours = run_stamen(config, args.runs, f"gcfl-authors-{args.dataset.lower()}-{args.measure}-s{seed}")
        done[str(seed)] = {
            "authors": authors,
            "stamen": ours,
            "client_sizes": [[len(c.train), len(c.val), len(c.test)] for c in clients],
            "stamen_config": {**config, "data-root": shown(args.data_root)},
        }
        record = {
            "dataset": args.dataset,
            "command": command,
            "provenance": provenance(seeds=sorted(map(int, done))),
            "authors_code": {"repository": AUTHORS_REPOSITORY, "digest": authors_digest(code)},
            "authors_settings": {**COMMON, "eps1": settings["eps1"], "eps2": settings["eps2"],
                                 "settings_from": settings["source"], "loop": "training.run_gcfl"},
            "stamen_measure": args.measure,
            "settings_text": settings_text(settings, args.measure),
            "shims": shims,
            "seeds": done,
        }  # fmt: skip
        record["provenance"]["command"] = command
        atomic_write(out, json.dumps(record, separators=(",", ":")) + "\n")
        atomic_write(out.with_suffix(".md"), markdown_table(record))
        print(f"seed {seed}: authors {pair(authors['clients'])} splits {splits_text(authors['splits'])}; "
              f"Stamen {pair(ours['clients'])} splits {splits_text(ours['splits'])}", flush=True)  # fmt: skip
    return 0


def settings_text(settings: dict[str, Any], measure: str) -> str:
    """The shared settings in words, for the table."""
    c = COMMON
    return (
        f"eps1 {settings['eps1']}, eps2 {settings['eps2']} ({settings['source']}), {c['num_rounds']} rounds of "
        f"{c['local_epoch']} local epoch, Adam lr {c['lr']} weight decay {c['weight_decay']} kept per client, GIN "
        f"{c['nlayer']} x {c['hidden']}, dropout {c['dropout']}, batches of {c['batch_size']} graphs (Stamen: "
        f"`graph-batch-size={c['batch_size']}`), no split before round 21; their loop `training.run_gcfl` (plain "
        f"GCFL: the sequence length is GCFL+'s and unused; Stamen `gcfl-sequence-length=0`), Stamen "
        f"`gcfl-measure='{measure}'`"
    )


def _shown_args(argv: list[str]) -> list[str]:
    paths = {"--authors-code", "--data-root", "--out", "--runs"}
    return [shown(a) if k > 0 and argv[k - 1] in paths else a for k, a in enumerate(argv)]


if __name__ == "__main__":
    sys.exit(main())
