"""``stamen certify``: exact label-flip certificates of (graph) neural networks via their NTK.

This module parses the options, builds one :class:`certify.task.CertificationTask` per
architecture, runs :func:`certify.pipeline.run` and prints and writes the reports
(:mod:`certify.report`); the certificates themselves live in :mod:`certify`.

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
import sys
from pathlib import Path

import numpy as np

from certify.ntk import ARCHITECTURES
from certify.registry import ENUMERATE_LIMIT, METHODS, MODELS, MODES
from contract import strict_json
from graphs.names import DATASETS, PARTITIONERS
from simulations.options import finite_float, renamed

#: ``csbm-paper`` (the paper's binary CSBM) and the datasets of :mod:`graphs.names`
DATASET_NAMES = ("csbm-paper", *DATASETS)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
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
    m.add_argument(
        "--model",
        default="svm",
        help="; ".join(f"{name}: {entry.help}" for name, entry in MODELS.items()) + " (default svm)",
    )
    m.add_argument("--arch", default="gcn", help=f"comma list of {', '.join(ARCHITECTURES)} (default gcn)")
    m.add_argument("--depth", type=int, default=1)
    m.add_argument("--normalization", default=None, help="row or sym (default: row; appnp: sym)")
    m.add_argument("--ntk-variant", default="textbook", help="textbook (default) or reference")
    m.add_argument("--C", default="0.1", help="SVM box bound, or 'cv' for 4-fold stratified CV")
    m.add_argument("--ridge", type=finite_float, default=1.0, help="ridge of --model krr (default 1.0)")
    c = p.add_argument_group("certificate")
    c.add_argument("--budgets", default="1,2,3", help="comma list of flip budgets")
    c.add_argument(
        "--mode",
        default="samplewise",
        help="; ".join(f"{name}: {text}" for name, text in MODES.items()) + " (default samplewise)",
    )
    c.add_argument(
        "--decide", action="store_true", help="sample-wise decision MILP (infeasible = certified; no worst-case score)"
    )
    c.add_argument("--no-screen", action="store_true", help="no bound/greedy screening before a MILP")
    renamed(c, "--method", "--search")
    c.add_argument(
        "--search",
        dest="method",
        default="auto",
        help="; ".join(f"{name}: {text}" for name, text in METHODS.items()) + " (default auto)",
    )
    c.add_argument(
        "--enumerate-limit",
        type=int,
        default=ENUMERATE_LIMIT,
        help=f"flip sets up to which auto sweeps (default {ENUMERATE_LIMIT})",
    )
    c.add_argument("--solver", default="highs", help="highs (default) or cbc")
    c.add_argument("--time-limit", type=finite_float, default=60.0, help="seconds per MILP (default 60)")
    c.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes deciding targets in parallel (default: the available cores; the answers do not depend on it)",
    )
    f = p.add_argument_group("federated attacker")
    f.add_argument("--clients", type=int, default=None, help="split the labelled nodes among K clients")
    renamed(f, "--partition", "--partitioner")
    f.add_argument(
        "--partitioner",
        dest="partition",
        default="random",
        help=f"random (certify's seeded split of labelled nodes) or one of {', '.join(PARTITIONERS)}",
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
    """Comma list of integers of option ``--what`` (one clear error otherwise)."""
    try:
        vals = [int(v) for v in str(text).split(",") if v.strip() != ""]
    except ValueError:
        raise ValueError(f"--{what} must be a comma list of integers, got {text!r}") from None
    if not vals:
        raise ValueError(f"--{what} is empty")
    return vals


def _choice(value: str, options: tuple[str, ...] | dict[str, object], flag: str) -> str:
    """``value`` if it is one of ``options``; otherwise one line naming the choices."""
    if value not in options:
        raise ValueError(f"{flag} {value!r} is not accepted; choose one of: {', '.join(options)}")
    return value


def _validate(args: argparse.Namespace) -> dict:
    """Check every option before any slow work; returns the parsed values."""
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
    _choice(args.method, METHODS, "--search")
    if args.enumerate_limit < 0:
        raise ValueError(f"--enumerate-limit must be >= 0, got {args.enumerate_limit}")
    _choice(args.ntk_variant, VARIANTS, "--ntk-variant")
    if args.normalization is not None:
        _choice(args.normalization, ("row", "sym"), "--normalization")
    if args.depth < 1:
        raise ValueError(f"--depth must be >= 1, got {args.depth}")
    if not (args.time_limit > 0):
        raise ValueError(f"--time-limit must be > 0 seconds, got {args.time_limit}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
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
    _check_out(args)
    return cfg


def _check_out(args: argparse.Namespace) -> None:
    """``--out`` is a writable folder, or can become one, before any slow work.

    A folder holding only the journal of an interrupted certification is the one to
    resume (whether it is this job's is checked when the journal is opened); anything
    else in it needs ``--overwrite``.
    """
    import os

    from certify.journal import JOURNAL_FILE

    out = Path(args.out).expanduser()
    if out.exists():
        if not out.is_dir():
            raise ValueError(f"--out {out} exists and is not a folder")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ValueError(f"--out {out} is not writable; choose a writable folder")
        if not args.overwrite and any(entry.name != JOURNAL_FILE for entry in out.iterdir()):
            raise ValueError(f"--out {out} exists and is not empty; pass --overwrite to replace its files")
        return
    probe = out.absolute()
    while not probe.exists():
        if probe.is_symlink():
            raise ValueError(f"--out {out}: {probe} is a broken symbolic link; choose another folder")
        probe = probe.parent
    if not probe.is_dir():
        raise ValueError(f"--out {out} lies under {probe}, which is a file, not a folder; choose another folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out} cannot be created: {probe} is not writable; choose a writable folder")


# ----------------------------------------------------------------------------- data
def _load_instance(args: argparse.Namespace, cfg: dict):
    """The certification instance (:class:`certify.data.Instance`) and the dataset's name."""
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


def _owners(args: argparse.Namespace, inst) -> np.ndarray | None:
    """Client of each labelled node when ``--clients K`` splits them (else ``None``)."""
    if args.clients is None:
        return None
    if args.partition == "random":
        from certify.partition import random_label_split

        return random_label_split(len(inst.labeled), args.clients, args.seed)
    import torch
    from torch_geometric.data import Data

    from graphs.partition import partition_nodes

    _choice(args.partition, ("random", *PARTITIONERS), "--partitioner")
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

    def __enter__(self) -> _StdoutToStderr:
        import os

        sys.stdout.flush()
        try:
            self.saved = os.dup(1)
            os.dup2(2, 1)
        except OSError:  # pragma: no cover - no real file descriptors (embedded use)
            self.saved = None
        return self

    def __exit__(self, *exc: object) -> bool:
        import os

        if self.saved is not None:
            sys.stdout.flush()
            os.dup2(self.saved, 1)
            os.close(self.saved)
        return False


def main(args: argparse.Namespace) -> int:
    """Run the certificate; returns the exit code (raises ValueError on bad input).

    Each finished unit (a target, or a budget of a collective certificate) is appended to
    the journal in ``--out`` (:mod:`certify.journal`) as it is decided; the same command
    again resumes from it. Ctrl-C (or SIGTERM) keeps what is finished and says how to resume.
    The journal is removed once the final outputs are written: they hold all of it.
    """
    cfg = _validate(args)
    from certify.journal import Journal
    from certify.report import clean_floats, print_tables, write_outputs
    from simulations.certify_job import certify_arch, job_digest, job_options
    from simulations.certify_progress import CertifyProgress
    from simulations.errors import RunInterrupted
    from simulations.screen import output_console

    err = output_console(stderr=True)
    command = args.invocation
    out = Path(args.out)
    journal = None
    try:
        with _StdoutToStderr(), CertifyProgress(err) as screen:
            screen.loading(Path(args.graph).name if args.graph is not None else args.dataset)
            inst, dataset_name = _load_instance(args, cfg)
            owner = _owners(args, inst)
            tasks = _tasks(args, cfg, inst, owner)  # validates everything, the kernel included
            payload = _payload(args, cfg, inst, dataset_name, command)
            options = job_options(args, cfg)
            journal = Journal.open(out, job_digest(options, inst, tasks, owner), options)
            for note in journal.notes:
                screen.note(note)
            for task in tasks:
                name = task.arch if args.kernel is None else f"{task.arch} (user kernel)"
                payload["architectures"][name] = certify_arch(task, name, journal, screen).as_dict()
    except KeyboardInterrupt:
        if journal is None:  # nothing was certified yet
            raise
        journal.close()
        collective = args.mode == "collective"
        units = len(tasks) * (len(cfg["budgets"]) if collective else len(inst.targets))
        raise RunInterrupted(
            f"interrupted: kept {journal.units_on_disk()} of {units} finished units "
            f"({'budgets' if collective else 'targets'}) in {journal.path}; "
            f"resume with: {command}"
        ) from None
    except BaseException:
        if journal is not None:
            journal.close()  # the finished units stay for a later run
        raise
    from contract.provenance import provenance

    payload["provenance"] = provenance(seeds=[args.seed])
    payload = clean_floats(payload)
    write_outputs(out, payload)
    journal.remove()
    if args.json:
        print(strict_json.dumps(payload))
        print_tables(payload, err)
    else:
        console = output_console()
        print_tables(payload, console)
        console.print(f"wrote {out / 'certificate.json'}, {out / 'certified_accuracy.png'}, {out / 'report.md'}")
    return 0


def _payload(args: argparse.Namespace, cfg: dict, inst, dataset_name: str, command: str) -> dict:
    """``certificate.json`` but its architectures and provenance: the job's settings and instance."""
    return {
        "command": command,
        "dataset": dataset_name,
        "mode": args.mode,
        "model": args.model,
        "ntk_variant": args.ntk_variant if args.kernel is None else "user kernel",
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


def _tasks(args: argparse.Namespace, cfg: dict, inst, owner: np.ndarray | None) -> list:
    """One :class:`certify.task.CertificationTask` per architecture."""
    from certify.parallel import available_cores
    from certify.solvers import SolverSpec
    from certify.task import CertificationTask

    kernel = None
    if args.kernel is not None:
        path = Path(args.kernel)
        if not path.is_file():
            raise FileNotFoundError(f"kernel file not found: {path}")
        try:
            kernel = np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise ValueError(f"cannot read --kernel {path} as a .npy array: {exc}") from None
    attacker = None if cfg["attacker"] == "all labels" else cfg["attacker"]
    spec = SolverSpec(args.solver, args.time_limit)
    tasks = []
    for arch in cfg["archs"]:
        tasks.append(
            CertificationTask(
                instance=inst,
                budgets=tuple(cfg["budgets"]),
                C=cfg["C"],
                model=args.model,
                mode=args.mode,
                arch=arch,
                depth=args.depth,
                normalization=args.normalization,
                ntk_variant=args.ntk_variant,
                kernel=kernel,
                ridge=args.ridge,
                solver=spec,
                screen=not args.no_screen,
                decide=args.decide,
                method=args.method,
                enumerate_limit=args.enumerate_limit,
                owner=owner,
                attacker=attacker,
                seed=args.seed,
                workers=args.workers if args.workers is not None else available_cores(),
            )
        )
        kernel = tasks[-1].kernel  # validated once
    return tasks
