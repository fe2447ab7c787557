"""``stamen certify``: exact label-flip certificates of (graph) neural networks via their NTK.

The options are declared once in :mod:`stamen.contract.certify_config` (type, default, constraint,
help, the rules between them); this module derives its argparse options from there, checks
them with :meth:`CertifyConfig.from_values` before any slow work, builds one
:class:`stamen.certify.task.CertificationTask` per architecture, runs :func:`stamen.certify.pipeline.run`
and prints and writes the reports (:mod:`stamen.certify.report`); the certificates themselves live
in :mod:`certify`.

A wide GNN trained with hinge loss behaves like a kernel SVM with the network's NTK
(Sabanayagam, Gosch et al., ICLR 2025). This command computes the NTK of each
architecture, trains the bias-free SVM (or kernel ridge regression) on the labelled
nodes and certifies the targets against an adversary that flips up to ``k`` training
labels: sample-wise (per target) or collectively (one flip set against all targets).

Binary certification keeps the two largest classes by default (as in the paper; the
first of ``--classes a,b`` becomes +1) and drops nodes isolated in that subgraph;
``--classes all`` certifies all classes with one-vs-all SVMs (sample-wise only).
``--dataset`` takes what ``stamen run``'s ``dataset`` takes (``csbm``, ``cora``, ...,
``npz:STEM``, ``pyg:CLASS/NAME``, ``ogb:ogbn-NAME``: files under ``--data-root``) and
``csbm-paper``; ``--graph`` gives the graph with its own labelled nodes and targets.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stamen.certify.data import build_instance, instance_from_arrays, load_graph_npz
from stamen.certify.journal import JOURNAL_FILE, Journal
from stamen.certify.parallel import available_cores
from stamen.certify.partition import random_label_split
from stamen.certify.report import OUTPUT_FILES, STAGING_PREFIXES, clean_floats, print_tables, write_outputs
from stamen.common.options import finite_float, renamed
from stamen.common.screen import output_console
from stamen.contract import strict_json
from stamen.contract.certify_config import OPTIONS, PAPER_CSBM, SECTIONS, CertifyConfig
from stamen.contract.keys import Key
from stamen.contract.provenance import provenance
from stamen.graphs import load_dataset
from stamen.graphs.partition import partition_nodes
from stamen.simulations.errors import RunInterrupted
from stamen.simulations.size_check import available_memory, size_text

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rich.console import Console

_TYPES = {"int": int, "float": finite_float, "str": str}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``certify``: one option per key of :data:`stamen.contract.certify_config.OPTIONS`, by section."""
    p = subparsers.add_parser(
        "certify",
        help="exact label-flip poisoning certificates (NTK + SVM/KRR, MILP)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    groups = {name: p.add_argument_group(name, section.help) for name, section in SECTIONS.items()}
    for key in OPTIONS.values():
        if key.kind == "bool":
            groups[key.section].add_argument(key.name, dest=key.attribute, action="store_true", help=_help(key))
        else:
            groups[key.section].add_argument(
                key.name, dest=key.attribute, type=_TYPES[key.kind], default=key.default, help=_help(key)
            )
    renamed(groups["certificate"], "--method", "--search")
    renamed(groups["federated attacker"], "--partition", "--partitioner")
    p.set_defaults(func=main)


def _help(key: Key) -> str:
    """The key's help, what it accepts (each choice with its help line) and its default."""
    text = key.help
    if key.choices is not None and any(key.choices.values()):
        text += ": " + "; ".join(f"{name}: {line}" if line else name for name, line in key.choices.items())
    elif key.kind != "bool" and (key.choices is not None or key.bound is not None or key.form is not None):
        text += f" ({key.accepted()})"
    if key.default is not None and key.kind != "bool":
        text += f" (default {key.default})"
    return text.replace("%", "%%")


# ----------------------------------------------------------------------------- checks
def _validate(args: argparse.Namespace) -> CertifyConfig:
    """The parsed options, checked by :func:`checked_config`."""
    return checked_config({name: getattr(args, key.attribute) for name, key in OPTIONS.items()})


def checked_config(values: Mapping[str, Any]) -> CertifyConfig:
    """Every option (:meth:`CertifyConfig.from_values`) and ``--out``, before any slow work."""
    config = CertifyConfig.from_values(values)
    _check_out(config)
    return config


def _check_out(config: CertifyConfig) -> None:
    """``--out`` is a writable folder, or can become one, before any slow work.

    A folder holding only the journal of an interrupted certification is the one to
    resume (whether it is this job's is checked when the journal is opened); anything
    else in it needs ``--overwrite``.
    """
    out = Path(str(config.out)).expanduser()
    if out.exists():
        if not out.is_dir():
            raise ValueError(f"--out {out} exists and is not a folder")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ValueError(f"--out {out} is not writable; choose a writable folder")
        # the journal, and a write's staging file an interrupted run left, are the certification's own; beside a
        # journal, so are the outputs (a run interrupted while writing them, which the resume writes again)
        own = {JOURNAL_FILE, *OUTPUT_FILES} if (out / JOURNAL_FILE).is_file() else {JOURNAL_FILE}
        kept = [e for e in out.iterdir() if e.name not in own and not e.name.startswith(STAGING_PREFIXES)]
        if not config.overwrite and kept:
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
def _load_instance(config: CertifyConfig):
    """The certification instance (:class:`stamen.certify.data.Instance`) and the dataset's name.

    ``--graph`` fixes its own labelled nodes and targets; ``csbm-paper`` is generated from the
    seed; every other dataset (``stamen run``'s: ``cora``, ``npz:STEM``, ``pyg:...``,
    ``ogb:...``) is read by graphs' loaders from ``--data-root`` (else ``$STAMEN_DATA``).
    """
    if config.graph is not None:
        inst = instance_from_arrays(load_graph_npz(config.graph), config.class_ids(), config.binary)
        return _checked(inst, config), Path(config.graph).name
    if config.dataset == PAPER_CSBM:
        # on use: torch, torch_geometric stay out of this module's import
        from stamen.graphs.csbm import make_paper_csbm

        _check_kernel_size(config.csbm_nodes, "use fewer --csbm-nodes")  # before the graph is generated
        data = make_paper_csbm(num_nodes=config.csbm_nodes, seed=config.seed)
    else:
        data = load_dataset(config.dataset, root=config.data_root, seed=config.seed)
    # the paper drops isolated nodes of real graphs but keeps them in its CSBM experiments
    inst = build_instance(
        data,
        config.class_ids(),
        config.binary,
        config.labeled_per_class,
        config.targets,
        config.seed,
        drop_isolated=config.dataset != PAPER_CSBM,
    )
    if config.binary_features:
        inst.x = (inst.x > 0).astype(np.float64)
    return _checked(inst, config), config.dataset


def _checked(inst, config: CertifyConfig):
    """``inst`` if its kernels fit this machine's memory and no budget exceeds its labelled nodes."""
    _check_kernel_size(inst.n, "certify a smaller graph")
    budgets = config.budget_list()
    if budgets[-1] > len(inst.labeled):
        raise ValueError(
            f"--budgets {budgets[-1]} exceeds the {len(inst.labeled)} labelled nodes (a budget flips that many labels "
            f"at most); give budgets up to {len(inst.labeled)}"
        )
    return inst


#: the n x n float64 matrices certification holds at once (propagation, kernel, and the NTK's terms)
_KERNEL_MATRICES = 4


def _check_kernel_size(nodes: int, advice: str) -> None:
    """ValueError in one line when the kernels over ``nodes`` nodes need more memory than this machine has."""
    needed, have = _KERNEL_MATRICES * 8 * nodes**2, available_memory()
    if needed > have:
        raise ValueError(
            f"certify needs about {size_text(needed)} of memory for the kernels over {nodes} nodes; this machine has "
            f"{size_text(have)} available; {advice}"
        )


def _owners(config: CertifyConfig, inst) -> np.ndarray | None:
    """Client of each labelled node when ``--clients K`` splits them (else ``None``)."""
    if config.clients is None:
        return None
    if config.partitioner == "random":
        return random_label_split(len(inst.labeled), config.clients, config.seed)
    # on use: torch, torch_geometric stay out of this module's import
    import torch
    from torch_geometric.data import Data

    data = Data(
        x=torch.from_numpy(inst.x).float(), edge_index=torch.from_numpy(inst.edge_index), y=torch.from_numpy(inst.y)
    )
    parts = partition_nodes(data, config.clients, method=config.partitioner, seed=config.seed)
    node_owner = np.empty(inst.n, dtype=np.int64)
    for cid, nodes in enumerate(parts):
        node_owner[np.asarray(nodes)] = cid
    return node_owner[inst.labeled]


# ----------------------------------------------------------------------------- run
class _StdoutToStderr:
    """Send file descriptor 1 to stderr (HiGHS prints its banner straight to fd 1), so
    ``--json`` output on stdout stays parseable."""

    def __enter__(self) -> _StdoutToStderr:
        sys.stdout.flush()
        try:
            self.saved = os.dup(1)
            os.dup2(2, 1)
        except OSError:  # pragma: no cover - no real file descriptors (embedded use)
            self.saved = None
        return self

    def __exit__(self, *exc: object) -> bool:
        if self.saved is not None:
            sys.stdout.flush()
            os.dup2(self.saved, 1)
            os.close(self.saved)
        return False


@dataclass(frozen=True)
class Certified:
    """A finished certification: its folder (``certificate.json``, ``certified_accuracy.png``,
    ``report.md``) and its report (the dict ``certificate.json`` holds)."""

    out: Path
    report: dict[str, Any]


def main(args: argparse.Namespace) -> int:
    """Run the certificate (:func:`certify_job`), print its tables; returns the exit code (ValueError on bad input)."""
    config = _validate(args)
    done = certify_job(config, command=args.invocation, screen=output_console(stderr=True))
    if config.json:
        print(strict_json.dumps(done.report))
        print_tables(done.report, output_console(stderr=True))
    else:
        console = output_console()
        print_tables(done.report, console)
        out = done.out
        console.print(f"wrote {out / 'certificate.json'}, {out / 'certified_accuracy.png'}, {out / 'report.md'}")
    return 0


def certify_job(config: CertifyConfig, *, command: str, screen: Console) -> Certified:
    """``stamen certify``'s one path, for the command and :func:`stamen.certify` alike: certify, write, return.

    ``config`` is checked (:func:`_validate`); ``command`` is recorded and named as the way to
    resume; progress goes to ``screen``. Each finished unit (a target, or a budget of a
    collective certificate) is appended to the journal in ``--out`` (:mod:`stamen.certify.journal`) as
    it is decided; the same job again resumes from it. Ctrl-C (or SIGTERM) keeps what is
    finished and says how to resume. The journal is removed once the final outputs are
    written: they hold all of it.
    """
    # on use: pulp stays out of this module's import
    from stamen.experiments.certify_job import certify_arch, job_digest, job_options
    from stamen.experiments.certify_progress import CertifyProgress

    out = Path(str(config.out))
    journal = None
    try:
        with _StdoutToStderr(), CertifyProgress(screen) as progress:
            progress.loading(Path(config.graph).name if config.graph is not None else config.dataset)
            inst, dataset_name = _load_instance(config)
            owner = _owners(config, inst)
            tasks = _tasks(config, inst, owner)  # validates everything, the kernel included
            payload = _payload(config, inst, dataset_name, command)
            options = job_options(config)
            journal = Journal.open(out, job_digest(options, inst, tasks, owner), options)
            for note in journal.notes:
                progress.note(note)
            for task in tasks:
                name = task.arch if config.kernel is None else f"{task.arch} (user kernel)"
                payload["architectures"][name] = certify_arch(task, name, journal, progress).as_dict()
    except KeyboardInterrupt:
        if journal is None:  # nothing was certified yet
            raise
        journal.close()
        collective = config.mode == "collective"
        units = len(tasks) * (len(config.budget_list()) if collective else len(inst.targets))
        raise RunInterrupted(
            f"interrupted: kept {journal.units_on_disk()} of {units} finished units "
            f"({'budgets' if collective else 'targets'}) in {journal.path}; "
            f"resume with: {command}"
        ) from None
    except BaseException:
        if journal is not None:
            journal.close()  # the finished units stay for a later run
        raise

    payload["provenance"] = provenance(seeds=[config.seed])
    payload = clean_floats(payload)
    try:
        write_outputs(out, payload)
    except BaseException:  # Ctrl-C or a full disk while writing: the journal stays, unlocked, for the same job again
        journal.close()
        raise
    journal.remove()
    return Certified(out, payload)


def _payload(config: CertifyConfig, inst, dataset_name: str, command: str) -> dict:
    """``certificate.json`` but its architectures and provenance: the job's settings and instance."""
    attacker = config.attacker_spec()
    return {
        "command": command,
        "dataset": dataset_name,
        "mode": config.mode,
        "model": config.model,
        "ntk_variant": config.ntk_variant if config.kernel is None else "user kernel",
        "solver": {"name": config.solver, "time_limit": config.time_limit},
        "method": config.search,
        "enumerate_limit": config.enumerate_limit,
        "budgets": config.budget_list(),
        "attacker": attacker if config.clients is None else f"{attacker} of {config.clients} clients",
        "seed": config.seed,
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


def _tasks(config: CertifyConfig, inst, owner: np.ndarray | None) -> list:
    """One :class:`stamen.certify.task.CertificationTask` per architecture."""
    # on use: pulp stays out of this module's import
    from stamen.certify.solvers import SolverSpec
    from stamen.certify.task import CertificationTask

    kernel = None
    if config.kernel is not None:
        path = Path(config.kernel)
        if not path.is_file():
            raise FileNotFoundError(f"kernel file not found: {path}")
        try:
            kernel = np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise ValueError(f"cannot read --kernel {path} as a .npy array: {exc}") from None
    attacker = None if config.attacker_spec() == "all labels" else config.attacker_spec()
    spec = SolverSpec(config.solver, config.time_limit)
    tasks = []
    for arch in config.architectures():
        tasks.append(
            CertificationTask(
                instance=inst,
                budgets=tuple(config.budget_list()),
                C=config.c_value(),
                model=config.model,
                mode=config.mode,
                arch=arch,
                depth=config.depth,
                normalization=config.normalization,
                ntk_variant=config.ntk_variant,
                kernel=kernel,
                ridge=config.ridge,
                solver=spec,
                screen=not config.no_screen,
                decide=config.decide,
                method=config.search,
                enumerate_limit=config.enumerate_limit,
                owner=owner,
                attacker=attacker,
                seed=config.seed,
                workers=config.workers if config.workers is not None else available_cores(),
            )
        )
        kernel = tasks[-1].kernel  # validated once
    return tasks
