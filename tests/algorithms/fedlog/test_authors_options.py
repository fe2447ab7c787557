"""FedLoG's options that reproduce its authors' code: each changes the run, says so, and the default is left alone.

In-process runs of three csbm clients (FedLoG shrunk as in ``test_fedlog_client.py``). ``fedlog-warmup-stop=
'test-mask'`` changes the rows and marks the summary's ``notes``; ``fedlog-class-generators='untrained'``
changes the rows and never reads the server's per-class generators: the run is the same when the server's
averages are replaced by other weights, where the default run is not.
"""

import numpy as np
import pytest

import stamen
import stamen.algorithms.fedlog.server as fedlog_server
from stamen.contract.equivalences import config_notes
from stamen.contract.figures import ROW_TIMINGS
from stamen.contract.run_config import RunConfig

RUN = {
    "algorithm": "fedlog",
    "num-server-rounds": 3,
    "csbm-nodes": 400,
    "csbm-features": 16,
    "missing-classes": 1,
    "unseen-node-frac": 0.2,
    "fedlog-num-proto": 4,
    "fedlog-lr": 0.02,
    "fedlog-warmup-epochs": 30,
    "fedlog-warmup-patience": 2,
    "fedlog-generator-epochs": 3,
    "fedlog-hidden": 16,
    "fedlog-embedding": 8,
    "fedlog-generator-hidden": 16,
}
NOT_FIGURES = {"client_processes", *ROW_TIMINGS}
LEAK = "fedlog-warmup-stop='test-mask' (the authors' code)"


def _rows(tmp_path, name: str, **values) -> tuple[list[dict], dict]:
    run = stamen.run({**RUN, **values}, clients=3, out=tmp_path, run_name=name)
    return [{k: v for k, v in row.items() if k not in NOT_FIGURES} for row in run.rows], run.summary


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    return _rows(tmp_path_factory.mktemp("fedlog"), "default")


def test_stopping_the_warm_up_on_test_labels_changes_the_run_and_says_so(tmp_path, default_run):
    rows, summary = default_run
    leaked, leaked_summary = _rows(tmp_path, "test-mask", **{"fedlog-warmup-stop": "test-mask"})
    assert len(leaked) == len(rows) == 4 and leaked != rows
    assert [note for note in leaked_summary.get("notes", []) if note.startswith(LEAK)]
    assert not [note for note in summary.get("notes", []) if "test" in note]


def test_the_leak_note_comes_from_the_config_alone():
    leaked = config_notes(RunConfig.from_flower({**RUN, "fedlog-warmup-stop": "test-mask"}))
    assert len(leaked) == 1 and leaked[0].startswith(LEAK) and "test labels" in leaked[0]
    assert config_notes(RunConfig.from_flower(RUN)) == []
    with pytest.raises(ValueError, match="fedlog-warmup-stop"):
        RunConfig.from_flower({**RUN, "fedlog-warmup-stop": "test"})


def _other_averages(averaged):
    """The server's per-class generators replaced by other weights (each scaled by 3)."""

    def other(*args, **kwargs):
        return {name: 3.0 * np.asarray(value) for name, value in averaged(*args, **kwargs).items()}

    return other


def test_untrained_class_generators_change_the_run_and_ignore_the_servers(tmp_path, monkeypatch, default_run):
    rows, _ = default_run
    untrained, _ = _rows(tmp_path, "untrained", **{"fedlog-class-generators": "untrained"})
    assert untrained != rows
    monkeypatch.setattr(fedlog_server, "per_class_average", _other_averages(fedlog_server.per_class_average))
    untrained_other, _ = _rows(tmp_path, "untrained-other", **{"fedlog-class-generators": "untrained"})
    assert untrained_other == untrained  # the server's averages are never read
    default_other, _ = _rows(tmp_path, "default-other")
    assert default_other != rows  # ... where the default run reads them
