"""``stamen certify``: exact label-flip certificates of (graph) neural networks via their NTK.

A wide GNN trained with hinge loss behaves like a kernel SVM with the network's NTK
(Sabanayagam, Gosch et al., ICLR 2025). This command computes the NTK of each
architecture, trains the bias-free SVM (or kernel ridge regression) on the labelled
nodes and certifies the targets against an adversary that flips up to ``k`` training
labels: sample-wise (per target) or collectively (one flip set against all targets).

Binary certification keeps the two largest classes by default (as in the paper; the
first of ``--classes a,b`` becomes +1) and drops nodes isolated in that subgraph;
``--classes all`` certifies all classes with one-vs-all SVMs (sample-wise only).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

DATASET_NAMES = ("csbm-paper", "csbm", "cora", "citeseer", "pubmed", "cora_ml")
MODES = ("samplewise", "collective")
MODELS = ("svm", "krr")


def add_parser(subparsers) -> None:
    """Register ``certify`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "certify",
        help="exact label-flip poisoning certificates (NTK + SVM/KRR, MILP)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("graph")
    src.add_argument(
        "--dataset",
        default="csbm-paper",
        help=f"one of {', '.join(DATASET_NAMES)} (csbm-paper: the paper's binary CSBM)",
    )
    src.add_argument("--data-root", default=None, help="folder with raw dataset files")
    src.add_argument(
        "--graph", default=None, help="npz with arrays x, edge_index, y, labeled, targets (overrides --dataset)"
    )
    src.add_argument(
        "--kernel", default=None, help="n x n float64 .npy kernel over all nodes of the graph (graph order)"
    )
    src.add_argument("--csbm-nodes", type=int, default=200, help="nodes of csbm-paper (default 200)")
    src.add_argument("--classes", default=None, help="'a,b' for a binary task (default: two largest classes) or 'all'")
    src.add_argument(
        "--binary-features",
        action="store_true",
        help="replace features by x > 0 (the paper's bag-of-words features for Cora-ML)",
    )
    src.add_argument("--labeled-per-class", type=int, default=10, help="labelled nodes per class (default 10)")
    src.add_argument("--targets", type=int, default=100, help="number of target nodes (0 = all unlabelled)")
    m = p.add_argument_group("model")
    m.add_argument("--model", default="svm", help="svm (default) or krr")
    m.add_argument(
        "--arch", default="gcn", help="comma list of gcn, sgc, appnp, graphsage, gin, mlp, gcn_skippc, gcn_skipalpha"
    )
    m.add_argument("--depth", type=int, default=1)
    m.add_argument("--normalization", default=None, help="row or sym (default: row; appnp: sym)")
    m.add_argument("--ntk-variant", default="textbook", help="textbook (default) or reference")
    m.add_argument("--C", default="0.1", help="SVM box bound, or 'cv' for 4-fold stratified CV")
    m.add_argument("--ridge", type=float, default=1.0, help="ridge of --model krr (default 1.0)")
    c = p.add_argument_group("certificate")
    c.add_argument("--budgets", default="1,2,3", help="comma list of flip budgets")
    c.add_argument("--mode", default="samplewise", help="samplewise or collective")
    c.add_argument(
        "--decide", action="store_true", help="sample-wise decision MILP (infeasible = certified; no worst-case score)"
    )
    c.add_argument("--no-screen", action="store_true", help="no bound/greedy screening before a MILP")
    c.add_argument(
        "--method",
        default="auto",
        help="auto (default): exhaustive retraining sweep for budgets with at most --enumerate-limit "
        "flip sets, MILP beyond; milp: always the MILP; enumerate: always the sweep",
    )
    c.add_argument(
        "--enumerate-limit", type=int, default=20000, help="flip sets up to which auto sweeps (default 20000)"
    )
    c.add_argument("--solver", default="highs", help="highs (default) or cbc")
    c.add_argument("--time-limit", type=float, default=60.0, help="seconds per MILP (default 60)")
    f = p.add_argument_group("federated attacker")
    f.add_argument("--clients", type=int, default=None, help="split the labelled nodes among K clients")
    f.add_argument(
        "--partition",
        default="random",
        help="random (certify's seeded split of labelled nodes) or a graphs partitioner",
    )
    f.add_argument("--attacker-client", type=int, default=None, help="only this client flips labels")
    f.add_argument("--attacker", default=None, help="'any': worst case over clients")
    o = p.add_argument_group("output")
    o.add_argument("--out", required=True, help="output folder")
    o.add_argument("--overwrite", action="store_true", help="allow a non-empty --out")
    o.add_argument("--json", action="store_true", help="print certificate.json on stdout")
    o.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=main)


# ----------------------------------------------------------------------------- parsing
def _int_list(text: str, what: str) -> list[int]:
    try:
        vals = [int(v) for v in str(text).split(",") if v.strip() != ""]
    except ValueError:
        raise ValueError(f"--{what} must be a comma list of integers, got {text!r}") from None
    if not vals:
        raise ValueError(f"--{what} is empty")
    return vals


def _choice(value: str, options, flag: str) -> str:
    if value not in options:
        raise ValueError(f"{flag} {value!r} is not accepted; choose one of: {', '.join(options)}")
    return value


def _validate(args) -> dict:
    from certify.ntk import ARCHITECTURES, VARIANTS
    from certify.solvers import SOLVERS

    cfg = {}
    cfg["budgets"] = sorted(set(_int_list(args.budgets, "budgets")))
    if min(cfg["budgets"]) < 0:
        raise ValueError(f"--budgets must be >= 0, got {args.budgets!r}")
    cfg["archs"] = [a.strip() for a in str(args.arch).split(",") if a.strip()]
    if not cfg["archs"]:
        raise ValueError("--arch is empty")
    for a in cfg["archs"]:
        _choice(a, ARCHITECTURES, "--arch")
    _choice(args.mode, MODES, "--mode")
    _choice(args.model, MODELS, "--model")
    _choice(args.solver, SOLVERS, "--solver")
    _choice(args.method, ("auto", "milp", "enumerate"), "--method")
    if args.enumerate_limit < 0:
        raise ValueError(f"--enumerate-limit must be >= 0, got {args.enumerate_limit}")
    _choice(args.ntk_variant, VARIANTS, "--ntk-variant")
    if args.normalization is not None:
        _choice(args.normalization, ("row", "sym"), "--normalization")
    if args.depth < 1:
        raise ValueError(f"--depth must be >= 1, got {args.depth}")
    if not (args.time_limit > 0):
        raise ValueError(f"--time-limit must be > 0 seconds, got {args.time_limit}")
    if args.targets < 0:
        raise ValueError(f"--targets must be >= 0, got {args.targets}")
    if args.labeled_per_class < 1:
        raise ValueError(f"--labeled-per-class must be >= 1, got {args.labeled_per_class}")
    if str(args.C).lower() == "cv":
        cfg["C"] = "cv"
    else:
        try:
            cfg["C"] = float(args.C)
        except ValueError:
            raise ValueError(f"--C must be a positive number or 'cv', got {args.C!r}") from None
        if not (np.isfinite(cfg["C"]) and cfg["C"] > 0):
            raise ValueError(f"--C must be a positive number or 'cv', got {args.C!r}")
    if not (args.ridge > 0):
        raise ValueError(f"--ridge must be > 0, got {args.ridge}")
    cfg["classes"] = None
    cfg["binary"] = True
    if args.classes is not None:
        if args.classes.strip().lower() == "all":
            cfg["binary"] = False
        else:
            cfg["classes"] = _int_list(args.classes, "classes")
            if len(cfg["classes"]) != 2 or len(set(cfg["classes"])) != 2:
                raise ValueError(f"--classes takes two distinct class ids 'a,b' or 'all', got {args.classes!r}")
    if args.graph is None:
        _choice(args.dataset, DATASET_NAMES, "--dataset")
    if args.kernel is not None and len(cfg["archs"]) > 1:
        raise ValueError("--kernel replaces the NTK: give a single --arch label (or omit --arch)")
    if args.attacker is not None and args.attacker != "any":
        raise ValueError(f"--attacker accepts only 'any', got {args.attacker!r} (use --attacker-client i)")
    if args.attacker is not None and args.attacker_client is not None:
        raise ValueError("give either --attacker any or --attacker-client i, not both")
    cfg["attacker"] = "all labels"
    if args.attacker is not None or args.attacker_client is not None:
        if args.clients is None:
            raise ValueError("--attacker/--attacker-client need --clients K")
        if args.mode != "samplewise" or args.model != "svm":
            raise ValueError("client-restricted attackers are supported for --mode samplewise --model svm")
        if args.attacker_client is not None and not (0 <= args.attacker_client < args.clients):
            raise ValueError(f"--attacker-client must lie in 0..{args.clients - 1}, got {args.attacker_client}")
        cfg["attacker"] = "any" if args.attacker == "any" else int(args.attacker_client)
    if not cfg["binary"] and (args.mode == "collective"):
        raise ValueError("--mode collective needs a binary task (omit --classes all)")
    if not cfg["binary"] and cfg["attacker"] != "all labels":
        raise ValueError("client-restricted attackers need a binary task")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not args.overwrite:
        raise ValueError(f"--out {out} exists and is not empty; pass --overwrite to replace its files")
    return cfg


# ----------------------------------------------------------------------------- data
def _load_instance(args, cfg):
    from certify.data import build_instance, instance_from_arrays, load_graph_npz

    if args.graph is not None:
        arrays = load_graph_npz(args.graph)
        return instance_from_arrays(arrays, cfg["classes"], cfg["binary"]), Path(args.graph).name
    if args.dataset == "csbm-paper":
        from graphs.csbm import make_paper_csbm

        if args.csbm_nodes < 8:
            raise ValueError(f"--csbm-nodes must be >= 8, got {args.csbm_nodes}")
        data = make_paper_csbm(num_nodes=args.csbm_nodes, seed=args.seed)
    else:
        from graphs import load_dataset

        data = load_dataset(args.dataset, root=args.data_root, seed=args.seed)
    # the paper drops isolated nodes of real graphs but keeps them in its CSBM experiments
    inst = build_instance(
        data,
        cfg["classes"],
        cfg["binary"],
        args.labeled_per_class,
        args.targets,
        args.seed,
        drop_isolated=args.dataset != "csbm-paper",
    )
    if args.binary_features:
        inst.x = (inst.x > 0).astype(np.float64)
    return inst, args.dataset


def _owners(args, inst) -> np.ndarray | None:
    if args.clients is None:
        return None
    if args.partition == "random":
        from certify.partition import random_label_split

        return random_label_split(len(inst.labeled), args.clients, args.seed)
    import torch
    from torch_geometric.data import Data

    from graphs.partition import PARTITIONERS, partition_nodes

    _choice(args.partition, ("random", *PARTITIONERS), "--partition")
    data = Data(
        x=torch.from_numpy(inst.x).float(), edge_index=torch.from_numpy(inst.edge_index), y=torch.from_numpy(inst.y)
    )
    parts = partition_nodes(data, args.clients, method=args.partition, seed=args.seed)
    node_owner = np.empty(inst.n, dtype=np.int64)
    for cid, nodes in enumerate(parts):
        node_owner[np.asarray(nodes)] = cid
    return node_owner[inst.labeled]


# ----------------------------------------------------------------------------- run
class _StdoutToStderr:
    """Send file descriptor 1 to stderr (HiGHS prints its banner straight to fd 1), so
    ``--json`` output on stdout stays parseable."""

    def __enter__(self):
        import os

        sys.stdout.flush()
        try:
            self.saved = os.dup(1)
            os.dup2(2, 1)
        except OSError:  # pragma: no cover - no real file descriptors (embedded use)
            self.saved = None
        return self

    def __exit__(self, *exc):
        import os

        if self.saved is not None:
            sys.stdout.flush()
            os.dup2(self.saved, 1)
            os.close(self.saved)
        return False


def main(args) -> int:
    """Run the certificate; returns the exit code (raises ValueError on bad input)."""
    cfg = _validate(args)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from certify.ntk import ntk, validate_kernel
    from certify.report import clean_floats, print_tables, write_outputs
    from certify.solvers import SolverSpec
    from simulations.screen import output_console

    err = output_console(stderr=True)
    inst, dataset_name = _load_instance(args, cfg)
    owner = _owners(args, inst)
    spec = SolverSpec(args.solver, args.time_limit)
    given_kernel = None
    if args.kernel is not None:
        path = Path(args.kernel)
        if not path.is_file():
            raise FileNotFoundError(f"kernel file not found: {path}")
        try:
            raw = np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise ValueError(f"cannot read --kernel {path} as a .npy array: {exc}") from None
        given_kernel = validate_kernel(raw, inst.n)
    payload = {
        "command": "stamen certify " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 1 else "",
        "dataset": dataset_name,
        "mode": args.mode,
        "model": args.model,
        "ntk_variant": args.ntk_variant if given_kernel is None else "user kernel",
        "solver": {"name": args.solver, "time_limit": args.time_limit},
        "method": args.method,
        "enumerate_limit": args.enumerate_limit,
        "budgets": cfg["budgets"],
        "attacker": cfg["attacker"] if args.clients is None else f"{cfg['attacker']} of {args.clients} clients",
        "seed": args.seed,
        "instance": {
            "num_nodes": int(inst.n),
            "num_edges": int(inst.edge_index.shape[1] // 2),
            "num_features": int(inst.x.shape[1]),
            "classes": [int(c) for c in inst.class_names],
            "num_classes": int(inst.num_classes),
            "num_labeled": int(len(inst.labeled)),
            "num_targets": int(len(inst.targets)),
            "labeled": inst.node_ids[inst.labeled].tolist(),
        },
        "architectures": {},
    }
    with (
        _StdoutToStderr(),
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as progress,
    ):
        for arch in cfg["archs"]:
            t0 = time.perf_counter()
            kern = (
                given_kernel
                if given_kernel is not None
                else ntk(inst.x, inst.edge_index, arch, args.depth, args.normalization, args.ntk_variant)
            )
            task = progress.add_task(f"{arch}", total=len(inst.targets))
            res = _certify_arch(args, cfg, inst, kern, spec, owner, lambda n, task=task: progress.advance(task, n))
            res["kernel_seconds_total"] = time.perf_counter() - t0
            payload["architectures"][arch if given_kernel is None else f"{arch} (user kernel)"] = res
    payload = clean_floats(payload)
    out = Path(args.out)
    write_outputs(out, payload)
    if args.json:
        print(json.dumps(payload))
        print_tables(payload, err)
    else:
        console = output_console()
        print_tables(payload, console)
        console.print(f"wrote {out / 'certificate.json'}, {out / 'certified_accuracy.png'}, {out / 'report.md'}")
    return 0


def _certify_arch(args, cfg, inst, kern, spec, owner, advance) -> dict:
    from certify.federated import certify_against_clients
    from certify.milp import certify_collective, certify_multiclass, certify_samplewise
    from certify.report import aggregate_samplewise
    from certify.svm import KernelSVM, OneVsAllSVM, select_C

    L, T = inst.labeled, inst.targets
    k_ll, k_tl, k_tt = kern[np.ix_(L, L)], kern[np.ix_(T, L)], np.diag(kern)[T]
    binary = inst.num_classes == 2
    y_l = inst.pm_labels(L) if binary else inst.y[L]
    y_t = inst.pm_labels(T) if binary else inst.y[T]
    result: dict = {"num_targets": int(len(T))}
    if args.model == "krr":
        return _certify_krr(args, cfg, inst, k_ll, k_tl, y_l, y_t, binary, result, advance)
    C = cfg["C"]
    if C == "cv":
        C, scores = select_C(k_ll, y_l, seed=args.seed)
        result["cv_accuracy"] = {str(k): v for k, v in scores.items()}
    result["C"] = C
    model = KernelSVM(C).fit(k_ll, y_l) if binary else OneVsAllSVM(C).fit(k_ll, y_l, inst.num_classes)
    pred = model.predict(k_tl)
    result["clean_accuracy"] = float(np.mean(pred == y_t))
    if args.mode == "collective":
        flippable = None
        coll = certify_collective(
            k_ll, k_tl, y_l, C, cfg["budgets"], flippable, spec, k_tt=k_tt, **_method_kwargs(args)
        )
        advance(len(T))
        result["collective"] = {str(k): v for k, v in coll.items()}
        return result
    if binary and owner is not None and cfg["attacker"] != "all labels":
        outcomes, statuses = certify_against_clients(
            k_ll, k_tl, y_l, C, cfg["budgets"], owner, cfg["attacker"], spec, k_tt, **_method_kwargs(args)
        )
        first = next(iter(outcomes.values()))
        targets = []
        for i, t in enumerate(T):
            rec = _target_record(inst, t, first[i], y_t[i], binary)
            for k in cfg["budgets"]:
                per = [outcomes[cl][i].budgets[k] for cl in outcomes]
                worst = [b.worst_case_score for b in per if b.worst_case_score is not None]
                rec["budgets"][str(k)] = {
                    "status": statuses[i][k],
                    "method": "clients",
                    "worst_case_score": (min(worst) if first[i].clean_score >= 0 else max(worst)) if worst else None,
                    "seconds": float(sum(b.seconds for b in per)),
                    "needed_milp": any(b.milp for b in per),
                    "per_client": {str(cl): outcomes[cl][i].budgets[k].status for cl in outcomes},
                }
            targets.append(rec)
        advance(len(T))
    else:
        if binary:
            outs = certify_samplewise(
                k_ll,
                k_tl,
                y_l,
                C,
                cfg["budgets"],
                spec=spec,
                screen=not args.no_screen,
                decide=args.decide,
                k_tt=k_tt,
                progress=advance,
                **_method_kwargs(args),
            )
        else:
            outs = certify_multiclass(
                k_ll, k_tl, y_l, C, cfg["budgets"], inst.num_classes, spec=spec, k_tt=k_tt, progress=advance
            )
        targets = [_target_record(inst, t, o, y_t[i], binary, pred[i]) for i, (t, o) in enumerate(zip(T, outs))]
    result["aggregates"] = aggregate_samplewise(targets, cfg["budgets"])
    result["targets"] = targets
    return result


def _target_record(inst, t, outcome, truth, binary, predicted=None) -> dict:
    if binary:
        correct = bool(np.sign(outcome.clean_score) == truth) if outcome.clean_score != 0 else truth > 0
        pred_label = int(inst.class_names[0] if outcome.clean_score >= 0 else inst.class_names[1])
    else:
        correct = bool(predicted == truth)
        pred_label = int(inst.class_names[int(predicted)])
    return {
        "node": int(inst.node_ids[t]),
        "label": int(inst.class_names[int(inst.y[t])]),
        "predicted": pred_label,
        "correct": correct,
        "clean_score": float(outcome.clean_score),
        "budgets": {str(k): b.as_dict() for k, b in outcome.budgets.items()},
    }


def _certify_krr(args, cfg, inst, k_ll, k_tl, y_l, y_t, binary, result, advance) -> dict:
    from certify import krr
    from certify.milp import CERTIFIED, NOT_CERTIFIED
    from certify.report import aggregate_samplewise

    weights = krr.krr_weights(k_ll, k_tl, args.ridge)
    result["C"] = None
    result["ridge"] = args.ridge
    T = inst.targets
    if binary:
        clean = weights @ y_l
        result["clean_accuracy"] = float(np.mean(np.where(clean >= 0, 1, -1) == y_t))
    else:
        pred0, _ = krr.worst_case_multiclass(weights, y_l, inst.num_classes, 0)
        result["clean_accuracy"] = float(np.mean(pred0 == y_t))
    if args.mode == "collective":
        coll = {}
        for k in cfg["budgets"]:
            r = krr.collective_binary(weights, y_l, k, spec=_spec(args))
            upper = (
                r["count"]
                if r["status"] == "optimal"
                else (int(np.floor(r["bound"] + 1e-6)) if r["bound"] is not None else len(T))
            )
            coll[str(k)] = {
                "status": r["status"],
                "max_changed": r["count"] if r["status"] == "optimal" else None,
                "changed_upper_bound": upper,
                "certified_lower_bound": len(T) - upper,
                "flips": r["flips"],
                "seconds": r["seconds"],
            }
        result["collective"] = coll
        advance(len(T))
        return result
    records = [None] * len(T)
    for k in cfg["budgets"]:
        t0 = time.perf_counter()
        if binary:
            clean, worst, flips = krr.worst_case_binary(weights, y_l, k)
            status = [CERTIFIED if np.sign(w) == np.sign(c) and w != 0 else NOT_CERTIFIED for c, w in zip(clean, worst)]
            pred = np.where(clean >= 0, 1, -1)
            cs = clean
        else:
            pred, wm = krr.worst_case_multiclass(weights, y_l, inst.num_classes, k)
            worst = np.nanmin(wm, axis=1)
            status = [CERTIFIED if w > 0 else NOT_CERTIFIED for w in worst]
            flips = [None] * len(T)
            _, wm0 = krr.worst_case_multiclass(weights, y_l, inst.num_classes, 0)
            cs = np.nanmin(wm0, axis=1)
        secs = (time.perf_counter() - t0) / max(len(T), 1)
        for i, t in enumerate(T):
            if records[i] is None:
                truth = y_t[i]
                records[i] = {
                    "node": int(inst.node_ids[t]),
                    "label": int(inst.class_names[int(inst.y[t])]),
                    "correct": bool(pred[i] == truth),
                    "clean_score": float(cs[i]),
                    "budgets": {},
                }
            records[i]["budgets"][str(k)] = {
                "status": status[i],
                "method": "exact",
                "worst_case_score": float(worst[i]),
                "flips": flips[i],
                "seconds": secs,
                "needed_milp": False,
            }
    advance(len(T))
    result["aggregates"] = aggregate_samplewise(records, cfg["budgets"])
    result["targets"] = records
    return result


def _method_kwargs(args) -> dict:
    return {"method": args.method, "enumerate_limit": args.enumerate_limit}


def _spec(args):
    from certify.solvers import SolverSpec

    return SolverSpec(args.solver, args.time_limit)
