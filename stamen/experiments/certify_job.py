"""One ``stamen certify`` job: what makes it this job (its journal's digest), and one architecture's run.

:func:`job_options` and :func:`job_digest` say what the job is: every option that changes
an answer (a new option is in unless :data:`_NOT_ANSWERS` names it) and the data it
certifies. :mod:`stamen.certify.journal` keeps them in its first line and refuses a journal of
another job. :func:`certify_arch` runs the pipeline of one architecture with the units the
journal kept, appending each new one as it is decided.
"""

from __future__ import annotations

import numpy as np

from stamen.certify.data import Instance
from stamen.certify.journal import Journal
from stamen.certify.journal import job_digest as digest_of
from stamen.certify.outcome import CollectiveOutcome, TargetOutcome
from stamen.certify.pipeline import Finished, run
from stamen.certify.report import CertificateReport
from stamen.certify.task import CertificationTask
from stamen.contract.certify_config import CertifyConfig
from stamen.experiments.certify_progress import CertifyProgress

#: options that change no answer (where things are and how they are shown), left out of the job's digest;
#: --graph and --kernel are in it by their content, not their path
_NOT_ANSWERS = frozenset({"out", "overwrite", "json", "data_root", "graph", "kernel", "workers"})


#: the journal keeps the option names of its first version, so a job interrupted before the options
#: were declared in the contract resumes (its digest is unchanged): --search was recorded as
#: ``method``, --partitioner as ``partition``
_JOURNAL_NAMES = {"search": "method", "partitioner": "partition"}


def job_options(config: CertifyConfig) -> dict:
    """Every option that changes an answer (new options are in by default), as the journal records them."""
    options = {_JOURNAL_NAMES.get(k, k): v for k, v in sorted(vars(config).items()) if k not in _NOT_ANSWERS}
    options.update(renamed_method=None, renamed_partition=None)  # the renamed flags' slots, always empty
    options.update(
        budgets=config.budget_list(),
        arch=config.architectures(),
        C=config.c_value(),
        classes="all" if not config.binary else config.class_ids(),
        attacker=config.attacker_spec(),
    )
    return options


def job_digest(options: dict, inst: Instance, tasks: list[CertificationTask], owner: np.ndarray | None) -> str:
    """The digest of this job: its options and its data (graph, splits, a user kernel, the clients' nodes)."""
    arrays = {
        "x": inst.x,
        "edge_index": inst.edge_index,
        "y": inst.y,
        "labeled": inst.labeled,
        "targets": inst.targets,
        "node_ids": inst.node_ids,
        "class_names": np.asarray(inst.class_names, dtype=np.int64),
        "kernel": tasks[0].kernel if tasks else None,
        "owner": owner,
    }
    return digest_of(options, arrays)


def certify_arch(task: CertificationTask, name: str, journal: Journal, screen: CertifyProgress) -> CertificateReport:
    """One architecture's report: the journal's units of ``name`` reused, each new one appended as it is decided."""
    inst = task.instance
    collective = task.mode == "collective"
    finished = Finished(targets=dict(journal.targets.get(name, {})), budgets=dict(journal.budgets.get(name, {})))
    kept = len(finished.budgets if collective else finished.targets)
    total = len(task.budgets) if collective else len(inst.targets)
    screen.begin(name, total, kept, "budgets" if collective else "targets", inst.n)

    def on_target(position: int, outcome: TargetOutcome) -> None:
        journal.add_target(name, position, int(inst.node_ids[inst.targets[position]]), outcome)
        screen.advance()

    def on_budget(budget: int, outcome: CollectiveOutcome) -> None:
        journal.add_budget(name, budget, outcome)
        screen.advance()

    return run(task, finished=finished, on_target=on_target, on_budget=on_budget, on_stage=screen.stage)
