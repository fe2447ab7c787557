import json
import subprocess
import sys

import pytest

from stamen.cli.main import main


def test_partition_json_has_the_documented_keys(capsys, shared_datasets):
    code = main(
        [
            "partition",
            "--dataset",
            "cora",
            "--data-root",
            str(shared_datasets),
            "--clients",
            "10",
            "--partitioner",
            "louvain",
            "--seed",
            "0",
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["num_nodes"] == 2708 and len(report["clients"]) == 10
    assert sum(c["nodes"] for c in report["clients"]) == 2708
    assert all(len(c["class_counts"]) == 7 and sum(c["class_counts"]) == c["nodes"] for c in report["clients"])
    assert report["cut_edges"] + sum(c["edges"] for c in report["clients"]) == 5278


def test_partition_table_on_screen(capsys):
    assert main(["partition", "--clients", "3"]) == 0
    out = capsys.readouterr().out
    assert "class histogram" in out and "cut between clients" in out


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv,message",
    [
        (["partition", "--dataset", "imagenet"], "unknown dataset 'imagenet'"),
        (["partition", "--partitioner", "spectral"], "unknown partitioner 'spectral'"),
        (["partition", "--clients", "5000"], "cannot cut 3000 nodes into 5000 clients"),
        (["partition", "--dataset", "cora", "--data-root", "/nonexistent"], "raw files missing"),
        (["run", "-c", "model='transformer'"], "unknown model 'transformer'"),
        (["run", "-c", "num-server-rounds=0"], "num-server-rounds must lie in [1, 10000000], got 0"),
        (["run", "--federation-config", "num-supernodes=4000"], "cannot cut 3000 nodes into 4000 clients"),
        (["run", "--in-turn"], "--in-turn applies to the in-process engine only"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(argv, message):
    result = subprocess.run([sys.executable, "-m", "stamen.cli.main", *argv], capture_output=True, text=True)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_help_lists_every_command_as_its_module_describes_it_without_importing_torch():
    import argparse
    import importlib
    import subprocess
    import sys

    from stamen.cli.main import SUMMARIES

    for name, summary in SUMMARIES.items():
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"stamen.cli.commands.{name}").add_parser(subparsers)
        assert subparsers._choices_actions[0].help == summary, name
    probe = (
        "import sys; from stamen.cli.main import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("False") and "sweep" in out
    version = subprocess.run([sys.executable, "-m", "stamen.cli.main", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("stamen ")


@pytest.mark.parametrize("bench", ["algorithms", "fedlog"])
@pytest.mark.parametrize(
    "value,message",
    [("lr=abc", "--run-config: strings need quotes: lr='abc'"), ("lr=", "--run-config: lr= has no value")],
)
def test_a_benchs_bad_run_config_is_one_line_as_stamen_runs(bench, value, message, tmp_path, capsys):
    """The benches read -c as stamen run does (Flower's parser raised a click exception: a traceback)."""
    from stamen.cli.main import main

    assert main(["bench", bench, "-c", value, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"stamen bench: error: {message}"), err
    assert [p.name for p in tmp_path.iterdir()] == [f".{bench}.lock"]  # only the record's lock: nothing of the bench
