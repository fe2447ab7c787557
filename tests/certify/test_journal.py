"""The certification journal (stamen.certify.journal) and the pipeline's units: kept, read back, resumed."""

import json

import numpy as np
import pytest

from stamen.certify.data import Instance
from stamen.certify.journal import JOURNAL_FILE, Journal, JournalMismatch, job_digest
from stamen.certify.outcome import CollectiveOutcome, TargetOutcome
from stamen.certify.pipeline import Finished, Stage, run
from stamen.certify.solvers import SolverSpec
from stamen.certify.task import CertificationTask

HIGHS = SolverSpec("highs", 60)
OPTIONS = {"budgets": [0, 1, 2], "targets": 8}


def _instance(seed: int = 4, m: int = 8, num_targets: int = 6, classes: int = 2):
    """An instance with a PSD kernel over all nodes (labelled first, then targets) and some label noise."""
    rng = np.random.default_rng(seed)
    n = m + num_targets
    x = rng.standard_normal((n, 3))
    y = np.arange(n) % classes
    x[:, 0] += 0.8 * (y == 0)
    x[:, 1] += 0.8 * (y == 1)
    kernel = x @ x.T + 0.2
    y[rng.choice(m, size=2, replace=False)] = (y[:2] + 1) % classes
    inst = Instance(
        x, np.zeros((2, 0), np.int64), y, classes, np.arange(m), np.arange(m, n), list(range(classes)), np.arange(n)
    )
    return inst, kernel


def _task(mode="samplewise", classes=2, **kw):
    if classes == 2:
        inst, kernel = _instance()
        budgets = (0, 1, 2, 3) if mode == "collective" else (0, 1, 2)
    else:  # one-vs-all MILPs: kept small (both statuses occur)
        inst, kernel = _instance(seed=1, m=6, num_targets=5, classes=classes)
        budgets = (0, 1)
    return CertificationTask(inst, budgets, C=0.1, kernel=kernel, solver=HIGHS, mode=mode, **kw)


