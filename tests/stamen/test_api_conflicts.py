"""A setting given twice to the Python API, under two spellings or through two arguments, is refused in one
line before anything is written, never settled silently by whichever came last."""

import pytest

import stamen

SMALL = {"csbm-nodes": 60, "num-server-rounds": 1}


def test_one_key_in_two_spellings_is_refused(tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.run({**SMALL, "num_server_rounds": 2}, clients=2, out=tmp_path / "runs")
    assert str(refusal.value) == (
        "run config: num-server-rounds is given twice, as 'num-server-rounds' and 'num_server_rounds'; give it once"
    )
    assert not (tmp_path / "runs").exists()


def test_out_and_output_dir_together_are_refused(tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.run(SMALL, clients=2, out=tmp_path / "a", output_dir=str(tmp_path / "b"))
    assert str(refusal.value) == "run config: output-dir is given twice, as a key and as out=; give it once"
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_clients_and_num_supernodes_together_are_refused(tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.run(SMALL, clients=2, federation={"num-supernodes": 3}, out=tmp_path / "runs")
    assert str(refusal.value) == (
        "the number of clients is given twice, as clients= and federation's num-supernodes; give it once"
    )
    assert not (tmp_path / "runs").exists()


def test_the_same_conflicts_are_refused_by_sweep(tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.sweep({**SMALL, "num_server_rounds": 2}, grid={"lr": [0.1]}, clients=2, out=tmp_path / "sweeps")
    assert str(refusal.value) == (
        "run config: num-server-rounds is given twice, as 'num-server-rounds' and 'num_server_rounds'; give it once"
    )
    assert not (tmp_path / "sweeps").exists()


def test_a_grid_that_is_not_a_mapping_is_refused(tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.sweep(SMALL, grid=[("lr", [0.1])], clients=2, out=tmp_path / "sweeps")
    assert str(refusal.value) == (
        "grid must be a dict of keys to lists of values, e.g. {'lr': [0.01, 0.05]}, or the path of a TOML file "
        "with a [grid] table; got a list"
    )


@pytest.mark.parametrize("request_", [3, [], ["client:0", 1], None])
def test_an_unlearning_request_that_is_not_text_is_refused(request_, tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.unlearn(tmp_path, request_)
    assert str(refusal.value) == (
        f"request must be a request or a list of them, e.g. 'client:3', 'nodes:0:0.1', 'class:2'; got {request_!r}"
    )


def test_loading_a_damaged_run_names_the_file(tmp_path):
    run = stamen.run(SMALL, clients=2, out=tmp_path / "runs")
    metrics, status = run.dir / "metrics.jsonl", run.dir / "status.json"
    kept = status.read_text()
    status.write_text(kept.replace('"status": "finished"', '"status": "exploded"'))
    with pytest.raises(ValueError) as refusal:
        stamen.load(run.dir)
    assert str(refusal.value).startswith(f"{status} records the status 'exploded', not one of ")
    status.write_text(kept)
    metrics.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ValueError) as refusal:
        stamen.load(run.dir)
    assert str(refusal.value) == f"{metrics} is not UTF-8 text; the run directory is damaged"


def test_a_finished_run_whose_last_row_was_cut_afterwards_says_so(tmp_path):
    run = stamen.run(SMALL, clients=2, out=tmp_path / "runs")
    metrics = run.dir / "metrics.jsonl"
    text = metrics.read_text()
    metrics.write_text(text[: len(text) - 10])  # the last line loses its end
    lines = text.count("\n")
    with pytest.raises(ValueError) as refusal:
        stamen.load(run.dir)
    assert str(refusal.value) == (
        f"{metrics}: line {lines}, the last, was cut short though the run finished: the file was changed "
        "afterwards; restore it from a copy, or delete that line"
    )
