"""Hostile and careless input through the real ``stamen`` entry point.

Every case must fail before Flower starts, with exit code 2 and ONE line on stderr, and
leave a sentinel tree of files around the output folder byte-identical: no command
removes, renames or overwrites what it did not create.
"""

import hashlib
import json
import os
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen

SMALL = "num-server-rounds=2 csbm-nodes=300"
FEDERATION = "num-supernodes=3"


def _tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` with a hash of its content (or its link target)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[str(path)] = "dir"
    return found


@pytest.fixture
def sentinel(tmp_path: Path) -> Path:
    """A project-like tree: user files, an output folder with a finished-looking run, a file, a symlink."""
    (tmp_path / "project" / "src").mkdir(parents=True)
    (tmp_path / "project" / "src" / "model.py").write_text("precious = True\n")
    (tmp_path / "project" / "notes.md").write_text("# notes\n")
    runs = tmp_path / "project" / "runs"
    (runs / "old").mkdir(parents=True)
    (runs / "old" / "config.json").write_text(json.dumps({"dataset": "csbm"}))
    (runs / "old" / "summary.json").write_text(json.dumps({"final": {"global_test_acc": 0.99}}))
    (runs / "old" / "status.json").write_text(json.dumps({"status": "finished", "token": "old"}))
    (runs / "mine").mkdir()
    (runs / "mine" / "thesis.tex").write_text("do not lose me\n")
    (tmp_path / "project" / "afile").write_text("not a folder\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "data.bin").write_bytes(b"\x00\x01")
    os.symlink(tmp_path / "elsewhere", runs / "link")
    return tmp_path


CASES = {
    "run-name climbing out": ("run-name='a/..'", "one plain folder name"),
    "run-name absolute": ("run-name='/etc'", "one plain folder name"),
    "run-name dot-dot": ("run-name='..'", "one plain folder name"),
    "output-dir is a file": ("output-dir='{root}/project/afile'", "is a file"),
    "output-dir under a file": ("output-dir='{root}/project/afile/runs'", "a file, not a folder"),
    "existing run without overwrite": ("output-dir='{root}/project/runs' run-name='old'", "overwrite=true"),
    "overwrite of a user folder": (
        "output-dir='{root}/project/runs' run-name='mine' overwrite=true",
        "more than a run's own outputs",
    ),
    "overwrite through a symlink": ("output-dir='{root}/project/runs' run-name='link' overwrite=true", "symbolic link"),
    "overwrite with a bad config": ("output-dir='{root}/project/runs' run-name='old' overwrite=true lr=-1", "lr must"),
    "unknown class to forget": ("unlearn-request='class:99'", "class 99 is out of range"),
    "fraction above one": ("unlearn-request='nodes:0:1.5'", "must lie in (0, 1]"),
    "unknown client to forget": ("unlearn-request='client:7'", "client 7 is out of range"),
    "unreachable client-dp epsilon": (
        "privacy='client-dp' target-epsilon=0.01 num-server-rounds=500",
        "cannot be reached",
    ),
    "unreachable dp-sgd epsilon": ("privacy='dp-sgd' model='sgc' target-epsilon=0.001", "cannot be reached"),
    "dp batch above a client's nodes": ("privacy='dp-sgd' model='sgc' dp-batch-size=100000", "dp-batch-size"),
    "unquoted string": ("dataset=cora", "strings need quotes: dataset='cora'"),
    "not key=value": ("cora", "is not key=value"),
    "empty value": ("lr=", "has no value"),
    "unknown key": ("learning-rate=0.1", "unknown run-config key"),
    "missing data root": ("dataset='cora' data-root='{root}/nowhere'", "not a folder"),
    "resume of a folder without checkpoint": ("resume-from='{root}/project/runs/old'", "checkpoint"),
    "bad certify arch": ("certify-budgets='1' certify-arch='transformer'", "unknown certify-arch"),
    "lr not a number": ("lr=nan", "lr must be a finite number, got nan"),
    "lr infinite": ("lr=inf", "lr must be a finite number, got inf"),
    "a float key without a range infinite": ("fedlog-gamma=-inf", "fedlog-gamma must be a finite number, got -inf"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_in_one_line_and_touches_nothing(case, sentinel, capsys, monkeypatch):
    override, message = CASES[case]
    monkeypatch.chdir(sentinel / "project")
    before = _tree(sentinel)
    code = stamen(["run", "-c", SMALL, "-c", override.format(root=sentinel), "--federation-config", FEDERATION])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("stamen run: error: ") and message in err, err
    assert _tree(sentinel) == before


def test_a_bad_federation_config_is_one_line(capsys):
    assert stamen(["run", "-c", SMALL, "--federation-config", "num-supernodes=two"]) == 2
    err = capsys.readouterr().err
    assert "strings need quotes" in err and len(err.strip().splitlines()) == 1
    # Flower 1.42's simulation fails on a fraction of a CPU per client, after starting: refused first
    assert stamen(["run", "-c", SMALL, "--federation-config", "num-supernodes=3 client-resources-num-cpus=0.5"]) == 2
    err = capsys.readouterr().err
    assert "client-resources-num-cpus must be a whole number of CPUs >= 1" in err and len(err.strip().splitlines()) == 1


FEDERATION_CASES = {
    "num-supernode=3": "unknown federation-config key 'num-supernode'; did you mean 'num-supernodes'?",
    "client-resources-num-gpu=1": "'client-resources-num-gpu'; did you mean 'client-resources-num-gpus'?",
    "num-supernodes=3 clients=3": "unknown federation-config key 'clients'; the keys are: num-supernodes, ",
    "client-resources-num-gpus=nan": "'client-resources-num-gpus' must be a finite number >= 0, got nan",
    "num-supernodes=3 init-args-num-cpus=-2": "key 'init-args-num-cpus' must be a whole number >= 0, got -2",
    "num-supernodes=3 verbose=1": "key 'verbose' must be true or false, got 1",
}  # fmt: skip


@pytest.mark.parametrize("federation", sorted(FEDERATION_CASES))
def test_a_federation_config_key_flower_does_not_take_is_refused(federation, tmp_path, capsys):
    out = tmp_path / "runs"
    code = stamen(
        ["run", "--engine", "inprocess", "-c", f"{SMALL} output-dir='{out}'", "--federation-config", federation]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("stamen run: error: ") and FEDERATION_CASES[federation] in err, err
    assert not out.exists()


def test_the_federation_keys_are_those_of_flowers_simulation_config():
    from flwr.proto.federation_config_pb2 import SimulationConfig

    from stamen.simulations.flower import FEDERATION_KEYS

    assert sorted(FEDERATION_KEYS) == sorted(f.name.replace("_", "-") for f in SimulationConfig.DESCRIPTOR.fields)