def _untimed(obj):
    """A report's JSON without its timings (the only thing a resumed run may change)."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if "seconds" not in k}
    if isinstance(obj, list):
        return [_untimed(v) for v in obj]
    return obj


class Stop(Exception):
    """Stands for Ctrl-C (the pipeline must not swallow whatever the callback raises)."""


def _interrupted(task, after):
    """Run ``task`` and stop it after ``after`` units: the units decided so far."""
    kept = Finished()

    def target(i, outcome):
        kept.targets[i] = TargetOutcome.from_dict(json.loads(json.dumps(outcome.as_dict())))
        if len(kept.targets) == after:
            raise Stop

    def budget(k, outcome):
        kept.budgets[k] = CollectiveOutcome.from_dict(json.loads(json.dumps(outcome.as_dict())))
        if len(kept.budgets) == after:
            raise Stop

    with pytest.raises(Stop):
        run(task, on_target=target, on_budget=budget)
    return kept


@pytest.mark.parametrize(
    "kw",
    [{"method": "milp", "screen": False}, {"method": "auto"}, {"classes": 3}, {"model": "krr"}],
    ids=["milp", "auto", "multiclass", "krr"],
)
def test_a_resumed_samplewise_run_equals_an_uninterrupted_one(kw):
    task = _task(**kw)
    whole = run(task).as_dict()
    kept = _interrupted(task, after=3)
    seen = []
    resumed = run(task, finished=kept, on_target=lambda i, o: seen.append(i))
    assert sorted(seen) == [i for i in range(len(task.instance.targets)) if i not in kept.targets]
    assert _untimed(resumed.as_dict()) == _untimed(whole)


def _outcomes(task):
    got = {}
    run(task, on_target=lambda i, o: got.__setitem__(i, o))
    return [got[i] for i in sorted(got)]


def test_finished_targets_are_not_solved_again(milp_models):
    task = _task(method="milp", screen=False)  # every target needs one MILP model
    built = milp_models
    kept = _interrupted(task, after=4)
    assert len(built) == 4
    built.clear()
    run(task, finished=kept)
    assert len(built) == len(task.instance.targets) - 4


@pytest.mark.parametrize("method", ["milp", "auto"])
def test_a_resumed_collective_run_equals_an_uninterrupted_one(method):
    task = _task(mode="collective", method=method)
    whole = run(task).as_dict()
    kept = _interrupted(task, after=2)
    seen = []
    resumed = run(task, finished=kept, on_budget=lambda k, o: seen.append(k))
    assert seen == [k for k in task.budgets if k not in kept.budgets]
    assert _untimed(resumed.as_dict()) == _untimed(whole)


def test_stages_are_announced_in_order():
    stages = []
    run(_task(), on_stage=stages.append)
    assert stages == [Stage.KERNEL, Stage.FIT, Stage.CERTIFY]


# ------------------------------------------------------------------ the file
def _outcome(task=None):
    return _outcomes(task or _task())[0]


def test_units_are_read_back_as_they_were_written(tmp_path):
    outcome = _outcome(_task(method="milp"))
    collective = run(_task(mode="collective")).collective[2]
    journal = Journal.open(tmp_path, "d1", OPTIONS)
    journal.add_target("gcn", 0, 12, outcome)
    journal.add_budget("sgc", 2, collective)
    journal.close()
    lines = (tmp_path / JOURNAL_FILE).read_text().splitlines()
    assert json.loads(lines[0])["digest"] == "d1" and len(lines) == 3
    again = Journal.open(tmp_path, "d1", OPTIONS)
    assert again.read_back == 2 and not again.notes
    assert again.targets["gcn"][0].as_dict() == outcome.as_dict()
    assert again.budgets["sgc"][2].as_dict() == collective.as_dict()
    again.remove()
    assert not (tmp_path / JOURNAL_FILE).exists()


def test_a_journal_of_another_job_is_refused_naming_what_differs(tmp_path):
    Journal.open(tmp_path, "d1", OPTIONS).close()
    with pytest.raises(JournalMismatch) as error:
        Journal.open(tmp_path, "d2", {**OPTIONS, "budgets": [1]})
    msg = str(error.value)
    assert str(tmp_path / JOURNAL_FILE) in msg and "budgets" in msg and "targets" not in msg
    assert "--out" in msg and "delete" in msg and "\n" not in msg
    with pytest.raises(JournalMismatch, match="data"):  # same options, other data
        Journal.open(tmp_path, "d3", OPTIONS)
    (tmp_path / JOURNAL_FILE).write_text('{"rows": 1}\n')
    with pytest.raises(JournalMismatch, match="not a journal"):
        Journal.open(tmp_path, "d1", OPTIONS)


def test_a_torn_last_line_is_dropped_and_cut_off(tmp_path):
    outcome = _outcome()
    journal = Journal.open(tmp_path, "d1", OPTIONS)
    journal.add_target("gcn", 0, 12, outcome)
    journal.close()
    path = tmp_path / JOURNAL_FILE
    whole = path.read_bytes()
    line = json.dumps({"arch": "gcn", "target": 1, "node": 13, "outcome": outcome.as_dict()})
    path.write_bytes(whole + line[: len(line) // 2].encode())  # a crash in mid-write
    again = Journal.open(tmp_path, "d1", OPTIONS)
    assert again.read_back == 1 and list(again.targets["gcn"]) == [0]
    assert len(again.notes) == 1 and "torn" in again.notes[0]
    assert path.read_bytes() == whole  # cut off before anything is appended
    again.add_target("gcn", 1, 13, outcome)
    again.close()
    third = Journal.open(tmp_path, "d1", OPTIONS)
    assert sorted(third.targets["gcn"]) == [0, 1] and not third.notes
    third.close()


def test_a_torn_header_restarts_and_a_damaged_middle_line_is_refused(tmp_path):
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(b'{"journal": "stamen cer')
    journal = Journal.open(tmp_path, "d1", OPTIONS)
    assert journal.read_back == 0 and journal.notes
    journal.add_target("gcn", 0, 12, _outcome())
    journal.close()
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0], b"{not json", *lines[1:]]))
    with pytest.raises(JournalMismatch, match="line 2 .* is damaged"):
        Journal.open(tmp_path, "d1", OPTIONS)


def test_one_writer_at_a_time(tmp_path):
    journal = Journal.open(tmp_path, "d1", OPTIONS)
    with pytest.raises(ValueError, match="another certification"):
        Journal.open(tmp_path, "d1", OPTIONS)
    journal.close()
    Journal.open(tmp_path, "d1", OPTIONS).close()


def test_the_digest_sees_options_and_data():
    a = np.arange(6.0)
    base = job_digest(OPTIONS, {"x": a, "kernel": None})
    assert base == job_digest(dict(reversed(list(OPTIONS.items()))), {"kernel": None, "x": a.copy()})
    assert base != job_digest({**OPTIONS, "targets": 9}, {"x": a, "kernel": None})
    b = a.copy()
    b[3] += 1e-12
    assert base != job_digest(OPTIONS, {"x": b, "kernel": None})
    assert base != job_digest(OPTIONS, {"x": a.reshape(2, 3), "kernel": None})
